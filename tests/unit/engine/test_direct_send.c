/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Same-host SENDs by one copy into the receive the peer posted
 * (engine/direct_send.c, obj/rq_ring.c), between two devices of one
 * process (their rings are on loopback, so the copy goes into this very
 * process): every byte and every completion exactly once on both sides
 * (wr_id, byte_len, immediate, source QP, order mixed with SENDs that
 * went as packets), RNR while no receive is posted, the responder's
 * statuses for a receive that does not resolve or is too short, the
 * flush of the receives nobody took, and a deregistration racing
 * incoming SENDs. With UR_TEST_NO_XMEM=1 (under tests/tools/noxmem) the
 * copies are refused: everything must still hold, by packets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "te_util.h"
#include "../skip.h"

#define T_TMO 3000
#define RACE_ROUNDS 60
#define RACE_MSG 65536u
#define RACE_MSGS 16u

static bool refused;	/* UR_TEST_NO_XMEM: copies are refused */

static void open_pair(struct te_pair *p)
{
	struct te_conn_opts o = { .retry_cnt = 7, .rnr_retry = 7,
				  .min_rnr_timer = 1 };

	assert_int_equal(te_pair_open(p, IBV_QPT_RC), 0);
	assert_int_equal(te_pair_connect(p, &o), 0);
}

static void send_wr(struct ibv_send_wr *wr, struct ibv_sge *sge,
		    struct te_side *a, uint64_t wr_id, uint32_t off,
		    uint32_t len, bool imm, uint32_t immv)
{
	*sge = (struct ibv_sge){ (uintptr_t)a->buf + off, len, a->mr->lkey };
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->imm_data = htonl(immv);
}

static void expect_wc(struct ibv_cq *cq, uint64_t wr_id,
		      enum ibv_wc_status st)
{
	struct ibv_wc wc;

