/*
 * ros2sim tracepoint provider: provider `ros2`, one layout per ROS 2 distro.
 *
 * Written for roscope from the field tables of ros2_tracing's tracetools
 * (see ../shared/reference/ros2-tracepoints.md and the metadata of the real
 * traces in ../shared/traces).  Compile with -DROS2SIM_DISTRO=<n>:
 *   1 = humble   (28 events, GID 24 bytes, rmw_publish(message))
 *   2 = jazzy    (35 events, + intra-process ring buffer events,
 *                 rmw_publish(rmw_publisher_handle, message, timestamp))
 *   3 = rolling  (jazzy + Kilted service/client events, GID 16 bytes,
 *                 + message_link_periodic_async / message_link_partial_sync)
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER ros2

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "ros2sim_tp.h"

#if !defined(ROS2SIM_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define ROS2SIM_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>
#include <stddef.h>

#ifndef ROS2SIM_DISTRO
#error "define ROS2SIM_DISTRO (1 humble, 2 jazzy, 3 rolling)"
#endif

#if ROS2SIM_DISTRO >= 3
#define ROS2SIM_GID_SIZE 16
#else
#define ROS2SIM_GID_SIZE 24
#endif

#define R2_P(name, arg) lttng_ust_field_integer_hex(const void *, name, arg)
#define R2_S(name, arg) lttng_ust_field_string(name, arg)

LTTNG_UST_TRACEPOINT_EVENT(ros2, rcl_init,
  LTTNG_UST_TP_ARGS(const void *, context_handle_arg, const char *, version_arg),
  LTTNG_UST_TP_FIELDS(R2_P(context_handle, context_handle_arg) R2_S(version, version_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rcl_node_init,
  LTTNG_UST_TP_ARGS(const void *, node_handle_arg, const void *, rmw_handle_arg,
    const char *, node_name_arg, const char *, namespace_arg),
  LTTNG_UST_TP_FIELDS(R2_P(node_handle, node_handle_arg) R2_P(rmw_handle, rmw_handle_arg)
    R2_S(node_name, node_name_arg) R2_S(namespace, namespace_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rmw_publisher_init,
  LTTNG_UST_TP_ARGS(const void *, rmw_publisher_handle_arg, const uint8_t *, gid_arg),
  LTTNG_UST_TP_FIELDS(R2_P(rmw_publisher_handle, rmw_publisher_handle_arg)
    lttng_ust_field_array(uint8_t, gid, gid_arg, ROS2SIM_GID_SIZE)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rcl_publisher_init,
  LTTNG_UST_TP_ARGS(const void *, publisher_handle_arg, const void *, node_handle_arg,
    const void *, rmw_publisher_handle_arg, const char *, topic_name_arg, size_t, queue_depth_arg),
  LTTNG_UST_TP_FIELDS(R2_P(publisher_handle, publisher_handle_arg) R2_P(node_handle, node_handle_arg)
    R2_P(rmw_publisher_handle, rmw_publisher_handle_arg) R2_S(topic_name, topic_name_arg)
    lttng_ust_field_integer(size_t, queue_depth, queue_depth_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rclcpp_publish,
  LTTNG_UST_TP_ARGS(const void *, message_arg),
  LTTNG_UST_TP_FIELDS(R2_P(message, message_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rcl_publish,
  LTTNG_UST_TP_ARGS(const void *, publisher_handle_arg, const void *, message_arg),
  LTTNG_UST_TP_FIELDS(R2_P(publisher_handle, publisher_handle_arg) R2_P(message, message_arg)))

#if ROS2SIM_DISTRO >= 2
LTTNG_UST_TRACEPOINT_EVENT(ros2, rmw_publish,
  LTTNG_UST_TP_ARGS(const void *, rmw_publisher_handle_arg, const void *, message_arg,
    int64_t, timestamp_arg),
  LTTNG_UST_TP_FIELDS(R2_P(rmw_publisher_handle, rmw_publisher_handle_arg) R2_P(message, message_arg)
    lttng_ust_field_integer(int64_t, timestamp, timestamp_arg)))
#else
LTTNG_UST_TRACEPOINT_EVENT(ros2, rmw_publish,
  LTTNG_UST_TP_ARGS(const void *, message_arg),
  LTTNG_UST_TP_FIELDS(R2_P(message, message_arg)))
#endif

LTTNG_UST_TRACEPOINT_EVENT(ros2, rmw_subscription_init,
  LTTNG_UST_TP_ARGS(const void *, rmw_subscription_handle_arg, const uint8_t *, gid_arg),
  LTTNG_UST_TP_FIELDS(R2_P(rmw_subscription_handle, rmw_subscription_handle_arg)
    lttng_ust_field_array(uint8_t, gid, gid_arg, ROS2SIM_GID_SIZE)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rcl_subscription_init,
  LTTNG_UST_TP_ARGS(const void *, subscription_handle_arg, const void *, node_handle_arg,
    const void *, rmw_subscription_handle_arg, const char *, topic_name_arg, size_t, queue_depth_arg),
  LTTNG_UST_TP_FIELDS(R2_P(subscription_handle, subscription_handle_arg) R2_P(node_handle, node_handle_arg)
    R2_P(rmw_subscription_handle, rmw_subscription_handle_arg) R2_S(topic_name, topic_name_arg)
    lttng_ust_field_integer(size_t, queue_depth, queue_depth_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rclcpp_subscription_init,
  LTTNG_UST_TP_ARGS(const void *, subscription_handle_arg, const void *, subscription_arg),
  LTTNG_UST_TP_FIELDS(R2_P(subscription_handle, subscription_handle_arg) R2_P(subscription, subscription_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rclcpp_subscription_callback_added,
  LTTNG_UST_TP_ARGS(const void *, subscription_arg, const void *, callback_arg),
  LTTNG_UST_TP_FIELDS(R2_P(subscription, subscription_arg) R2_P(callback, callback_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rmw_take,
  LTTNG_UST_TP_ARGS(const void *, rmw_subscription_handle_arg, const void *, message_arg,
    int64_t, source_timestamp_arg, int, taken_arg),
  LTTNG_UST_TP_FIELDS(R2_P(rmw_subscription_handle, rmw_subscription_handle_arg) R2_P(message, message_arg)
    lttng_ust_field_integer(int64_t, source_timestamp, source_timestamp_arg)
    lttng_ust_field_integer(int, taken, (taken_arg ? 1 : 0))))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rcl_take,
  LTTNG_UST_TP_ARGS(const void *, message_arg),
  LTTNG_UST_TP_FIELDS(R2_P(message, message_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rclcpp_take,
  LTTNG_UST_TP_ARGS(const void *, message_arg),
  LTTNG_UST_TP_FIELDS(R2_P(message, message_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rcl_service_init,
  LTTNG_UST_TP_ARGS(const void *, service_handle_arg, const void *, node_handle_arg,
    const void *, rmw_service_handle_arg, const char *, service_name_arg),
  LTTNG_UST_TP_FIELDS(R2_P(service_handle, service_handle_arg) R2_P(node_handle, node_handle_arg)
    R2_P(rmw_service_handle, rmw_service_handle_arg) R2_S(service_name, service_name_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rclcpp_service_callback_added,
  LTTNG_UST_TP_ARGS(const void *, service_handle_arg, const void *, callback_arg),
  LTTNG_UST_TP_FIELDS(R2_P(service_handle, service_handle_arg) R2_P(callback, callback_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rcl_client_init,
  LTTNG_UST_TP_ARGS(const void *, client_handle_arg, const void *, node_handle_arg,
    const void *, rmw_client_handle_arg, const char *, service_name_arg),
  LTTNG_UST_TP_FIELDS(R2_P(client_handle, client_handle_arg) R2_P(node_handle, node_handle_arg)
    R2_P(rmw_client_handle, rmw_client_handle_arg) R2_S(service_name, service_name_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rcl_timer_init,
  LTTNG_UST_TP_ARGS(const void *, timer_handle_arg, int64_t, period_arg),
  LTTNG_UST_TP_FIELDS(R2_P(timer_handle, timer_handle_arg) lttng_ust_field_integer(int64_t, period, period_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rclcpp_timer_callback_added,
  LTTNG_UST_TP_ARGS(const void *, timer_handle_arg, const void *, callback_arg),
  LTTNG_UST_TP_FIELDS(R2_P(timer_handle, timer_handle_arg) R2_P(callback, callback_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rclcpp_timer_link_node,
  LTTNG_UST_TP_ARGS(const void *, timer_handle_arg, const void *, node_handle_arg),
  LTTNG_UST_TP_FIELDS(R2_P(timer_handle, timer_handle_arg) R2_P(node_handle, node_handle_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rclcpp_callback_register,
  LTTNG_UST_TP_ARGS(const void *, callback_arg, const char *, symbol_arg),
  LTTNG_UST_TP_FIELDS(R2_P(callback, callback_arg) R2_S(symbol, symbol_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, callback_start,
  LTTNG_UST_TP_ARGS(const void *, callback_arg, int, is_intra_process_arg),
  LTTNG_UST_TP_FIELDS(R2_P(callback, callback_arg)
    lttng_ust_field_integer(int, is_intra_process, (is_intra_process_arg ? 1 : 0))))

LTTNG_UST_TRACEPOINT_EVENT(ros2, callback_end,
  LTTNG_UST_TP_ARGS(const void *, callback_arg),
  LTTNG_UST_TP_FIELDS(R2_P(callback, callback_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rcl_lifecycle_state_machine_init,
  LTTNG_UST_TP_ARGS(const void *, node_handle_arg, const void *, state_machine_arg),
  LTTNG_UST_TP_FIELDS(R2_P(node_handle, node_handle_arg) R2_P(state_machine, state_machine_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rcl_lifecycle_transition,
  LTTNG_UST_TP_ARGS(const void *, state_machine_arg, const char *, start_label_arg, const char *, goal_label_arg),
  LTTNG_UST_TP_FIELDS(R2_P(state_machine, state_machine_arg) R2_S(start_label, start_label_arg)
    R2_S(goal_label, goal_label_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rclcpp_executor_get_next_ready,
  LTTNG_UST_TP_ARGS(),
  LTTNG_UST_TP_FIELDS())

LTTNG_UST_TRACEPOINT_EVENT(ros2, rclcpp_executor_wait_for_work,
  LTTNG_UST_TP_ARGS(int64_t, timeout_arg),
  LTTNG_UST_TP_FIELDS(lttng_ust_field_integer(int64_t, timeout, timeout_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rclcpp_executor_execute,
  LTTNG_UST_TP_ARGS(const void *, handle_arg),
  LTTNG_UST_TP_FIELDS(R2_P(handle, handle_arg)))

#if ROS2SIM_DISTRO >= 2
LTTNG_UST_TRACEPOINT_EVENT(ros2, rclcpp_intra_publish,
  LTTNG_UST_TP_ARGS(const void *, publisher_handle_arg, const void *, message_arg),
  LTTNG_UST_TP_FIELDS(R2_P(publisher_handle, publisher_handle_arg) R2_P(message, message_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rclcpp_ipb_to_subscription,
  LTTNG_UST_TP_ARGS(const void *, ipb_arg, const void *, subscription_arg),
  LTTNG_UST_TP_FIELDS(R2_P(ipb, ipb_arg) R2_P(subscription, subscription_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rclcpp_buffer_to_ipb,
  LTTNG_UST_TP_ARGS(const void *, buffer_arg, const void *, ipb_arg),
  LTTNG_UST_TP_FIELDS(R2_P(buffer, buffer_arg) R2_P(ipb, ipb_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rclcpp_construct_ring_buffer,
  LTTNG_UST_TP_ARGS(const void *, buffer_arg, uint64_t, capacity_arg),
  LTTNG_UST_TP_FIELDS(R2_P(buffer, buffer_arg) lttng_ust_field_integer(uint64_t, capacity, capacity_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rclcpp_ring_buffer_enqueue,
  LTTNG_UST_TP_ARGS(const void *, buffer_arg, uint64_t, index_arg, uint64_t, size_arg, int, overwritten_arg),
  LTTNG_UST_TP_FIELDS(R2_P(buffer, buffer_arg) lttng_ust_field_integer(uint64_t, index, index_arg)
    lttng_ust_field_integer(uint64_t, size, size_arg)
    lttng_ust_field_integer(int, overwritten, (overwritten_arg ? 1 : 0))))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rclcpp_ring_buffer_dequeue,
  LTTNG_UST_TP_ARGS(const void *, buffer_arg, uint64_t, index_arg, uint64_t, size_arg),
  LTTNG_UST_TP_FIELDS(R2_P(buffer, buffer_arg) lttng_ust_field_integer(uint64_t, index, index_arg)
    lttng_ust_field_integer(uint64_t, size, size_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rclcpp_ring_buffer_clear,
  LTTNG_UST_TP_ARGS(const void *, buffer_arg),
  LTTNG_UST_TP_FIELDS(R2_P(buffer, buffer_arg)))
#endif

#if ROS2SIM_DISTRO >= 3
LTTNG_UST_TRACEPOINT_EVENT(ros2, rmw_client_init,
  LTTNG_UST_TP_ARGS(const void *, rmw_client_handle_arg, const uint8_t *, gid_arg),
  LTTNG_UST_TP_FIELDS(R2_P(rmw_client_handle, rmw_client_handle_arg)
    lttng_ust_field_array(uint8_t, gid, gid_arg, ROS2SIM_GID_SIZE)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rmw_take_request,
  LTTNG_UST_TP_ARGS(const void *, rmw_service_handle_arg, const void *, request_arg,
    const uint8_t *, client_gid_arg, int64_t, sequence_number_arg, int, taken_arg),
  LTTNG_UST_TP_FIELDS(R2_P(rmw_service_handle, rmw_service_handle_arg) R2_P(request, request_arg)
    lttng_ust_field_array(uint8_t, client_gid, client_gid_arg, ROS2SIM_GID_SIZE)
    lttng_ust_field_integer(int64_t, sequence_number, sequence_number_arg)
    lttng_ust_field_integer(int, taken, (taken_arg ? 1 : 0))))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rmw_send_response,
  LTTNG_UST_TP_ARGS(const void *, rmw_service_handle_arg, const void *, response_arg,
    const uint8_t *, client_gid_arg, int64_t, sequence_number_arg, int64_t, timestamp_arg),
  LTTNG_UST_TP_FIELDS(R2_P(rmw_service_handle, rmw_service_handle_arg) R2_P(response, response_arg)
    lttng_ust_field_array(uint8_t, client_gid, client_gid_arg, ROS2SIM_GID_SIZE)
    lttng_ust_field_integer(int64_t, sequence_number, sequence_number_arg)
    lttng_ust_field_integer(int64_t, timestamp, timestamp_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rmw_send_request,
  LTTNG_UST_TP_ARGS(const void *, rmw_client_handle_arg, const void *, request_arg, int64_t, sequence_number_arg),
  LTTNG_UST_TP_FIELDS(R2_P(rmw_client_handle, rmw_client_handle_arg) R2_P(request, request_arg)
    lttng_ust_field_integer(int64_t, sequence_number, sequence_number_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, rmw_take_response,
  LTTNG_UST_TP_ARGS(const void *, rmw_client_handle_arg, const void *, response_arg,
    int64_t, sequence_number_arg, int64_t, source_timestamp_arg, int, taken_arg),
  LTTNG_UST_TP_FIELDS(R2_P(rmw_client_handle, rmw_client_handle_arg) R2_P(response, response_arg)
    lttng_ust_field_integer(int64_t, sequence_number, sequence_number_arg)
    lttng_ust_field_integer(int64_t, source_timestamp, source_timestamp_arg)
    lttng_ust_field_integer(int, taken, (taken_arg ? 1 : 0))))

/* Annotations of indirect causal links (message-flow paper): sequences of
 * rcl subscription handles and rcl publisher handles. */
LTTNG_UST_TRACEPOINT_EVENT(ros2, message_link_periodic_async,
  LTTNG_UST_TP_ARGS(const void **, subs_arg, size_t, n_subs_arg, const void **, pubs_arg, size_t, n_pubs_arg),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_sequence_hex(const void *, subs, subs_arg, size_t, n_subs_arg)
    lttng_ust_field_sequence_hex(const void *, pubs, pubs_arg, size_t, n_pubs_arg)))

LTTNG_UST_TRACEPOINT_EVENT(ros2, message_link_partial_sync,
  LTTNG_UST_TP_ARGS(const void **, subs_arg, size_t, n_subs_arg, const void **, pubs_arg, size_t, n_pubs_arg),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_sequence_hex(const void *, subs, subs_arg, size_t, n_subs_arg)
    lttng_ust_field_sequence_hex(const void *, pubs, pubs_arg, size_t, n_pubs_arg)))
#endif

#endif /* ROS2SIM_TP_H */

#include <lttng/tracepoint-event.h>
