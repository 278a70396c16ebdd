/* Host clock model shared by the clock plugin and the simulator (ground truth). */
#ifndef ROS2SIM_CLOCK_H
#define ROS2SIM_CLOCK_H
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

struct r2s_clock {
	int64_t offset_ns;   /* added to CLOCK_MONOTONIC */
	double drift;        /* ppm / 1e6 */
	int64_t ref_ns;      /* CLOCK_MONOTONIC instant where drift contributes 0 */
	int active;
};

static inline void r2s_clock_from_env(struct r2s_clock *c)
{
	const char *o = getenv("ROS2SIM_CLOCK_OFFSET_NS");
	const char *d = getenv("ROS2SIM_CLOCK_DRIFT_PPM");
	const char *r = getenv("ROS2SIM_CLOCK_REF_NS");
	c->offset_ns = o ? strtoll(o, NULL, 10) : 0;
	c->drift = d ? strtod(d, NULL) * 1e-6 : 0.0;
	c->ref_ns = r ? strtoll(r, NULL, 10) : 0;
	c->active = (c->offset_ns != 0 || c->drift != 0.0);
}

static inline uint64_t r2s_mono_raw(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static inline uint64_t r2s_clock_apply(const struct r2s_clock *c, uint64_t mono)
{
	if (!c->active)
		return mono;
	int64_t d = (int64_t)((double)((int64_t)mono - c->ref_ns) * c->drift);
	return (uint64_t)((int64_t)mono + c->offset_ns + d);
}

static inline uint64_t r2s_clock_now(const struct r2s_clock *c)
{
	return r2s_clock_apply(c, r2s_mono_raw());
}
#endif
