// Process "sources": two timers written as lambdas in main().
//   [sources/scan]  timer 20 ms -> /hs/scan  through hs::publish (free template, by reference)
//   [sources/imu]   timer 50 ms -> /hs/imu   through hs::stamp_and_send (two calls deep)
// No dependency between them: each touches only its own counter.
#include "helpers.h"

int main(int argc, char** argv) {
  ros::init(argc, argv, "sources");
  truth::open_log("sources");
  ros::NodeHandle nh;
  ros::Publisher scan_pub = nh.advertise<truth::Msg>("/hs/scan", 100);
  ros::Publisher imu_pub = nh.advertise<truth::Msg>("/hs/imu", 100);
  uint64_t scan_seq = 0, imu_seq = 0;
  auto scan = nh.createTimer(ros::Duration(0.02), [&](const ros::TimerEvent&) {  // [sources/scan]
    truth::work_us(200);
    hs::publish(scan_pub, truth::make_msg(truth::make_id(1, ++scan_seq), {}));
  });
  auto imu = nh.createTimer(ros::Duration(0.05), [&](const ros::TimerEvent&) {  // [sources/imu]
    hs::stamp_and_send(imu_pub, 2, imu_seq, {});
  });
  ros::spin();
  truth::close_log();
  return 0;
}
