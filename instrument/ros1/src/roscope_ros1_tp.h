/* LTTng-UST tracepoint provider "roscope_ros1": events emitted by the roscpp
 * preload tracer (libroscope_ros1.so). Field meanings: docs/ros1-tracer.md.
 *
 * Two phases, as in ros2_tracing: *_init / callback_register events carry the
 * names (once per object); runtime events carry only handles (pointers as hex
 * integers) and small integers. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER roscope_ros1

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "roscope_ros1_tp.h"

#if !defined(ROSCOPE_ROS1_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define ROSCOPE_ROS1_TP_H

#include <stdint.h>
#include <stddef.h>
#include <lttng/tracepoint.h>

/* ---------------- initialization events ---------------- */

/* Emitted once when the tracer is loaded into a process. record_id is the
 * ROSCOPE_RECORD_ID environment variable ("" if unset), which `roscope record`
 * sets for the command it runs: LTTng records every traced process of the
 * machine, so it tells the processes of one recording from others. */
LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, process_init,
  LTTNG_UST_TP_ARGS(const char *, record_id, const char *, exe),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_string(record_id, record_id)
    lttng_ust_field_string(exe, exe)))

/* State dump (docs/ros1-tracer.md, "Attaching"): when a session starts while the
 * process runs, the tracer re-emits the init events of every live object between
 * these two, in one thread. state_dump_begin's enabled state is also how the tracer
 * sees a session start. */
LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, state_dump_begin,
  LTTNG_UST_TP_ARGS(uint32_t, objects),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer(uint32_t, objects, objects)))

LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, state_dump_end,
  LTTNG_UST_TP_ARGS(uint32_t, objects),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer(uint32_t, objects, objects)))

LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, node_init,
  LTTNG_UST_TP_ARGS(const char *, node_name, const char *, tracer_version),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_string(node_name, node_name)
    lttng_ust_field_string(tracer_version, tracer_version)))

LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, publisher_init,
  LTTNG_UST_TP_ARGS(const void *, publisher, const char *, node_name, const char *, nh_namespace,
                    const char *, topic, const char *, msg_type, uint32_t, queue_size, int, latch),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(uint64_t, publisher, (uint64_t)(uintptr_t)publisher)
    lttng_ust_field_string(node_name, node_name)
    lttng_ust_field_string(nh_namespace, nh_namespace)
    lttng_ust_field_string(topic, topic)
    lttng_ust_field_string(msg_type, msg_type)
    lttng_ust_field_integer(uint32_t, queue_size, queue_size)
    lttng_ust_field_integer(int, latch, latch)))

LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, subscription_init,
  LTTNG_UST_TP_ARGS(const void *, subscription, const void *, callback, const char *, node_name,
                    const char *, nh_namespace, const char *, topic, const char *, msg_type,
                    uint32_t, queue_size),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(uint64_t, subscription, (uint64_t)(uintptr_t)subscription)
    lttng_ust_field_integer_hex(uint64_t, callback, (uint64_t)(uintptr_t)callback)
    lttng_ust_field_string(node_name, node_name)
    lttng_ust_field_string(nh_namespace, nh_namespace)
    lttng_ust_field_string(topic, topic)
    lttng_ust_field_string(msg_type, msg_type)
    lttng_ust_field_integer(uint32_t, queue_size, queue_size)))

LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, timer_init,
  LTTNG_UST_TP_ARGS(const void *, timer, const void *, callback, const char *, node_name,
                    const char *, nh_namespace, int64_t, period, int, oneshot),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(uint64_t, timer, (uint64_t)(uintptr_t)timer)
    lttng_ust_field_integer_hex(uint64_t, callback, (uint64_t)(uintptr_t)callback)
    lttng_ust_field_string(node_name, node_name)
    lttng_ust_field_string(nh_namespace, nh_namespace)
    lttng_ust_field_integer(int64_t, period, period)
    lttng_ust_field_integer(int, oneshot, oneshot)))

LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, service_init,
  LTTNG_UST_TP_ARGS(const void *, service, const void *, callback, const char *, node_name,
                    const char *, nh_namespace, const char *, service_name, const char *, srv_type),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(uint64_t, service, (uint64_t)(uintptr_t)service)
    lttng_ust_field_integer_hex(uint64_t, callback, (uint64_t)(uintptr_t)callback)
    lttng_ust_field_string(node_name, node_name)
    lttng_ust_field_string(nh_namespace, nh_namespace)
    lttng_ust_field_string(service_name, service_name)
    lttng_ust_field_string(srv_type, srv_type)))

LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, callback_register,
  LTTNG_UST_TP_ARGS(const void *, callback, const char *, kind, const char *, symbol),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(uint64_t, callback, (uint64_t)(uintptr_t)callback)
    lttng_ust_field_string(kind, kind)
    lttng_ust_field_string(symbol, symbol)))

/* Publisher-side end of a TCPROS connection (roscpp TransportSubscriberLink). */
LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, link_tx_init,
  LTTNG_UST_TP_ARGS(const void *, link, const char *, topic, const char *, local_addr,
                    const char *, remote_addr),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(uint64_t, link, (uint64_t)(uintptr_t)link)
    lttng_ust_field_string(topic, topic)
    lttng_ust_field_string(local_addr, local_addr)
    lttng_ust_field_string(remote_addr, remote_addr)))

