/* bench_emit N [THREADS]: emits N ROS 2-like events as fast as it can, split
 * over THREADS threads (default 2, pinned to CPUs 0..THREADS-1), in a fixed mix
 * of 5 event classes: per "message", publish + take + callback_start/end, and
 * a subscription_init with a short string every 64 messages. */
#define _GNU_SOURCE
#define LTTNG_UST_TRACEPOINT_DEFINE
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#include "bench_tp.h"
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

struct arg { int id; long n; };

static void *run(void *p)
{
	struct arg *a = p;
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(a->id % (int) sysconf(_SC_NPROCESSORS_ONLN), &set);
	pthread_setaffinity_np(pthread_self(), sizeof set, &set);
	const char *topics[4] = { "/sensing/lidar/points", "/tf", "/planning/trajectory", "/control/cmd" };
	uintptr_t base = 0x55d0c0de0000u + (uintptr_t) a->id * 0x100000u;
	long done = 0;
	for (uint64_t m = 0; done < a->n; m++) {
		const void *pub = (const void *) (base + (m & 7) * 0x40);
		const void *msg = (const void *) (0x7ffc00000000u + (m & 0xffff) * 0x100);
		const void *cb = (const void *) (base + 0x8000 + (m & 3) * 0x20);
		if (m % 64 == 0 && done < a->n) {
			lttng_ust_tracepoint(roscope_bench, rcl_subscription_init, (const void *) (base + 0x9000),
					     (const void *) base, topics[(m / 64) & 3], 10);
			done++;
		}
		lttng_ust_tracepoint(roscope_bench, rclcpp_publish, pub, msg, m);
		if (++done >= a->n) break;
		lttng_ust_tracepoint(roscope_bench, rmw_take, pub, msg, (int64_t) (1700000000000000000LL + m), 1);
		if (++done >= a->n) break;
		lttng_ust_tracepoint(roscope_bench, callback_start, cb, (int) (m & 1));
		if (++done >= a->n) break;
		lttng_ust_tracepoint(roscope_bench, callback_end, cb);
		++done;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: bench_emit N [THREADS]\n");
		return 2;
	}
	long n = atol(argv[1]);
	int nt = argc > 2 ? atoi(argv[2]) : 2;
	if (nt < 1 || nt > 64) nt = 1;
	pthread_t th[64];
	struct arg args[64];
	for (int i = 0; i < nt; i++) {
		args[i].id = i;
		args[i].n = n / nt + (i < n % nt ? 1 : 0);
		pthread_create(&th[i], NULL, run, &args[i]);
	}
	for (int i = 0; i < nt; i++)
		pthread_join(th[i], NULL);
	return 0;
}
