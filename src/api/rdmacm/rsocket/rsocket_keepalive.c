/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rsockets' keepalive: a connected stream socket with SO_KEEPALIVE that
 * has posted nothing for keepalive_time seconds (TCP_KEEPIDLE, else the
 * host's net.ipv4.tcp_keepalive_time, as rdma-core) sends RSK_CTRL_KEEPALIVE,
 * a zero-byte RDMA WRITE WITH IMMEDIATE the peer consumes and ignores. What
 * it buys is the RC transport's verdict: towards a peer that is gone the
 * write fails after its retries and the idle socket shows the error
 * (POLLERR, EIO), where it would otherwise wait forever.
 *
 * One thread for the process, started with the first listed socket and
 * ending when none is left; it also drains the socket's CQ, so that an
 * application that does not call in still gets its control slots back and
 * sees the failure. rdma-core
 * sends every keepalive_time whether or not the socket is busy; here a
 * socket that sends needs none. Calls rsocket_wire.c and rsocket_table.c.
 *
 * Locks: a caller holds the socket's lock and takes ka_lock; the thread
 * holds ka_lock and only tries the socket's lock (busy: it comes back in
 * UR_RSK_KA_BUSY_MS), so the two orders never wait on each other.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "api/rdmacm/rsocket/rsocket_priv.h"
#include "util/compiler.h"
#include "util/thread.h"

static pthread_mutex_t ka_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ka_cond;
static pthread_once_t ka_once = PTHREAD_ONCE_INIT;
static struct rsk **ka_list;
static int ka_n, ka_cap;
static bool ka_started;
static int ka_system_s;			/* the host's keepalive time */

static void ka_init(void)
{
	pthread_condattr_t a;
	FILE *f;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&ka_cond, &a);
	pthread_condattr_destroy(&a);
	ka_system_s = UR_RSK_KA_DEFAULT_S;
	f = fopen("/proc/sys/net/ipv4/tcp_keepalive_time", "r");
	if (f) {
		if (fscanf(f, "%d", &ka_system_s) != 1 || ka_system_s <= 0)
			ka_system_s = UR_RSK_KA_DEFAULT_S;
		fclose(f);
	}
}

static int64_t idle_ms(const struct rsk *rs)
{
	return (int64_t)(rs->keepalive_time > 0 ? rs->keepalive_time :
			 ka_system_s) * 1000;
}

/* Sends the socket's keepalive if it is due; when to look next. */
static int64_t visit(struct rsk *rs, int64_t now)
{
	int64_t due;

	if (pthread_mutex_trylock(&rs->lock))
		return now + UR_RSK_KA_BUSY_MS;
	if (rs->state == RSK_CONNECTED)
		rsk_poll_cq(rs);	/* control slots back; a failure seen */
	if (!rs->last_send_ms)
		rs->last_send_ms = now;	/* idle from the first look */
	due = rs->last_send_ms + idle_ms(rs);
	if (rs->state == RSK_CONNECTED && now >= due) {
		if (rsk_ctrl_avail_or_closed(rs))
			rsk_post_ctrl(rs, RSK_CTRL_KEEPALIVE);
		due = now + idle_ms(rs);	/* sent, or no slot: later */
	}
	pthread_mutex_unlock(&rs->lock);
	return due;
}

static void *ka_run(void *arg)
{
	struct timespec ts;
	int64_t now, next;
	int i;

	(void)arg;
	pthread_mutex_lock(&ka_lock);
	/* gone with the last socket: no thread outlives the library's use */
	while (ka_n) {
		now = rsk_now_ms();
		next = now + UR_RSK_KA_MAX_SLEEP_MS;
		for (i = 0; i < ka_n; i++)
			next = UR_MIN(next, visit(ka_list[i], now));
		ts.tv_sec = (time_t)(next / 1000);
		ts.tv_nsec = (long)(next % 1000) * 1000000;
		pthread_cond_timedwait(&ka_cond, &ka_lock, &ts);
	}
	ka_started = false;
	pthread_mutex_unlock(&ka_lock);
	return NULL;
}

static int find(const struct rsk *rs)
{
	int i;

	for (i = 0; i < ka_n; i++)
		if (ka_list[i] == rs)
			return i;
	return -1;
}

static int add_locked(struct rsk *rs)
{
	struct rsk **n;
	pthread_t t;
	int cap;

	if (ka_n == ka_cap) {
		cap = ka_cap ? ka_cap * 2 : 8;
		n = realloc(ka_list, sizeof(*n) * (size_t)cap);
		if (!n)
			return rsk_err(ENOMEM);
		ka_list = n;
		ka_cap = cap;
	}
	if (!ka_started) {
		if (ur_thread_create(&t, ka_run, NULL, "uroce-rs-ka"))
			return rsk_err(EAGAIN);
		pthread_detach(t);
		ka_started = true;
	}
	ka_list[ka_n++] = rs;
	return 0;
}

int rsk_keepalive_update(struct rsk *rs)
{
	bool on = rs->so_opts & (1ULL << SO_KEEPALIVE);
	int i, ret = 0;

	pthread_once(&ka_once, ka_init);
	pthread_mutex_lock(&ka_lock);
	i = find(rs);
	if (on && i < 0)
		ret = add_locked(rs);
	else if (!on && i >= 0)
		ka_list[i] = ka_list[--ka_n];
	pthread_cond_signal(&ka_cond);	/* a new time applies now */
	pthread_mutex_unlock(&ka_lock);
	return ret;
}

void rsk_keepalive_forget(struct rsk *rs)
{
	int i;

	pthread_once(&ka_once, ka_init);
	pthread_mutex_lock(&ka_lock);
	i = find(rs);
	if (i >= 0)
		ka_list[i] = ka_list[--ka_n];
	pthread_mutex_unlock(&ka_lock);
}
