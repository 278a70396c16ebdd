// Ping-pong between two rclcpp processes (bench/rclcpp_overhead, README in bench/README.md).
//
//   pingpong ping RATE WARMUP SECONDS OUT.json   a timer at RATE Hz publishes /roscope_bench/ping;
//                                                 a subscription of /roscope_bench/pong
//   pingpong pong OUT.json                         a subscription of /roscope_bench/ping that answers
//                                                 on /roscope_bench/pong
//
// Every message carries the CLOCK_MONOTONIC time read just before its publish() (in the
// header's stamp); the receiving callback reads the clock first: latency = that - the stamp,
// publish -> callback across the two processes (Fast DDS, inter-process).
// ping measures over a window of SECONDS that starts WARMUP seconds after the first pong it
// received; pong over the same window as ping sends it (ping marks the messages it sends in
// its window "m", those after "end"): the latencies received, the callbacks run (timer and
// subscription), the process's CPU time (CLOCK_PROCESS_CPUTIME_ID: every thread, DDS's too)
// and the executor thread's (CLOCK_THREAD_CPUTIME_ID). pong stops at the first "end", ping
// 0.2 s after its window. Each prints "ready" on stdout once its entities exist and writes
// OUT.json when it stops.
//
// With $PINGPONG_SERVICE=1, a service call instead of the two topics: ping's timer calls
// /roscope_bench/call (test_msgs/BasicTypes: int64_value the time read just before
// async_send_request, string_value the window's mark) with a response callback; pong serves it
// and answers with the time read at its callback's end (the response is sent right after).
// Latencies: request sent -> service callback, response -> client callback, pooled; the
// callbacks: ping's timer and response callback, pong's service callback.
//
//   pingpong tploop N OUT.json   one tracepoint's cost: rclcpp's ros_trace_callback_start (the
//                                 libtracetools the process has: the wheel's, or roscope's when
//                                 preloaded) called N times in a loop; ns per call, wall and CPU
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "rclcpp/rclcpp.hpp"
#include "tracetools/tracetools.h"
#include "std_msgs/msg/header.hpp"
#include "test_msgs/srv/basic_types.hpp"

using Msg = std_msgs::msg::Header;
using Srv = test_msgs::srv::BasicTypes;

