/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Progress: the receive bursts and the expired deadlines of one NIC, run
 * by its progress thread and inline by poll_cq (ur_engine_poll).
 *
 * The NIC's receive side is split in shards (docs/design.md, "Receive
 * shards"): shard q receives the link's queue q, which the kernel fills
 * with the datagrams of the QPs whose number % shards is q, under its
 * own lock. One progress thread per device blocks in ppoll() on every
 * shard's fd (after polling a while with UROCE_BUSY_POLL=1), takes the
 * lock of each shard that has datagrams and drains it; so a one-sided
 * operation aimed at this process completes while the application never
 * calls the library. poll_cq on an empty CQ runs the same receive path
 * inline (trylock) for the shards of its CQ's QPs that may hold
 * datagrams, so a polling application needs no thread wake-up, and
 * threads polling CQs of different shards do not meet.
 * The timer heap (timer.c) names the QPs whose deadlines passed; this
 * stage runs their handlers, under deadline_lock.
 */
#include <poll.h>
#include <sched.h>
#include <sys/timerfd.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine/engine_priv.h"
#include "util/config.h"
#include "util/lock_assert.h"
#include "util/log.h"
#include "util/time.h"
#include "util/trace.h"

/*
 * sh->lock held: the burst executed a WRITE, READ or atomic. Such a request
 * makes no CQE here, so an application waiting for one (ib_write_lat)
 * spins on memory, not on poll_cq: the progress thread must listen to the
 * socket for the next one even while the application also polls a CQ. A
 * thread already gone deaf is woken (seq_cst both ways: either it sees
 * this stamp before it leaves the socket, or this sees its deaf wait).
 */
static void one_sided_note(struct ur_nic *nic, struct ur_rx_shard *sh)
{
	sh->rx_one_sided = false;
	atomic_store(&nic->last_one_sided, ur_now_ns());
	if (atomic_load(&nic->wait_deaf))
		ur_nic_wake(nic);
}

/* Whether shard sh may have work: forwarded datagrams, or its link queue
 * (asked without its lock, as ur_link_rx_maybe()). */
static bool shard_maybe(struct ur_nic *nic, struct ur_rx_shard *sh)
{
	if (atomic_load_explicit(&sh->fwd_n, memory_order_relaxed))
		return true;
	return sh->idx < nic->n_linkq &&
	       ur_link_rx_maybe_q(nic->link, sh->idx);
}

/* sh->lock held. Returns datagrams handled. */
static int shard_rx_burst(struct ur_nic *nic, struct ur_rx_shard *sh)
{
	int n, i, total = 0;
	unsigned int fwd;

	UR_ASSERT_HELD(&sh->lock);
	do {
		n = 0;
		if (sh->idx < nic->n_linkq)
			n = ur_link_recv_q(nic->link, sh->idx, sh->rxd,
					   UR_RX_BATCH);
		fwd = atomic_load_explicit(&sh->fwd_n, memory_order_relaxed);
		if (n <= 0 && !fwd)
			break;
		n = n < 0 ? 0 : n;
		ur_cnt_stat(&nic->cnt, UR_STAT_RX_PKTS, (unsigned int)n);
		pthread_rwlock_rdlock(&nic->dev->obj_lock);
		total += (int)ur_rx_fwd_drain(nic, sh);
		for (i = 0; i < n; i++)
			ur_rx_datagram(nic, sh, &sh->rxd[i]);
		ur_resp_flush(sh);
		pthread_rwlock_unlock(&nic->dev->obj_lock);
		total += n;
		ur_trace(UR_TR_BURST, (uint64_t)n, sh->idx);
		/* A full batch may leave datagrams pending inside the link
		 * (GRO trains) that the fd no longer announces: go on. */
	} while (n == UR_RX_BATCH);
	if (sh->rx_one_sided)
		one_sided_note(nic, sh);
	return total;
}

/*
 * The deadlines of one QP that the timer heap says are due, with its
 * receive shard's lock held: its handlers never run beside its receive
 * path (an RTO never fires in the middle of the burst that holds its
 * ACK).
 */
