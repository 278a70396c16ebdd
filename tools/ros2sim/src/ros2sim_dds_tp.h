/*
 * ros2sim tracepoint provider `dds`: the DDS-layer events of the message-flow
 * paper's Cyclone DDS instrumentation (Bédard et al.; the layout of its
 * `dds` provider: create_writer/create_reader with the topic name and the
 * 16-byte GID, write with the writer, the data and the DDS source timestamp,
 * read with the reader and the buffer). Loaded with dlopen by the simulator
 * in --dds mode only, so traces of plain runs declare no dds event.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER dds

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "ros2sim_dds_tp.h"

#if !defined(ROS2SIM_DDS_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define ROS2SIM_DDS_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

#define ROS2SIM_DDS_GID_SIZE 16

LTTNG_UST_TRACEPOINT_EVENT(dds, create_writer,
  LTTNG_UST_TP_ARGS(const void *, writer_arg, const char *, topic_name_arg, const uint8_t *, gid_arg),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(const void *, writer, writer_arg)
    lttng_ust_field_string(topic_name, topic_name_arg)
    lttng_ust_field_array(uint8_t, gid, gid_arg, ROS2SIM_DDS_GID_SIZE)))

LTTNG_UST_TRACEPOINT_EVENT(dds, create_reader,
  LTTNG_UST_TP_ARGS(const void *, reader_arg, const char *, topic_name_arg, const uint8_t *, gid_arg),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(const void *, reader, reader_arg)
    lttng_ust_field_string(topic_name, topic_name_arg)
    lttng_ust_field_array(uint8_t, gid, gid_arg, ROS2SIM_DDS_GID_SIZE)))

LTTNG_UST_TRACEPOINT_EVENT(dds, write,
  LTTNG_UST_TP_ARGS(const void *, writer_arg, const void *, data_arg, int64_t, timestamp_arg),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(const void *, writer, writer_arg)
    lttng_ust_field_integer_hex(const void *, data, data_arg)
    lttng_ust_field_integer(int64_t, timestamp, timestamp_arg)))

LTTNG_UST_TRACEPOINT_EVENT(dds, read,
  LTTNG_UST_TP_ARGS(const void *, reader_arg, const void *, buffer_arg),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer_hex(const void *, reader, reader_arg)
    lttng_ust_field_integer_hex(const void *, buffer, buffer_arg)))

#endif /* ROS2SIM_DDS_TP_H */

#include <lttng/tracepoint-event.h>
