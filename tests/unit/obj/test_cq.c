/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CQ rules: sizes, push/poll order, overflow (-ENOSPC and one CQ_ERR
 * event), resize, notification arming (next vs solicited, one event per
 * arm), completion channels (pollable fd, O_NONBLOCK -> EAGAIN, EBUSY while
 * used), destroy ordering and the wait for acked events, cq_ex popping.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "to_util.h"

static struct ur_cq *mkcq(struct ibv_context *ctx, uint32_t cqe,
			  struct ur_comp_channel *ch)
{
	struct ibv_cq_init_attr_ex a = {
		.cqe = cqe,
		.channel = ch ? &ch->ibch : NULL,
	};
	struct ur_cq *cq = NULL;

	assert_int_equal(ur_cq_create(ctx, &a, &cq), 0);
	return cq;
}

static int push(struct ur_cq *cq, uint64_t id, enum ibv_wc_status st,
		bool solicited)
{
	struct ibv_wc wc = { .wr_id = id, .status = st,
			     .opcode = IBV_WC_RECV, .byte_len = 7 };

	return ur_cq_push(cq, &wc, solicited);
}

static void test_create_rules(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ibv_cq_init_attr_ex a = { .cqe = 0 };
	struct ur_cq *cq = NULL;

	assert_int_equal(ur_cq_create(ctx, &a, &cq), -EINVAL);
	a.cqe = UR_MAX_CQE + 1;
	assert_int_equal(ur_cq_create(ctx, &a, &cq), -EINVAL);
	a.cqe = 10;
	a.comp_vector = 1;
	assert_int_equal(ur_cq_create(ctx, &a, &cq), -EINVAL);
	a.comp_vector = 0;
	a.wc_flags = IBV_WC_EX_WITH_CVLAN;
	assert_int_equal(ur_cq_create(ctx, &a, &cq), -EOPNOTSUPP);
	a.wc_flags = IBV_WC_STANDARD_FLAGS |
		     IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;	/* no parent domain */
	assert_int_equal(ur_cq_create(ctx, &a, &cq), -EINVAL);
	a.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	a.flags = 1 << 7;
	assert_int_equal(ur_cq_create(ctx, &a, &cq), -EOPNOTSUPP);
	a.flags = IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	assert_int_equal(ur_cq_create(ctx, &a, &cq), 0);
	assert_true(cq->ibcq.cqe >= 10);
	assert_int_equal(ur_cq_destroy(cq), 0);
	a.comp_mask = 0;
	a.cqe = UR_MAX_CQE;
	assert_int_equal(ur_cq_create(ctx, &a, &cq), 0);
	assert_true(cq->ibcq.cqe >= UR_MAX_CQE);
	assert_int_equal(ur_cq_destroy(cq), 0);
	ut_ctx_free(ctx);
}

static void test_push_poll_order(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_cq *cq = mkcq(ctx, 16, NULL);
	struct ibv_wc wc[8];
	int i, n;

	assert_int_equal(ur_cq_poll(cq, 8, wc), 0);
	for (i = 0; i < 40; i++) {	/* wraps the ring twice */
		assert_int_equal(push(cq, (uint64_t)i, IBV_WC_SUCCESS, false),
				 0);
		if (i % 5 == 4) {
			n = ur_cq_poll(cq, 3, wc);
			assert_int_equal(n, 3);
			assert_int_equal(wc[0].wr_id, (uint64_t)i - 4);
			assert_int_equal(wc[2].wr_id, (uint64_t)i - 2);
			assert_int_equal(wc[0].byte_len, 7);
			n = ur_cq_poll(cq, 8, wc);
			assert_int_equal(n, 2);
			assert_int_equal(wc[1].wr_id, (uint64_t)i);
		}
	}
	assert_int_equal(ur_cq_destroy(cq), 0);
	ut_ctx_free(ctx);
}

