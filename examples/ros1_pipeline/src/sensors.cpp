// Process "sensors": three timer-driven sensor nodes (nodelet-style: one
// process, one NodeHandle namespace per node) at different rates.
#include "common.h"

#include <csignal>

using namespace pipeline;

class SensorNode {
 public:
  SensorNode(GroundTruth& gt, const std::string& ns, const std::string& topic, double hz, uint32_t code,
             size_t padding)
      : gt_(gt), nh_(ns), ids_(code), padding_(padding), period_(1.0 / hz), slow_name_(ns.substr(ns.rfind('/') + 1) + ".onTimer") {
    pub_ = nh_.advertise<Msg>(topic, 100);
    timer_ = nh_.createTimer(ros::Duration(period_), &SensorNode::onTimer, this);
  }

  void onTimer(const ros::TimerEvent&) {
    slow(gt_, slow_name_.c_str());
    gt_.timer(nh_.getNamespace(), period_);
    // PIPELINE_CRASH_AFTER_S: crash on purpose (tests record a crashing command).
    static const double crash_after = param_rate("PIPELINE_CRASH_AFTER_S", 0);
    static const int64_t t0 = mono_ns();
    if (crash_after > 0 && mono_ns() - t0 > int64_t(crash_after * 1e9)) raise(SIGSEGV);
    Msg m = make_msg(ids_.next(), {}, padding_);
    gt_.pub(nh_.getNamespace(), pub_, m);
    pub_.publish(m);
  }

 private:
  GroundTruth& gt_;
  ros::NodeHandle nh_;
  ros::Publisher pub_;
  ros::Timer timer_;
  IdSource ids_;
  size_t padding_;
  double period_;
  std::string slow_name_;  // lidar.onTimer, imu.onTimer, camera.onTimer
};

// A bursty source: 3 messages back to back, with a publisher queue of 1, so
// roscpp drops messages in the per-connection outbox (publisher side).
class BurstNode {
 public:
  explicit BurstNode(GroundTruth& gt) : gt_(gt), nh_("/sensors/burst"), ids_(4) {
    pub_ = nh_.advertise<Msg>("/burst", 1);
    timer_ = nh_.createTimer(ros::Duration(0.2), &BurstNode::onTimer, this);
  }
  void onTimer(const ros::TimerEvent&) {
    slow(gt_, "burst.onTimer");
    gt_.timer(nh_.getNamespace(), 0.2);
    for (int i = 0; i < 3; ++i) {
      Msg m = make_msg(ids_.next(), {}, 8192);
      gt_.pub(nh_.getNamespace(), pub_, m);
      pub_.publish(m);
    }
  }

 private:
  GroundTruth& gt_;
  ros::NodeHandle nh_;
  ros::Publisher pub_;
  ros::Timer timer_;
  IdSource ids_;
};

int main(int argc, char** argv) {
  ros::init(argc, argv, "sensors");
  GroundTruth gt("sensors");
  SensorNode lidar(gt, "/sensors/lidar", "/lidar", param_rate("PIPELINE_LIDAR_HZ", 20), 1, 4096);
  SensorNode imu(gt, "/sensors/imu", "/imu", param_rate("PIPELINE_IMU_HZ", 50), 2, 0);
  SensorNode camera(gt, "/sensors/camera", "/camera", param_rate("PIPELINE_CAMERA_HZ", 10), 3, 32768);
  BurstNode burst(gt);
  ros::spin();
  gt.close();
  return 0;
}
