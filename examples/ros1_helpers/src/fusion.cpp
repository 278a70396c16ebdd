// Process "fusion": lambdas in main() sharing variables of main() they capture by reference.
//   [fusion/imu]    sub /hs/imu    -> nothing; stores the imu message's id in last_imu
//   [fusion/scan]   sub /hs/scan   -> /hs/fused through hs::publish, from the scan and last_imu;
//                                     stores the scan message's id in last_scan
//   [fusion/status] timer 100 ms   -> /hs/status through status_out.send, an hs::Stamper made with
//                                     &status_pub (a pointer member), from last_scan
//   true dependencies: imu -> scan (last_imu), scan -> status (last_scan)
// (The status is made from the scan alone, not from the fused message: a chain of two
// dependencies inside one node, imu -> scan -> status, is one that the data-flow paper's
// Algorithm 1 does not follow, with or without a dependency file.)
#include "helpers.h"

int main(int argc, char** argv) {
  ros::init(argc, argv, "fusion");
  truth::open_log("fusion");
  ros::NodeHandle nh;
  ros::Publisher fused_pub = nh.advertise<truth::Msg>("/hs/fused", 100);
  ros::Publisher status_pub = nh.advertise<truth::Msg>("/hs/status", 100);
  uint64_t last_imu = 0, last_scan = 0, fused_seq = 0;
  hs::Stamper status_out(&status_pub, 4);
  auto imu = nh.subscribe<truth::Msg>("/hs/imu", 100, [&](const truth::Msg::ConstPtr& in) {  // [fusion/imu]
    last_imu = in->data[0];
  });
  auto scan = nh.subscribe<truth::Msg>("/hs/scan", 100, [&](const truth::Msg::ConstPtr& in) {  // [fusion/scan]
    truth::work_us(300);
    truth::Msg out = truth::make_msg(truth::make_id(3, ++fused_seq), {in->data[0], last_imu});
    last_scan = in->data[0];
    hs::publish(fused_pub, out);
  });
  auto status = nh.createTimer(ros::Duration(0.1), [&](const ros::TimerEvent&) {  // [fusion/status]
    if (last_scan) status_out.send({last_scan});
  });
  ros::spin();
  truth::close_log();
  return 0;
}
