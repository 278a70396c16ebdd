// ROS 1 ping-pong latency benchmark (roscpp, TCPROS with TCP_NODELAY).
//
//   pingpong pong                      echo /ping back on /pong, stamping its receive time
//   pingpong ping SIZE RATE SECONDS OUT.csv
//   pingpong loop SIZE ITERATIONS      in-process CPU cost per message (see below)
//
// ping publishes SIZE-byte std_msgs/UInt8MultiArray messages on /ping at RATE Hz
// for SECONDS. Bytes 0..7 hold the CLOCK_MONOTONIC time taken right before
// publish(), bytes 8..15 a sequence number; pong writes its callback-entry time
// into bytes 16..23 and publishes the message on /pong. ping writes one CSV line
// per returned message: seq, one-way latency ping->pong (publish call to
// subscriber callback, the ros2_tracing paper's measure), pong->ping, round trip.
//
// loop: one process publishes SIZE-byte messages as shared_ptr to its own
// subscriber (roscpp's no-copy intra-process path) and runs the callback
// with callAvailable(), ITERATIONS times, without sleeping. It prints the median
// over batches of 1000 of the time per message: the CPU cost of the publish ->
// callback path, without wake-up and scheduling noise.
#include <ros/ros.h>
#include <ros/callback_queue.h>
#include <std_msgs/UInt8MultiArray.h>

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

using Msg = std_msgs::UInt8MultiArray;

static int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}
static void put(Msg& m, size_t off, int64_t v) { memcpy(&m.data[off], &v, 8); }
static int64_t get(const Msg& m, size_t off) {
  int64_t v;
  memcpy(&v, &m.data[off], 8);
  return v;
}

struct Row { int64_t seq, leg1, leg2, rtt; };

int main(int argc, char** argv) {
  if (argc < 2 || (std::string(argv[1]) == "ping" && argc < 6)) {
    fprintf(stderr, "usage: pingpong pong | pingpong ping SIZE RATE SECONDS OUT.csv\n");
    return 2;
  }
  const bool is_ping = std::string(argv[1]) == "ping";
  if (std::string(argv[1]) == "loop") {
    if (argc < 4) return 2;
    ros::init(argc, argv, "loop", ros::init_options::AnonymousName);
    ros::NodeHandle nh;
    const size_t size = strtoul(argv[2], nullptr, 10);
    const long iters = strtol(argv[3], nullptr, 10);
    long received = 0;
    ros::Publisher pub = nh.advertise<Msg>("/loop", 10);
    ros::Subscriber sub = nh.subscribe<Msg>("/loop", 10, [&](const Msg::ConstPtr&) { ++received; });
    while (pub.getNumSubscribers() == 0) ros::WallDuration(0.01).sleep();
    boost::shared_ptr<Msg> m = boost::make_shared<Msg>();
    m->data.assign(size, 1);
    std::vector<double> per_msg;
    const long batch = 1000;
    for (long b = 0; b < iters / batch; ++b) {
      int64_t t0 = now_ns();
      for (long i = 0; i < batch; ++i) {
        pub.publish(m);
        ros::getGlobalCallbackQueue()->callAvailable();
      }
      per_msg.push_back(double(now_ns() - t0) / batch);
    }
    std::sort(per_msg.begin(), per_msg.end());
    printf("%.1f %ld\n", per_msg[per_msg.size() / 2], received);
    return 0;
  }
  ros::init(argc, argv, is_ping ? "ping" : "pong");
  ros::NodeHandle nh;
  ros::TransportHints hints = ros::TransportHints().tcpNoDelay();
  if (!is_ping) {
    ros::Publisher pub = nh.advertise<Msg>("/pong", 10);
    ros::Subscriber sub = nh.subscribe<Msg>("/ping", 10, [&](const Msg::ConstPtr& in) {
      int64_t t = now_ns();
      Msg out = *in;
      if (out.data.size() >= 24) put(out, 16, t);
      pub.publish(out);
    }, ros::VoidConstPtr(), hints);
    ros::spin();
    return 0;
  }
  const size_t size = std::max<size_t>(24, strtoul(argv[2], nullptr, 10));
  const double rate = atof(argv[3]);
  const double seconds = atof(argv[4]);
  FILE* out = fopen(argv[5], "wx");
  if (!out) {
    fprintf(stderr, "pingpong: cannot create %s (exists already?)\n", argv[5]);
    return 2;
  }
  std::vector<Row> rows;
  rows.reserve(size_t(rate * seconds) + 16);
  std::mutex mu;
  ros::Publisher pub = nh.advertise<Msg>("/ping", 10);
  ros::Subscriber sub = nh.subscribe<Msg>("/pong", 10, [&](const Msg::ConstPtr& in) {
    int64_t t = now_ns();
    int64_t sent = get(*in, 0), seq = get(*in, 8), pong = get(*in, 16);
    std::lock_guard<std::mutex> g(mu);
    rows.push_back({seq, pong - sent, t - pong, t - sent});
  }, ros::VoidConstPtr(), hints);
  ros::AsyncSpinner spinner(1);
  spinner.start();
  // wait for both connections
  int64_t wait_until = now_ns() + 10000000000LL;
  while (ros::ok() && (pub.getNumSubscribers() == 0 || sub.getNumPublishers() == 0) && now_ns() < wait_until)
    ros::WallDuration(0.01).sleep();
  ros::WallDuration(0.3).sleep();
  Msg m;
  m.data.assign(size, 0x5a);
  const int64_t period = int64_t(1e9 / rate);
  const int64_t n = int64_t(rate * seconds);
  timespec next;
  clock_gettime(CLOCK_MONOTONIC, &next);
  for (int64_t i = 0; i < n && ros::ok(); ++i) {
    int64_t ns = next.tv_nsec + period;
    next.tv_sec += ns / 1000000000LL;
    next.tv_nsec = ns % 1000000000LL;
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
    put(m, 8, i);
    put(m, 0, now_ns());
    pub.publish(m);
  }
  ros::WallDuration(0.5).sleep();
  spinner.stop();
  std::lock_guard<std::mutex> g(mu);
  fprintf(out, "seq,ping_to_pong_ns,pong_to_ping_ns,round_trip_ns\n");
  for (const Row& r : rows) fprintf(out, "%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "\n", r.seq, r.leg1, r.leg2, r.rtt);
  fclose(out);
  fprintf(stderr, "ping: sent %" PRId64 ", received %zu\n", n, rows.size());
  return 0;
}
