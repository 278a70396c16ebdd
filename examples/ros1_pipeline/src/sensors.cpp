// Process "sensors": three timer-driven sensor nodes (nodelet-style: one
// process, one NodeHandle namespace per node) at different rates.
#include "common.h"

using namespace pipeline;

class SensorNode {
 public:
  SensorNode(GroundTruth& gt, const std::string& ns, const std::string& topic, double hz, uint32_t code,
             size_t padding)
      : gt_(gt), nh_(ns), ids_(code), padding_(padding), period_(1.0 / hz) {
    pub_ = nh_.advertise<Msg>(topic, 100);
    timer_ = nh_.createTimer(ros::Duration(period_), &SensorNode::onTimer, this);
  }

  void onTimer(const ros::TimerEvent&) {
    gt_.timer(nh_.getNamespace(), period_);
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
};

int main(int argc, char** argv) {
  ros::init(argc, argv, "sensors");
  GroundTruth gt("sensors");
  SensorNode lidar(gt, "/sensors/lidar", "/lidar", param_rate("PIPELINE_LIDAR_HZ", 20), 1, 4096);
  SensorNode imu(gt, "/sensors/imu", "/imu", param_rate("PIPELINE_IMU_HZ", 50), 2, 0);
  SensorNode camera(gt, "/sensors/camera", "/camera", param_rate("PIPELINE_CAMERA_HZ", 10), 3, 32768);
  ros::spin();
  gt.close();
  return 0;
}