static void progress_qp_deadlines(struct ur_qp_xport *xp, uint64_t now)
{
	struct ur_qp *qp = xp->qp;
	uint64_t kick = atomic_load(&xp->tmr.kick_deadline);
	uint64_t rto, rnr;

	UR_ASSERT_HELD(&ur_xp_shard(xp)->lock);
	/* the error path asked for this: only the receive path's owner may
	 * flush the receive WQE its responder holds */
	if (qp->state == IBV_QPS_ERR)
		ur_flush_rq(qp, true);
	ur_trace(UR_TR_DEADLINE, ur_qp_num(qp), 0);
	if (kick && kick <= now) {
		ur_timer_disarm(&xp->tmr.kick_deadline);
		pthread_mutex_lock(&qp->sq_lock);
		ur_send_step(qp);
		ur_send_unlock(qp);
	}
	rto = atomic_load(&xp->tmr.rto_deadline);
	rnr = atomic_load(&xp->tmr.rnr_deadline);
	if ((rto && rto <= now) || (rnr && rnr <= now)) {
		pthread_mutex_lock(&qp->sq_lock);
		ur_send_on_deadline(qp, now);
		ur_send_unlock(qp);
	}
}

/*
 * sh->lock and deadline_lock held. obj_lock keeps the QPs' objects alive,
 * qp_list_lock keeps their transport state (ur_engine_qp_fini() waits for
 * it). A QP popped here goes back into the heap with whatever it still
 * has armed. A QP of another shard is run under that shard's lock if a
 * trylock gets it (the order in docs/design.md, "Locks"); if not, it
 * comes back UR_SHARD_RETRY_NS later (its kick slot, which runs every
 * due deadline of the QP when it pops), unless that shard's holder runs
 * the deadlines first after its burst.
 */
static void progress_deadlines(struct ur_nic *nic, struct ur_rx_shard *sh,
			       bool thread)
{
	struct ur_qp_xport *due[UR_TIMER_BATCH];
	uint64_t now = ur_now_ns();
	unsigned int n, i;

	UR_ASSERT_HELD(&sh->lock);
	UR_ASSERT_HELD(&nic->deadline_lock);
	pthread_rwlock_rdlock(&nic->dev->obj_lock);
	pthread_mutex_lock(&nic->qp_list_lock);
	n = ur_timer_expired(nic, now, due, UR_TIMER_BATCH);
	for (i = 0; i < n; i++) {
		struct ur_rx_shard *own = ur_xp_shard(due[i]);

		if (own != sh && pthread_mutex_trylock(&own->lock)) {
			ur_timer_arm(due[i], &due[i]->tmr.kick_deadline,
				     now + UR_SHARD_RETRY_NS);
			continue;
		}
		progress_qp_deadlines(due[i], now);
		if (own != sh)
			pthread_mutex_unlock(&own->lock);
		ur_timer_rearm(due[i], !thread);
	}
	pthread_mutex_unlock(&nic->qp_list_lock);
	pthread_rwlock_unlock(&nic->dev->obj_lock);
}

/* sh->lock held, after its burst: whatever deadlines passed, unless
 * another thread runs them now (it then takes these too); thread: the
 * caller is the progress thread (else poll_cq). */
static void progress_due(struct ur_nic *nic, struct ur_rx_shard *sh,
			 bool thread)
{
	if (!ur_timer_due(nic, ur_now_ns()))
		return;
	if (pthread_mutex_trylock(&nic->deadline_lock))
		return;
	progress_deadlines(nic, sh, thread);
	pthread_mutex_unlock(&nic->deadline_lock);
}

/* The CPU, given up once, unless poll_cq gave it up less than
 * UR_POLL_YIELD_GAP_NS ago. true: it did now. */
