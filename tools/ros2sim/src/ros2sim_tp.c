/* Tracepoint provider package: one shared object per distro. */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES

#include "ros2sim_tp.h"
