// Process "detector": a subscription and a timer that share state. The
// /sensing/camera callback stores the latest image's id and marks it fresh; a
// 20 Hz timer publishes /perception/objects from a fresh image (and nothing
// when no new image came since its last run).
//   true dependency: onCamera -> onTimer (onCamera writes latest_camera_ and
//   fresh_, onTimer reads them; onTimer's fresh_ = false is a write only)
#include "truth.h"

class Detector {
 public:
  explicit Detector(ros::NodeHandle& nh) {
    pub_ = nh.advertise<truth::Msg>("/perception/objects", 100);
    sub_ = nh.subscribe("/sensing/camera", 100, &Detector::onCamera, this);
    timer_ = nh.createTimer(ros::Duration(1.0 / truth::env_rate("UNANNOTATED_DETECTOR_HZ", 20)), &Detector::onTimer,
                            this);
  }

  void onCamera(const truth::Msg::ConstPtr& in) {
    latest_camera_ = in->data[0];
    fresh_ = true;
  }

  void onTimer(const ros::TimerEvent&) {
    if (!fresh_) return;
    fresh_ = false;
    truth::work_us(800);
    truth::Msg out = truth::make_msg(truth::make_id(30, ++seq_), {latest_camera_});
    truth::log_pub(pub_, out);
    pub_.publish(out);
  }

 private:
  ros::Publisher pub_;
  ros::Subscriber sub_;
  ros::Timer timer_;
  uint64_t latest_camera_ = 0;
  bool fresh_ = false;
  uint64_t seq_ = 0;
};

int main(int argc, char** argv) {
  ros::init(argc, argv, "detector");
  truth::open_log("detector");
  ros::NodeHandle nh;
  Detector detector(nh);
  ros::spin();
  truth::close_log();
  return 0;
}
