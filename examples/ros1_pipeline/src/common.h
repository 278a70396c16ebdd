// Shared helpers for the roscope ROS 1 example pipeline.
//
// Every node writes a ground-truth log (JSON lines) to
// $ROSCOPE_GT_DIR/<process>.jsonl. Messages are std_msgs/UInt64MultiArray:
// data[0] is the message id (unique in the whole system), data[1..] are the
// ids of the input messages it was computed from. Optional padding goes into
// layout.dim[0].label so it does not disturb the ids.
#pragma once

#include <ros/ros.h>
#include <std_msgs/UInt64MultiArray.h>

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>
#include <string>
#include <unistd.h>
#include <vector>

namespace pipeline {

using Msg = std_msgs::UInt64MultiArray;

inline int64_t mono_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}
inline int64_t wall_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

class GroundTruth {
 public:
  explicit GroundTruth(const std::string& process) {
    const char* dir = getenv("ROSCOPE_GT_DIR");
    std::string path = std::string(dir && *dir ? dir : ".") + "/" + process + ".jsonl";
    f_ = fopen(path.c_str(), "wx");  // never overwrite an earlier log
    if (!f_) {
      fprintf(stderr, "%s: cannot create ground-truth log %s (exists already?)\n", process.c_str(), path.c_str());
      exit(2);
    }
    setvbuf(f_, nullptr, _IOLBF, 1 << 16);  // line-buffered: the log survives a crash
    line("{\"ev\":\"start\",\"process\":\"%s\",\"pid\":%d,\"mono_ns\":%" PRId64 ",\"wall_ns\":%" PRId64 "}",
         process.c_str(), getpid(), mono_ns(), wall_ns());
  }
  ~GroundTruth() { close(); }
  void close() {
    std::lock_guard<std::mutex> g(mu_);
    if (f_) {
      fprintf(f_, "{\"ev\":\"stop\",\"mono_ns\":%" PRId64 "}\n", mono_ns());
      fclose(f_);
      f_ = nullptr;
    }
  }
  template <typename... A>
  void line(const char* fmt, A... a) {
    std::lock_guard<std::mutex> g(mu_);
    if (!f_) return;
    fprintf(f_, fmt, a...);
    fputc('\n', f_);
  }
  static std::string ids(const std::vector<uint64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
  }
  // A publication: log it, then publish it (the id is already in msg.data[0]).
  void pub(const std::string& node, const ros::Publisher& p, const Msg& m) {
    std::vector<uint64_t> inputs(m.data.begin() + 1, m.data.end());
    line("{\"ev\":\"pub\",\"node\":\"%s\",\"topic\":\"%s\",\"id\":%" PRIu64 ",\"inputs\":%s,\"mono_ns\":%" PRId64
         ",\"wall_ns\":%" PRId64 "}",
         node.c_str(), p.getTopic().c_str(), m.data[0], ids(inputs).c_str(), mono_ns(), wall_ns());
  }
  void recv(const std::string& node, const std::string& topic, const Msg& m) {
    line("{\"ev\":\"recv\",\"node\":\"%s\",\"topic\":\"%s\",\"id\":%" PRIu64 ",\"mono_ns\":%" PRId64
         ",\"wall_ns\":%" PRId64 "}",
         node.c_str(), topic.c_str(), m.data.empty() ? 0 : m.data[0], mono_ns(), wall_ns());
  }
  void timer(const std::string& node, double period_s) {
    line("{\"ev\":\"timer\",\"node\":\"%s\",\"period_s\":%g,\"mono_ns\":%" PRId64 "}", node.c_str(), period_s,
         mono_ns());
  }
  // A deliberate slow-down (ROS1_PIPELINE_SLOW): when it began and ended, CLOCK_MONOTONIC.
  void slow(const std::string& node, int ms, int64_t begin_ns, int64_t end_ns) {
    line("{\"ev\":\"slow\",\"node\":\"%s\",\"ms\":%d,\"begin_ns\":%" PRId64 ",\"mono_ns\":%" PRId64 "}",
         node.c_str(), ms, begin_ns, end_ns);
  }
  void service(const std::string& node, const std::string& name, const char* side, bool ok) {
    line("{\"ev\":\"%s\",\"node\":\"%s\",\"service\":\"%s\",\"ok\":%s,\"mono_ns\":%" PRId64 "}", side, node.c_str(),
         name.c_str(), ok ? "true" : "false", mono_ns());
  }

 private:
  FILE* f_ = nullptr;
  std::mutex mu_;
};

// Ids: (source code << 32) | sequence, so every publisher has its own range.
class IdSource {
 public:
  explicit IdSource(uint32_t code) : code_(code) {}
  uint64_t next() { return (uint64_t(code_) << 32) | ++seq_; }

 private:
  uint32_t code_;
  std::atomic<uint32_t> seq_{0};
};

inline Msg make_msg(uint64_t id, const std::vector<uint64_t>& inputs, size_t padding) {
  Msg m;
  m.data.reserve(1 + inputs.size());
  m.data.push_back(id);
  m.data.insert(m.data.end(), inputs.begin(), inputs.end());
  if (padding) {
    m.layout.dim.resize(1);
    m.layout.dim[0].label.assign(padding, 'x');
  }
  return m;
}

inline double param_rate(const char* env, double def) {
  const char* v = getenv(env);
  return v && *v ? atof(v) : def;
}

// $PIPELINE_SLOW=CALLBACK:MS: the callback named CALLBACK (the name it passes here, e.g.
// planner.onTimer; examples/ros1_pipeline/README.md lists them) spins MS milliseconds longer in each run, as
// CPU work, before it does anything else, and logs each spin as a "slow" line of the ground truth
// (its start and end). For latency budgets: a known slowdown of one named callback. Read on each
// call (no static state: `roscope deps` sees no state shared by the callbacks).
inline void slow(GroundTruth& gt, const char* name) {
  const char* spec = getenv("PIPELINE_SLOW");
  const char* colon = spec ? strrchr(spec, ':') : nullptr;
  if (!colon || size_t(colon - spec) != strlen(name) || strncmp(spec, name, colon - spec) != 0) return;
  const int64_t ns = int64_t(atof(colon + 1) * 1e6);
  const int64_t t0 = mono_ns();
  while (mono_ns() - t0 < ns) {
  }
  gt.line("{\"ev\":\"slow\",\"cb\":\"%s\",\"start_ns\":%" PRId64 ",\"end_ns\":%" PRId64 "}", name, t0, mono_ns());
}

}  // namespace pipeline
