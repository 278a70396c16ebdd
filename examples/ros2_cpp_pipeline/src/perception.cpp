// perception: three nodes composed in one process with intra-process communication on, on a
// MultiThreadedExecutor of 2 threads (README.md). The timers start once the other processes'
// subscriptions to /detections and /scan are matched.
//   /camera    a timer (a lambda) at 20 Hz publishes /image as a unique_ptr (its only
//              subscriber is /detector, in this process: intra-process only)
//   /lidar     a timer (std::bind of a member) at 10 Hz publishes /scan (subscribers: /detector
//              in this process, /planner in another: intra- and inter-process)
//   /detector  /image with a UniquePtr callback, in a reentrant callback group: publishes
//              /detections (its only subscriber is in another process); /scan with a
//              ConstSharedPtr callback (std::bind of a member) and a 5 Hz health timer, both in
//              a mutually exclusive callback group
#include <chrono>
#include <functional>
#include <memory>

#include "common.hpp"
#include "rclcpp/rclcpp.hpp"
#include "std_msgs/msg/u_int64_multi_array.hpp"

using Msg = std_msgs::msg::UInt64MultiArray;
using namespace std::chrono_literals;
using namespace cpp_pipeline;

static GroundTruth * gt;
static Ids ids;
static Slow slow;

class Camera : public rclcpp::Node
{
public:
  explicit Camera(const rclcpp::NodeOptions & o)
  : Node("camera", o)
  {
    pub_ = create_publisher<Msg>("/image", 10);
  }
  void start()
  {
    timer_ = create_wall_timer(
      50ms, [this]() {
        int64_t t0 = now_ns();
        size_t run = gt->begin("/camera", "camera.tick", "timer", "50 ms", t0);
        auto msg = std::make_unique<Msg>();
        msg->data.resize(640, 7);  // a small image
        uint64_t id = ids.next(IMAGE);
        msg->data[0] = id;
        slow("camera.tick");
        gt->pub("/camera", "/image", id);
        pub_->publish(std::move(msg));
        gt->end(run);
      });
  }

private:
  rclcpp::Publisher<Msg>::SharedPtr pub_;
  rclcpp::TimerBase::SharedPtr timer_;
};

class Lidar : public rclcpp::Node
{
public:
  explicit Lidar(const rclcpp::NodeOptions & o)
  : Node("lidar", o)
  {
    pub_ = create_publisher<Msg>("/scan", 10);
  }
  void start() {timer_ = create_wall_timer(100ms, std::bind(&Lidar::tick, this));}
  size_t subscribers() const {return pub_->get_subscription_count();}

private:
  void tick()
  {
    int64_t t0 = now_ns();
    size_t run = gt->begin("/lidar", "lidar.tick", "timer", "100 ms", t0);
    {  // its locals are gone before the run's last clock read
      Msg msg;
      msg.data.resize(64, 3);
      uint64_t id = ids.next(SCAN);
      msg.data[0] = id;
      busy(200);
      slow("lidar.tick");
      gt->pub("/lidar", "/scan", id);
      pub_->publish(msg);
    }
    gt->end(run);
  }
  rclcpp::Publisher<Msg>::SharedPtr pub_;
  rclcpp::TimerBase::SharedPtr timer_;
};

class Detector : public rclcpp::Node
{
public:
  explicit Detector(const rclcpp::NodeOptions & o)
  : Node("detector", o)
  {
    reentrant_ = create_callback_group(rclcpp::CallbackGroupType::Reentrant);
    exclusive_ = create_callback_group(rclcpp::CallbackGroupType::MutuallyExclusive);
    pub_ = create_publisher<Msg>("/detections", 10);
    rclcpp::SubscriptionOptions image_options;
    image_options.callback_group = reentrant_;
    image_sub_ = create_subscription<Msg>(
      "/image", 10, [this](Msg::UniquePtr msg) {
        int64_t t0 = now_ns();
        size_t run = gt->begin("/detector", "detector.on_image", "subscription", "/image", t0);
        on_image(std::move(msg));
        gt->end(run);
      }, image_options);
    rclcpp::SubscriptionOptions scan_options;
    scan_options.callback_group = exclusive_;
    scan_sub_ = create_subscription<Msg>(
      "/scan", 10, std::bind(&Detector::on_scan, this, std::placeholders::_1), scan_options);
    health_ = create_wall_timer(
      200ms, [this]() {
        int64_t t0 = now_ns();
        size_t run = gt->begin("/detector", "detector.health", "timer", "200 ms", t0);
        busy(100);
        slow("detector.health");
        gt->end(run);
      }, exclusive_);
  }

  size_t subscribers() const {return pub_->get_subscription_count();}

private:
  void on_image(Msg::UniquePtr msg)
  {
    uint64_t image = msg->data[0];
    gt->ev("recv", "/detector", "/image", image);
    busy(1500);  // the detection
    slow("detector.on_image");
    auto out = std::make_unique<Msg>();
    uint64_t id = ids.next(DETECTIONS);
    uint64_t scan = last_scan_.load();
    out->data = {id, image, scan};
    gt->pub("/detector", "/detections", id, {image, scan});
    pub_->publish(std::move(out));
  }
  void on_scan(Msg::ConstSharedPtr msg)
  {
    int64_t t0 = now_ns();
    size_t run = gt->begin("/detector", "detector.on_scan", "subscription", "/scan", t0);
    gt->ev("recv", "/detector", "/scan", msg->data[0]);
    busy(300);
    slow("detector.on_scan");
    last_scan_.store(msg->data[0]);
    gt->end(run);
  }
  rclcpp::CallbackGroup::SharedPtr reentrant_, exclusive_;
  rclcpp::Publisher<Msg>::SharedPtr pub_;
  rclcpp::Subscription<Msg>::SharedPtr image_sub_, scan_sub_;
  rclcpp::TimerBase::SharedPtr health_;
  std::atomic<uint64_t> last_scan_{0};
};

int main(int argc, char ** argv)
{
  init(argc, argv, "perception");
  GroundTruth truth("perception");
  gt = &truth;
  {
    auto options = rclcpp::NodeOptions().use_intra_process_comms(true);
    // receiving end first
    auto detector = std::make_shared<Detector>(options);
    auto lidar = std::make_shared<Lidar>(options);
    auto camera = std::make_shared<Camera>(options);
    // The sensors start when the other processes' subscriptions are matched (discovery):
    // /detections by /planner, /scan by /planner and /detector.
    int64_t deadline = now_ns() + 10000000000LL;
    while ((detector->subscribers() < 1 || lidar->subscribers() < 2) && now_ns() < deadline) {
      std::this_thread::sleep_for(20ms);
    }
    camera->start();
    lidar->start();
    rclcpp::executors::MultiThreadedExecutor executor(rclcpp::ExecutorOptions(), 2);
    executor.add_node(detector);
    executor.add_node(lidar);
    executor.add_node(camera);
    spin(executor, truth);
  }
  return 0;
}