static bool yield_once(struct ur_nic *nic, uint64_t now)
{
	if (now - atomic_load_explicit(&nic->last_yield,
				       memory_order_relaxed) <
	    UR_POLL_YIELD_GAP_NS)
		return false;
	atomic_store_explicit(&nic->last_yield, now, memory_order_relaxed);
	ur_trace(UR_TR_YIELD, 0, 0);
	sched_yield();
	return true;
}

/* ur_engine_poll_done() says why, and why only with UROCE_POLL_YIELD=1. */
static void poll_yield(struct ur_nic *nic, uint64_t now)
{
	if (nic->poll_yield)
		yield_once(nic, now);
}

/*
 * poll_cq found its CQ empty and the receive path it ran found nothing.
 * If a requester of this NIC stopped at its window lately (req_blocked(),
 * req.c), what the application waits for are the peer's responses, and
 * on this host the peer's progress thread must run to send them: give
 * up the CPU once (at most every UR_POLL_YIELD_GAP_NS). Why: in a 3 s
 * 64 KiB ib_write_bw at 1 % loss (a window of some 20 PSNs), the
 * responder's progress thread waited for a core in 503 gaps of over
 * 0.5 ms (757 ms in all), and for a third of that time the core ran
 * this spinning requester (docs/benchmarks.md, "Where the responder's
 * late bursts came from"). When nobody else is runnable, sched_yield()
 * returns at once. A latency test never fills its window, so it never
 * yields here; UROCE_WAIT_YIELD=0 turns it off.
 */
static void peer_wait_yield(struct ur_nic *nic)
{
	uint64_t blocked, now;

	if (!nic->wait_yield)
		return;
	blocked = atomic_load_explicit(&nic->last_req_blocked,
				       memory_order_relaxed);
	if (!blocked)
		return;
	now = ur_now_ns();
	if (now - blocked > UR_REQ_BLOCKED_HOLD_NS)
		return;
	if (yield_once(nic, now))
		ur_cnt_stat(&nic->cnt, UR_STAT_WAIT_YIELDS, 1);
}

/*
 * An application spinning on poll_cq runs the receive path itself; one
 * that polls once and then blocks for an event (ibv_get_cq_event) needs the
 * progress thread. Only a streak of close polls counts as spinning: then
 * the shards in mask (bit q: shard q) are stamped as polled, and the
 * progress thread leaves their sockets to the application for a while
 * (nic_deaf_until()). Returns now.
 */
static uint64_t app_poll_note(struct ur_nic *nic, uint64_t mask)
{
	uint64_t now = ur_now_ns();
	uint64_t prev = atomic_exchange_explicit(&nic->prev_poll, now,
						 memory_order_relaxed);
	unsigned int streak, i;

	if (now - prev > UR_APP_POLL_GAP_NS) {
		atomic_store_explicit(&nic->poll_streak, 0,
				      memory_order_relaxed);
		return now;
	}
	streak = atomic_fetch_add_explicit(&nic->poll_streak, 1,
					   memory_order_relaxed);
	if (streak < UR_APP_POLL_SPIN)
		return now;
	atomic_store_explicit(&nic->last_app_poll, now, memory_order_relaxed);
	for (i = 0; i < nic->n_shard; i++)
		if (mask & (1ull << i))
			atomic_store_explicit(&nic->shard[i].last_app_poll, now,
					      memory_order_relaxed);
	return now;
}

/* The shards a poll of cq tries (bit q: shard q): its QPs' (obj/'s
 * cq->rx_shards, which qp_xport.c fills; none yet: all), and shard 0
 * while it receives the same-host ring, or the link has one queue for
 * more shards: any QP's datagrams arrive there. */
static uint64_t poll_mask(const struct ur_nic *nic, struct ur_cq *cq)
{
	uint64_t all = nic->n_shard >= 64 ? ~0ull :
					     (1ull << nic->n_shard) - 1;
	uint64_t m = cq ? atomic_load_explicit(&cq->rx_shards,
					       memory_order_relaxed) : 0;

	if (!m)
		return all;
	if (nic->rx_ring || nic->n_linkq < nic->n_shard)
		m |= 1;
	return m & all;
}

