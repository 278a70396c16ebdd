// What every process of the C++ example shares (README.md): message ids, the ground-truth log,
// the slow-down knob, and a spin that stops cleanly on SIGINT/SIGTERM.
//
// Ground truth: each process keeps its facts in memory and writes them, as JSON lines, to
// $ROSCOPE_GT_DIR/<process>.jsonl when it stops (never overwriting a file): nothing is written
// while a callback runs. Times are CLOCK_MONOTONIC, the clock of the trace.
//   run       a callback run: node, cb, kind, what, start_ns (its first operation), end_ns (its last)
//   pub       a message published: node, topic, id, inputs, mono_ns (right before publish())
//   recv      a message a callback received: node, topic, id
//   request / serve / response, goal / goal_recv / feedback / feedback_recv / result / result_recv
// Message ids are 64-bit: (code << 32) | sequence, the code naming the topic or service; each
// message carries its id (std_msgs/UInt64MultiArray: data[0] = id, data[1..] = its inputs' ids;
// test_msgs/BasicTypes: uint64_value; test_msgs/Fibonacci: the goal's order = sequence number).
#pragma once

#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "rclcpp/rclcpp.hpp"

namespace cpp_pipeline
{

inline int64_t now_ns()
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

enum Code : uint64_t
{
  IMAGE = 1, SCAN = 2, DETECTIONS = 3, PLAN_REQUEST = 4, PLAN_RESPONSE = 5, PATH = 6,
  FOLLOW_GOAL = 7, FOLLOW_FEEDBACK = 8, FOLLOW_RESULT = 9, CMD = 10, MAP = 11,
};

class Ids
{
public:
  uint64_t next(Code code)
  {
    std::lock_guard<std::mutex> g(m_);
    return (static_cast<uint64_t>(code) << 32) | ++n_[code];
  }

private:
  std::mutex m_;
  std::map<uint64_t, uint64_t> n_;
};

// The log: rows appended under a mutex (memory only), written at the end. A run's row is made
// when it begins; its end is written into its own slot without a lock.
class GroundTruth
{
public:
  struct Run
  {
    const char * node, * cb, * kind, * what;
    int64_t start_ns;
    int64_t end_ns;
  };
  static constexpr size_t kMaxRuns = 1 << 17;

  explicit GroundTruth(std::string process)
  : process_(std::move(process)), runs_(new Run[kMaxRuns])
  {
    add("{\"ev\": \"start\", \"process\": \"" + process_ + "\", \"pid\": " + std::to_string(getpid()));
  }

  // A run of a callback that read t0 as its first operation; the callback ends it with
  // end(run) as its last.
  size_t begin(const char * node, const char * cb, const char * kind, const char * what, int64_t t0)
  {
    std::lock_guard<std::mutex> g(m_);
    if (nruns_ == kMaxRuns) {
      std::fprintf(stderr, "%s: more than %zu callback runs: the log is full\n", process_.c_str(), kMaxRuns);
      std::abort();
    }
    runs_[nruns_] = Run{node, cb, kind, what, t0, 0};
    rows_.emplace_back("#" + std::to_string(nruns_), 0);
    return nruns_++;
  }
  // The run's last operation is this clock read (no lock: the slot is the run's own, read by
  // write() once the executor has stopped).
  void end(size_t run) {runs_[run].end_ns = now_ns();}

  // A fact: the JSON object without its closing brace; mono_ns is added: the clock read last,
  // into the row's own slot (a deque's elements stay where they are), so that a `pub` row's
  // time is right before the publish() that follows it, after the log's own work.
  void add(std::string head)
  {
    int64_t * t;
    {
      std::lock_guard<std::mutex> g(m_);
      rows_.emplace_back(std::move(head), 0);
      t = &rows_.back().second;
    }
    *t = now_ns();
  }
  void pub(const char * node, const char * topic, uint64_t id, const std::vector<uint64_t> & inputs = {})
  {
    std::string in = "[";
    for (size_t i = 0; i < inputs.size(); ++i) {in += (i ? ", " : "") + std::to_string(inputs[i]);}
    add(std::string("{\"ev\": \"pub\", \"node\": \"") + node + "\", \"topic\": \"" + topic +
      "\", \"id\": " + std::to_string(id) + ", \"inputs\": " + in + "]");
  }
  void ev(const char * ev, const char * node, const char * what, uint64_t id, uint64_t other = 0)
  {
    add(std::string("{\"ev\": \"") + ev + "\", \"node\": \"" + node + "\", \"what\": \"" + what +
      "\", \"id\": " + std::to_string(id) + (other ? ", \"other\": " + std::to_string(other) : ""));
  }

