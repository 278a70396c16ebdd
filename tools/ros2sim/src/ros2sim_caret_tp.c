/* Tracepoint provider package of `ros2_caret` (dlopen'ed in --caret mode). */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES

#include "ros2sim_caret_tp.h"