static void test_overflow(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_cq *cq = mkcq(ctx, 1, NULL);
	struct ibv_async_event ev;
	struct ibv_wc wc[256];
	int i, cap = cq->ibcq.cqe;

	for (i = 0; i < cap; i++)
		assert_int_equal(push(cq, (uint64_t)i, IBV_WC_SUCCESS, false),
				 0);
	assert_int_equal(ut_async_pending(ctx), 0);
	assert_int_equal(push(cq, 100, IBV_WC_SUCCESS, false), -ENOSPC);
	assert_int_equal(push(cq, 101, IBV_WC_SUCCESS, false), -ENOSPC);
	assert_int_equal(ut_async_pending(ctx), 1);	/* raised once */
	assert_true(ut_fd_readable(ctx->async_fd));
	assert_int_equal(ur_async_event_get(to_ur_context(ctx), &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_CQ_ERR);
	assert_ptr_equal(ev.element.cq, &cq->ibcq);
	assert_false(ut_fd_readable(ctx->async_fd));
	/* the lost CQEs never appear */
	assert_true(cap >= 1 && cap < 256);
	assert_int_equal(ur_cq_poll(cq, 256, wc), cap);
	assert_int_equal(wc[cap - 1].wr_id, (uint64_t)cap - 1);
	ur_async_event_ack(&ev);
	assert_int_equal(cq->ibcq.async_events_completed, 1);
	assert_int_equal(ur_cq_destroy(cq), 0);

	/* an event not yet fetched goes with its CQ; others stay */
	cq = mkcq(ctx, 1, NULL);
	cap = cq->ibcq.cqe;
	for (i = 0; i <= cap; i++)
		push(cq, (uint64_t)i, IBV_WC_SUCCESS, false);
	ev.event_type = IBV_EVENT_PORT_ACTIVE;
	ev.element.port_num = 1;
	ur_async_event_post(ctx, &ev);
	assert_int_equal(ut_async_pending(ctx), 2);
	assert_int_equal(ur_cq_destroy(cq), 0);
	assert_int_equal(ut_async_pending(ctx), 1);
	assert_int_equal(ur_async_event_get(to_ur_context(ctx), &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_PORT_ACTIVE);
	/* the purged event took its count on async_fd with it: a poll()ing
	 * application must not be told of an event that is gone (it would
	 * block in ibv_get_async_event) */
	assert_false(ut_fd_readable(ctx->async_fd));

	/* IGNORE_OVERRUN: the extra CQE is dropped without error or event */
	{
		struct ibv_cq_init_attr_ex a = {
			.cqe = 1,
			.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS,
			.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN,
		};

		assert_int_equal(ur_cq_create(ctx, &a, &cq), 0);
		for (i = 0; i < cq->ibcq.cqe; i++)
			push(cq, (uint64_t)i, IBV_WC_SUCCESS, false);
		assert_int_equal(push(cq, 999, IBV_WC_SUCCESS, false), 0);
		assert_int_equal(ut_async_pending(ctx), 0);
		assert_int_equal(ur_cq_poll(cq, 256, wc), cq->ibcq.cqe);
		assert_int_equal(ur_cq_destroy(cq), 0);
	}
	ut_ctx_free(ctx);
}

static void test_resize(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_cq *cq = mkcq(ctx, 8, NULL);
	struct ibv_wc wc[64];
	int i;

	for (i = 0; i < 6; i++)
		push(cq, (uint64_t)i, IBV_WC_SUCCESS, false);
	assert_int_equal(ur_cq_poll(cq, 2, wc), 2);	/* head moves */
	for (i = 6; i < 10; i++)
		push(cq, (uint64_t)i, IBV_WC_SUCCESS, false);
	assert_int_equal(ur_cq_resize(cq, 7), -EINVAL);	/* 8 queued */
	assert_int_equal(ur_cq_resize(cq, 0), -EINVAL);
	assert_int_equal(ur_cq_resize(cq, UR_MAX_CQE + 1), -EINVAL);
	assert_int_equal(ur_cq_resize(cq, 40), 0);
	assert_true(cq->ibcq.cqe >= 40);
	for (i = 10; i < 40; i++)
		assert_int_equal(push(cq, (uint64_t)i, IBV_WC_SUCCESS, false),
				 0);
	assert_int_equal(ur_cq_poll(cq, 64, wc), 38);
	for (i = 0; i < 38; i++)
		assert_int_equal(wc[i].wr_id, (uint64_t)i + 2);
	assert_int_equal(ur_cq_resize(cq, 8), 0);	/* shrink when empty */
	assert_int_equal(ur_cq_destroy(cq), 0);
	ut_ctx_free(ctx);
}

static void drain(struct ur_cq *cq)
{
	struct ibv_wc wc[8];

	while (ur_cq_poll(cq, 8, wc) > 0)
		;
}

static struct ur_comp_channel *mkch(struct ibv_context *ctx)
{
	struct ur_comp_channel *ch = NULL;

	assert_int_equal(ur_channel_create(ctx, &ch), 0);
	return ch;
}

static void test_notify(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_comp_channel *ch = mkch(ctx);
	struct ur_cq *cq = mkcq(ctx, 64, ch), *got;
	int fd = ch->ibch.fd;

	/* not armed: no event */
	push(cq, 1, IBV_WC_SUCCESS, true);
	assert_false(ut_fd_readable(fd));
	/* each arm below finds the CQ polled empty (an entry left in it
	 * fires at the arm: test_regress_arm_with_unpolled_entry) */
	drain(cq);
	/* armed for next: the first completion fires, once */
	assert_int_equal(ur_cq_arm(cq, 0), 0);
	assert_false(ut_fd_readable(fd));
	push(cq, 2, IBV_WC_SUCCESS, false);
	assert_true(ut_fd_readable(fd));
	push(cq, 3, IBV_WC_SUCCESS, false);
	assert_int_equal(ur_channel_get_event(ch, &got), 0);
	assert_ptr_equal(got, cq);
	assert_false(ut_fd_readable(fd));
	drain(cq);
	/* solicited only: plain successes do not fire */
	assert_int_equal(ur_cq_arm(cq, 1), 0);
	push(cq, 4, IBV_WC_SUCCESS, false);
	assert_false(ut_fd_readable(fd));
	push(cq, 5, IBV_WC_SUCCESS, true);
	assert_true(ut_fd_readable(fd));
	assert_int_equal(ur_channel_get_event(ch, &got), 0);
	drain(cq);
	/* solicited only: an error completion fires */
	ur_cq_arm(cq, 1);
	push(cq, 6, IBV_WC_REM_ACCESS_ERR, false);
	assert_int_equal(ur_channel_get_event(ch, &got), 0);
	drain(cq);
	/* next wins over a later solicited-only request */
	ur_cq_arm(cq, 0);
	ur_cq_arm(cq, 1);
	push(cq, 7, IBV_WC_SUCCESS, false);
	assert_true(ut_fd_readable(fd));
	drain(cq);
	/* two armings before the reader: two events */
	ur_cq_arm(cq, 0);
	push(cq, 8, IBV_WC_SUCCESS, false);
	assert_int_equal(ur_channel_get_event(ch, &got), 0);
	assert_true(ut_fd_readable(fd));
	assert_int_equal(ur_channel_get_event(ch, &got), 0);
	assert_false(ut_fd_readable(fd));
	/* non-blocking fd: EAGAIN */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	assert_int_equal(ur_channel_get_event(ch, &got), -EAGAIN);

	assert_int_equal(ur_channel_destroy(ch), -EBUSY);
	assert_int_equal(cq->comp_delivered, 5);
	ur_cq_ack_events(cq, 5);
	atomic_store(&cq->usecnt, 1);	/* as a QP would */
	assert_int_equal(ur_cq_destroy(cq), -EBUSY);
	atomic_store(&cq->usecnt, 0);
	assert_int_equal(ur_cq_destroy(cq), 0);
	assert_int_equal(ur_channel_destroy(ch), 0);
	ut_ctx_free(ctx);
}

/*
 * Regression: arming a CQ that held an entry not yet polled raised no
 * event until the next completion; mlx5 arms at the consumer index, so an
 * entry already there raises one at once. UCX polls until idle, arms, and
 * sleeps without polling again: an entry pushed in between left UCX's own
 * blocking ping-pong (test_ucp_perf, tag_lat_b over rc_verbs) asleep for
 * good. A solicited-only arm fires at once only for an unpolled solicited
 * or error entry.
 */
static void test_regress_arm_with_unpolled_entry(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_comp_channel *ch = mkch(ctx);
	struct ur_cq *cq = mkcq(ctx, 64, ch), *got;
	int fd = ch->ibch.fd;

	(void)state;
	push(cq, 1, IBV_WC_SUCCESS, false);
	assert_int_equal(ur_cq_arm(cq, 0), 0);
	assert_true(ut_fd_readable(fd));
	assert_int_equal(ur_channel_get_event(ch, &got), 0);
	assert_ptr_equal(got, cq);
	/* one event per arm; armed again, the entry still waiting fires again */
	push(cq, 2, IBV_WC_SUCCESS, true);
	assert_false(ut_fd_readable(fd));
	ur_cq_arm(cq, 0);
	assert_int_equal(ur_channel_get_event(ch, &got), 0);
	drain(cq);
	ur_cq_arm(cq, 0);
	assert_false(ut_fd_readable(fd));
	push(cq, 3, IBV_WC_SUCCESS, false);
	assert_int_equal(ur_channel_get_event(ch, &got), 0);
	drain(cq);

	/* solicited only: a plain entry left unpolled does not fire ... */
	push(cq, 4, IBV_WC_SUCCESS, false);
	ur_cq_arm(cq, 1);
	assert_false(ut_fd_readable(fd));
	/* ... a solicited one does, when pushed and when armed over it */
	push(cq, 5, IBV_WC_SUCCESS, true);
	assert_int_equal(ur_channel_get_event(ch, &got), 0);
	ur_cq_arm(cq, 1);
	assert_int_equal(ur_channel_get_event(ch, &got), 0);
	/* polled, it fires no more; a later plain one left does not either */
	drain(cq);
	push(cq, 6, IBV_WC_SUCCESS, false);
	ur_cq_arm(cq, 1);
	assert_false(ut_fd_readable(fd));
	/* an error entry left unpolled fires as a solicited one */
	push(cq, 7, IBV_WC_WR_FLUSH_ERR, false);
	assert_int_equal(ur_channel_get_event(ch, &got), 0);
	ur_cq_arm(cq, 1);
	assert_int_equal(ur_channel_get_event(ch, &got), 0);
	drain(cq);
	ur_cq_arm(cq, 1);
	assert_false(ut_fd_readable(fd));

	ur_cq_ack_events(cq, cq->comp_delivered);
	assert_int_equal(ur_cq_destroy(cq), 0);
	assert_int_equal(ur_channel_destroy(ch), 0);
	ut_ctx_free(ctx);
}

static atomic_int destroyed;

static void *destroy_thread(void *arg)
{
	assert_int_equal(ur_cq_destroy(arg), 0);
	atomic_store(&destroyed, 1);
	return NULL;
}

/*
 * Regression (issue 28 item 4): ibv_req_notify_cq on a CQ created without
 * a completion channel returned 0 although no event could ever come;
 * it fails with EINVAL, and a CQ with a channel still arms.
 */
static void test_regress_arm_without_channel(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_comp_channel *ch = mkch(ctx);
	struct ur_cq *cq = mkcq(ctx, 8, NULL), *cq2 = mkcq(ctx, 8, ch);

	(void)state;
	assert_int_equal(ur_cq_arm(cq, 0), -EINVAL);
	assert_int_equal(ur_cq_arm(cq, 1), -EINVAL);
	assert_int_equal(ur_cq_arm(cq2, 0), 0);
	assert_int_equal(ur_cq_destroy(cq), 0);
	assert_int_equal(ur_cq_destroy(cq2), 0);
	assert_int_equal(ur_channel_destroy(ch), 0);
	ut_ctx_free(ctx);
}

static void test_destroy_waits_for_ack(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_comp_channel *ch = mkch(ctx);
	struct ur_cq *cq = mkcq(ctx, 4, ch), *cq2 = mkcq(ctx, 4, ch), *got;
	pthread_t t;

	ur_cq_arm(cq, 0);
	push(cq, 1, IBV_WC_SUCCESS, false);
	assert_int_equal(ur_channel_get_event(ch, &got), 0);
	/* an event queued but never fetched does not block destroy, and
	 * leaves with its CQ: the fd no longer polls readable for it */
	ur_cq_arm(cq2, 0);
	push(cq2, 1, IBV_WC_SUCCESS, false);
	assert_true(ut_fd_readable(ch->ibch.fd));
	assert_int_equal(ur_cq_destroy(cq2), 0);
	assert_false(ut_fd_readable(ch->ibch.fd));

	atomic_store(&destroyed, 0);
	assert_int_equal(pthread_create(&t, NULL, destroy_thread, cq), 0);
	usleep(50 * 1000);
	assert_int_equal(atomic_load(&destroyed), 0);	/* waits for the ack */
	ur_cq_ack_events(cq, 1);
	pthread_join(t, NULL);
	assert_int_equal(atomic_load(&destroyed), 1);
	/* nothing left for a reader either */
	fcntl(ch->ibch.fd, F_SETFL, O_NONBLOCK);
	assert_int_equal(ur_channel_get_event(ch, &got), -EAGAIN);
	assert_int_equal(ur_channel_destroy(ch), 0);
	ut_ctx_free(ctx);
}

static void test_clean(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_cq *cq = mkcq(ctx, 8, NULL);
	struct ibv_wc wc[128];
	int i, n;

	for (i = 0; i < 5; i++)	/* moves head so the ring wraps */
		push(cq, 0, IBV_WC_SUCCESS, false);
	assert_int_equal(ur_cq_poll(cq, 5, wc), 5);
	for (i = 0; i < 62; i++) {
		struct ibv_wc w = { .wr_id = (uint64_t)i,
				    .qp_num = (i % 3) ? 0x11 : 0x22 };

		assert_int_equal(ur_cq_push(cq, &w, false), 0);
	}
	assert_int_equal(ur_cq_clean(cq, 0x22), 21);
	assert_int_equal(ur_cq_clean(cq, 0x33), 0);
	n = ur_cq_poll(cq, 128, wc);
	assert_int_equal(n, 41);
	for (i = 0; i < n; i++) {
		assert_int_equal(wc[i].qp_num, 0x11);
		if (i)
			assert_true(wc[i].wr_id > wc[i - 1].wr_id);
	}
	assert_int_equal(ur_cq_destroy(cq), 0);
	ut_ctx_free(ctx);
}

static void test_cq_ex_pop(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ibv_cq_init_attr_ex a = {
		.cqe = 4,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
	};
	struct ur_cq *cq = NULL;
	uint64_t ts;

	assert_int_equal(ur_cq_create(ctx, &a, &cq), 0);
	assert_int_equal(ur_cq_pop_ex(cq), -ENOENT);
	push(cq, 11, IBV_WC_SUCCESS, false);
	push(cq, 12, IBV_WC_LOC_PROT_ERR, false);
	assert_int_equal(ur_cq_pop_ex(cq), 0);
	assert_int_equal(cq->ex_cqe.wc.wr_id, 11);
	ts = cq->ex_cqe.ts_ns;
	assert_true(ts > 0);
	/* wall clock: after 2020-01-01 */
	assert_true(cq->ex_cqe.wall_ns > 1577836800ull * 1000000000ull);
	assert_int_equal(ur_cq_pop_ex(cq), 0);
	assert_int_equal(cq->ex_cqe.wc.wr_id, 12);
	assert_int_equal(cq->ex_cqe.wc.status, IBV_WC_LOC_PROT_ERR);
	assert_true(cq->ex_cqe.ts_ns >= ts);
	assert_int_equal(ur_cq_pop_ex(cq), -ENOENT);
	assert_int_equal(ur_cq_destroy(cq), 0);
	ut_ctx_free(ctx);
}

static void test_async_nonblock(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ibv_async_event ev = { .event_type = IBV_EVENT_PORT_ACTIVE };

	fcntl(ctx->async_fd, F_SETFL, O_NONBLOCK);
	assert_int_equal(ur_async_event_get(to_ur_context(ctx), &ev), -EAGAIN);
	ev.element.port_num = 1;
	ur_async_event_post(ctx, &ev);
	ev.event_type = IBV_EVENT_LID_CHANGE;
	ur_async_event_post(ctx, &ev);
	memset(&ev, 0, sizeof(ev));
	assert_int_equal(ur_async_event_get(to_ur_context(ctx), &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_PORT_ACTIVE);
	assert_int_equal(ev.element.port_num, 1);
	ur_async_event_ack(&ev);
	/* the second stays queued and is freed with the context */
	ut_ctx_free(ctx);
}

/*
 * A full-depth CQ allocates as it fills: a ring that only wraps (one
 * outstanding CQE) keeps its initial memory, a backlog grows it, and every
 * entry comes out once, in order, across the growth steps and a clean and
 * a resize in the middle of them.
 */
static void test_grows_as_it_fills(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_cq *cq = mkcq(ctx, UR_MAX_CQE, NULL);
	uint32_t initial = cq->ring_len;
	struct ibv_wc wc[64];
	uint64_t next = 0, id;
	int got;

	assert_int_equal(cq->ibcq.cqe, UR_MAX_CQE);
	assert_true(initial <= 256);
	for (id = 0; id < 3 * (uint64_t)initial + 5; id++) {
		assert_int_equal(push(cq, id, IBV_WC_SUCCESS, false), 0);
		assert_int_equal(ur_cq_poll(cq, 1, wc), 1);
		assert_int_equal(wc[0].wr_id, id);
	}
	assert_int_equal(cq->ring_len, initial);

	next = id;
	for (; id < next + 5000; id++)
		assert_int_equal(push(cq, id, IBV_WC_SUCCESS, false), 0);
	assert_true(cq->ring_len >= 5000 && cq->ring_len <= 8192);
	/* poll some, resize (keeps the rest in order), then push more */
	assert_int_equal(ur_cq_poll(cq, 64, wc), 64);
	for (int i = 0; i < 64; i++)
		assert_int_equal(wc[i].wr_id, next + (uint64_t)i);
	next += 64;
	assert_int_equal(ur_cq_resize(cq, 100), -EINVAL);
	assert_int_equal(ur_cq_resize(cq, 6000), 0);
	for (; id < next + 4936 + 1000; id++)
		assert_int_equal(push(cq, id, IBV_WC_SUCCESS, false), 0);
	while ((got = ur_cq_poll(cq, 64, wc)) > 0)
		for (int i = 0; i < got; i++)
			assert_int_equal(wc[i].wr_id, next++);
	assert_int_equal(next, id);
	assert_int_equal(ur_cq_destroy(cq), 0);
	ut_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_rules),
		cmocka_unit_test(test_grows_as_it_fills),
		cmocka_unit_test(test_push_poll_order),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_resize),
		cmocka_unit_test(test_notify),
		cmocka_unit_test(test_regress_arm_without_channel),
		cmocka_unit_test(test_regress_arm_with_unpolled_entry),
		cmocka_unit_test(test_destroy_waits_for_ack),
		cmocka_unit_test(test_clean),
		cmocka_unit_test(test_cq_ex_pop),
		cmocka_unit_test(test_async_nonblock),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
