// controller: an action server in its own process, on a SingleThreadedExecutor (README.md).
//   /follow    (test_msgs/Fibonacci) accepts every goal; a 20 Hz timer (std::bind of a member)
//              steps the goal in hand: each step publishes /cmd and a feedback, the 3rd succeeds
//   /path      with a UniquePtr callback (inter-process): keeps the newest path
#include <chrono>
#include <deque>
#include <functional>
#include <memory>

#include "common.hpp"
#include "rclcpp/rclcpp.hpp"
#include "rclcpp_action/rclcpp_action.hpp"
#include "std_msgs/msg/u_int64_multi_array.hpp"
#include "test_msgs/action/fibonacci.hpp"

using Msg = std_msgs::msg::UInt64MultiArray;
using Follow = test_msgs::action::Fibonacci;
using GoalHandle = rclcpp_action::ServerGoalHandle<Follow>;
using namespace std::chrono_literals;
using namespace cpp_pipeline;

static GroundTruth * gt;
static Ids ids;
static Slow slow;

class Controller : public rclcpp::Node
{
public:
  Controller()
  : Node("controller")
  {
    cmd_ = create_publisher<Msg>("/cmd", 10);
    path_ = create_subscription<Msg>(
      "/path", 10, [this](Msg::UniquePtr msg) {
        int64_t t0 = now_ns();
        size_t run = gt->begin("/controller", "controller.on_path", "subscription", "/path", t0);
        gt->ev("recv", "/controller", "/path", msg->data[0]);
        last_path_ = msg->data[0];
        gt->end(run);
      });
    server_ = rclcpp_action::create_server<Follow>(
      this, "/follow",
      [](const rclcpp_action::GoalUUID &, std::shared_ptr<const Follow::Goal> goal) {
        int64_t t0 = now_ns();
        size_t run = gt->begin("/controller", "controller.on_goal", "action", "/follow", t0);
        gt->ev("goal_recv", "/controller", "/follow", goal_id(goal->order));
        gt->end(run);
        return rclcpp_action::GoalResponse::ACCEPT_AND_EXECUTE;
      },
      [](const std::shared_ptr<GoalHandle>) {return rclcpp_action::CancelResponse::REJECT;},
      [this](const std::shared_ptr<GoalHandle> h) {
        int64_t t0 = now_ns();
        size_t run = gt->begin("/controller", "controller.on_accepted", "action", "/follow", t0);
        goals_.push_back(h);
        gt->end(run);
      });
    timer_ = create_wall_timer(50ms, std::bind(&Controller::step, this));
  }

private:
  static uint64_t goal_id(int32_t order)
  {
    return (static_cast<uint64_t>(FOLLOW_GOAL) << 32) | static_cast<uint32_t>(order);
  }

  void step()
  {
    int64_t t0 = now_ns();
    size_t run = gt->begin("/controller", "controller.step", "timer", "50 ms", t0);
    if (!goals_.empty()) {  // its locals are gone before the run's last clock read
      auto h = goals_.front();
      int32_t order = h->get_goal()->order;
      uint64_t gid = goal_id(order);
      busy(300);
      slow("controller.step");
      int32_t k = ++steps_;
      Msg cmd;
      uint64_t id = ids.next(CMD);
      cmd.data = {id, gid, last_path_};
      gt->pub("/controller", "/cmd", id, {gid, last_path_});
      cmd_->publish(cmd);
      auto fb = std::make_shared<Follow::Feedback>();
      fb->sequence = {order, k};
      gt->ev("feedback", "/controller", "/follow", gid, static_cast<uint64_t>(k));
      h->publish_feedback(fb);
      if (k == 3) {
        auto result = std::make_shared<Follow::Result>();
        result->sequence = {order};
        gt->ev("result", "/controller", "/follow", gid);
        h->succeed(result);
        goals_.pop_front();
        steps_ = 0;
      }
    }
    gt->end(run);
  }

  rclcpp::Publisher<Msg>::SharedPtr cmd_;
  rclcpp::Subscription<Msg>::SharedPtr path_;
  rclcpp_action::Server<Follow>::SharedPtr server_;
  rclcpp::TimerBase::SharedPtr timer_;
  std::deque<std::shared_ptr<GoalHandle>> goals_;
  uint64_t last_path_ = 0;
  int32_t steps_ = 0;
};

int main(int argc, char ** argv)
{
  init(argc, argv, "controller");
  GroundTruth truth("controller");
  gt = &truth;
  {
    auto node = std::make_shared<Controller>();
    rclcpp::executors::SingleThreadedExecutor executor;
    executor.add_node(node);
    spin(executor, truth);
  }
  return 0;
}
