/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Same-host SENDs by one copy into a plain SRQ (engine/direct_send.c,
 * obj/rq_ring.c): two devices of one process, two RC QPs of the second on
 * one SRQ, each with its own receive CQ, each connected to a QP of the
 * first. Every byte and every completion exactly once (wr_id in the SRQ's
 * order, byte_len, immediate, qp_num, src_qp), each on its QP's CQ;
 * packets (RNR, then retried) mixed with copies into the same queue; the
 * SRQ limit event raised by another process's takes; a receive that does
 * not resolve; a QP that moves to ERR leaves the SRQ's other WQEs to the
 * other QP; a CQ with a channel gets its event while armed, with no poll;
 * a deregistration racing incoming SENDs. With UR_TEST_NO_XMEM=1 (under tests/tools/noxmem) the copies
 * are refused: everything must still hold, by packets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "te_util.h"
#include "../skip.h"

#define T_TMO 3000
#define SLOT 2048u
#define RACE_ROUNDS 30
#define RACE_MSG 32768u
#define RACE_MSGS 16u

static bool refused;	/* UR_TEST_NO_XMEM: copies are refused */

/* p[k].s[0] sends; p[k].s[1].qp is on srq, whose receives are in
 * p[0].s[1]'s buffer and MR. */
struct srq_set {
	struct te_pair p[2];
	struct ibv_srq *srq;
	struct ibv_comp_channel *ch;	/* p[1]'s receive CQ's, or NULL */
};

static void srq_open_ch(struct srq_set *t, uint32_t max_wr, bool channel)
{
	struct te_conn_opts o = { .retry_cnt = 7, .rnr_retry = 7,
				  .min_rnr_timer = 1 };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = max_wr,
						  .max_sge = 1 } };
	struct ibv_pd *pd;
	int k;

	memset(t, 0, sizeof(*t));
	for (k = 0; k < 2; k++)
		assert_int_equal(te_pair_open(&t->p[k], IBV_QPT_RC), 0);
	pd = t->p[0].s[1].pd;
	if (channel) {
		struct te_side *b = &t->p[1].s[1];

		t->ch = ibv_create_comp_channel(b->ctx);
		assert_non_null(t->ch);
		assert_int_equal(ibv_destroy_qp(b->qp), 0);
		b->qp = NULL;
		assert_int_equal(ibv_destroy_cq(b->rcq), 0);
		b->rcq = ibv_create_cq(b->ctx, 64, NULL, t->ch, 0);
		assert_non_null(b->rcq);
	}
	t->srq = ibv_create_srq(pd, &sa);
	assert_non_null(t->srq);
	for (k = 0; k < 2; k++) {
		struct te_side *b = &t->p[k].s[1];
		struct ibv_qp_init_attr ia = {
			.send_cq = b->scq,
			.recv_cq = b->rcq,
			.srq = t->srq,
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 64, .max_send_sge = 1 },
		};

		if (b->qp)
			assert_int_equal(ibv_destroy_qp(b->qp), 0);
		b->qp = ibv_create_qp(pd, &ia);
		assert_non_null(b->qp);
		assert_int_equal(te_pair_connect(&t->p[k], &o), 0);
	}
	memset(t->p[0].s[1].buf, 0, TE_BUF);
}

static void srq_open(struct srq_set *t, uint32_t max_wr)
{
	srq_open_ch(t, max_wr, false);
}

static void srq_close(struct srq_set *t)
{
	int k;

	for (k = 0; k < 2; k++) {
		assert_int_equal(ibv_destroy_qp(t->p[k].s[1].qp), 0);
		t->p[k].s[1].qp = NULL;
	}
	assert_int_equal(ibv_destroy_srq(t->srq), 0);
	te_pair_close(&t->p[1]);
	te_pair_close(&t->p[0]);
	if (t->ch)
		assert_int_equal(ibv_destroy_comp_channel(t->ch), 0);
}

static void srq_post(struct srq_set *t, uint64_t wr_id, uint32_t off,
		     uint32_t len, uint32_t lkey_xor)
{
	struct te_side *b = &t->p[0].s[1];
	struct ibv_sge sge = { (uintptr_t)b->buf + off, len,
			       b->mr->lkey ^ lkey_xor };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	assert_int_equal(ibv_post_srq_recv(t->srq, &wr, &bad), 0);
}

