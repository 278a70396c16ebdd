/* roscope's own ROS 2 tracepoints (provider roscope_ros2), emitted by the rclpy hook
 * (instrument/ros2/rclpy) and by the tracer library itself. Where ros2_tracing has an event
 * for the same fact, the layout is ros2_tracing's (the service events, as in Kilted's
 * tracetools 8.6); the others are roscope's. See docs/ros2-pypi.md, "Events". */
#undef TRACEPOINT_PROVIDER
#define TRACEPOINT_PROVIDER roscope_ros2

#undef TRACEPOINT_INCLUDE
#define TRACEPOINT_INCLUDE "roscope_ros2_tp.h"

#if !defined(ROSCOPE_ROS2_TP_H) || defined(TRACEPOINT_HEADER_MULTI_READ)
#define ROSCOPE_ROS2_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

/* GIDs as in Kilted's tracetools (RMW_GID_STORAGE_SIZE 16). */
#define ROSCOPE_ROS2_GID_SIZE 16

/* A state dump (roscope_ros2_dump.h): the init events of a running process's live objects
 * follow, in this thread, until state_dump_end. */
TRACEPOINT_EVENT(roscope_ros2, state_dump_begin,
  TP_ARGS(uint32_t, objects),
  TP_FIELDS(ctf_integer(uint32_t, objects, objects)))

TRACEPOINT_EVENT(roscope_ros2, state_dump_end,
  TP_ARGS(uint32_t, objects),
  TP_FIELDS(ctf_integer(uint32_t, objects, objects)))

/* The process was started by `roscope record` (record_id: the recording's name). */
TRACEPOINT_EVENT(roscope_ros2, process_init,
  TP_ARGS(const char *, record_id_arg, const char *, exe_arg),
  TP_FIELDS(
    ctf_string(record_id, record_id_arg)
    ctf_string(exe, exe_arg)))

/* A service client's response callback (rclpy: a done callback of the futures of
 * Client.call_async, or of an action client's goal and result requests). */
TRACEPOINT_EVENT(roscope_ros2, client_callback_added,
  TP_ARGS(const void *, client_handle_arg, const void *, callback_arg),
  TP_FIELDS(
    ctf_integer_hex(const void *, client_handle, client_handle_arg)
    ctf_integer_hex(const void *, callback, callback_arg)))

/* rclcpp's service `service_handle` (rclcpp_service_callback_added's) is a copy of the rcl
 * service `original` (rcl_service_init's): the same implementation behind another
 * rcl_service_t (rclcpp_lifecycle's services: rclcpp::Service copies rcl_lifecycle's struct). */
TRACEPOINT_EVENT(roscope_ros2, service_copy,
  TP_ARGS(const void *, service_handle_arg, const void *, original_arg),
  TP_FIELDS(
    ctf_integer_hex(const void *, service_handle, service_handle_arg)
    ctf_integer_hex(const void *, original, original_arg)))

/* The run of `callback` that starts next on this thread handles the request or response
 * `sequence_number` of the rmw service or client `rmw_handle` (a run in another task than
 * the take: rclpy's done callbacks, an action's execute callback). */
TRACEPOINT_EVENT(roscope_ros2, callback_input,
  TP_ARGS(const void *, callback_arg, const void *, rmw_handle_arg, int64_t, sequence_number_arg),
  TP_FIELDS(
    ctf_integer_hex(const void *, callback, callback_arg)
    ctf_integer_hex(const void *, rmw_handle, rmw_handle_arg)
    ctf_integer(int64_t, sequence_number, sequence_number_arg)))

/* The run of `callback` that just ended on this thread (its callback_end came last) ran from
 * `start` to `end`: CLOCK_MONOTONIC (the trace's clock) read by the rclpy hook right before
 * the callback's frame began and right after it returned, without the two tracepoints' own
 * time (roscope takes these as the run's times; callback_start/end stay for other tools). */
TRACEPOINT_EVENT(roscope_ros2, callback_frame,
  TP_ARGS(const void *, callback_arg, uint64_t, start_arg, uint64_t, end_arg),
  TP_FIELDS(
    ctf_integer_hex(const void *, callback, callback_arg)
    ctf_integer(uint64_t, start, start_arg)
    ctf_integer(uint64_t, end, end_arg)))

/* Service requests and responses seen by rclpy, for distros whose rmw has no such
 * tracepoints (Jazzy): Kilted's layouts; rmw_take_request adds the request's DDS source
 * timestamp (0 where rclpy does not give it). */
TRACEPOINT_EVENT(roscope_ros2, rmw_send_request,
  TP_ARGS(const void *, rmw_client_handle_arg, const void *, request_arg, int64_t, sequence_number_arg),
  TP_FIELDS(
    ctf_integer_hex(const void *, rmw_client_handle, rmw_client_handle_arg)
    ctf_integer_hex(const void *, request, request_arg)
    ctf_integer(int64_t, sequence_number, sequence_number_arg)))

TRACEPOINT_EVENT(roscope_ros2, rmw_take_request,
  TP_ARGS(const void *, rmw_service_handle_arg, const void *, request_arg, const uint8_t *, client_gid_arg,
          int64_t, sequence_number_arg, int, taken_arg, int64_t, source_timestamp_arg),
  TP_FIELDS(
    ctf_integer_hex(const void *, rmw_service_handle, rmw_service_handle_arg)
    ctf_integer_hex(const void *, request, request_arg)
    ctf_array(uint8_t, client_gid, client_gid_arg, ROSCOPE_ROS2_GID_SIZE)
    ctf_integer(int64_t, sequence_number, sequence_number_arg)
    ctf_integer(int, taken, taken_arg)
    ctf_integer(int64_t, source_timestamp, source_timestamp_arg)))

TRACEPOINT_EVENT(roscope_ros2, rmw_send_response,
  TP_ARGS(const void *, rmw_service_handle_arg, const void *, response_arg, const uint8_t *, client_gid_arg,
          int64_t, sequence_number_arg, int64_t, timestamp_arg),
  TP_FIELDS(
    ctf_integer_hex(const void *, rmw_service_handle, rmw_service_handle_arg)
    ctf_integer_hex(const void *, response, response_arg)
    ctf_array(uint8_t, client_gid, client_gid_arg, ROSCOPE_ROS2_GID_SIZE)
    ctf_integer(int64_t, sequence_number, sequence_number_arg)
    ctf_integer(int64_t, timestamp, timestamp_arg)))

TRACEPOINT_EVENT(roscope_ros2, rmw_take_response,
  TP_ARGS(const void *, rmw_client_handle_arg, const void *, response_arg, int64_t, sequence_number_arg,
          int64_t, source_timestamp_arg, int, taken_arg),
  TP_FIELDS(
    ctf_integer_hex(const void *, rmw_client_handle, rmw_client_handle_arg)
    ctf_integer_hex(const void *, response, response_arg)
    ctf_integer(int64_t, sequence_number, sequence_number_arg)
    ctf_integer(int64_t, source_timestamp, source_timestamp_arg)
    ctf_integer(int, taken, taken_arg)))

#endif /* ROSCOPE_ROS2_TP_H */

#include <lttng/tracepoint-event.h>
