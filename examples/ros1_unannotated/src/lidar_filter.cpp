// Process "lidar_filter": a direct node. Each /sensing/lidar message is filtered
// and published on /perception/points inside its own callback.
#include "truth.h"

class LidarFilter {
 public:
  explicit LidarFilter(ros::NodeHandle& nh) {
    pub_ = nh.advertise<truth::Msg>("/perception/points", 100);
    sub_ = nh.subscribe("/sensing/lidar", 100, &LidarFilter::onLidar, this);
  }

  void onLidar(const truth::Msg::ConstPtr& in) {
    truth::work_us(300);
    truth::Msg out = truth::make_msg(truth::make_id(10, ++seq_), {in->data[0]});
    truth::log_pub(pub_, out);
    pub_.publish(out);
  }

 private:
  ros::Publisher pub_;
  ros::Subscriber sub_;
  uint64_t seq_ = 0;
};

int main(int argc, char** argv) {
  ros::init(argc, argv, "lidar_filter");
  truth::open_log("lidar_filter");
  ros::NodeHandle nh;
  LidarFilter filter(nh);
  ros::spin();
  truth::close_log();
  return 0;
}