/*
 * poll_cq found nothing in its own shards: one shard that no poll_cq
 * spins on (its last_app_poll is older than quiet_ns), with datagrams
 * waiting, is received here if its lock is free. Such a shard (a target
 * QP whose CQ nobody polls, in a process that also polls: one thread
 * driving both ends of a pair) would otherwise wait for the progress
 * thread to get a core from the spinning caller; a shard another
 * poller serves is left to it, so pollers of different shards still
 * never meet.
 */
static int poll_orphan(struct ur_nic *nic, uint64_t mask, uint64_t now)
{
	unsigned int i;
	uint64_t last;
	int n;

	for (i = 0; i < nic->n_shard; i++) {
		struct ur_rx_shard *sh = &nic->shard[i];

		if (mask & (1ull << i))
			continue;
		last = atomic_load_explicit(&sh->last_app_poll,
					    memory_order_relaxed);
		if ((last && now - last < nic->quiet_ns) ||
		    !shard_maybe(nic, sh) || pthread_mutex_trylock(&sh->lock))
			continue;
		n = shard_rx_burst(nic, sh);
		pthread_mutex_unlock(&sh->lock);
		return n;
	}
	return 0;
}

int ur_engine_poll_cq(struct ur_device *dev, struct ur_cq *cq)
{
	struct ur_nic *nic = dev->nic;
	bool looked = false, due;
	uint64_t mask, now;
	unsigned int i;
	int n = 0;

	if (!nic)
		return 0;
	mask = poll_mask(nic, cq);
	now = app_poll_note(nic, mask);
	/*
	 * Take a shard's lock only for work: a spinning application spends
	 * most of its time in here, so a lock taken for every look would
	 * most often be held when the application is preempted, and the
	 * progress thread woken for a datagram would then sleep on the lock
	 * until the application got a core again (milliseconds on a loaded
	 * host).
	 */
	due = ur_timer_due(nic, now);
	for (i = 0; i < nic->n_shard; i++) {
		struct ur_rx_shard *sh = &nic->shard[i];

		/* a due deadline is run by the first shard tried */
		if (!(mask & (1ull << i)) || (!shard_maybe(nic, sh) && !due))
			continue;
		looked = true;
		if (pthread_mutex_trylock(&sh->lock)) {
			ur_trace(UR_TR_TRYLOCK_FAIL, i, 0);
			continue;
		}
		n += shard_rx_burst(nic, sh);
		if (due)
			progress_due(nic, sh, false);
		due = false;
		pthread_mutex_unlock(&sh->lock);
	}
	if (!n && nic->n_shard > 1)
		n = poll_orphan(nic, mask, now);
	/* never with a shard's lock held: the thread we yield to may need
	 * it */
	if (!n || !looked)
		peer_wait_yield(nic);
	return n;
}

/*
 * Ends the application's spin (app_poll_note()) when it is about to block
 * for an event: it polled, found nothing, and now only the progress thread
 * can receive, while a thread that went to sleep during the spin ignores
 * the socket until UROCE_QUIET_US after the last poll. Such a thread is
 * woken (seq_cst both ways, as one_sided_note(): either it reads the
 * cleared stamp after it published its deaf wait, or this sees the wait).
 */
void ur_engine_event_wait(struct ur_device *dev)
{
	struct ur_nic *nic = dev->nic;
	unsigned int i;

	if (!nic)
		return;
	atomic_store_explicit(&nic->poll_streak, 0, memory_order_relaxed);
	if (!atomic_load_explicit(&nic->last_app_poll, memory_order_relaxed))
		return;
	for (i = 0; i < nic->n_shard; i++)
		atomic_store_explicit(&nic->shard[i].last_app_poll, 0,
				      memory_order_relaxed);
	atomic_store(&nic->last_app_poll, 0);
	if (atomic_load(&nic->wait_deaf))
		ur_nic_wake(nic);
}

int ur_engine_poll(struct ur_device *dev)
{
	return ur_engine_poll_cq(dev, NULL);
}

