/* The state dump of roscope's ROS 2 tracer library (docs/ros1-tracer.md, "Attaching"; the
 * same mechanism as the ROS 1 tracer's): the generated ros_trace_* functions of the init
 * events keep a copy of their parameters here (one record per kind and handle: a handle
 * reused by a new object replaces the old record); when `roscope record --attach` turns
 * roscope_attach:request on, roscope_ros2.c re-emits them all between
 * roscope_ros2:state_dump_begin and state_dump_end. */
#ifndef ROSCOPE_ROS2_DUMP_H
#define ROSCOPE_ROS2_DUMP_H

#include <stdint.h>

struct roscope_ros2_rec {
  struct roscope_ros2_rec *next;
  const char *kind;  /* the event's name (a string literal) */
  uint64_t key;      /* its first parameter: the object's handle */
  void (*emit)(const struct roscope_ros2_rec *);
  void (*release)(struct roscope_ros2_rec *);
};

/* Keeps `rec` (the library owns it from now on). Init time only. */
void roscope_ros2_remember(struct roscope_ros2_rec *rec, const char *kind, uint64_t key,
                           void (*emit)(const struct roscope_ros2_rec *),
                           void (*release)(struct roscope_ros2_rec *));

/* Cheap: one load of roscope_attach:request's state; the dump when it turned on. */
void roscope_ros2_check_dump(void);

#endif
