/* ROS 2-like LTTng-UST events for the decode benchmark (provider roscope_bench). */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER roscope_bench
#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "./bench_tp.h"
#if !defined(BENCH_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define BENCH_TP_H
#include <lttng/tracepoint.h>
#include <stdint.h>

LTTNG_UST_TRACEPOINT_EVENT(roscope_bench, callback_start,
    LTTNG_UST_TP_ARGS(const void *, callback, int, is_intra_process),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(const void *, callback, callback)
        lttng_ust_field_integer(int, is_intra_process, is_intra_process)))

LTTNG_UST_TRACEPOINT_EVENT(roscope_bench, callback_end,
    LTTNG_UST_TP_ARGS(const void *, callback),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(const void *, callback, callback)))

LTTNG_UST_TRACEPOINT_EVENT(roscope_bench, rclcpp_publish,
    LTTNG_UST_TP_ARGS(const void *, publisher_handle, const void *, message, uint64_t, seq),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(const void *, publisher_handle, publisher_handle)
        lttng_ust_field_integer_hex(const void *, message, message)
        lttng_ust_field_integer(uint64_t, seq, seq)))

LTTNG_UST_TRACEPOINT_EVENT(roscope_bench, rmw_take,
    LTTNG_UST_TP_ARGS(const void *, rmw_subscription_handle, const void *, message,
                      int64_t, source_timestamp, int, taken),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(const void *, rmw_subscription_handle, rmw_subscription_handle)
        lttng_ust_field_integer_hex(const void *, message, message)
        lttng_ust_field_integer(int64_t, source_timestamp, source_timestamp)
        lttng_ust_field_integer(int, taken, taken)))

LTTNG_UST_TRACEPOINT_EVENT(roscope_bench, rcl_subscription_init,
    LTTNG_UST_TP_ARGS(const void *, subscription_handle, const void *, node_handle,
                      const char *, topic_name, unsigned int, queue_depth),
    LTTNG_UST_TP_FIELDS(
        lttng_ust_field_integer_hex(const void *, subscription_handle, subscription_handle)
        lttng_ust_field_integer_hex(const void *, node_handle, node_handle)
        lttng_ust_field_string(topic_name, topic_name)
        lttng_ust_field_integer(unsigned int, queue_depth, queue_depth)))

#endif
#include <lttng/tracepoint-event.h>