/* Subscriber-side end of a TCPROS connection (roscpp TransportPublisherLink). */
LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, link_rx_init,
  LTTNG_UST_TP_ARGS(const void *, link, const char *, topic, const char *, local_addr,
                    const char *, remote_addr),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(uint64_t, link, (uint64_t)(uintptr_t)link)
    lttng_ust_field_string(topic, topic)
    lttng_ust_field_string(local_addr, local_addr)
    lttng_ust_field_string(remote_addr, remote_addr)))

/* User annotations of indirect causal links (instrument/include/roscope/annotate.h). */
LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, message_link_periodic_async,
  LTTNG_UST_TP_ARGS(const uint64_t *, subs, size_t, n_subs, const uint64_t *, pubs, size_t, n_pubs),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_sequence_hex(uint64_t, subs, subs, size_t, n_subs)
    lttng_ust_field_sequence_hex(uint64_t, pubs, pubs, size_t, n_pubs)))

LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, message_link_partial_sync,
  LTTNG_UST_TP_ARGS(const uint64_t *, subs, size_t, n_subs, const uint64_t *, pubs, size_t, n_pubs),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_sequence_hex(uint64_t, subs, subs, size_t, n_subs)
    lttng_ust_field_sequence_hex(uint64_t, pubs, pubs, size_t, n_pubs)))

/* ---------------- runtime events ---------------- */

LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, publish,
  LTTNG_UST_TP_ARGS(const void *, publisher, uint64_t, message_id, const void *, message),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(uint64_t, publisher, (uint64_t)(uintptr_t)publisher)
    lttng_ust_field_integer(uint64_t, message_id, message_id)
    lttng_ust_field_integer_hex(uint64_t, message, (uint64_t)(uintptr_t)message)))

LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, publish_buffer,
  LTTNG_UST_TP_ARGS(uint64_t, message_id, const void *, buffer, uint32_t, size),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer(uint64_t, message_id, message_id)
    lttng_ust_field_integer_hex(uint64_t, buffer, (uint64_t)(uintptr_t)buffer)
    lttng_ust_field_integer(uint32_t, size, size)))

/* index: the write's position on the link (0, 1, ...; as link_rx_message.index on the
 * other side), UINT64_MAX if the tracer's table of links is full. */
LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, link_tx_write,
  LTTNG_UST_TP_ARGS(const void *, link, const void *, buffer, uint32_t, size, uint64_t, index),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(uint64_t, link, (uint64_t)(uintptr_t)link)
    lttng_ust_field_integer_hex(uint64_t, buffer, (uint64_t)(uintptr_t)buffer)
    lttng_ust_field_integer(uint32_t, size, size)
    lttng_ust_field_integer(uint64_t, index, index)))

LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, link_rx_message,
  LTTNG_UST_TP_ARGS(const void *, link, const void *, buffer, uint32_t, size, uint64_t, index),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(uint64_t, link, (uint64_t)(uintptr_t)link)
    lttng_ust_field_integer_hex(uint64_t, buffer, (uint64_t)(uintptr_t)buffer)
    lttng_ust_field_integer(uint32_t, size, size)
    lttng_ust_field_integer(uint64_t, index, index)))

/* A received (or intra-process delivered) message was queued for one
 * subscription callback group: roscpp created a MessageDeserializer for it. */
LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, message_queue,
  LTTNG_UST_TP_ARGS(const void *, deserializer, const void *, callback, const void *, buffer,
                    const void *, message),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(uint64_t, deserializer, (uint64_t)(uintptr_t)deserializer)
    lttng_ust_field_integer_hex(uint64_t, callback, (uint64_t)(uintptr_t)callback)
    lttng_ust_field_integer_hex(uint64_t, buffer, (uint64_t)(uintptr_t)buffer)
    lttng_ust_field_integer_hex(uint64_t, message, (uint64_t)(uintptr_t)message)))

LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, callback_start,
  LTTNG_UST_TP_ARGS(const void *, callback, const void *, deserializer),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(uint64_t, callback, (uint64_t)(uintptr_t)callback)
    lttng_ust_field_integer_hex(uint64_t, deserializer, (uint64_t)(uintptr_t)deserializer)))

LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, callback_end,
  LTTNG_UST_TP_ARGS(const void *, callback),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(uint64_t, callback, (uint64_t)(uintptr_t)callback)))

/* Queue-level span (CallbackQueue::callOneCB: includes deserialization and
 * roscpp bookkeeping). Not a user callback run. */
LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, queue_call_start,
  LTTNG_UST_TP_ARGS(const void *, queue),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(uint64_t, queue, (uint64_t)(uintptr_t)queue)))

LTTNG_UST_TRACEPOINT_EVENT(roscope_ros1, queue_call_end,
  LTTNG_UST_TP_ARGS(const void *, queue),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(uint64_t, queue, (uint64_t)(uintptr_t)queue)))

#endif /* ROSCOPE_ROS1_TP_H */

#include <lttng/tracepoint-event.h>
