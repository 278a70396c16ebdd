// One binary, four nodes: each process runs the node its first argument names
// (the role switch), every callback is a lambda in main(), and the nodes keep
// their state in function-local statics.
//
//   onebinary sensors   timers: /ob/scan 37 Hz, /ob/objects 20 Hz, /ob/imu 50 Hz, /ob/cmd 10 Hz
//   onebinary tracker   /ob/objects and /ob/imu subscriptions store the latest of each (two
//                       `static std::string`, under a mutex); a 10 Hz timer publishes /ob/track
//                       from both
//   onebinary mapper    a 2-thread AsyncSpinner: the /ob/scan subscription stores the latest scan
//                       (a `static uint64_t`, under a mutex) in the middle of its run, a 20 Hz
//                       timer reads it in the middle of its own and publishes /ob/map; a scan run
//                       on the other thread can write while the timer runs. And /ob/cmd ->
//                       /ob/cmd_echo, published by the subscription from its message alone
//   onebinary gateway   two independent pipelines: /ob/track -> /ob/control, /ob/map -> /ob/plan
//
// Every publishing callback publishes through one helper lambda of main() (`send`),
// which reads and writes the process's message counter (g_msg_seq) and the log's
// line count (g_log): bookkeeping, not data flow.
//
// The true intra-node dependencies (callback A -> B: A writes state that B reads before it
// publishes), callbacks named by the [role/what] comment on their registration line:
// [tracker/objects] -> [tracker/timer] (last_obj), [tracker/imu] -> [tracker/timer]
// (last_imu), [mapper/scan] -> [mapper/timer] (latest_scan). None between the gateway's two
// subscriptions, none into or out of [mapper/cmd], none between the sensors' timers.
#include "log.h"

#include <atomic>
#include <string>
#include <vector>

using onebinary::Msg;

// The process's message counter: every publishing callback reads and writes it.
std::atomic<uint64_t> g_msg_seq{0};
// The ground-truth log: every publishing callback writes a line (and counts it).
onebinary::Log g_log;
// The role's code, the high half of its message ids (set in main before any callback runs).
uint32_t g_role_code = 0;

uint64_t next_id() { return (uint64_t(g_role_code) << 32) | ++g_msg_seq; }

// The id in "<what> <id>" (0 for "": nothing received yet).
uint64_t id_of(const std::string& s) { return s.empty() ? 0 : std::stoull(s.substr(s.find(' ') + 1)); }

