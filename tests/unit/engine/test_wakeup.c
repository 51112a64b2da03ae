/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The progress thread's wake-ups against an ib_write_lat-like ping-pong:
 * each side posts a WRITE, spins on its send CQ (poll_cq runs its own
 * device's receive path inline), then spins on memory for the peer's
 * WRITE, which only its progress thread can execute. Without loss no
 * request may be resent: a post must not wake a thread that then leaves
 * the socket while its application waits on memory. And a lost ACK is
 * still recovered by the probe while the application polls nothing. And
 * a poll that finds nothing while a requester waits at its full window
 * gives up the CPU.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "fake_env.h"
#include "util/time.h"
#include "wire/opcode.h"

#define T_ITERS 1000
#define T_TMO_MS 5000u
#define T_FLAG_OFF 4096		/* where the peer's WRITE lands */

struct t_pair {
	struct fe_side s[2];
};

struct t_player {
	struct fe_side *me, *peer;
	bool first;		/* posts before it waits */
	uint32_t from, to;	/* the values it writes */
	unsigned int slow;	/* probe periods the round trips lasted,
				 * counted whole per round trip */
	unsigned int deaf_room;	/* deaf waits those over
				 * UR_ONE_SIDED_HOLD_NS may see */
	uint32_t failed;	/* value that timed out, 0 none */
};

static int setup(void **state)
{
	struct t_pair *p = calloc(1, sizeof(*p));

	fe_pair_open(p->s);
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	struct t_pair *p = *state;

	fe_pair_close(p->s);
	free(p);
	return 0;
}

static uint64_t stat_of(struct fe_side *s, enum ur_stat st)
{
	return atomic_load(&s->dev->nic->cnt.stat[st]);
}

static uint64_t stat_sum(struct t_pair *p, enum ur_stat st)
{
	return stat_of(&p->s[0], st) + stat_of(&p->s[1], st);
}

static void post_op(struct fe_side *me, struct fe_side *peer,
		    enum ibv_wr_opcode op, uint64_t wr_id, uint32_t len)
{
	struct ur_send_wqe *w = fe_sq_next(me->qp);

	w->wr_id = wr_id;
	w->opcode = op;
	w->send_flags = IBV_SEND_SIGNALED;
	w->num_sge = 1;
	w->length = len;
	w->sge[0].addr = (uintptr_t)me->buf;
	w->sge[0].length = len;
	w->sge[0].lkey = me->mr->ibmr.lkey;
	w->rdma.remote_addr = (uintptr_t)peer->buf + T_FLAG_OFF;
	w->rdma.rkey = peer->mr->ibmr.rkey;
	fe_sq_post(me->qp);
}

static void post_write(struct fe_side *me, struct fe_side *peer, uint32_t v)
{
	memcpy(me->buf, &v, sizeof(v));
	post_op(me, peer, IBV_WR_RDMA_WRITE, v, sizeof(v));
}

/*
 * Waits on memory, never calling the engine. It naps instead of spinning:
 * the engine sees no difference, and on a loaded 2-core machine two
 * spinning threads would starve the progress threads for milliseconds,
 * which the peer's probe rightly takes for a loss. Not instrumented by
 * ThreadSanitizer: the flag is written by the engine's copy of a WRITE,
 * a NIC's store that no lock or atomic of the CPU's orders (what
 * ib_write_lat polls), which TSan would report as a race.
 */
__attribute__((no_sanitize_thread))
static bool wait_on_flag(struct fe_side *me, uint32_t v)
{
	_Atomic uint32_t *flag = (_Atomic uint32_t *)(me->buf + T_FLAG_OFF);
	uint64_t end = ur_now_ns() + T_TMO_MS * 1000000ull;
	struct timespec nap = { 0, 2000 };

	while (atomic_load_explicit(flag, memory_order_acquire) != v) {
		if (ur_now_ns() > end)
			return false;
		nanosleep(&nap, NULL);
	}
	return true;
}

static void *player(void *arg)
{
	struct t_player *pl = arg;
	uint64_t t = ur_now_ns(), now;
	struct ibv_wc wc;
	uint32_t i;

	prctl(PR_SET_TIMERSLACK, 1ul);	/* naps of microseconds, not 50 */
	for (i = pl->from; i <= pl->to && !pl->failed; i++) {
		if (!pl->first && !wait_on_flag(pl->me, i)) {
			pl->failed = i;
			break;
		}
		post_write(pl->me, pl->peer, i);
		if (fe_cq_spin(&pl->me->scq, pl->me->dev, &wc, (int)T_TMO_MS) != 1 ||
		    wc.status != IBV_WC_SUCCESS || wc.wr_id != i) {
			printf("# side %d value %u: status %d wr_id %llu\n",
			       !pl->first, i, wc.status,
			       (unsigned long long)wc.wr_id);
			pl->failed = i;
		}
		else if (pl->first && !wait_on_flag(pl->me, i))
			pl->failed = i;
		now = ur_now_ns();
		/* a round trip starved for n probe periods may see its
		 * QPs' probes fire up to n times each */
		pl->slow += (unsigned int)((now - t) / UR_PROBE_MIN_NS);
		/* past the hold, the thread may leave the socket each time
		 * the application's poll renews its quiet window: once per
		 * UR_APP_POLL_QUIET_NS of the stall, one more for the edge */
		if (now - t > UR_ONE_SIDED_HOLD_NS)
			pl->deaf_room += (unsigned int)((now - t - UR_ONE_SIDED_HOLD_NS) /
						   UR_APP_POLL_QUIET_NS) + 1;
		t = now;
	}
	return NULL;
}

/* Values from..to, side 0 first; returns how many probe periods the
 * round trips lasted (where the machine starved a thread a probe may
 * rightly fire, once per period), and in *deaf_room how many deaf waits
 * the round trips so slow that the thread may leave the socket allow. */
static unsigned int pingpong(struct t_pair *p, uint32_t from, uint32_t to,
			     unsigned int *deaf_room)
{
	struct t_player pl[2] = {
		{ .me = &p->s[0], .peer = &p->s[1], .first = true },
		{ .me = &p->s[1], .peer = &p->s[0], .first = false },
	};
	pthread_t th[2];
	int i;

	for (i = 0; i < 2; i++) {
		pl[i].from = from;
		pl[i].to = to;
		assert_int_equal(pthread_create(&th[i], NULL, player, &pl[i]),
				 0);
	}
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	assert_int_equal(pl[0].failed, 0);
	assert_int_equal(pl[1].failed, 0);
	*deaf_room = pl[0].deaf_room + pl[1].deaf_room;
	return pl[0].slow + pl[1].slow;
}

/*
 * Regression (cd2f1d2): every post armed the recovery probe as the new
 * earliest deadline and woke the progress thread, which, seeing its
 * application spin on the CQ, left the socket for the quiet window while
 * the application went on to wait on memory; the peer's WRITE waited in
 * the socket until the peer's probe resent it (hundreds of spurious
 * retransmits per 3000 perftest iterations, 17 -> 300 us). Now a post
 * only sets the thread's timerfd, and a thread that receives WRITEs never
 * leaves the socket.
 */
static void test_regress_write_pingpong_no_spurious_retransmit(void **state)
{
	struct t_pair *p = *state;
	uint64_t t0, arms, rtx, dup, deaf;
	unsigned int slow, deaf_room;

	/* until the first WRITE came in, a spinning poller may leave the
	 * socket to itself: not what is measured */
	pingpong(p, 1, 10, &deaf_room);
	t0 = ur_now_ns();
	arms = stat_sum(p, UR_STAT_TIMER_WAKEUPS);
	rtx = stat_sum(p, UR_STAT_RETRANSMITS);
	dup = stat_sum(p, UR_STAT_DUP_REQ);
	deaf = stat_sum(p, UR_STAT_DEAF_WAITS);
	slow = pingpong(p, 11, 10 + T_ITERS, &deaf_room);
	arms = stat_sum(p, UR_STAT_TIMER_WAKEUPS) - arms;
	rtx = stat_sum(p, UR_STAT_RETRANSMITS) - rtx;
	dup = stat_sum(p, UR_STAT_DUP_REQ) - dup;
	deaf = stat_sum(p, UR_STAT_DEAF_WAITS) - deaf;
	printf("# %d WRITE round trips in %.1f ms (%u probe periods starved): "
	       "%llu timerfd settings, %llu deaf waits (%u allowed), "
	       "%llu retransmits, %llu duplicates\n",
	       T_ITERS, (double)(ur_now_ns() - t0) / 1e6, slow,
	       (unsigned long long)arms, (unsigned long long)deaf, deaf_room,
	       (unsigned long long)rtx, (unsigned long long)dup);
	/* the WRITEs that keep coming keep both threads on the socket (a
	 * round trip starved for longer than the hold may lose it, again
	 * with each quiet window the spinning application renews) */
	assert_true(deaf <= deaf_room);
	/* no loss: nothing is resent unless the machine starved a round
	 * trip past the probe (a loaded 2-core box does, for ms) */
	assert_true(rtx <= slow);
	assert_true(dup <= slow);
	/* 2 posts per round trip; a post re-arms the thread's timerfd only
	 * when the QP's probe left the heap (round trips near 0.5 ms) */
	assert_true(arms <= T_ITERS + slow);
}

/* Every other ACK to device 0 is lost. */
static bool drop_every_other_ack(int to_dev, const uint8_t *data,
				 uint32_t len)
{
	static _Atomic unsigned int acks;

	(void)len;
	if (to_dev != 0 || !ur_op_is_ack(fe_pkt_opcode(data)))
		return false;
	return atomic_fetch_add(&acks, 1) % 2 == 0;
}

/*
 * The probe is armed by a post while the progress thread may sleep with
 * no timeout; the application then polls nothing, so only that thread
 * can fire it: a missed wake-up is a hang, not a slow completion.
 */
static void test_lost_ack_recovered_without_polling(void **state)
{
	struct t_pair *p = *state;
	uint64_t rtx0 = stat_of(&p->s[0], UR_STAT_RETRANSMITS);
	struct ibv_wc wc;
	unsigned int dropped;
	uint32_t i;

	fe_set_filter(drop_every_other_ack);
	for (i = 1; i <= 50; i++) {
		post_write(&p->s[0], &p->s[1], i);
		/* a probe fires within 4 ms before a round trip was
		 * measured: a hang, not a slow probe, is what fails */
		assert_int_equal(fe_cq_wait(&p->s[0].scq, &wc, (int)T_TMO_MS),
				 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, i);
	}
	dropped = fe_set_filter(NULL);
	printf("# %u ACKs lost, %llu retransmits\n", dropped,
	       (unsigned long long)(stat_of(&p->s[0], UR_STAT_RETRANSMITS) -
				    rtx0));
	assert_true(dropped >= 25);
	assert_true(stat_of(&p->s[0], UR_STAT_RETRANSMITS) - rtx0 >= 25);
}

/*
 * Only WRITEs, READs and atomics keep the thread on the socket: the
 * middle and last packets of a multi-packet SEND consume no receive WQE
 * either, and counting them made a spinning ib_send_lat -a contend with
 * its progress thread (a 1 MiB round trip 5 -> 110 ms).
 */
static void test_multi_packet_send_is_not_one_sided(void **state)
{
	struct t_pair *p = *state;
	_Atomic uint64_t *stamp = &p->s[1].dev->nic->last_one_sided;
	uint64_t before = atomic_load(stamp);
	struct ibv_wc wc;

	fe_rq_post(p->s[1].qp, 1, p->s[1].buf, 8192, p->s[1].mr->ibmr.lkey);
	post_op(&p->s[0], &p->s[1], IBV_WR_SEND, 2, 5000);
	assert_int_equal(fe_cq_poll(&p->s[0].scq, &wc, (int)T_TMO_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(fe_cq_poll(&p->s[1].rcq, &wc, (int)T_TMO_MS), 1);
	assert_int_equal(wc.byte_len, 5000);
	assert_int_equal(atomic_load(stamp), before);
	post_op(&p->s[0], &p->s[1], IBV_WR_RDMA_WRITE, 3, 5000);
	assert_int_equal(fe_cq_poll(&p->s[0].scq, &wc, (int)T_TMO_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_true(atomic_load(stamp) > before);
}

/* Every datagram to device 1 is lost: device 0's requests go unanswered. */
static bool drop_all_to_peer(int to_dev, const uint8_t *data, uint32_t len)
{
	(void)data;
	(void)len;
	return to_dev == 1;
}

/* Waits until s's progress thread sleeps (published its wait); false
 * after T_TMO_MS. */
static bool thread_asleep(struct fe_side *s)
{
	uint64_t end = ur_now_ns() + T_TMO_MS * 1000000ull;
	struct timespec nap = { 0, 20000 };

	while (!atomic_load(&s->dev->nic->sleep_until)) {
		if (ur_now_ns() > end)
			return false;
		nanosleep(&nap, NULL);
	}
	return true;
}

/*
 * Regression: every sleep of the progress thread passed its next deadline
 * to ppoll() as a timeout, so each sleep armed a kernel timer and each
 * wake-up by a datagram cancelled it. In a virtual machine both reprogram
 * the CPU's timer through the hypervisor (some 10 us each on the 2-core
 * test box), twice per datagram on the path of every 64 B ib_write_lat
 * message: 27 us one-way against 3 for the same relay over plain
 * sockets. Now the thread keeps one timerfd setting while its deadline
 * stands: here a WRITE whose ACKs never come keeps the probe armed while
 * the thread is woken T_WAKES times.
 */
#define T_WAKES 200
static void test_regress_sleeps_share_one_timer(void **state)
{
	struct t_pair *p = *state;
	struct ur_nic *nic = p->s[0].dev->nic;
	struct timespec nap = { 0, 100000 };
	uint64_t set, rtx;
	unsigned int i, slept = 0;

	fe_set_filter(drop_all_to_peer);
	post_op(&p->s[0], &p->s[1], IBV_WR_RDMA_WRITE, 1, 8);
	set = stat_of(&p->s[0], UR_STAT_SLEEP_TIMERS);
	rtx = stat_of(&p->s[0], UR_STAT_RETRANSMITS);
	for (i = 0; i < T_WAKES; i++) {
		if (!thread_asleep(&p->s[0]))
			break;
		slept++;
		ur_nic_wake(nic);
		/* time to wake, so that most sleeps are new ones */
		nanosleep(&nap, NULL);
	}
	set = stat_of(&p->s[0], UR_STAT_SLEEP_TIMERS) - set;
	rtx = stat_of(&p->s[0], UR_STAT_RETRANSMITS) - rtx;
	fe_set_filter(NULL);
	printf("# %u wake-ups with the probe armed: %llu timers set, "
	       "%llu probes fired\n", slept, (unsigned long long)set,
	       (unsigned long long)rtx);
	assert_int_equal(slept, T_WAKES);
	/* one setting, and one more after each time the probe fired (and
	 * as much again for a deadline that moved) */
	assert_true(set <= 2 + 2 * rtx);
}

/* n polls of s's empty CQs as poll_cq makes them (its receive path
 * inline), spaced past the yield's rate limit; returns the yields. */
static uint64_t empty_polls(struct fe_side *s, unsigned int n)
{
	uint64_t y0 = stat_of(s, UR_STAT_WAIT_YIELDS);
	struct timespec gap = { 0, (long)(2 * UR_POLL_YIELD_GAP_NS) };
	unsigned int i;

	for (i = 0; i < n; i++) {
		ur_engine_poll(s->dev);
		nanosleep(&gap, NULL);
	}
	return stat_of(s, UR_STAT_WAIT_YIELDS) - y0;
}

/*
 * A requester whose window is full waits for its peer's responses, which
 * on one host the peer's progress thread must run to send: a poll that
 * finds nothing gives up the CPU (in the 1 % loss trace the responder's
 * thread waited for a core 757 ms of 3 s, a third of it behind the
 * spinning requester). A QP with its only message in flight, as in a
 * latency test, waits for nothing it could send: no yields.
 */
static void test_window_full_empty_poll_yields(void **state)
{
	struct t_pair *p = *state;
	uint64_t yields = 0;
	struct ibv_wc wc;
	int i;

	atomic_store(&p->s[0].dev->nic->last_req_blocked, 0);
	fe_set_filter(drop_all_to_peer);
	post_write(&p->s[0], &p->s[1], 1);
	assert_int_equal(empty_polls(&p->s[0], 50), 0);
	/* the probe recovers it once the path is back */
	fe_set_filter(NULL);
	assert_int_equal(fe_cq_poll(&p->s[0].scq, &wc, (int)T_TMO_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(atomic_load(&p->s[0].dev->nic->last_req_blocked), 0);
	/* on the idle QP a post sends at once (no lazy doorbell): 32
	 * packets of 1 KiB against a first window of 10 */
	fe_set_filter(drop_all_to_peer);
	post_op(&p->s[0], &p->s[1], IBV_WR_RDMA_WRITE, 2, 32768);
	/* a test preempted for longer than the hold after its post misses
	 * that stop, not the next: each probe resends into the full window
	 * and stops the requester again */
	for (i = 0; i < 40 && !yields; i++)
		yields = empty_polls(&p->s[0], 50);
	assert_true(yields > 0);
	fe_set_filter(NULL);
	assert_int_equal(fe_cq_poll(&p->s[0].scq, &wc, (int)T_TMO_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 2);
}

static atomic_bool idle_spin_stop;

static void *idle_spinner(void *arg)
{
	struct ur_device *dev = arg;

	while (!atomic_load(&idle_spin_stop))
		ur_engine_poll(dev);
	return NULL;
}

/*
 * Regression: an application spinning on an empty CQ took rx_lock for
 * every look at the link, so most of its time was spent holding it, and
 * a preemption of it (a loaded host) most often left rx_lock held: the
 * progress thread, woken for a datagram, then slept on the lock until
 * the application got a core again (64 B ib_write_lat over UDP: a third
 * of the round trips over 0.5 ms found the receiving thread blocked so,
 * its application preempted). An empty link and no deadline due: a poll
 * leaves rx_lock alone.
 */
static void test_regress_idle_poll_leaves_rx_lock(void **state)
{
	struct t_pair *p = *state;
	struct ur_nic *nic = p->s[0].dev->nic;
	unsigned int tries = 0, busy = 0;
	uint64_t end;
	pthread_t t;

	atomic_store(&idle_spin_stop, false);
	assert_int_equal(pthread_create(&t, NULL, idle_spinner,
					p->s[0].dev), 0);
	end = ur_now_ns() + 300000000ull;
	while (ur_now_ns() < end) {
		for (unsigned int i = 0; i < nic->n_shard; i++) {
			tries++;
			if (pthread_mutex_trylock(&nic->shard[i].lock)) {
				busy++;
			} else {
				pthread_mutex_unlock(&nic->shard[i].lock);
			}
		}
	}
	atomic_store(&idle_spin_stop, true);
	pthread_join(t, NULL);
	printf("# a shard lock taken at %u of %u tries\n", busy, tries);
	assert_true(tries > 1000);
	/* a deadline that comes due takes it for a moment (the engine's
	 * own timers); a poll that takes it for every look holds it at
	 * most tries */
	assert_true((uint64_t)busy * 100 < tries);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_regress_write_pingpong_no_spurious_retransmit,
			setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_regress_sleeps_share_one_timer, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_lost_ack_recovered_without_polling, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_multi_packet_send_is_not_one_sided, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_window_full_empty_poll_yields, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_regress_idle_poll_leaves_rx_lock, setup,
			teardown),
	};
	int rc;

	fe_init();
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	fe_fini();
	return rc;
}
