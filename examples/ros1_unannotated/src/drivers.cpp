// Process "drivers": the system's sources, one node with one timer per sensor.
// Each timer publishes a message that has no input.
//   /sensing/lidar 20 Hz, /sensing/imu 50 Hz, /sensing/camera 10 Hz,
//   /sensing/gnss 10 Hz, /vehicle/status 25 Hz (UNANNOTATED_<NAME>_HZ overrides).
#include "truth.h"

class Driver {
 public:
  Driver(ros::NodeHandle& nh, const std::string& topic, double hz, uint32_t code) : code_(code) {
    pub_ = nh.advertise<truth::Msg>(topic, 100);
    timer_ = nh.createTimer(ros::Duration(1.0 / hz), &Driver::onTimer, this);
  }

  void onTimer(const ros::TimerEvent&) {
    truth::Msg m = truth::make_msg(truth::make_id(code_, ++seq_), {});
    truth::log_pub(pub_, m);
    pub_.publish(m);
  }

 private:
  ros::Publisher pub_;
  ros::Timer timer_;
  uint32_t code_;
  uint64_t seq_ = 0;
};

int main(int argc, char** argv) {
  ros::init(argc, argv, "drivers");
  truth::open_log("drivers");
  ros::NodeHandle nh;
  Driver lidar(nh, "/sensing/lidar", truth::env_rate("UNANNOTATED_LIDAR_HZ", 20), 1);
  Driver imu(nh, "/sensing/imu", truth::env_rate("UNANNOTATED_IMU_HZ", 50), 2);
  Driver camera(nh, "/sensing/camera", truth::env_rate("UNANNOTATED_CAMERA_HZ", 10), 3);
  Driver gnss(nh, "/sensing/gnss", truth::env_rate("UNANNOTATED_GNSS_HZ", 10), 4);
  Driver status(nh, "/vehicle/status", truth::env_rate("UNANNOTATED_STATUS_HZ", 25), 5);
  ros::spin();
  truth::close_log();
  return 0;
}
