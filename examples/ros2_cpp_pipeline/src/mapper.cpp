// mapper: a lifecycle node in its own process (README.md). It configures and activates itself;
// active, it serves /plan (test_msgs/BasicTypes; a member function taking the request header)
// and publishes /map (a lifecycle publisher) from a 2 Hz timer.
#include <chrono>
#include <functional>
#include <memory>

#include "common.hpp"
#include "lifecycle_msgs/msg/state.hpp"
#include "rclcpp/rclcpp.hpp"
#include "rclcpp_lifecycle/lifecycle_node.hpp"
#include "std_msgs/msg/u_int64_multi_array.hpp"
#include "test_msgs/srv/basic_types.hpp"

using Msg = std_msgs::msg::UInt64MultiArray;
using Srv = test_msgs::srv::BasicTypes;
using CallbackReturn = rclcpp_lifecycle::node_interfaces::LifecycleNodeInterface::CallbackReturn;
using namespace std::chrono_literals;
using namespace cpp_pipeline;

static GroundTruth * gt;
static Ids ids;
static Slow slow;

class Mapper : public rclcpp_lifecycle::LifecycleNode
{
public:
  Mapper()
  : LifecycleNode("mapper") {}

  CallbackReturn on_configure(const rclcpp_lifecycle::State &) override
  {
    map_ = create_publisher<Msg>("/map", 10);
    service_ = create_service<Srv>(
      "/plan", std::bind(
        &Mapper::plan, this, std::placeholders::_1, std::placeholders::_2, std::placeholders::_3));
    timer_ = create_wall_timer(
      500ms, [this]() {
        int64_t t0 = now_ns();
        size_t run = gt->begin("/mapper", "mapper.tick", "timer", "500 ms", t0);
        {  // its locals are gone before the run's last clock read
          Msg msg;
          uint64_t id = ids.next(MAP);
          msg.data = {id, plans_};
          if (map_->is_activated()) {
            gt->pub("/mapper", "/map", id);
            map_->publish(msg);
          }
        }
        gt->end(run);
      });
    gt->ev("transition", "/mapper", "configure", 1);
    return CallbackReturn::SUCCESS;
  }
  CallbackReturn on_activate(const rclcpp_lifecycle::State & s) override
  {
    LifecycleNode::on_activate(s);
    gt->ev("transition", "/mapper", "activate", 2);
    return CallbackReturn::SUCCESS;
  }

private:
  void plan(
    const std::shared_ptr<rmw_request_id_t>, const Srv::Request::SharedPtr req,
    Srv::Response::SharedPtr res)
  {
    int64_t t0 = now_ns();
    size_t run = gt->begin("/mapper", "mapper.plan", "service", "/plan", t0);
    gt->ev("serve", "/mapper", "/plan", req->uint64_value);
    busy(800);
    slow("mapper.plan");
    uint64_t id = ids.next(PLAN_RESPONSE);
    ++plans_;
    res->uint64_value = id;
    res->int64_value = static_cast<int64_t>(req->uint64_value);
    gt->ev("reply", "/mapper", "/plan", id, req->uint64_value);
    gt->end(run);
  }
  rclcpp_lifecycle::LifecyclePublisher<Msg>::SharedPtr map_;
  rclcpp::Service<Srv>::SharedPtr service_;
  rclcpp::TimerBase::SharedPtr timer_;
  uint64_t plans_ = 0;
};

int main(int argc, char ** argv)
{
  init(argc, argv, "mapper");
  GroundTruth truth("mapper");
  gt = &truth;
  {
    auto node = std::make_shared<Mapper>();
    node->configure();
    node->activate();
    rclcpp::executors::SingleThreadedExecutor executor;
    executor.add_node(node->get_node_base_interface());
    spin(executor, truth);
  }
  return 0;
}
