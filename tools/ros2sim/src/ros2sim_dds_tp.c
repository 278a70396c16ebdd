/* Tracepoint provider package of `dds` (dlopen'ed in --dds mode). */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES

#include "ros2sim_dds_tp.h"
