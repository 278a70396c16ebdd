/* The roscope_ros1 tracepoint probe provider (libroscope_ros1_tp.so), linked with
 * liblttng-ust. The preloaded tracer defines the tracepoints with dynamic probe
 * linkage and loads this library only in processes it traces (roscpp or rospy).
 * It also provides roscope_attach:request (the state dump's trigger). */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#include "roscope_ros1_tp.h"
#include "roscope/roscope_attach_tp.h"