int main(int argc, char** argv) {
  ros::init(argc, argv, argc > 1 ? argv[1] : "onebinary");
  const std::string role = argc > 1 ? argv[1] : "";
  if (role != "sensors" && role != "tracker" && role != "mapper" && role != "gateway") {
    fprintf(stderr, "usage: onebinary sensors|tracker|mapper|gateway\n");
    return 2;
  }
  g_log.open(role);
  ros::NodeHandle nh;
  ros::Publisher pub_a, pub_b, pub_c, pub_d;
  std::vector<ros::Subscriber> subs;
  std::vector<ros::Timer> timers;
  bool two_threads = false;
  // Stamps a message with the next id, logs it and publishes it: every publishing callback calls it.
  auto send = [&](ros::Publisher& pub, const std::vector<uint64_t>& inputs) {
    Msg m = onebinary::make_msg(next_id(), inputs);
    g_log.pub(pub, m);
    pub.publish(m);
    return m.data[0];
  };

  if (role == "sensors") {
    g_role_code = 1;
    pub_a = nh.advertise<Msg>("/ob/scan", 100);
    pub_b = nh.advertise<Msg>("/ob/objects", 100);
    pub_c = nh.advertise<Msg>("/ob/imu", 100);
    pub_d = nh.advertise<Msg>("/ob/cmd", 100);
    // 37 Hz: not a multiple of the mapper's 20 Hz, so that its scan runs drift across the timer's
    const double scan_hz = onebinary::env_rate("ONEBINARY_SCAN_HZ", 37);
    timers.push_back(nh.createTimer(ros::Duration(1.0 / scan_hz), [&](const ros::TimerEvent&) {  // [sensors/scan]
      send(pub_a, {});
    }));
    timers.push_back(nh.createTimer(ros::Duration(0.05), [&](const ros::TimerEvent&) {  // [sensors/objects]
      send(pub_b, {});
    }));
    timers.push_back(nh.createTimer(ros::Duration(0.02), [&](const ros::TimerEvent&) {  // [sensors/imu]
      send(pub_c, {});
    }));
    timers.push_back(nh.createTimer(ros::Duration(0.1), [&](const ros::TimerEvent&) {  // [sensors/cmd]
      send(pub_d, {});
    }));
  } else if (role == "tracker") {
    g_role_code = 2;
    static std::mutex tracker_mu;
    static std::string last_obj, last_imu;  // what the timer publishes from
    pub_a = nh.advertise<Msg>("/ob/track", 100);
    subs.push_back(nh.subscribe<Msg>("/ob/objects", 100, [&](const Msg::ConstPtr& in) {  // [tracker/objects]
      std::lock_guard<std::mutex> lock(tracker_mu);
      last_obj = "object " + std::to_string(in->data[0]);
    }));
    subs.push_back(nh.subscribe<Msg>("/ob/imu", 100, [&](const Msg::ConstPtr& in) {  // [tracker/imu]
      std::lock_guard<std::mutex> lock(tracker_mu);
      last_imu = "imu " + std::to_string(in->data[0]);
    }));
    timers.push_back(nh.createTimer(ros::Duration(0.1), [&](const ros::TimerEvent&) {  // [tracker/timer]
      onebinary::work_us(1000);
      std::string obj, imu;
      {
        std::lock_guard<std::mutex> lock(tracker_mu);
        obj = last_obj;
        imu = last_imu;
      }
      send(pub_a, {id_of(obj), id_of(imu)});
    }));
  } else if (role == "mapper") {
    g_role_code = 3;
    two_threads = true;
    static std::mutex map_mu;
    static uint64_t latest_scan = 0;  // written by the scan subscription, read by the timer
    pub_a = nh.advertise<Msg>("/ob/map", 100);
    pub_b = nh.advertise<Msg>("/ob/cmd_echo", 100);
    subs.push_back(nh.subscribe<Msg>("/ob/scan", 100, [&](const Msg::ConstPtr& in) {  // [mapper/scan]
      const int64_t start = onebinary::mono_ns();
      onebinary::work_us(1000);
      {
        std::lock_guard<std::mutex> lock(map_mu);
        latest_scan = in->data[0];
      }
      onebinary::work_us(1000);
      g_log.run("scan", start, onebinary::mono_ns(), "\"wrote\":" + std::to_string(in->data[0]));
    }));
    timers.push_back(nh.createTimer(ros::Duration(0.05), [&](const ros::TimerEvent&) {  // [mapper/timer]
      const int64_t start = onebinary::mono_ns();
      onebinary::work_us(2000);
      uint64_t scan;
      {
        std::lock_guard<std::mutex> lock(map_mu);
        scan = latest_scan;
      }
      onebinary::work_us(2000);
      const uint64_t out = send(pub_a, {scan});
      g_log.run("map", start, onebinary::mono_ns(),
                "\"read\":" + std::to_string(scan) + ",\"published\":" + std::to_string(out));
    }));
    subs.push_back(nh.subscribe<Msg>("/ob/cmd", 100, [&](const Msg::ConstPtr& in) {  // [mapper/cmd]
      send(pub_b, {in->data[0]});
    }));
  } else {  // gateway
    g_role_code = 4;
    pub_a = nh.advertise<Msg>("/ob/control", 100);
    pub_b = nh.advertise<Msg>("/ob/plan", 100);
    subs.push_back(nh.subscribe<Msg>("/ob/track", 100, [&](const Msg::ConstPtr& in) {  // [gateway/track]
      onebinary::work_us(200);
      send(pub_a, {in->data[0]});
    }));
    subs.push_back(nh.subscribe<Msg>("/ob/map", 100, [&](const Msg::ConstPtr& in) {  // [gateway/map]
      onebinary::work_us(200);
      send(pub_b, {in->data[0]});
    }));
  }

  if (two_threads) {
    ros::AsyncSpinner spinner(2);
    spinner.start();
    ros::waitForShutdown();
  } else {
    ros::spin();
  }
  g_log.close();
  return 0;
}