	assert_int_equal(te_poll(cq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.status, st);
}

static void expect_recv(struct te_pair *p, uint64_t wr_id, uint32_t len,
			bool imm, uint32_t immv)
{
	struct te_side *a = &p->s[0], *b = &p->s[1];
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
		assert_int_equal(ntohl(wc.imm_data), immv);
}

/*
 * Receives of several sizes and SENDs of several sizes (with and without
 * immediate, inline, zero-length), each landing in its own receive: every
 * byte where it belongs and nowhere else, every completion once.
 */
static void test_send_bytes(void **state)
{
	static const uint32_t len[] = { 64, 0, 4096, 20000, 1, 65000 - 40000 };
	struct te_pair p;
	struct te_side *a, *b;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_send_wr *bad;
	uint64_t s0;
	uint32_t i, off = 0;

	(void)state;
	open_pair(&p);
	a = &p.s[0];
	b = &p.s[1];
	s0 = te_counter(a, "direct_sends");
	for (i = 0; i < TE_BUF; i++)
		a->buf[i] = (uint8_t)(i * 11 + 5);
	memset(b->buf, 0, TE_BUF);
	/* each receive 8 bytes larger than its message, 8 apart */
	for (i = 0; i < 6; i++) {
		assert_int_equal(te_post_recv(b, 100 + i, off, len[i] + 8), 0);
		off += len[i] + 16;
	}
	off = 0;
	for (i = 0; i < 6; i++) {
		send_wr(&wr, &sge, a, i, 1000 + i * 3, len[i], i & 1, i * 77);
		if (i == 0)
			wr.send_flags |= IBV_SEND_INLINE;
		assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
		expect_wc(a->scq, i, IBV_WC_SUCCESS);
		expect_recv(&p, 100 + i, len[i], i & 1, i * 77);
		assert_memory_equal(b->buf + off, a->buf + 1000 + i * 3,
				    len[i]);
		assert_int_equal(te_nonzero_bytes(b->buf + off + len[i], 16), 0);
		off += len[i] + 16;
	}
	assert_int_equal(te_poll_none(b->rcq, 20), 0);
	if (refused)
		assert_int_equal(te_counter_settled(a, "direct_sends"), s0);
	else
		assert_true(te_counter_reaches(a, "direct_sends", s0 + 6) >=
			    s0 + 6);
	te_pair_close(&p);
}

/*
 * A post list of SENDs (some with immediate) into as many receives, fewer
 * receives than SENDs: those with a receive go by one copy, the rest as
 * packets once a receive is posted; every byte and completion once, in
 * order.
 */
static void test_post_list(void **state)
{
	struct ibv_send_wr wr[10], *bad;
	struct ibv_sge sge[10];
	struct te_pair p;
	struct te_side *a, *b;
	uint64_t s0;
	uint32_t i;

	(void)state;
	open_pair(&p);
	a = &p.s[0];
	b = &p.s[1];
	s0 = te_counter(a, "direct_sends");
	for (i = 0; i < TE_BUF; i++)
		a->buf[i] = (uint8_t)(i * 3 + 1);
	memset(b->buf, 0, TE_BUF);
	for (i = 0; i < 8; i++)
		assert_int_equal(te_post_recv(b, 200 + i, i * 4096, 4096), 0);
	for (i = 0; i < 10; i++) {
		send_wr(&wr[i], &sge[i], a, i, i * 512, 100 + i * 300, i % 3 == 0,
			i);
		wr[i].next = i < 9 ? &wr[i + 1] : NULL;
	}
	assert_int_equal(ibv_post_send(a->qp, wr, &bad), 0);
	for (i = 0; i < 8; i++)
		expect_wc(a->scq, i, IBV_WC_SUCCESS);
	assert_int_equal(te_post_recv(b, 208, 8 * 4096, 4096), 0);
	assert_int_equal(te_post_recv(b, 209, 9 * 4096, 4096), 0);
	for (i = 8; i < 10; i++)
		expect_wc(a->scq, i, IBV_WC_SUCCESS);
	for (i = 0; i < 10; i++) {
		expect_recv(&p, 200 + i, 100 + i * 300, i % 3 == 0, i);
		assert_memory_equal(b->buf + i * 4096, a->buf + i * 512,
				    100 + i * 300);
		assert_int_equal(te_nonzero_bytes(b->buf + i * 4096 + 100 +
						       i * 300,
					       4096 - 100 - i * 300),
				 0);
	}
	assert_int_equal(te_poll_none(b->rcq, 20), 0);
	if (!refused)
		assert_true(te_counter_reaches(a, "direct_sends", s0 + 8) >=
			    s0 + 8);
	te_pair_close(&p);
}

/*
 * No receive posted: the SEND goes as packets and the responder answers
 * RNR until one is; those posted behind it follow as packets (never by a
 * copy that would pass it): the receiver sees them all once, in order,
 * and the next SEND, with nothing in flight, is copied.
 */
static void test_rnr_then_copies_in_order(void **state)
{
	struct ibv_send_wr wr[4], *bad;
	struct ibv_sge sge[4];
	struct te_pair p;
	struct te_side *a, *b;
	uint64_t pk0, s0;
	uint32_t i;

	(void)state;
	open_pair(&p);
	a = &p.s[0];
	b = &p.s[1];
	pk0 = te_counter(a, "direct_send_packets");
	s0 = te_counter(a, "direct_sends");
	for (i = 0; i < 4096; i++)
		a->buf[i] = (uint8_t)(i ^ 0x5c);
	memset(b->buf, 0, TE_BUF);
	for (i = 0; i < 4; i++) {
		send_wr(&wr[i], &sge[i], a, i, i * 1024, 1000, true, i);
		wr[i].next = i < 3 ? &wr[i + 1] : NULL;
	}
	assert_int_equal(ibv_post_send(a->qp, wr, &bad), 0);
	usleep(30000);
	assert_int_equal(te_poll_none(a->scq, 1), 0);
	assert_int_equal(te_nonzero_bytes(b->buf, TE_BUF), 0);
	for (i = 0; i < 4; i++)
		assert_int_equal(te_post_recv(b, 10 + i, i * 2048, 1024), 0);
	for (i = 0; i < 4; i++)
		expect_wc(a->scq, i, IBV_WC_SUCCESS);
	for (i = 0; i < 4; i++) {
		expect_recv(&p, 10 + i, 1000, true, i);
		assert_memory_equal(b->buf + i * 2048, a->buf + i * 1024,
				    1000);
	}
	assert_int_equal(te_poll_none(b->rcq, 20), 0);
	assert_int_equal(te_post_recv(b, 20, 16384, 1024), 0);
	send_wr(&wr[0], &sge[0], a, 9, 100, 500, false, 0);
	assert_int_equal(ibv_post_send(a->qp, wr, &bad), 0);
	expect_wc(a->scq, 9, IBV_WC_SUCCESS);
	expect_recv(&p, 20, 500, false, 0);
	assert_memory_equal(b->buf + 16384, a->buf + 100, 500);
	if (!refused) {
		assert_true(te_counter_reaches(a, "direct_send_packets",
					    pk0 + 1) >= pk0 + 1);
		assert_true(te_counter_reaches(a, "direct_sends", s0 + 1) >=
			    s0 + 1);
	}
	te_pair_close(&p);
}

/* A receive whose lkey names no MR: the responder's statuses, as on the
 * wire, and nothing written. */
static void test_bad_lkey_recv(void **state)
{
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge rs, sge;
	struct te_pair p;
	struct te_side *a, *b;
	struct ibv_wc wc;

	(void)state;
	open_pair(&p);
	a = &p.s[0];
	b = &p.s[1];
	memset(a->buf, 0x77, 4096);
	memset(b->buf, 0, TE_BUF);
	rs = (struct ibv_sge){ (uintptr_t)b->buf, 4096, b->mr->lkey ^ 0x5a00 };
	rwr = (struct ibv_recv_wr){ .wr_id = 7, .sg_list = &rs, .num_sge = 1 };
	assert_int_equal(ibv_post_recv(b->qp, &rwr, &rbad), 0);
	send_wr(&wr, &sge, a, 1, 0, 256, false, 0);
	assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
	assert_int_equal(te_poll(a->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_REM_OP_ERR);
	expect_wc(b->rcq, 7, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(te_nonzero_bytes(b->buf, TE_BUF), 0);
	te_pair_close(&p);
}

/* A receive too short for the message: IBV_WC_LOC_LEN_ERR there, a NAK
 * invalid request here. */
static void test_short_recv(void **state)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct te_pair p;
	struct te_side *a, *b;

	(void)state;
	open_pair(&p);
	a = &p.s[0];
	b = &p.s[1];
	memset(a->buf, 0x33, 4096);
	assert_int_equal(te_post_recv(b, 8, 0, 16), 0);
	send_wr(&wr, &sge, a, 2, 0, 64, false, 0);
	assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
	expect_wc(a->scq, 2, IBV_WC_REM_INV_REQ_ERR);
	expect_wc(b->rcq, 8, IBV_WC_LOC_LEN_ERR);
	te_pair_close(&p);
}

/*
 * The receiver moves its QP to ERR with receives posted, some taken by
 * copies: the copies' completions first, then the rest flushed, each
 * once, in the order posted.
 */
static void test_err_flushes_rest_in_order(void **state)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct te_pair p;
	struct te_side *a, *b;
	uint32_t i;

	(void)state;
	open_pair(&p);
	a = &p.s[0];
	b = &p.s[1];
	for (i = 0; i < 6; i++)
		assert_int_equal(te_post_recv(b, 50 + i, i * 1024, 1024), 0);
	for (i = 0; i < 2; i++) {
		send_wr(&wr, &sge, a, i, 0, 100, false, 0);
		assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
		expect_wc(a->scq, i, IBV_WC_SUCCESS);
	}
	assert_int_equal(ibv_modify_qp(b->qp, &attr, IBV_QP_STATE), 0);
	for (i = 0; i < 2; i++)
		expect_recv(&p, 50 + i, 100, false, 0);
	for (i = 2; i < 6; i++)
		expect_wc(b->rcq, 50 + i, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(te_poll_none(b->rcq, 20), 0);
	te_pair_close(&p);
}

/* ------------------------------------------------------------------ */
/* A deregistration racing incoming SENDs                              */
/* ------------------------------------------------------------------ */

/*
 * ibv_dereg_mr of the receive buffers while SENDs are copied into them:
 * once it returned, no byte lands there (the buffer stays mapped, so a
 * late copy would succeed and show).
 */
static void test_dereg_races_sends(void **state)
{
	unsigned int round;

	(void)state;
	for (round = 0; round < RACE_ROUNDS; round++) {
		struct te_pair p;

		open_pair(&p);
		memset(p.s[0].buf, 0xa5, TE_BUF);
		assert_int_equal(te_dereg_during_sends(&p.s[0], p.s[1].pd,
						       p.s[1].qp, NULL,
						       RACE_MSG, RACE_MSGS,
						       100), 0);
		te_pair_close(&p);
	}
}

/* ------------------------------------------------------------------ */

int main(void)
{
	const char *nx = getenv("UR_TEST_NO_XMEM");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_send_bytes),
		cmocka_unit_test(test_post_list),
		cmocka_unit_test(test_rnr_then_copies_in_order),
		cmocka_unit_test(test_bad_lkey_recv),
		cmocka_unit_test(test_short_recv),
		cmocka_unit_test(test_err_flushes_rest_in_order),
		cmocka_unit_test(test_dereg_races_sends),
	};
	int rc;

	refused = nx && !strcmp(nx, "1");
	srand((unsigned int)time(NULL));
	rc = ur_run_tests(tests);
	te_close_devices();
	return rc;
}
