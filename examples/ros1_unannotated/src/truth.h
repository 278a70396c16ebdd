// Ground truth of the unannotated example (examples/ros1_unannotated), and of examples/ros1_helpers.
//
// Messages are std_msgs/UInt64MultiArray: data[0] is the message's id (unique in
// the whole system: (code << 32) | sequence, one code per publisher), data[1..]
// are the ids of the input messages that truly fed it. Every node logs each
// message it publishes, right before publish(), as one JSON line in
// $ROSCOPE_GT_DIR/<process>.jsonl (the format of examples/ros1_pipeline):
//   {"ev":"start","process":P,"pid":N,"mono_ns":T,"wall_ns":W}
//   {"ev":"pub","node":"/planner","topic":"/planning/trajectory","id":I,"inputs":[...],"mono_ns":T,"wall_ns":W}
//   {"ev":"stop","mono_ns":T}
// A publication's identity in the trace is (pid, topic, k-th publication): the
// k-th "pub" line of that process and topic.
//
// The log adds no state that callbacks share: its file descriptor is set once in
// main() before the node spins, and callbacks only read it (one write(2) per
// line, O_APPEND). So the only state that callbacks of a node share is the
// node's own, which is what a dependency analysis of these sources should find.
#pragma once

#include <ros/ros.h>
#include <std_msgs/UInt64MultiArray.h>

#include <fcntl.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <initializer_list>
#include <string>

namespace truth {

using Msg = std_msgs::UInt64MultiArray;

// The log's file descriptor: written by open_log() in main(), read by callbacks.
inline int g_log_fd = -1;

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

inline void write_line(const std::string& line) {
  std::string s = line + "\n";
  if (::write(g_log_fd, s.data(), s.size()) != ssize_t(s.size())) perror("ground-truth log");
}

// Creates $ROSCOPE_GT_DIR/<process>.jsonl (never overwrites one) and logs "start".
inline void open_log(const char* process) {
  const char* dir = getenv("ROSCOPE_GT_DIR");
  std::string path = std::string(dir && *dir ? dir : ".") + "/" + process + ".jsonl";
  g_log_fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
  if (g_log_fd < 0) {
    fprintf(stderr, "%s: cannot create the ground-truth log %s: %s\n", process, path.c_str(), strerror(errno));
    exit(2);
  }
  char buf[256];
  snprintf(buf, sizeof buf, "{\"ev\":\"start\",\"process\":\"%s\",\"pid\":%d,\"mono_ns\":%" PRId64 ",\"wall_ns\":%" PRId64 "}",
           process, int(getpid()), mono_ns(), wall_ns());
  write_line(buf);
}

inline void close_log() {
  char buf[64];
  snprintf(buf, sizeof buf, "{\"ev\":\"stop\",\"mono_ns\":%" PRId64 "}", mono_ns());
  write_line(buf);
  ::close(g_log_fd);
  g_log_fd = -1;
}

inline uint64_t make_id(uint32_t code, uint64_t seq) { return (uint64_t(code) << 32) | seq; }

// A message with its id and the ids of its inputs; a 0 input (nothing received
// yet) is left out.
inline Msg make_msg(uint64_t id, std::initializer_list<uint64_t> inputs) {
  Msg m;
  m.data.push_back(id);
  for (uint64_t i : inputs)
    if (i) m.data.push_back(i);
  return m;
}

// Logs a publication (call it right before publish()).
inline void log_pub(const ros::Publisher& pub, const Msg& m) {
  std::string inputs = "[";
  for (size_t i = 1; i < m.data.size(); ++i) inputs += (i > 1 ? "," : "") + std::to_string(m.data[i]);
  inputs += "]";
  char head[512];
  snprintf(head, sizeof head, "{\"ev\":\"pub\",\"node\":\"%s\",\"topic\":\"%s\",\"id\":%" PRIu64 ",\"inputs\":",
           ros::this_node::getName().c_str(), pub.getTopic().c_str(), m.data[0]);
  char tail[96];
  snprintf(tail, sizeof tail, ",\"mono_ns\":%" PRId64 ",\"wall_ns\":%" PRId64 "}", mono_ns(), wall_ns());
  write_line(head + inputs + tail);
}

// Some computation: spins for `us` microseconds of wall time (the callbacks
// then have a duration worth measuring).
inline void work_us(int us) {
  const int64_t end = mono_ns() + int64_t(us) * 1000;
  while (mono_ns() < end) {
  }
}

inline double env_rate(const char* name, double def) {
  const char* v = getenv(name);
  return v && *v ? atof(v) : def;
}

}  // namespace truth