/*
 * poll_cq returned completions; one_sided: one of them completes a WRITE,
 * READ or atomic of ours. If the application waited for that one (it spun
 * on the CQ, or comes back after a while, e.g. from spinning on memory for
 * the peer's WRITE in ib_write_lat), give up the CPU once, at most every
 * UR_POLL_YIELD_GAP_NS. Only with UROCE_POLL_YIELD=1.
 *
 * Why: two processes that ping-pong through us on one host, each spinning
 * while it waits, may share one core: the scheduler balances task groups
 * (sessions, cgroups), not tasks, so while another session's task holds
 * the other core both spinners of this session can be stacked on one,
 * and nothing moves them apart. The thread whose turn it is then waits,
 * runnable, until the spinner is preempted at a tick (4 ms at HZ=250),
 * though what it waits for is already in its memory (the progress threads
 * run at once: their wake-up preempts). A peer that answers one-sided
 * requests with its own (ib_write_lat) waits on memory, outside the
 * library, so only the requester's poll can let it in: the completion of
 * its request says the peer has it. Measured (docs/benchmarks.md,
 * "ib_write_lat and the runtime directory"): stacked ib_write_lat 100 µs
 * instead of 660. Why not by default, and why not on a SEND's or a
 * receive's completion or in a long empty spin: the same page (each of
 * them cost ib_send_lat slow rounds of 180-270 µs when not stacked).
 */
void ur_engine_poll_done(struct ur_device *dev, bool one_sided)
{
	struct ur_nic *nic = dev->nic;
	uint64_t now, prev;

	if (!one_sided || !nic || !nic->poll_yield)
		return;
	/* prev_poll stays the last empty poll's: the streak it measures
	 * makes the progress thread deaf (nic_deaf_until()), and only empty
	 * polls run the receive path; counting the others too (a first
	 * version) likely kept the thread deaf with nobody receiving:
	 * unit_engine_rc under TSan ran out of retries in 2 of ~50 runs */
	now = ur_now_ns();
	prev = atomic_load_explicit(&nic->prev_poll, memory_order_relaxed);
	if (now - prev > UR_APP_POLL_GAP_NS ||
	    atomic_load_explicit(&nic->poll_streak, memory_order_relaxed) >=
		    UR_APP_POLL_SPIN)
		poll_yield(nic, now);
}

/*
 * Leave a shard's socket to the application for this wait? Only while it
 * spins on CQs of that shard's QPs (it then runs the receive path itself,
 * and a second thread woken per datagram would steal its core) and no
 * peer aimed a one-sided request at us lately (one_sided_note()). Fills
 * *deaf (bit q: shard q's socket is left) and returns when to check back
 * (0: no shard is left).
 */
static uint64_t nic_deaf_until(struct ur_nic *nic, uint64_t now,
			       uint64_t *deaf)
{
	uint64_t one_sided, last, until = 0;
	unsigned int i;

	*deaf = 0;
	/* published before any stamp is read: one_sided_note() and
	 * ur_engine_event_wait() store theirs and then read it */
	atomic_store(&nic->wait_deaf, true);
	if (!atomic_load(&nic->last_app_poll))
		goto hear;
	one_sided = atomic_load(&nic->last_one_sided);
	if (one_sided && one_sided + UR_ONE_SIDED_HOLD_NS > now)
		goto hear;
	for (i = 0; i < nic->n_shard; i++) {
		last = atomic_load_explicit(&nic->shard[i].last_app_poll,
					    memory_order_relaxed);
		if (!last || last + nic->quiet_ns <= now)
			continue;
		*deaf |= 1ull << i;
		if (!until || last + nic->quiet_ns < until)
			until = last + nic->quiet_ns;
	}
	if (until)
		return until;
hear:
	atomic_store_explicit(&nic->wait_deaf, false, memory_order_relaxed);
	return 0;
}

