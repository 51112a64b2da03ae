/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Timers: every QP has three deadlines (retransmit/probe, RNR wait, and a
 * deferred requester kick), each an atomic slot in its ur_qp_xport. A QP
 * with any of them armed sits in one binary min-heap per NIC, keyed by a
 * time no later than its earliest slot, so finding what expired costs
 * O(log n) per expired QP whatever the number of QPs.
 *
 * The heap only says which QPs are due: the progress stage
 * (progress.c) pops them, runs their handlers and puts each back with its
 * earliest remaining deadline. Nothing here calls up into the transport.
 *
 * Keys are lazy: disarming a slot, or moving it later, leaves the QP's key
 * where it was; the QP then pops early, finds nothing due and goes back
 * with its real deadline. So the common case of arming (the retransmit
 * deadline pushed later on every ACK) takes no lock: see ur_timer_arm().
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "engine/engine_priv.h"
#include "util/lock_assert.h"
#include "util/time.h"
#include "util/trace.h"

void ur_nic_wake(struct ur_nic *nic)
{
	uint64_t one = 1;
	ssize_t r;

	r = write(nic->wake_fd, &one, sizeof(one));
	(void)r;
}

/*
 * The progress thread reads the next deadline, sets its timerfd and
 * publishes when its wait ends (0 while it is awake, UINT64_MAX for no
 * timer) under timers.lock, and the arming side stores the next deadline
 * and reads this under the same lock (progress.c, nic_wait()): either the
 * thread sees the new deadline before it sleeps, or this sees the wait
 * that would outlast it. Such a wait is not cut short
 * now (on two cores a wake-up per post steals the spinning application's
 * core, and the thread usually wakes for a datagram before a probe is
 * due): the thread's timerfd is set to the deadline, so the kernel wakes
 * it then if nothing did before. Callers hold timers.lock and pass a new
 * earliest deadline, so a later setting never hides an earlier one that
 * is still in the heap.
 */
void ur_nic_wake_by(struct ur_nic *nic, uint64_t when)
{
	uint64_t until = atomic_load(&nic->sleep_until);
	struct itimerspec its = {
		.it_value = {
			.tv_sec = (time_t)(when / 1000000000ull),
			.tv_nsec = (long)(when % 1000000000ull),
		},
	};

	if (!until || until <= when)
		return;
	ur_cnt_stat(&nic->cnt, UR_STAT_TIMER_WAKEUPS, 1);
	ur_trace(UR_TR_WAKE_BY, when - ur_now_ns(), 0);
	if (timerfd_settime(nic->timer_fd, TFD_TIMER_ABSTIME, &its, NULL))
		ur_nic_wake(nic);
}

void ur_timers_init(struct ur_timers *t)
{
	pthread_mutex_init(&t->lock, NULL);
	t->heap = NULL;
	t->n = t->cap = t->users = 0;
	atomic_init(&t->next, 0);
}

void ur_timers_fini(struct ur_timers *t)
{
	free(t->heap);
	t->heap = NULL;
	pthread_mutex_destroy(&t->lock);
}

/* ---- the heap (t->lock held) ---- */

static uint64_t key_of(const struct ur_qp_xport *xp)
{
	return atomic_load_explicit(&xp->tmr.key, memory_order_relaxed);
}

static void heap_set(struct ur_timers *t, unsigned int i,
		     struct ur_qp_xport *xp)
{
	t->heap[i] = xp;
	xp->tmr.pos = i + 1;
}

static void sift_up(struct ur_timers *t, unsigned int i)
{
	struct ur_qp_xport *xp = t->heap[i];
	uint64_t key = key_of(xp);

	while (i) {
		unsigned int parent = (i - 1) / 2;

		if (key_of(t->heap[parent]) <= key)
			break;
		heap_set(t, i, t->heap[parent]);
		i = parent;
	}
	heap_set(t, i, xp);
}

static void sift_down(struct ur_timers *t, unsigned int i)
{
	struct ur_qp_xport *xp = t->heap[i];
	uint64_t key = key_of(xp);

	for (;;) {
		unsigned int c = 2 * i + 1;

		if (c >= t->n)
			break;
		if (c + 1 < t->n && key_of(t->heap[c + 1]) < key_of(t->heap[c]))
			c++;
		if (key <= key_of(t->heap[c]))
			break;
		heap_set(t, i, t->heap[c]);
		i = c;
	}
	heap_set(t, i, xp);
}

static void heap_remove(struct ur_timers *t, struct ur_qp_xport *xp)
{
	unsigned int i = xp->tmr.pos - 1;
	struct ur_qp_xport *moved;

	UR_ASSERT_HELD(&t->lock);
	/* seq_cst: pairs with the key check in ur_timer_arm() */
	atomic_store(&xp->tmr.key, 0);
	xp->tmr.pos = 0;
	if (--t->n == i)
		return;
	moved = t->heap[t->n];
	heap_set(t, i, moved);
	sift_down(t, i);
	sift_up(t, moved->tmr.pos - 1);
}

