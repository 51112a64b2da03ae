/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * uroce's own threads in an application that is hard on them: a process
 * whose default thread stack is the smallest glibc allows (set before any
 * verb, so every thread of ours is created under it) keeps its threads
 * alive through traffic and refresh rounds, and the refresher has at least
 * UR_THREAD_STACK_MIN; and exit() called on the refresher in the middle of
 * a round (what libpsm's SIGSEGV handler did, chained from memguard) ends
 * the process instead of deadlocking on the locks that round holds.
 *
 * The refresher's rounds are seen through open_memstream, which this
 * program defines over libc's: libibverbs' call binds to it.
 */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "api/ibverbs/params.h"
#include "te_util.h"
#include "util/thread.h"

static atomic_int rounds;		/* open_memstream calls on the refresher */
static atomic_size_t refresher_stack;
static atomic_bool exit_in_round;	/* the next one calls exit(0) */

static bool on_refresher(void)
{
	char name[32] = "";

	pthread_getname_np(pthread_self(), name, sizeof(name));
	return !strcmp(name, "uroce-devtree");
}

__attribute__((visibility("default")))
FILE *open_memstream(char **ptr, size_t *size)
{
	static FILE *(*real)(char **, size_t *);

	if (!real)
		real = (FILE *(*)(char **, size_t *))dlsym(RTLD_NEXT,
							  "open_memstream");
	if (on_refresher()) {
		pthread_attr_t a;
		size_t sz = 0;

		if (!pthread_getattr_np(pthread_self(), &a)) {
			pthread_attr_getstacksize(&a, &sz);
			pthread_attr_destroy(&a);
			atomic_store(&refresher_stack, sz);
		}
		atomic_fetch_add(&rounds, 1);
		/* the refresher holds the device tree's lock and the
		 * device's lock here, as in the hang */
		if (atomic_load(&exit_in_round))
			exit(0);
	}
	return real(ptr, size);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* A hw_counters file of s's device, as a sysfs reader finds it. */
static uint64_t hw_counter(struct te_side *s, const char *name)
{
	char path[PATH_MAX];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/ports/1/hw_counters/%s",
		 s->ctx->device->ibdev_path, name);
	f = fopen(path, "r");
	if (f && fscanf(f, "%llu", &v) != 1)
		v = 0;
	if (f)
		fclose(f);
	return v;
}

static uint64_t sends(struct te_side *s)
{
	return hw_counter(s, "sent_pkts") + hw_counter(s, "direct_sends");
}

/* Traffic and refresh rounds under a 16 KiB default stack. */
static void t_small_default_stack(void **state)
{
	struct te_pair p;
	struct ibv_wc wc;
	int start;

	assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
	assert_int_equal(te_pair_connect(&p, NULL), 0);
	start = atomic_load(&rounds);
	for (int i = 0; i < 50; i++) {
		assert_int_equal(te_post_recv(&p.s[1], (uint64_t)i, 0, 4096), 0);
		assert_int_equal(te_post_send(&p.s[0], IBV_WR_SEND, (uint64_t)i,
					      0, 4096, 0, 0,
					      IBV_SEND_SIGNALED), 0);
		assert_int_equal(te_poll(p.s[0].scq, &wc, 3000), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(te_poll(p.s[1].rcq, &wc, 3000), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
	}
	/* the counter files show it: the refresher ran whole rounds (the
	 * messages went as packets or by one copy, engine/direct.c) */
	for (int i = 0; i < 200 && sends(&p.s[0]) < 50; i++)
		sleep_ms(10);
	assert_true(sends(&p.s[0]) >= 50);
	for (int i = 0; i < 200 && atomic_load(&rounds) < start + 4; i++)
		sleep_ms(UR_DEVTREE_REFRESH_MS);
	assert_true(atomic_load(&rounds) >= start + 4);
	assert_true(atomic_load(&refresher_stack) >= UR_THREAD_STACK_MIN);
	te_pair_close(&p);
}

/* A child whose refresher calls exit() mid-round must end, with status 0
 * (the status exit() was given), well within the bound: the exit path
 * waits for nothing the dying refresher holds. */
static void t_exit_on_refresher(void **state)
{
	int status = -1;
	pid_t pid, w = 0;

	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct ibv_device **l = ibv_get_device_list(NULL);
		struct ibv_context *c;

		atomic_store(&exit_in_round, true);
		c = l && l[0] ? ibv_open_device(l[0]) : NULL;
		if (!c)
			_exit(2);
		sleep_ms(20000);	/* the refresher exits before this */
		_exit(3);
	}
	/* a round is due every UR_DEVTREE_REFRESH_MS; allow the exit
	 * path's own bounded waits and a loaded machine */
	for (int i = 0; i < 300 && w != pid; i++) {
		sleep_ms(50);
		w = waitpid(pid, &status, WNOHANG);
	}
	if (w != pid) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		fail_msg("exit() on the refresher did not end the process");
	}
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* first, while this process has no thread but main: TSan
		 * refuses new threads in the child of a threaded process */
		cmocka_unit_test(t_exit_on_refresher),
		cmocka_unit_test(t_small_default_stack),
	};
	pthread_attr_t a;

	pthread_attr_init(&a);
	if (pthread_attr_setstacksize(&a, PTHREAD_STACK_MIN) ||
	    pthread_setattr_default_np(&a))
		return 77;
	pthread_attr_destroy(&a);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
