// Process "gateway": two independent pipelines in one node, written as lambdas
// in main():
//   /sensing/gnss   -> /localization/gnss_pose  (direct)
//   /vehicle/status -> /vehicle/velocity        (direct)
// They share nothing but `frame`, which both only read. Each lambda captures its
// own publisher and counter by reference.
//   true dependencies: none.
#include "truth.h"

int main(int argc, char** argv) {
  ros::init(argc, argv, "gateway");
  truth::open_log("gateway");
  ros::NodeHandle nh;
  const std::string frame = "map";

  ros::Publisher gnss_pub = nh.advertise<truth::Msg>("/localization/gnss_pose", 100);
  uint64_t gnss_seq = 0;
  ros::Subscriber gnss_sub =
      nh.subscribe<truth::Msg>("/sensing/gnss", 100, [&](const truth::Msg::ConstPtr& in) {
        truth::work_us(150);
        truth::Msg out = truth::make_msg(truth::make_id(50, ++gnss_seq), {in->data[0]});
        out.layout.dim.resize(1);
        out.layout.dim[0].label = frame;
        truth::log_pub(gnss_pub, out);
        gnss_pub.publish(out);
      });

  ros::Publisher velocity_pub = nh.advertise<truth::Msg>("/vehicle/velocity", 100);
  uint64_t velocity_seq = 0;
  ros::Subscriber status_sub =
      nh.subscribe<truth::Msg>("/vehicle/status", 100, [&](const truth::Msg::ConstPtr& in) {
        truth::work_us(100);
        truth::Msg out = truth::make_msg(truth::make_id(51, ++velocity_seq), {in->data[0]});
        out.layout.dim.resize(1);
        out.layout.dim[0].label = frame;
        truth::log_pub(velocity_pub, out);
        velocity_pub.publish(out);
      });

  ros::spin();
  truth::close_log();
  return 0;
}