/* The QP fires no later than when; a new earliest deadline makes the
 * progress thread wake by then (unless wake is false: that thread itself
 * puts back a QP it ran, and computes its sleep after). */
static void heap_place(struct ur_nic *nic, struct ur_qp_xport *xp,
		       uint64_t when, bool wake)
{
	struct ur_timers *t = &nic->timers;
	uint64_t old_next = t->n ? key_of(t->heap[0]) : 0;

	UR_ASSERT_HELD(&nic->timers.lock);
	if (xp->tmr.pos) {
		if (when >= key_of(xp))
			return;
		atomic_store_explicit(&xp->tmr.key, when, memory_order_relaxed);
		sift_up(t, xp->tmr.pos - 1);
	} else {
		/* ur_timer_attach() reserved the room */
		atomic_store_explicit(&xp->tmr.key, when, memory_order_relaxed);
		t->heap[t->n] = xp;
		xp->tmr.pos = ++t->n;
		sift_up(t, t->n - 1);
	}
	if (key_of(t->heap[0]) != old_next) {
		atomic_store(&t->next, key_of(t->heap[0]));
		if (wake)
			ur_nic_wake_by(nic, key_of(t->heap[0]));
	}
}

/* ---- what the rest of the engine calls ---- */

int ur_timer_attach(struct ur_qp_xport *xp)
{
	struct ur_timers *t = &xp->nic->timers;
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	if (t->users == t->cap) {
		unsigned int cap = t->cap ? 2 * t->cap : 16;
		struct ur_qp_xport **h = realloc(t->heap, cap * sizeof(*h));

		if (h) {
			t->heap = h;
			t->cap = cap;
		} else {
			rc = -ENOMEM;
		}
	}
	if (!rc) {
		t->users++;
		xp->tmr.pos = 0;
		atomic_init(&xp->tmr.key, 0);
	}
	pthread_mutex_unlock(&t->lock);
	return rc;
}

void ur_timer_detach(struct ur_qp_xport *xp)
{
	struct ur_timers *t = &xp->nic->timers;

	pthread_mutex_lock(&t->lock);
	if (xp->tmr.pos)
		heap_remove(t, xp);
	t->users--;
	atomic_store(&t->next, t->n ? key_of(t->heap[0]) : 0);
	pthread_mutex_unlock(&t->lock);
}

void ur_timer_arm(struct ur_qp_xport *xp, _Atomic uint64_t *slot,
		  uint64_t when)
{
	struct ur_timers *t = &xp->nic->timers;
	uint64_t key;

	/*
	 * Both seq_cst: the progress stage clears the key when it pops the
	 * QP and reads the slots after its handlers ran. Either it sees this
	 * slot, or this sees its cleared key and puts the QP back itself.
	 */
	atomic_store(slot, when);
	key = atomic_load(&xp->tmr.key);
	if (key && key <= when)
		return;
	pthread_mutex_lock(&t->lock);
	heap_place(xp->nic, xp, when, true);
	pthread_mutex_unlock(&t->lock);
}

void ur_timer_disarm(_Atomic uint64_t *slot)
{
	atomic_store_explicit(slot, 0, memory_order_relaxed);
}

unsigned int ur_timer_expired(struct ur_nic *nic, uint64_t now,
			      struct ur_qp_xport **due, unsigned int max)
{
	struct ur_timers *t = &nic->timers;
	unsigned int n = 0;

	pthread_mutex_lock(&t->lock);
	while (n < max && t->n && key_of(t->heap[0]) <= now) {
		due[n] = t->heap[0];
		heap_remove(t, due[n++]);
	}
	atomic_store(&t->next, t->n ? key_of(t->heap[0]) : 0);
	pthread_mutex_unlock(&t->lock);
	return n;
}

static uint64_t earlier(uint64_t a, uint64_t b)
{
	return a && (!b || a < b) ? a : b;
}

void ur_timer_rearm(struct ur_qp_xport *xp, bool wake)
{
	uint64_t d = earlier(atomic_load(&xp->tmr.rto_deadline),
			     earlier(atomic_load(&xp->tmr.rnr_deadline),
				     atomic_load(&xp->tmr.kick_deadline)));

	if (!d)
		return;
	pthread_mutex_lock(&xp->nic->timers.lock);
	heap_place(xp->nic, xp, d, wake);
	pthread_mutex_unlock(&xp->nic->timers.lock);
}

bool ur_timer_due(struct ur_nic *nic, uint64_t now)
{
	uint64_t d = atomic_load_explicit(&nic->timers.next,
					  memory_order_relaxed);

	return d && d <= now;
}

uint64_t ur_timer_next(struct ur_nic *nic)
{
	return atomic_load(&nic->timers.next);
}