/*
 * timers.lock held: have timer_fd fire by when (ns, 0: nothing due).
 * A timer already set to fire no later stays: the deadline a post pushes
 * later (the probe) costs nothing, and a timer that fires early only
 * makes the thread look at its heap and set the next one. Why not a
 * ppoll() timeout: that arms a kernel timer for every sleep and cancels
 * it at every wake-up, and in a virtual machine each reprograms the
 * CPU's timer through the hypervisor (some 10 us here); a 64 B
 * ib_write_lat sleeps and wakes twice per message on each side
 * (docs/design.md, "Where a waiting packet waits"). false: the timerfd
 * refused; the caller passes ppoll() the timeout instead.
 */
static bool nic_timer_by(struct ur_nic *nic, uint64_t when)
{
	struct itimerspec its = {
		.it_value = {
			.tv_sec = (time_t)(when / 1000000000ull),
			.tv_nsec = (long)(when % 1000000000ull),
		},
	};

	if (!when || (nic->timer_set && nic->timer_set <= when))
		return true;
	ur_cnt_stat(&nic->cnt, UR_STAT_SLEEP_TIMERS, 1);
	if (timerfd_settime(nic->timer_fd, TFD_TIMER_ABSTIME, &its, NULL))
		return false;
	nic->timer_set = when;
	return true;
}

/*
 * Sleep until a shard's socket has datagrams (unless deaf), the earliest
 * deadline, or a wake-up (forwarded datagrams among them). The deadline
 * is in timer_fd (nic_timer_by()), and the wait is published
 * (sleep_until: when that timer fires at the latest) under timers.lock,
 * which every arm that makes a new earliest deadline holds while it reads
 * sleep_until: either the arm came first and this sees its deadline, or
 * the arm sees this wait and sets the timerfd earlier itself
 * (ur_nic_wake_by()); never a later time over an earlier one. Returns the
 * shards to look at (bit q: shard q).
 */
static uint64_t nic_wait(struct ur_nic *nic)
{
	struct pollfd pfd[2 + UR_MAX_RX_SHARDS];
	unsigned int shard_of[UR_MAX_RX_SHARDS], nfd = 2, i;
	uint64_t next, d, deaf, deaf_mask, now, until, rel, v, out = 0;
	struct timespec ts, *tsp = NULL;
	ssize_t r;

	pfd[0] = (struct pollfd){ .fd = nic->wake_fd, .events = POLLIN };
	pfd[1] = (struct pollfd){ .fd = nic->timer_fd, .events = POLLIN };
	pthread_mutex_lock(&nic->timers.lock);
	next = ur_timer_next(nic);
	now = ur_now_ns();
	deaf = nic_deaf_until(nic, now, &deaf_mask);
	d = deaf && (!next || deaf < next) ? deaf : next;
	rel = d > now ? d - now : 0;
	if (nic_timer_by(nic, d)) {
		until = nic->timer_set ? nic->timer_set : UINT64_MAX;
	} else {
		until = d;
		ts.tv_sec = (time_t)(rel / 1000000000ull);
		ts.tv_nsec = (long)(rel % 1000000000ull);
		tsp = &ts;
	}
	atomic_store(&nic->sleep_until, until);
	pthread_mutex_unlock(&nic->timers.lock);
	if (deaf)
		ur_cnt_stat(&nic->cnt, UR_STAT_DEAF_WAITS, 1);
	/* the same-host ring is shard 0's; a deaf wait leaves it to poll_cq,
	 * as the socket */
	if (!(deaf_mask & 1) && ur_link_wait_arm(nic->link)) {
		ur_trace(UR_TR_ARM_HIT, 0, 0);
		out = 1;
		goto awake;
	}
	for (i = 0; i < nic->n_shard && i < nic->n_linkq; i++) {
		if (deaf_mask & (1ull << i))
			continue;
		shard_of[nfd - 2] = i;
		pfd[nfd++] = (struct pollfd){
			.fd = ur_link_fd_q(nic->link, i), .events = POLLIN,
		};
	}
	ur_trace(UR_TR_WAIT, deaf, d ? rel : 0);
	if (ppoll(pfd, nfd, tsp, NULL) > 0) {
		ur_trace(UR_TR_WOKE,
			 (pfd[0].revents & POLLIN ? 1u : 0u) |
				 (pfd[1].revents & POLLIN ? 2u : 0u) |
				 (nfd > 2 && pfd[2].revents & POLLIN ? 4u : 0u),
			 0);
		if (pfd[0].revents & POLLIN)
			r = read(nic->wake_fd, &v, sizeof(v));
		if (pfd[1].revents & POLLIN) {
			r = read(nic->timer_fd, &v, sizeof(v));
			nic->timer_set = 0;
		}
		(void)r;
		for (i = 2; i < nfd; i++)
			if (pfd[i].revents)
				out |= 1ull << shard_of[i - 2];
	}
	if (!(deaf_mask & 1))
		ur_link_wait_disarm(nic->link);
awake:
	atomic_store(&nic->sleep_until, 0);
	atomic_store_explicit(&nic->wait_deaf, false, memory_order_relaxed);
	return out;
}

