// Ground truth of the one-binary example (examples/ros1_onebinary).
//
// Messages are std_msgs/UInt64MultiArray: data[0] is the message's id, unique in
// the system ((role code << 32) | the process's message counter), data[1..] the
// ids of the input messages that truly fed it. Each process appends JSON lines to
// $ROSCOPE_GT_DIR/<role>.jsonl (the format of examples/ros1_pipeline, plus "run"):
//   {"ev":"start","process":R,"pid":N,"mono_ns":T,"wall_ns":W}
//   {"ev":"pub","node":"/tracker","topic":"/ob/track","id":I,"inputs":[...],"mono_ns":T,"wall_ns":W}
//   {"ev":"run","cb":"scan","tid":K,"start_ns":T0,"end_ns":T1,"wrote":I}       (mapper's scan subscription)
//   {"ev":"run","cb":"map","tid":K,"start_ns":T0,"end_ns":T1,"read":I,"published":O}   (mapper's timer)
//   {"ev":"stop","mono_ns":T}
// A "run" line spans the callback from its first statement to its last (CLOCK_MONOTONIC,
// the clock of the trace): with them, whether a scan run overlapped the map timer's
// run that read its state is a fact of the log, not of the trace.
//
// Unlike examples/ros1_unannotated's log, this one is bookkeeping state every
// callback touches: `lines_` counts the lines written (and the message counter of
// onebinary.cpp is another). A dependency analysis must list them, not take them
// for data that flows from one callback to the next.
#pragma once

#include <ros/ros.h>
#include <std_msgs/UInt64MultiArray.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <string>
#include <vector>

namespace onebinary {

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

class Log {
 public:
  // Creates $ROSCOPE_GT_DIR/<role>.jsonl (never an existing one) and logs "start".
  void open(const std::string& role) {
    const char* dir = getenv("ROSCOPE_GT_DIR");
    std::string path = std::string(dir && *dir ? dir : ".") + "/" + role + ".jsonl";
    f_ = fopen(path.c_str(), "wx");
    if (!f_) {
      fprintf(stderr, "onebinary %s: cannot create the ground-truth log %s (exists already?)\n", role.c_str(),
              path.c_str());
      exit(2);
    }
    setvbuf(f_, nullptr, _IOLBF, 1 << 16);
    line("{\"ev\":\"start\",\"process\":\"" + role + "\",\"pid\":" + std::to_string(getpid()) +
         ",\"mono_ns\":" + std::to_string(mono_ns()) + ",\"wall_ns\":" + std::to_string(wall_ns()) + "}");
  }

  void close() {
    line("{\"ev\":\"stop\",\"mono_ns\":" + std::to_string(mono_ns()) + "}");
    std::lock_guard<std::mutex> g(mu_);
    if (f_) fclose(f_);
    f_ = nullptr;
  }

  // Logs a publication (right before publish()).
  void pub(const ros::Publisher& p, const Msg& m) {
    std::string inputs = "[";
    for (size_t i = 1; i < m.data.size(); ++i) inputs += (i > 1 ? "," : "") + std::to_string(m.data[i]);
    line("{\"ev\":\"pub\",\"node\":\"" + ros::this_node::getName() + "\",\"topic\":\"" + p.getTopic() +
         "\",\"id\":" + std::to_string(m.data[0]) + ",\"inputs\":" + inputs + "],\"mono_ns\":" +
         std::to_string(mono_ns()) + ",\"wall_ns\":" + std::to_string(wall_ns()) + "}");
  }

  // Logs a callback run of the mapper: `what` is `"wrote":I` or `"read":I,"published":O`.
  void run(const char* cb, int64_t start, int64_t end, const std::string& what) {
    line(std::string("{\"ev\":\"run\",\"cb\":\"") + cb + "\",\"tid\":" + std::to_string(long(syscall(SYS_gettid))) +
         ",\"start_ns\":" + std::to_string(start) + ",\"end_ns\":" + std::to_string(end) + "," + what + "}");
  }

 private:
  void line(const std::string& s) {
    std::lock_guard<std::mutex> g(mu_);
    if (!f_) return;
    ++lines_;
    fputs(s.c_str(), f_);
    fputc('\n', f_);
  }

  FILE* f_ = nullptr;
  std::mutex mu_;
  uint64_t lines_ = 0;
};

// A message with its id and the ids of its inputs (a 0 input, nothing received yet, left out).
inline Msg make_msg(uint64_t id, const std::vector<uint64_t>& inputs) {
  Msg m;
  m.data.push_back(id);
  for (uint64_t i : inputs)
    if (i) m.data.push_back(i);
  return m;
}

// Some computation: spins for `us` microseconds (callbacks then last long enough to overlap).
inline void work_us(int us) {
  const int64_t end = mono_ns() + int64_t(us) * 1000;
  while (mono_ns() < end) {
  }
}

inline double env_rate(const char* name, double def) {
  const char* v = getenv(name);
  return v && *v ? atof(v) : def;
}

}  // namespace onebinary
