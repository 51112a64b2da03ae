/* SPDX-License-Identifier: BSD-2-Clause */
/* The debug-only event trace (trace.h); empty unless UR_TRACE_EVENTS. */
#include "util/trace.h"

#ifdef UR_TRACE_EVENTS
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/config.h"
#include "util/time.h"

#define TRACE_MAX (1u << 20)

struct trace_rec {
	uint64_t t, a, b;
	uint32_t tid;
	uint32_t ev;
};

static struct trace_rec *recs;
static _Atomic uint32_t n_recs;
static pthread_once_t trace_once = PTHREAD_ONCE_INIT;
static __thread uint32_t my_tid;
static char *trace_path;

static const char *const ev_names[UR_TR_N] = {
	"tx", "rx", "wait", "woke", "arm_hit", "doorbell", "burst",
	"trylock_fail", "deadline", "retransmit", "yield", "wake_by",
};

static void trace_dump(void)
{
	const char *path = trace_path;
	char name[512];
	uint32_t i, n = atomic_load(&n_recs);
	FILE *f;

	if (!path || !recs)
		return;
	snprintf(name, sizeof(name), "%s.%d", path, (int)getpid());
	f = fopen(name, "w");
	if (!f)
		return;
	if (n > TRACE_MAX)
		n = TRACE_MAX;
	for (i = 0; i < n; i++)
		fprintf(f, "%llu %u %s %llu %llu\n",
			(unsigned long long)recs[i].t, recs[i].tid,
			ev_names[recs[i].ev], (unsigned long long)recs[i].a,
			(unsigned long long)recs[i].b);
	fclose(f);
}

static void trace_init(void)
{
	const char *p = ur_config_get()->trace;

	if (!p)
		return;
	/* kept: the configuration may be gone by exit */
	trace_path = strdup(p);
	recs = trace_path ? calloc(TRACE_MAX, sizeof(*recs)) : NULL;
	if (recs)
		atexit(trace_dump);
}

static bool trace_on(void)
{
	pthread_once(&trace_once, trace_init);
	return recs != NULL;
}

void ur_trace(enum ur_trace_ev ev, uint64_t a, uint64_t b)
{
	uint32_t i;

	if (!trace_on())
		return;
	if (!my_tid)
		my_tid = (uint32_t)syscall(SYS_gettid);
	i = atomic_fetch_add_explicit(&n_recs, 1, memory_order_relaxed);
	if (i >= TRACE_MAX)
		return;
	recs[i].t = ur_now_ns();
	recs[i].a = a;
	recs[i].b = b;
	recs[i].tid = my_tid;
	recs[i].ev = (uint32_t)ev;
}
#endif