/*
 * The progress thread is our interrupt handler: when an application spins
 * on memory waiting for an RDMA WRITE (ib_write_lat), the thread that must
 * deliver it competes with that spinner for the core, and the scheduler
 * may let it wait a whole tick (ms). Where allowed (CAP_SYS_NICE, e.g. root
 * in a container), a low real-time priority makes the wake-up preempt the
 * spinner at once; it blocks in ppoll() between bursts, so it never hogs a
 * core (and RT throttling bounds it anyway). Unprivileged: a no-op.
 * Opt-in with UROCE_RT_PRIO=<1..99> (measurements on the shared 2-core
 * box were inconclusive); busy polling never uses it.
 */
static void nic_thread_priority(struct ur_nic *nic)
{
	struct sched_param sp = {
		.sched_priority = ur_config_get()->rt_prio,
	};

	if (nic->busy_poll || sp.sched_priority <= 0)
		return;
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp))
		ur_dbg("engine: no real-time priority for the progress thread");
}

void *ur_progress_thread(void *arg)
{
	struct ur_nic *nic = arg;
	uint64_t spin_until = 0, now, look;
	unsigned int i;
	int n;

	nic_thread_priority(nic);

	while (!atomic_load(&nic->stop)) {
		/*
		 * After traffic, keep looking for a while before sleeping
		 * (UROCE_SPIN_US, UROCE_BUSY_POLL): in a stream the next
		 * datagram is microseconds away and a sleep/wake-up costs
		 * more than that. The look takes no lock (the application's
		 * poll_cq may be receiving), and the spin ends by the clock
		 * whether or not the thread had the core meanwhile, so a
		 * thread that shares its core with a spinning application
		 * soon sleeps and is woken as usual instead.
		 */
		now = ur_now_ns();
		look = now >= spin_until ? nic_wait(nic) : 0;
		n = 0;
		for (i = 0; i < nic->n_shard; i++) {
			struct ur_rx_shard *sh = &nic->shard[i];

			/* what ppoll() said, forwarded datagrams, and while
			 * spinning whatever may be there */
			if (!(look & (1ull << i)) &&
			    !atomic_load_explicit(&sh->fwd_n,
						  memory_order_relaxed) &&
			    (now >= spin_until || !shard_maybe(nic, sh)))
				continue;
			pthread_mutex_lock(&sh->lock);
			n += shard_rx_burst(nic, sh);
			progress_due(nic, sh, true);
			pthread_mutex_unlock(&sh->lock);
		}
		/* due deadlines nobody ran: under shard 0 (any shard would
		 * do; it tries the others) */
		if (ur_timer_due(nic, ur_now_ns())) {
			pthread_mutex_lock(&nic->shard[0].lock);
			progress_due(nic, &nic->shard[0], true);
			pthread_mutex_unlock(&nic->shard[0].lock);
		}
		if (n > 0 && nic->spin_ns)
			spin_until = ur_now_ns() + nic->spin_ns;
	}
	return NULL;
}