/* One SEND (imm: with immediate i) of len bytes at off of p[k]'s sender,
 * waited for: st. */
static void srq_send(struct srq_set *t, int k, uint64_t wr_id, uint32_t off,
		     uint32_t len, bool imm, enum ibv_wc_status st)
{
	struct te_side *a = &t->p[k].s[0];
	struct ibv_sge sge = { (uintptr_t)a->buf + off, len, a->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl((uint32_t)wr_id),
	}, *bad;
	struct ibv_wc wc;

	assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
	assert_int_equal(te_poll(a->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.status, st);
}

/* The next receive completion of p[k]'s QP: wr_id, len, imm (of wr_id
 * sent) and the source's bytes at src_off in its slot, zeros after. */
static void srq_expect(struct srq_set *t, int k, uint64_t wr_id,
		       uint32_t slot, uint32_t len, bool imm, uint64_t sent,
		       uint32_t src_off)
{
	struct te_side *a = &t->p[k].s[0], *b = &t->p[k].s[1];
	const uint8_t *buf = t->p[0].s[1].buf + slot * SLOT;
	struct ibv_wc wc;

	assert_int_equal(te_poll(b->rcq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, len);
	assert_int_equal(wc.qp_num, b->qp->qp_num);
	assert_int_equal(wc.src_qp, a->qp->qp_num);
	assert_int_equal(!!(wc.wc_flags & IBV_WC_WITH_IMM), imm);
	if (imm)
		assert_int_equal(ntohl(wc.imm_data), (uint32_t)sent);
	assert_memory_equal(buf, a->buf + src_off, len);
	assert_int_equal(te_nonzero_bytes(buf + len, SLOT - len), 0);
}

static void fill(struct srq_set *t)
{
	uint32_t i;

	for (i = 0; i < TE_BUF; i++) {
		t->p[0].s[0].buf[i] = (uint8_t)(i * 7 + 1);
		t->p[1].s[0].buf[i] = (uint8_t)(i * 13 + 2);
	}
}

/*
 * Twelve SENDs from two QPs into one SRQ, in a mixed order: each takes the
 * SRQ's next receive, and its completion shows on its own QP's CQ, with
 * its QP, source, length and immediate; every byte where it belongs.
 */
static void test_two_qps_two_cqs(void **state)
{
	static const int who[12] = { 0, 0, 1, 0, 1, 1, 1, 0, 0, 1, 0, 1 };
	struct srq_set t;
	uint64_t s0;
	uint32_t i, len;

	(void)state;
	srq_open(&t, 32);
	fill(&t);
	s0 = te_counter(&t.p[0].s[0], "direct_sends");
	for (i = 0; i < 12; i++)
		srq_post(&t, 100 + i, i * SLOT, SLOT, 0);
	for (i = 0; i < 12; i++) {
		len = i == 5 ? 0 : 100 + i * 151;
		srq_send(&t, who[i], i, i * 64, len, i & 1, IBV_WC_SUCCESS);
	}
	for (i = 0; i < 12; i++) {
		len = i == 5 ? 0 : 100 + i * 151;
		srq_expect(&t, who[i], 100 + i, i, len, i & 1, i, i * 64);
	}
	assert_int_equal(te_poll_none(t.p[0].s[1].rcq, 20), 0);
	assert_int_equal(te_poll_none(t.p[1].s[1].rcq, 1), 0);
	if (refused)
		assert_int_equal(te_counter_settled(&t.p[0].s[0],
						    "direct_sends"), s0);
	else
		assert_true(te_counter_reaches(&t.p[0].s[0], "direct_sends",
					       s0 + 12) >= s0 + 12);
	srq_close(&t);
}

/*
 * A SEND with no receive posted goes as packets and meets RNR; once a
 * receive is posted it lands there, and the next ones (the other QP's)
 * take the receives after it, by copy: one queue, one order.
 */
static void test_rnr_then_copies(void **state)
{
	struct te_side *a = NULL;
	struct srq_set t;
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	uint64_t pk0, rnr0;
	uint32_t i;

	(void)state;
	srq_open(&t, 32);
	fill(&t);
	a = &t.p[0].s[0];
	pk0 = te_counter(a, "direct_send_packets");
	rnr0 = te_counter(&t.p[0].s[1], "rnr_nak_sent");
	sge = (struct ibv_sge){ (uintptr_t)a->buf, 900, a->mr->lkey };
	wr = (struct ibv_send_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED };
	assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
	usleep(30000);
	assert_int_equal(te_poll_none(a->scq, 1), 0);
	for (i = 0; i < 3; i++)
		srq_post(&t, 10 + i, i * SLOT, SLOT, 0);
	assert_int_equal(te_poll(a->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	srq_send(&t, 1, 2, 64, 700, true, IBV_WC_SUCCESS);
	srq_send(&t, 0, 3, 128, 33, false, IBV_WC_SUCCESS);
	srq_expect(&t, 0, 10, 0, 900, false, 1, 0);
	srq_expect(&t, 1, 11, 1, 700, true, 2, 64);
	srq_expect(&t, 0, 12, 2, 33, false, 3, 128);
	assert_int_equal(te_poll_none(t.p[0].s[1].rcq, 20), 0);
	assert_int_equal(te_poll_none(t.p[1].s[1].rcq, 1), 0);
	assert_true(te_counter_reaches(&t.p[0].s[1], "rnr_nak_sent",
				       rnr0 + 1) >= rnr0 + 1);
	if (!refused)
		assert_true(te_counter_reaches(a, "direct_send_packets",
					       pk0 + 1) >= pk0 + 1);
	srq_close(&t);
}

/* The next async event of ctx of type want for srq within T_TMO. */
static bool srq_event(struct ibv_context *ctx, struct ibv_srq *srq,
		      enum ibv_event_type want)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int n;

	for (n = 0; n < 16; n++) {
		bool hit;

		if (poll(&pfd, 1, T_TMO) != 1 || ibv_get_async_event(ctx, &ev))
			return false;
		hit = ev.event_type == want && ev.element.srq == srq;
		ibv_ack_async_event(&ev);
		if (hit)
			return true;
	}
	return false;
}

/*
 * An armed limit: the other device's copies take the SRQ below it and
 * the event fires once (the limit reads back 0), as a NIC's takes would.
 */
static void test_limit_event(void **state)
{
	struct ibv_srq_attr attr = { .srq_limit = 5 };
	struct srq_set t;
	uint32_t i;

	(void)state;
	srq_open(&t, 16);
	fill(&t);
	for (i = 0; i < 8; i++)
		srq_post(&t, 40 + i, i * SLOT, SLOT, 0);
	assert_int_equal(ibv_modify_srq(t.srq, &attr, IBV_SRQ_LIMIT), 0);
	for (i = 0; i < 4; i++)
		srq_send(&t, 1, i, i * 8, 64, false, IBV_WC_SUCCESS);
	for (i = 0; i < 4; i++)
		srq_expect(&t, 1, 40 + i, i, 64, false, i, i * 8);
	assert_true(srq_event(t.p[0].s[1].ctx, t.srq,
			      IBV_EVENT_SRQ_LIMIT_REACHED));
	memset(&attr, 0xff, sizeof(attr));
	assert_int_equal(ibv_query_srq(t.srq, &attr), 0);
	assert_int_equal(attr.srq_limit, 0);
	assert_true(attr.max_wr >= 16);
	srq_close(&t);
}

/* A receive whose lkey names no MR: the responder's statuses, as on the
 * wire, and nothing written. */
static void test_bad_lkey_recv(void **state)
{
	struct srq_set t;
	struct ibv_wc wc;

	(void)state;
	srq_open(&t, 16);
	fill(&t);
	srq_post(&t, 7, 0, SLOT, 0x5a00);
	srq_send(&t, 0, 1, 0, 256, false, IBV_WC_REM_OP_ERR);
	assert_int_equal(te_poll(t.p[0].s[1].rcq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(te_nonzero_bytes(t.p[0].s[1].buf, TE_BUF), 0);
	srq_close(&t);
}

/*
 * One QP moves to ERR after copies into the SRQ: its completions all come,
 * once, and the SRQ's other receives are not its to flush: the other QP
 * goes on taking them, in order.
 */
static void test_err_leaves_rest(void **state)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct srq_set t;
	uint32_t i;

	(void)state;
	srq_open(&t, 16);
	fill(&t);
	for (i = 0; i < 6; i++)
		srq_post(&t, 60 + i, i * SLOT, SLOT, 0);
	srq_send(&t, 0, 0, 0, 100, false, IBV_WC_SUCCESS);
	srq_send(&t, 1, 1, 8, 200, true, IBV_WC_SUCCESS);
	srq_send(&t, 0, 2, 16, 300, false, IBV_WC_SUCCESS);
	assert_int_equal(ibv_modify_qp(t.p[0].s[1].qp, &attr, IBV_QP_STATE),
			 0);
	srq_expect(&t, 0, 60, 0, 100, false, 0, 0);
	srq_expect(&t, 0, 62, 2, 300, false, 2, 16);
	assert_int_equal(te_poll_none(t.p[0].s[1].rcq, 30), 0);
	srq_send(&t, 1, 3, 24, 400, true, IBV_WC_SUCCESS);
	srq_expect(&t, 1, 61, 1, 200, true, 1, 8);
	srq_expect(&t, 1, 63, 3, 400, true, 3, 24);
	assert_int_equal(te_poll_none(t.p[1].s[1].rcq, 20), 0);
	assert_int_equal(te_poll_none(t.p[0].s[1].rcq, 1), 0);
	srq_close(&t);
}

/* Whether the channel has an event within ms (taken and acked if so). */
static bool chan_event(struct ibv_comp_channel *ch, int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *ctx;

	if (poll(&pfd, 1, ms) != 1)
		return false;
	assert_int_equal(ibv_get_cq_event(ch, &cq, &ctx), 0);
	ibv_ack_cq_events(cq, 1);
	return true;
}

/*
 * A receive CQ with a completion channel: armed, a copy into the SRQ
 * raises its event without a poll (the owner's waker thread moves it);
 * not armed, none comes and poll_cq finds the completion; armed after a
 * copy landed, the event comes at once.
 */
static void test_channel_armed_only(void **state)
{
	struct srq_set t;
	uint32_t i;

	(void)state;
	srq_open_ch(&t, 16, true);
	fill(&t);
	for (i = 0; i < 3; i++)
		srq_post(&t, 80 + i, i * SLOT, SLOT, 0);
	assert_int_equal(ibv_req_notify_cq(t.p[1].s[1].rcq, 0), 0);
	srq_send(&t, 1, 0, 0, 500, false, IBV_WC_SUCCESS);
	assert_true(chan_event(t.ch, T_TMO));
	srq_expect(&t, 1, 80, 0, 500, false, 0, 0);
	srq_send(&t, 1, 1, 40, 600, true, IBV_WC_SUCCESS);
	assert_false(chan_event(t.ch, 50));
	srq_expect(&t, 1, 81, 1, 600, true, 1, 40);
	/* armed after the copy landed */
	srq_send(&t, 1, 2, 80, 700, false, IBV_WC_SUCCESS);
	assert_int_equal(ibv_req_notify_cq(t.p[1].s[1].rcq, 0), 0);
	assert_true(chan_event(t.ch, T_TMO));
	srq_expect(&t, 1, 82, 2, 700, false, 2, 80);
	srq_close(&t);
}

/*
 * ibv_dereg_mr of the SRQ's receive buffers while SENDs are copied into
 * them: once it returned, no byte lands there (the buffer stays mapped,
 * so a late copy would succeed and show).
 */
static void test_dereg_races_sends(void **state)
{
	unsigned int round;

	(void)state;
	for (round = 0; round < RACE_ROUNDS; round++) {
		struct srq_set t;

		srq_open(&t, 32);
		memset(t.p[1].s[0].buf, 0xa5, TE_BUF);
		assert_int_equal(te_dereg_during_sends(&t.p[1].s[0],
						       t.p[0].s[1].pd, NULL,
						       t.srq, RACE_MSG,
						       RACE_MSGS, 100), 0);
		srq_close(&t);
	}
}

int main(void)
{
	const char *nx = getenv("UR_TEST_NO_XMEM");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_qps_two_cqs),
		cmocka_unit_test(test_rnr_then_copies),
		cmocka_unit_test(test_limit_event),
		cmocka_unit_test(test_bad_lkey_recv),
		cmocka_unit_test(test_err_leaves_rest),
		cmocka_unit_test(test_channel_armed_only),
		cmocka_unit_test(test_dereg_races_sends),
	};
	int rc;

	refused = nx && !strcmp(nx, "1");
	srand((unsigned int)getpid());
	rc = ur_run_tests(tests);
	te_close_devices();
	return rc;
}
