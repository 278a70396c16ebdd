/* Instantiates the roscope_ros1 tracepoint probes inside the tracer library. */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "roscope_ros1_tp.h"
