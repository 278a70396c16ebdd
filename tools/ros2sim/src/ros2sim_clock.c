/*
 * LTTng-UST clock override plugin for simulated hosts (LTTNG_UST_CLOCK_PLUGIN).
 * host clock = CLOCK_MONOTONIC + offset + (CLOCK_MONOTONIC - ref) * drift_ppm / 1e6
 * Environment: ROS2SIM_CLOCK_OFFSET_NS, ROS2SIM_CLOCK_DRIFT_PPM, ROS2SIM_CLOCK_REF_NS,
 * ROS2SIM_CLOCK_UUID (36 chars).  The clock keeps the name "monotonic".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <lttng/ust-clock.h>
#include "ros2sim_clock.h"

static struct r2s_clock g_clock;
static char g_uuid[LTTNG_UST_UUID_STR_LEN];

static uint64_t plugin_read64(void) { return r2s_clock_now(&g_clock); }
static uint64_t plugin_freq(void) { return 1000000000ULL; }
static int plugin_uuid(char *uuid) { memcpy(uuid, g_uuid, LTTNG_UST_UUID_STR_LEN); return 0; }
static const char *plugin_name(void) { return "monotonic"; }
static const char *plugin_description(void) { return "Monotonic Clock"; }

void lttng_ust_clock_plugin_init(void);
void lttng_ust_clock_plugin_init(void)
{
	r2s_clock_from_env(&g_clock);
	const char *u = getenv("ROS2SIM_CLOCK_UUID");
	if (!u || strlen(u) != LTTNG_UST_UUID_STR_LEN - 1) {
		fprintf(stderr, "ros2sim clock plugin: ROS2SIM_CLOCK_UUID must be a 36-character UUID\n");
		exit(EXIT_FAILURE);
	}
	memcpy(g_uuid, u, LTTNG_UST_UUID_STR_LEN - 1);
	g_uuid[LTTNG_UST_UUID_STR_LEN - 1] = '\0';
	if (lttng_ust_trace_clock_set_read64_cb(plugin_read64) ||
	    lttng_ust_trace_clock_set_freq_cb(plugin_freq) ||
	    lttng_ust_trace_clock_set_uuid_cb(plugin_uuid) ||
	    lttng_ust_trace_clock_set_name_cb(plugin_name) ||
	    lttng_ust_trace_clock_set_description_cb(plugin_description) ||
	    lttng_ust_enable_trace_clock_override()) {
		fprintf(stderr, "ros2sim clock plugin: could not install the clock override\n");
		exit(EXIT_FAILURE);
	}
}
