/* The hand-written part of roscope's ROS 2 tracer library (the generated part is the
 * ros_trace_* functions of the distro's tracetools, see ../gen_tracetools.py):
 * - the roscope_ros2 probes (roscope_ros2_tp.h) and the entry points the rclpy hook calls
 *   through ctypes (roscope_ros2_*);
 * - roscope_ros2:process_init when the process starts, with roscope record's recording id
 *   ($ROSCOPE_RECORD_ID), so that a recording tells its own processes from others. */
#define TRACEPOINT_CREATE_PROBES
#define TRACEPOINT_DEFINE
#include "roscope_ros2_tp.h"

#include <stdlib.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

static const uint8_t no_gid[ROSCOPE_ROS2_GID_SIZE];

__attribute__((constructor)) static void roscope_ros2_announce(void) {
  const char *id = getenv("ROSCOPE_RECORD_ID");
  char exe[512] = {0};
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n < 0) exe[0] = 0;
  tracepoint(roscope_ros2, process_init, id ? id : "", exe);
}

/* 1 while roscope_ros2:* events are recorded by some session (for cheap checks). */
EXPORT int roscope_ros2_enabled(void) {
  return tracepoint_enabled(roscope_ros2, callback_input) || tracepoint_enabled(roscope_ros2, client_callback_added);
}

EXPORT void roscope_ros2_client_callback_added(const void *client, const void *callback) {
  tracepoint(roscope_ros2, client_callback_added, client, callback);
}

EXPORT void roscope_ros2_callback_input(const void *callback, const void *rmw_handle, int64_t seq) {
  tracepoint(roscope_ros2, callback_input, callback, rmw_handle, seq);
}

EXPORT void roscope_ros2_rmw_send_request(const void *client, const void *request, int64_t seq) {
  tracepoint(roscope_ros2, rmw_send_request, client, request, seq);
}

EXPORT void roscope_ros2_rmw_take_request(const void *service, const void *request, int64_t seq, int taken,
                                          int64_t source_timestamp) {
  tracepoint(roscope_ros2, rmw_take_request, service, request, no_gid, seq, taken, source_timestamp);
}

EXPORT void roscope_ros2_rmw_send_response(const void *service, const void *response, int64_t seq) {
  tracepoint(roscope_ros2, rmw_send_response, service, response, no_gid, seq, 0);
}

EXPORT void roscope_ros2_rmw_take_response(const void *client, const void *response, int64_t seq,
                                           int64_t source_timestamp, int taken) {
  tracepoint(roscope_ros2, rmw_take_response, client, response, seq, source_timestamp, taken);
}