static int64_t now_ns(clockid_t c = CLOCK_MONOTONIC) {
  timespec ts;
  clock_gettime(c, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

static void stamp(Msg & m, int64_t t) {
  m.stamp.sec = int32_t(t / 1000000000);
  m.stamp.nanosec = uint32_t(t % 1000000000);
}

static int64_t stamp_ns(const Msg & m) {
  return int64_t(m.stamp.sec) * 1000000000 + m.stamp.nanosec;
}

class Bench : public rclcpp::Node {
public:
  Bench(const std::string & role, double rate, double warmup, double seconds)
  : Node(role), ping_(role == "ping"), warmup_ns_(int64_t(warmup * 1e9)), seconds_ns_(int64_t(seconds * 1e9)) {
    const char * svc = std::getenv("PINGPONG_SERVICE");
    if (svc && std::string(svc) == "1") {
      if (ping_) {
        client_ = create_client<Srv>("/roscope_bench/call");
        timer_ = create_wall_timer(
          std::chrono::nanoseconds(int64_t(1e9 / rate)), [this]() {
            auto req = std::make_shared<Srv::Request>();
            req->string_value = done_ ? "end" : measuring_ ? "m" : "";
            req->int64_value = now_ns();
            client_->async_send_request(req, [this](rclcpp::Client<Srv>::SharedFuture f) {
                int64_t t = now_ns();
                on_input(t, f.get()->int64_value, "");
              });
            ++sent_;
            after_callback();
          });
      } else {
        service_ = create_service<Srv>(
          "/roscope_bench/call", [this](const Srv::Request::SharedPtr req, Srv::Response::SharedPtr res) {
            int64_t t = now_ns();
            on_input(t, req->int64_value, req->string_value);
            ++sent_;
            res->int64_value = now_ns();
          });
      }
      return;
    }
    auto qos = rclcpp::QoS(rclcpp::KeepLast(10)).reliable();
    pub_ = create_publisher<Msg>(ping_ ? "/roscope_bench/ping" : "/roscope_bench/pong", qos);
    sub_ = create_subscription<Msg>(
      ping_ ? "/roscope_bench/pong" : "/roscope_bench/ping", qos,
      std::bind(&Bench::on_message, this, std::placeholders::_1));
    if (ping_) {
      timer_ = create_wall_timer(
        std::chrono::nanoseconds(int64_t(1e9 / rate)), [this]() {
          Msg m;
          m.frame_id = done_ ? "end" : measuring_ ? "m" : "";
          stamp(m, now_ns());
          pub_->publish(m);
          ++sent_;
          after_callback();
        });
    }
  }

  void on_message(const Msg::SharedPtr msg) {
    int64_t t = now_ns();
    if (first_ns_ == 0) {
      first_ns_ = t;
    }
    if (!ping_ && !done_) {
      // pong's window: ping's
      if (!measuring_ && msg->frame_id == "m") {
        start(t);
      } else if (measuring_ && msg->frame_id == "end") {
        stop(t);
        rclcpp::shutdown();
        return;
      }
    }
    if (measuring_) {
      latencies_.push_back(t - stamp_ns(*msg));
    }
    ++received_;
    if (!ping_) {
      Msg m;
      stamp(m, now_ns());
      pub_->publish(m);
      ++sent_;
    }
    after_callback();
  }

  // A request (pong) or response (ping) that arrived at t, sent at `sent`; the window's mark.
  void on_input(int64_t t, int64_t sent, const std::string & mark) {
    if (first_ns_ == 0) {
      first_ns_ = t;
    }
    if (!ping_ && !done_) {
      if (!measuring_ && mark == "m") {
        start(t);
      } else if (measuring_ && mark == "end") {
        stop(t);
        stop_soon();
      }
    }
    if (measuring_) {
      latencies_.push_back(t - sent);
    }
    ++received_;
    after_callback();
  }

  // pong of a service: its response is sent after the callback returns, so rclcpp stops a
  // moment later (on a thread of its own).
  void stop_soon() {
    std::thread([]() {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        rclcpp::shutdown();
      }).detach();
  }

  void start(int64_t t) {
    measuring_ = true;
    t0_ = t;
    cpu0_ = now_ns(CLOCK_PROCESS_CPUTIME_ID);
    thread0_ = now_ns(CLOCK_THREAD_CPUTIME_ID);
    sent0_ = sent_;
    received0_ = received_;
  }

  void stop(int64_t t) {
    measuring_ = false;
    done_ = true;
    t1_ = t;
    cpu1_ = now_ns(CLOCK_PROCESS_CPUTIME_ID);
    thread1_ = now_ns(CLOCK_THREAD_CPUTIME_ID);
    sent1_ = sent_;
    received1_ = received_;
  }

  // After each callback: the callback counted; ping's window's start and end (CPU clocks read
  // there), its stop 0.2 s later.
  void after_callback() {
    if (measuring_) {
      ++callbacks_;
    }
    if (!ping_ || first_ns_ == 0) {
      return;
    }
    int64_t t = now_ns();
    if (!measuring_ && !done_ && t >= first_ns_ + warmup_ns_) {
      start(t);
    } else if (measuring_ && t >= t0_ + seconds_ns_) {
      stop(t);
    } else if (done_ && !stopping_ && t >= t1_ + 200000000) {
      stopping_ = true;
      rclcpp::shutdown();
    }
  }

  void write(const char * path) const {
    std::ofstream f(path);
    f << "{\"role\": \"" << (ping_ ? "ping" : "pong") << "\", \"pid\": " << getpid()
      << ", \"done\": " << (done_ ? "true" : "false") << ", \"window_ns\": [" << t0_ << ", " << t1_ << "]"
      << ", \"callbacks\": " << callbacks_ << ", \"sent\": " << (sent1_ - sent0_)
      << ", \"received\": " << (received1_ - received0_) << ", \"process_cpu_ns\": " << (cpu1_ - cpu0_)
      << ", \"thread_cpu_ns\": " << (thread1_ - thread0_) << ", \"latencies_ns\": [";
    for (size_t i = 0; i < latencies_.size(); ++i) {
      f << (i ? "," : "") << latencies_[i];
    }
    f << "]}\n";
  }

private:
  bool ping_;
  int64_t warmup_ns_, seconds_ns_;
  rclcpp::Publisher<Msg>::SharedPtr pub_;
  rclcpp::Subscription<Msg>::SharedPtr sub_;
  rclcpp::TimerBase::SharedPtr timer_;
  rclcpp::Client<Srv>::SharedPtr client_;
  rclcpp::Service<Srv>::SharedPtr service_;
  int64_t first_ns_ = 0, t0_ = 0, t1_ = 0, cpu0_ = 0, cpu1_ = 0, thread0_ = 0, thread1_ = 0;
  int64_t sent_ = 0, received_ = 0, sent0_ = 0, received0_ = 0, sent1_ = 0, received1_ = 0, callbacks_ = 0;
  bool measuring_ = false, done_ = false, stopping_ = false;
  std::vector<int64_t> latencies_;
};

static int tploop(long n, const char * out) {
  int64_t w0 = now_ns(), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
  for (long i = 0; i < n; ++i) {
    TRACETOOLS_TRACEPOINT(callback_start, reinterpret_cast<const void *>(i), false);
  }
  int64_t w1 = now_ns(), c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
  std::ofstream f(out);
  f << "{\"calls\": " << n << ", \"wall_ns_per_call\": " << double(w1 - w0) / n
    << ", \"cpu_ns_per_call\": " << double(c1 - c0) / n << ", \"enabled\": "
    << (TRACETOOLS_TRACEPOINT_ENABLED(callback_start) ? "true" : "false") << "}\n";
  return 0;
}

int main(int argc, char ** argv) {
  std::string role = argc > 1 ? argv[1] : "";
  if (role == "tploop" && argc == 4) {
    return tploop(std::atol(argv[2]), argv[3]);
  }
  bool ping = role == "ping";
  if (!((ping && argc == 6) || (role == "pong" && argc == 3))) {
    std::fprintf(stderr, "usage: pingpong ping RATE WARMUP SECONDS OUT.json | pingpong pong OUT.json | pingpong tploop N OUT.json\n");
    return 2;
  }
  rclcpp::init(argc, argv);
  auto node = ping ? std::make_shared<Bench>(role, std::atof(argv[2]), std::atof(argv[3]), std::atof(argv[4]))
                   : std::make_shared<Bench>(role, 0.0, 0.0, 0.0);
  const char * out = argv[argc - 1];
  std::printf("ready\n");
  std::fflush(stdout);
  rclcpp::spin(node);
  node->write(out);
  rclcpp::shutdown();
  return 0;
}
