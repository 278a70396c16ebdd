// Process "monitor": a second subscriber of /lidar and /lidar_filtered (topics
// with several subscribers), a /plan subscriber, and a 2 Hz timer that calls
// the planner's service.
#include "common.h"

#include <std_srvs/Trigger.h>

using namespace pipeline;

class Monitor {
 public:
  explicit Monitor(GroundTruth& gt) : gt_(gt), nh_("/monitor") {
    sub_lidar_ = nh_.subscribe("/lidar", 100, &Monitor::onLidar, this);
    sub_filtered_ = nh_.subscribe("/lidar_filtered", 100, &Monitor::onFiltered, this);
    sub_plan_ = nh_.subscribe("/plan", 100, &Monitor::onPlan, this);
    // A slow subscriber with a queue of 1: roscpp drops messages in the
    // subscription queue (subscriber side).
    sub_burst_ = nh_.subscribe("/burst", 1, &Monitor::onBurst, this);
    // Published by the rospy node /pyrelay when system.sh runs with -P.
    sub_camera_py_ = nh_.subscribe("/camera_py", 100, &Monitor::onCameraPy, this);
    client_ = nh_.serviceClient<std_srvs::Trigger>("/planner/get_status");
    timer_ = nh_.createTimer(ros::Duration(0.5), &Monitor::onTimer, this);
  }
  void onLidar(const Msg::ConstPtr& in) {
    slow(gt_, "monitor.onLidar");
    gt_.recv(nh_.getNamespace(), "/lidar", *in);
  }
  void onFiltered(const Msg::ConstPtr& in) {
    slow(gt_, "monitor.onFiltered");
    gt_.recv(nh_.getNamespace(), "/lidar_filtered", *in);
  }
  void onPlan(const Msg::ConstPtr& in) {
    slow(gt_, "monitor.onPlan");
    gt_.recv(nh_.getNamespace(), "/plan", *in);
  }
  void onCameraPy(const Msg::ConstPtr& in) {
    slow(gt_, "monitor.onCameraPy");
    gt_.recv(nh_.getNamespace(), "/camera_py", *in);
  }
  void onBurst(const Msg::ConstPtr& in) {
    slow(gt_, "monitor.onBurst");
    gt_.recv(nh_.getNamespace(), "/burst", *in);
    ros::WallDuration(0.03).sleep();
  }
  void onTimer(const ros::TimerEvent&) {
    slow(gt_, "monitor.onTimer");
    gt_.timer(nh_.getNamespace(), 0.5);
    std_srvs::Trigger t;
    bool ok = client_.exists() && client_.call(t);
    gt_.service(nh_.getNamespace(), "/planner/get_status", "srv_call", ok);
  }

 private:
  GroundTruth& gt_;
  ros::NodeHandle nh_;
  ros::Subscriber sub_lidar_, sub_filtered_, sub_plan_, sub_burst_, sub_camera_py_;
  ros::ServiceClient client_;
  ros::Timer timer_;
};

int main(int argc, char** argv) {
  ros::init(argc, argv, "monitor");
  GroundTruth gt("monitor");
  Monitor monitor(gt);
  ros::spin();
  gt.close();
  return 0;
}
