/* LTTng-UST tracepoint provider "roscope_attach": how roscope's tracers (the ROS 1
 * preload tracer, roscope's ROS 2 tracer and through them the rospy and rclpy hooks)
 * learn that a session wants the objects of processes that already run.
 *
 * `roscope record --attach` enables roscope_attach:request in its session for a
 * moment after it starts, then disables it. The tracers check the tracepoint's
 * enabled state (one load) at hook calls and every 50 ms; when it turns on, they
 * re-emit the init events of every live object (a state dump, docs/ros1-tracer.md,
 * "Attaching"). A separate provider, so that sessions enabling `roscope_ros1:*` or
 * `roscope_ros2:*` do not turn it on. The event itself is never emitted. */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER roscope_attach

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "roscope/roscope_attach_tp.h"

#if !defined(ROSCOPE_ATTACH_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define ROSCOPE_ATTACH_TP_H

#include <lttng/tracepoint.h>

LTTNG_UST_TRACEPOINT_EVENT(roscope_attach, request,
  LTTNG_UST_TP_ARGS(int, unused),
  LTTNG_UST_TP_FIELDS(
    lttng_ust_field_integer(int, unused, unused)))

#endif /* ROSCOPE_ATTACH_TP_H */

#include <lttng/tracepoint-event.h>
