// planner: one node in its own process, on a SingleThreadedExecutor (README.md).
//   /detections with a SharedPtr callback (std::bind of a member): every 2nd detection calls
//              the service /plan (test_msgs/BasicTypes) with a response callback
//   /scan      a const-reference callback (a lambda): keeps the newest scan
//   the response callback publishes /path and, every 4th plan, sends a goal to the action
//   /follow (test_msgs/Fibonacci) with goal-response, feedback and result callbacks
#include <functional>
#include <memory>

#include "common.hpp"
#include "rclcpp/rclcpp.hpp"
#include "rclcpp_action/rclcpp_action.hpp"
#include "std_msgs/msg/u_int64_multi_array.hpp"
#include "test_msgs/action/fibonacci.hpp"
#include "test_msgs/srv/basic_types.hpp"

using Msg = std_msgs::msg::UInt64MultiArray;
using Srv = test_msgs::srv::BasicTypes;
using Follow = test_msgs::action::Fibonacci;
using GoalHandle = rclcpp_action::ClientGoalHandle<Follow>;
using namespace cpp_pipeline;

static GroundTruth * gt;
static Ids ids;
static Slow slow;

class Planner : public rclcpp::Node
{
public:
  Planner()
  : Node("planner")
  {
    path_ = create_publisher<Msg>("/path", 10);
    client_ = create_client<Srv>("/plan");
    follow_ = rclcpp_action::create_client<Follow>(this, "/follow");
    detections_ = create_subscription<Msg>(
      "/detections", 10, std::bind(&Planner::on_detections, this, std::placeholders::_1));
    scan_ = create_subscription<Msg>(
      "/scan", 10, [this](const Msg & msg) {
        int64_t t0 = now_ns();
        size_t run = gt->begin("/planner", "planner.on_scan", "subscription", "/scan", t0);
        gt->ev("recv", "/planner", "/scan", msg.data[0]);
        last_scan_ = msg.data[0];
        gt->end(run);
      });
  }

  bool wait_for_servers()
  {
    using namespace std::chrono_literals;
    return client_->wait_for_service(10s) && follow_->wait_for_action_server(10s);
  }

private:
  void on_detections(const Msg::SharedPtr msg)
  {
    int64_t t0 = now_ns();
    size_t run = gt->begin("/planner", "planner.on_detections", "subscription", "/detections", t0);
    uint64_t det = msg->data[0];
    gt->ev("recv", "/planner", "/detections", det);
    busy(400);
    slow("planner.on_detections");
    if (++detections_seen_ % 2 == 0) {
      auto req = std::make_shared<Srv::Request>();
      uint64_t id = ids.next(PLAN_REQUEST);
      req->uint64_value = id;
      req->int64_value = static_cast<int64_t>(det);
      gt->ev("request", "/planner", "/plan", id, det);
      client_->async_send_request(
        req, [this](rclcpp::Client<Srv>::SharedFuture f) {
          int64_t t0 = now_ns();
          size_t run = gt->begin("/planner", "planner.on_plan", "client", "/plan", t0);
          on_plan(f.get());
          gt->end(run);
        });
    }
    gt->end(run);
  }

  void on_plan(Srv::Response::SharedPtr res)
  {
    uint64_t response = res->uint64_value;
    gt->ev("response", "/planner", "/plan", response);
    busy(200);
    slow("planner.on_plan");
    Msg path;
    uint64_t id = ids.next(PATH);
    path.data = {id, response, last_scan_};
    gt->pub("/planner", "/path", id, {response, last_scan_});
    path_->publish(path);
    if (++plans_ % 4 == 0) {
      Follow::Goal goal;
      goal.order = static_cast<int32_t>(++goals_);
      uint64_t gid = (static_cast<uint64_t>(FOLLOW_GOAL) << 32) | goals_;
      auto options = rclcpp_action::Client<Follow>::SendGoalOptions();
      options.goal_response_callback = [gid](const GoalHandle::SharedPtr & h) {
          int64_t t0 = now_ns();
          size_t run = gt->begin("/planner", "planner.on_goal_response", "client", "/follow", t0);
          gt->ev("goal_accepted", "/planner", "/follow", gid, h ? 1 : 0);
          gt->end(run);
        };
      options.feedback_callback = [gid](GoalHandle::SharedPtr, const std::shared_ptr<const Follow::Feedback> fb) {
          int64_t t0 = now_ns();
          size_t run = gt->begin("/planner", "planner.on_feedback", "subscription", "/follow", t0);
          gt->ev("feedback_recv", "/planner", "/follow", gid, fb->sequence.size() > 1 ? fb->sequence[1] : 0);
          gt->end(run);
        };
      options.result_callback = [gid](const GoalHandle::WrappedResult & r) {
          int64_t t0 = now_ns();
          size_t run = gt->begin("/planner", "planner.on_result", "client", "/follow", t0);
          gt->ev("result_recv", "/planner", "/follow", gid, static_cast<uint64_t>(r.code));
          gt->end(run);
        };
      gt->ev("goal", "/planner", "/follow", gid, id);
      follow_->async_send_goal(goal, options);
    }
  }

  rclcpp::Publisher<Msg>::SharedPtr path_;
  rclcpp::Client<Srv>::SharedPtr client_;
  rclcpp_action::Client<Follow>::SharedPtr follow_;
  rclcpp::Subscription<Msg>::SharedPtr detections_, scan_;
  uint64_t last_scan_ = 0, detections_seen_ = 0, plans_ = 0, goals_ = 0;
};

int main(int argc, char ** argv)
{
  init(argc, argv, "planner");
  GroundTruth truth("planner");
  gt = &truth;
  {
    auto node = std::make_shared<Planner>();
    if (!node->wait_for_servers()) {
      std::fprintf(stderr, "planner: /plan or /follow did not appear\n");
      return 1;
    }
    rclcpp::executors::SingleThreadedExecutor executor;
    executor.add_node(node);
    spin(executor, truth);
  }
  return 0;
}
