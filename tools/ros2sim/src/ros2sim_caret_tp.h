/*
 * ros2sim tracepoint provider `ros2_caret`: the events CARET's hook library
 * (caret_trace, LD_PRELOAD) adds to a Humble application.
 *
 * Field names and CTF types follow the layouts of CARET's events: the runtime
 * events as the real CARET traces in ../shared/traces/ros2/caret-* declare
 * them (dds_write, dds_bind_addr_to_stamp), the others as caret_trace declares
 * them (caret_init, rcl_init and the init events it re-emits with an extra
 * init_timestamp, the executor structure events).  Pointers are 64-bit hex
 * integers, strings are strings, stamps and timestamps 64-bit integers.
 * Loaded with dlopen by ros2sim-humble in --caret mode only, so traces of
 * plain runs declare no ros2_caret event.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER ros2_caret

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "ros2sim_caret_tp.h"

#if !defined(ROS2SIM_CARET_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define ROS2SIM_CARET_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>
#include <stddef.h>

#define RC_P(name, arg) lttng_ust_field_integer_hex(const void *, name, arg)
#define RC_S(name, arg) lttng_ust_field_string(name, arg)
#define RC_I64(name, arg) lttng_ust_field_integer(int64_t, name, arg)
#define RC_U64(name, arg) lttng_ust_field_integer(uint64_t, name, arg)
#define RC_TS RC_I64(init_timestamp, init_timestamp_arg)

/* ---- once per process */
LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, caret_init,
  LTTNG_UST_TP_ARGS(int64_t, clock_offset_arg, const char *, distribution_arg),
  LTTNG_UST_TP_FIELDS(RC_I64(clock_offset, clock_offset_arg) RC_S(distribution, distribution_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, rmw_implementation,
  LTTNG_UST_TP_ARGS(const char *, rmw_impl_arg, int64_t, init_timestamp_arg),
  LTTNG_UST_TP_FIELDS(RC_S(rmw_impl, rmw_impl_arg) RC_TS))

/* ---- runtime: the DDS write hook */
LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, dds_write,
  LTTNG_UST_TP_ARGS(const void *, message_arg),
  LTTNG_UST_TP_FIELDS(RC_P(message, message_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, dds_bind_addr_to_stamp,
  LTTNG_UST_TP_ARGS(const void *, addr_arg, uint64_t, source_stamp_arg),
  LTTNG_UST_TP_FIELDS(RC_P(addr, addr_arg) RC_U64(source_stamp, source_stamp_arg)))

/* ---- init events, as CARET emits them instead of ros2_tracing's (+ init_timestamp) */
LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, rcl_init,
  LTTNG_UST_TP_ARGS(const void *, context_handle_arg, int64_t, init_timestamp_arg),
  LTTNG_UST_TP_FIELDS(RC_P(context_handle, context_handle_arg) RC_TS))

LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, rcl_node_init,
  LTTNG_UST_TP_ARGS(const void *, node_handle_arg, const void *, rmw_handle_arg,
    const char *, node_name_arg, const char *, namespace_arg, int64_t, init_timestamp_arg),
  LTTNG_UST_TP_FIELDS(RC_P(node_handle, node_handle_arg) RC_P(rmw_handle, rmw_handle_arg)
    RC_S(node_name, node_name_arg) RC_S(namespace, namespace_arg) RC_TS))

LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, rcl_publisher_init,
  LTTNG_UST_TP_ARGS(const void *, publisher_handle_arg, const void *, node_handle_arg,
    const void *, rmw_publisher_handle_arg, const char *, topic_name_arg, size_t, queue_depth_arg,
    int64_t, init_timestamp_arg),
  LTTNG_UST_TP_FIELDS(RC_P(publisher_handle, publisher_handle_arg) RC_P(node_handle, node_handle_arg)
    RC_P(rmw_publisher_handle, rmw_publisher_handle_arg) RC_S(topic_name, topic_name_arg)
    lttng_ust_field_integer(size_t, queue_depth, queue_depth_arg) RC_TS))

LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, rcl_subscription_init,
  LTTNG_UST_TP_ARGS(const void *, subscription_handle_arg, const void *, node_handle_arg,
    const void *, rmw_subscription_handle_arg, const char *, topic_name_arg, size_t, queue_depth_arg,
    int64_t, init_timestamp_arg),
  LTTNG_UST_TP_FIELDS(RC_P(subscription_handle, subscription_handle_arg) RC_P(node_handle, node_handle_arg)
    RC_P(rmw_subscription_handle, rmw_subscription_handle_arg) RC_S(topic_name, topic_name_arg)
    lttng_ust_field_integer(size_t, queue_depth, queue_depth_arg) RC_TS))

LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, rclcpp_subscription_init,
  LTTNG_UST_TP_ARGS(const void *, subscription_handle_arg, const void *, subscription_arg,
    int64_t, init_timestamp_arg),
  LTTNG_UST_TP_FIELDS(RC_P(subscription_handle, subscription_handle_arg) RC_P(subscription, subscription_arg) RC_TS))

LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, rclcpp_subscription_callback_added,
  LTTNG_UST_TP_ARGS(const void *, subscription_arg, const void *, callback_arg, int64_t, init_timestamp_arg),
  LTTNG_UST_TP_FIELDS(RC_P(subscription, subscription_arg) RC_P(callback, callback_arg) RC_TS))

LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, rcl_service_init,
  LTTNG_UST_TP_ARGS(const void *, service_handle_arg, const void *, node_handle_arg,
    const void *, rmw_service_handle_arg, const char *, service_name_arg, int64_t, init_timestamp_arg),
  LTTNG_UST_TP_FIELDS(RC_P(service_handle, service_handle_arg) RC_P(node_handle, node_handle_arg)
    RC_P(rmw_service_handle, rmw_service_handle_arg) RC_S(service_name, service_name_arg) RC_TS))

LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, rclcpp_service_callback_added,
  LTTNG_UST_TP_ARGS(const void *, service_handle_arg, const void *, callback_arg, int64_t, init_timestamp_arg),
  LTTNG_UST_TP_FIELDS(RC_P(service_handle, service_handle_arg) RC_P(callback, callback_arg) RC_TS))

LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, rcl_timer_init,
  LTTNG_UST_TP_ARGS(const void *, timer_handle_arg, int64_t, period_arg, int64_t, init_timestamp_arg),
  LTTNG_UST_TP_FIELDS(RC_P(timer_handle, timer_handle_arg) RC_I64(period, period_arg) RC_TS))

LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, rclcpp_timer_callback_added,
  LTTNG_UST_TP_ARGS(const void *, timer_handle_arg, const void *, callback_arg, int64_t, init_timestamp_arg),
  LTTNG_UST_TP_FIELDS(RC_P(timer_handle, timer_handle_arg) RC_P(callback, callback_arg) RC_TS))

LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, rclcpp_timer_link_node,
  LTTNG_UST_TP_ARGS(const void *, timer_handle_arg, const void *, node_handle_arg, int64_t, init_timestamp_arg),
  LTTNG_UST_TP_FIELDS(RC_P(timer_handle, timer_handle_arg) RC_P(node_handle, node_handle_arg) RC_TS))

LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, rclcpp_callback_register,
  LTTNG_UST_TP_ARGS(const void *, callback_arg, const char *, symbol_arg, int64_t, init_timestamp_arg),
  LTTNG_UST_TP_FIELDS(RC_P(callback, callback_arg) RC_S(symbol, symbol_arg) RC_TS))

/* ---- executor structure (CARET's own init events) */
LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, construct_executor,
  LTTNG_UST_TP_ARGS(const void *, executor_addr_arg, const char *, executor_type_name_arg,
    int64_t, init_timestamp_arg),
  LTTNG_UST_TP_FIELDS(RC_P(executor_addr, executor_addr_arg) RC_S(executor_type_name, executor_type_name_arg) RC_TS))

LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, add_callback_group,
  LTTNG_UST_TP_ARGS(const void *, executor_addr_arg, const void *, callback_group_addr_arg,
    const char *, group_type_name_arg, int64_t, init_timestamp_arg),
  LTTNG_UST_TP_FIELDS(RC_P(executor_addr, executor_addr_arg) RC_P(callback_group_addr, callback_group_addr_arg)
    RC_S(group_type_name, group_type_name_arg) RC_TS))

LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, callback_group_add_timer,
  LTTNG_UST_TP_ARGS(const void *, callback_group_addr_arg, const void *, timer_handle_arg, int64_t, init_timestamp_arg),
  LTTNG_UST_TP_FIELDS(RC_P(callback_group_addr, callback_group_addr_arg) RC_P(timer_handle, timer_handle_arg) RC_TS))

LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, callback_group_add_subscription,
  LTTNG_UST_TP_ARGS(const void *, callback_group_addr_arg, const void *, subscription_handle_arg,
    int64_t, init_timestamp_arg),
  LTTNG_UST_TP_FIELDS(RC_P(callback_group_addr, callback_group_addr_arg)
    RC_P(subscription_handle, subscription_handle_arg) RC_TS))

LTTNG_UST_TRACEPOINT_EVENT(ros2_caret, callback_group_add_service,
  LTTNG_UST_TP_ARGS(const void *, callback_group_addr_arg, const void *, service_handle_arg, int64_t, init_timestamp_arg),
  LTTNG_UST_TP_FIELDS(RC_P(callback_group_addr, callback_group_addr_arg) RC_P(service_handle, service_handle_arg) RC_TS))

#endif /* ROS2SIM_CARET_TP_H */

#include <lttng/tracepoint-event.h>
