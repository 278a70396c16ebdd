// Process "localizer": a partial synchronous node. A /perception/points message
// triggers a /localization/pose publication that uses it and the latest
// /sensing/imu message; the imu callback only stores that message's id.
//   true dependency: onImu -> onPoints (onImu writes imu_id_, onPoints reads it)
#include "truth.h"

class Localizer {
 public:
  explicit Localizer(ros::NodeHandle& nh) {
    pub_ = nh.advertise<truth::Msg>("/localization/pose", 100);
    sub_points_ = nh.subscribe("/perception/points", 100, &Localizer::onPoints, this);
    sub_imu_ = nh.subscribe("/sensing/imu", 100, &Localizer::onImu, this);
  }

  void onImu(const truth::Msg::ConstPtr& in) {
    imu_id_ = in->data[0];
    ++imu_count_;
  }

  void onPoints(const truth::Msg::ConstPtr& in) {
    truth::work_us(500);
    truth::Msg out = truth::make_msg(truth::make_id(20, ++seq_), {in->data[0], imu_id_});
    truth::log_pub(pub_, out);
    pub_.publish(out);
  }

 private:
  ros::Publisher pub_;
  ros::Subscriber sub_points_, sub_imu_;
  uint64_t imu_id_ = 0;
  uint64_t imu_count_ = 0;
  uint64_t seq_ = 0;
};

int main(int argc, char** argv) {
  ros::init(argc, argv, "localizer");
  truth::open_log("localizer");
  ros::NodeHandle nh;
  Localizer localizer(nh);
  ros::spin();
  truth::close_log();
  return 0;
}