  void write()
  {
    add("{\"ev\": \"stop\"");
    const char * dir = std::getenv("ROSCOPE_GT_DIR");
    if (!dir || !*dir) {
      std::fprintf(stderr, "%s: ROSCOPE_GT_DIR is not set; ground truth not written\n", process_.c_str());
      return;
    }
    std::string path = std::string(dir) + "/" + process_ + ".jsonl";
    FILE * f = std::fopen(path.c_str(), "wx");  // never overwrite
    if (!f) {
      std::perror(path.c_str());
      return;
    }
    std::lock_guard<std::mutex> g(m_);
    for (const auto & [r, t] : rows_) {
      if (!r.empty() && r[0] == '#') {
        const Run & x = runs_[std::stoul(r.substr(1))];
        std::fprintf(
          f, "{\"ev\": \"run\", \"node\": \"%s\", \"cb\": \"%s\", \"kind\": \"%s\", \"what\": \"%s\", "
          "\"start_ns\": %lld, \"end_ns\": %lld}\n", x.node, x.cb, x.kind, x.what,
          static_cast<long long>(x.start_ns), static_cast<long long>(x.end_ns));
      } else {
        std::fprintf(f, "%s, \"mono_ns\": %lld}\n", r.c_str(), static_cast<long long>(t));
      }
    }
    std::fclose(f);
  }

private:
  std::string process_;
  std::mutex m_;
  std::unique_ptr<Run[]> runs_;
  size_t nruns_ = 0;
  std::deque<std::pair<std::string, int64_t>> rows_;  // (row, mono_ns); a run's row: "#<run>"
};

// $ROS2_CPP_PIPELINE_SLOW=CALLBACK:MS[@FROM-TO]: the callback named CALLBACK (a ground-truth
// `cb`, e.g. detector.on_image) spins MS ms longer in each run (only FROM to TO seconds after
// its process started, if given). Spins: the time is CPU work, as a slow callback's.
class Slow
{
public:
  Slow()
  {
    const char * s = std::getenv("ROS2_CPP_PIPELINE_SLOW");
    if (!s || !*s) {return;}
    std::string spec(s);
    auto colon = spec.rfind(':');
    if (colon == std::string::npos) {bad(spec);}
    name_ = spec.substr(0, colon);
    std::string rest = spec.substr(colon + 1);
    auto at = rest.find('@');
    try {
      ns_ = static_cast<int64_t>(std::stod(rest.substr(0, at)) * 1e6);
      if (at != std::string::npos) {
        std::string w = rest.substr(at + 1);
        auto dash = w.find('-');
        if (dash == std::string::npos) {bad(spec);}
        int64_t t = now_ns();
        from_ = t + static_cast<int64_t>(std::stod(w.substr(0, dash)) * 1e9);
        to_ = t + static_cast<int64_t>(std::stod(w.substr(dash + 1)) * 1e9);
      }
    } catch (const std::exception &) {
      bad(spec);
    }
  }
  void operator()(const char * cb) const
  {
    if (name_.empty() || name_ != cb) {return;}
    int64_t t = now_ns();
    if (to_ && (t < from_ || t >= to_)) {return;}
    spin_for(ns_);
  }
  static void spin_for(int64_t ns)
  {
    int64_t end = now_ns() + ns;
    while (now_ns() < end) {}
  }

private:
  [[noreturn]] static void bad(const std::string & spec)
  {
    std::fprintf(
      stderr, "ROS2_CPP_PIPELINE_SLOW=%s: expected CALLBACK:MS or CALLBACK:MS@FROM-TO (seconds)\n",
      spec.c_str());
    std::exit(2);
  }
  std::string name_;
  int64_t ns_ = 0, from_ = 0, to_ = 0;
};

// CPU work of `us` microseconds.
inline void busy(int us) {Slow::spin_for(static_cast<int64_t>(us) * 1000);}

// Blocks SIGINT and SIGTERM in this thread and every thread started after it (rclcpp's, Fast
// DDS's), and initialises rclcpp without its own signal handlers: spin() takes the signals in a
// thread of its own. Call first thing in main().
inline void init(int argc, char ** argv, const char * process)
{
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGINT);
  sigaddset(&s, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &s, nullptr);
  rclcpp::init(argc, argv, rclcpp::InitOptions(), rclcpp::SignalHandlerOptions::None);
  (void)process;
}

// Prints "ready" (the launcher waits for it), spins until SIGINT or SIGTERM, then cancels the
// executor (callbacks are never interrupted: it returns between them), writes the ground truth
// and shuts rclcpp down.
inline void spin(rclcpp::Executor & executor, GroundTruth & gt)
{
  std::thread waiter([&executor]() {
      sigset_t s;
      sigemptyset(&s);
      sigaddset(&s, SIGINT);
      sigaddset(&s, SIGTERM);
      int sig = 0;
      sigwait(&s, &sig);
      executor.cancel();
    });
  std::printf("ready\n");
  std::fflush(stdout);
  executor.spin();
  waiter.join();
  gt.write();
  rclcpp::shutdown();
}

}  // namespace cpp_pipeline
