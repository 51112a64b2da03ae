/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Data integrity of RC under loss, duplication and reordering, on the fake
 * link: RDMA READs that span several request chunks, mixed with atomics,
 * fenced WQEs and multi-packet SENDs and WRITEs. Every byte of every
 * destination is checked against its source (destinations are filled with
 * a canary first), every WQE completes exactly once, in order, with
 * success, and the counters show that the faults happened.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_env.h"

#define T_TMO 20000
#define T_BIG (2u << 20)
#define T_CANARY 0xa5
#define T_CHUNK_BYTES (UR_READ_CHUNK_PKTS * 1024u)	/* MTU 1024 */

struct t_big {
	uint8_t *buf;
	struct ur_mr *mr;
};

struct t_pair {
	struct fe_side a, b;
	struct t_big ba, bb;		/* 2 MiB on each side */
};

static const uint32_t psn_a = 0xfffff8;	/* READs straddle the PSN wrap */

static void big_open(struct t_big *g, struct fe_side *s)
{
	g->buf = aligned_alloc(4096, T_BIG);
	assert_non_null(g->buf);
	memset(g->buf, 0, T_BIG);
	g->mr = fe_reg_mr(s->dev, &s->pd, g->buf, T_BIG,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_REMOTE_ATOMIC);
}

static int setup(void **state)
{
	struct t_pair *p = calloc(1, sizeof(*p));

	fe_set_fault(NULL);
	fe_set_filter(NULL);
	fe_side_open(&p->a, 0, IBV_QPT_RC);
	fe_side_open(&p->b, 1, IBV_QPT_RC);
	big_open(&p->ba, &p->a);
	big_open(&p->bb, &p->b);
	/* timeout 14 (67 ms), retry_cnt 7: a loaded 2-core machine can
	 * starve a thread for tens of milliseconds; losses are found by the
	 * recovery probe long before the timeout anyway */
	fe_connect(p->a.qp, p->b.qp, psn_a, 0x100, 14, 7, 7);
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	struct t_pair *p = *state;

	fe_set_fault(NULL);
	fe_set_filter(NULL);
	fe_dereg_mr(p->a.dev, p->ba.mr);
	fe_dereg_mr(p->b.dev, p->bb.mr);
	free(p->ba.buf);
	free(p->bb.buf);
	fe_side_close(&p->a);
	fe_side_close(&p->b);
	free(p);
	return 0;
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 77 + i * 13 + (i >> 10) + (i >> 17));
}

static struct ur_send_wqe *wqe_new(struct fe_side *s, enum ibv_wr_opcode op,
				   uint64_t wr_id, const struct t_big *g,
				   uint32_t off, uint32_t len)
{
	struct ur_send_wqe *w = fe_sq_next(s->qp);

	w->wr_id = wr_id;
	w->opcode = op;
	w->send_flags = IBV_SEND_SIGNALED;
	w->num_sge = 1;
	w->length = len;
	w->sge[0].addr = (uintptr_t)g->buf + off;
	w->sge[0].length = len;
	w->sge[0].lkey = g->mr->ibmr.lkey;
	return w;
}

static void post_rdma(struct t_pair *p, enum ibv_wr_opcode op,
		      uint64_t wr_id, uint32_t loff, uint32_t len,
		      uint32_t roff, unsigned int flags)
{
	struct ur_send_wqe *w = wqe_new(&p->a, op, wr_id, &p->ba, loff, len);

	w->send_flags |= flags;
	w->rdma.remote_addr = (uintptr_t)p->bb.buf + roff;
	w->rdma.rkey = p->bb.mr->ibmr.rkey;
	fe_sq_post(p->a.qp);
}

static void post_atomic(struct t_pair *p, enum ibv_wr_opcode op,
			uint64_t wr_id, uint32_t loff, uint32_t roff,
			uint64_t cmp_add, uint64_t swap)
{
	struct ur_send_wqe *w = wqe_new(&p->a, op, wr_id, &p->ba, loff, 8);

	w->atomic.remote_addr = (uintptr_t)p->bb.buf + roff;
	w->atomic.rkey = p->bb.mr->ibmr.rkey;
	w->atomic.compare_add = cmp_add;
	w->atomic.swap = swap;
	fe_sq_post(p->a.qp);
}

/* Exactly the expected send completions, in order, then nothing else. */
static void dump(struct t_pair *p)
{
	struct ur_qp_xport *xa = p->a.qp->xp, *xb = p->b.qp->xp;
	unsigned int i;

	fprintf(stderr,
		"req psn %u comp %u max %u rd %u cwnd %u; "
		"resp epsn %u nak %d msg %d\n",
		xa->req.psn, xa->comp.psn, xa->req.psn_max,
		xa->req.rd_outstanding, xa->cc.cwnd, xb->resp.epsn,
		xb->resp.nak_sent, xb->resp.msg);
	for (i = 0; i < UR_NUM_RES; i++)
		if (xb->resp.res[i].type)
			fprintf(stderr, "res %u: type %d psn %u-%u len %u\n",
				i, xb->resp.res[i].type,
				xb->resp.res[i].first_psn,
				xb->resp.res[i].last_psn, xb->resp.res[i].len);
	fe_debug();
}

static void expect_sends(struct t_pair *p, const uint64_t *ids,
			 unsigned int n)
{
	struct ibv_wc wc;
	unsigned int i;

	for (i = 0; i < n; i++) {
		if (fe_cq_poll(&p->a.scq, &wc, T_TMO) != 1) {
			fe_debug();
			ur_engine_dump_counters(p->a.dev, stderr);
			ur_engine_dump_counters(p->b.dev, stderr);
			fail_msg("no completion for wr_id %lu",
				 (unsigned long)ids[i]);
		}
		if (wc.status != IBV_WC_SUCCESS || wc.wr_id != ids[i]) {
			dump(p);
			ur_engine_dump_counters(p->a.dev, stderr);
			ur_engine_dump_counters(p->b.dev, stderr);
			fail_msg("wr_id %lu status %d, expected wr_id %lu",
				 (unsigned long)wc.wr_id, wc.status,
				 (unsigned long)ids[i]);
		}
	}
	assert_int_equal(fe_cq_poll(&p->a.scq, &wc, 30), 0);
}

/* The bytes a READ wrote, or the first difference. */
static void check_read(const uint8_t *dst, const uint8_t *src, size_t n)
{
	size_t i, missing = 0, first = n;

	for (i = 0; i < n; i++)
		if (dst[i] != src[i]) {
			if (first == n)
				first = i;
			missing++;
		}
	if (missing)
		fail_msg("READ of %zu bytes: %zu bytes wrong, first at %zu "
			 "(chunk %zu)", n, missing, first,
			 first / T_CHUNK_BYTES);
}

static uint64_t stat(struct fe_side *s, enum ur_stat st)
{
	return atomic_load(&s->dev->nic->cnt.stat[st]);
}

/* ------------------------------------------------------------------ */
/* A PSN-sequence NAK inside a multi-chunk READ                         */
/* ------------------------------------------------------------------ */

static uint32_t drop_resp_psn, drop_req_psn;
static bool dropped_resp, dropped_req;

static bool drop_resp_and_req(int to, const uint8_t *d, uint32_t len)
{
	uint8_t op = fe_pkt_opcode(d);
	uint32_t psn = fe_pkt_psn(d);

	if (to == 0 && !dropped_resp && ur_op_is_read(op) &&
	    op != UR_OPC_RC_READ_REQ && psn == drop_resp_psn)
		return dropped_resp = true;
	if (to == 1 && !dropped_req && op == UR_OPC_RC_READ_REQ &&
	    psn == drop_req_psn)
		return dropped_req = true;
	return false;
}

/*
 * A 1 MiB READ is 16 READ requests of 64 responses. One response of chunk 2
 * and the request of chunk 3 are lost: the responder NAKs chunk 3's PSN
 * when chunk 4's request arrives. That NAK acknowledges the requests
 * before it, not the responses of chunk 2 that never came; the READ must
 * still deliver every byte.
 */
static void test_read_nak_inside_read(void **state)
{
	struct t_pair *p = *state;
	uint64_t id = 1;

	fill(p->bb.buf, 1u << 20, 1);
	memset(p->ba.buf, T_CANARY, 1u << 20);
	drop_resp_psn = ur_psn_add(psn_a, 2 * UR_READ_CHUNK_PKTS + 5);
	drop_req_psn = ur_psn_add(psn_a, 3 * UR_READ_CHUNK_PKTS);
	dropped_resp = dropped_req = false;
	fe_set_filter(drop_resp_and_req);
	post_rdma(p, IBV_WR_RDMA_READ, 1, 0, 1u << 20, 0, 0);
	expect_sends(p, &id, 1);
	assert_int_equal(fe_set_filter(NULL), 2);
	assert_true(dropped_resp && dropped_req);
	assert_true(stat(&p->b, UR_STAT_SEQ_NAK_SENT) >= 1);
	check_read(p->ba.buf, p->bb.buf, 1u << 20);
	/* the same READ again, clean: the link and QP are healthy */
	memset(p->ba.buf, T_CANARY, 1u << 20);
	id = 2;
	post_rdma(p, IBV_WR_RDMA_READ, 2, 0, 1u << 20, 0, 0);
	expect_sends(p, &id, 1);
	check_read(p->ba.buf, p->bb.buf, 1u << 20);
}

/* ------------------------------------------------------------------ */
/* READ/atomic credits count requests, not WQEs                        */
/* ------------------------------------------------------------------ */

/* READ requests on the wire by chunk: asked for and not yet answered in
 * full (a retransmitted request is the same request) */
static uint32_t chunks_open, chunks_done;
static int req_sent, req_max;
static uint32_t chunk_first;
static uint32_t read_npkts;

static void count_requests(int to, const uint8_t *d, uint32_t len)
{
	uint8_t op = fe_pkt_opcode(d);
	uint32_t i = (fe_pkt_psn(d) - chunk_first) & UR_PSN_MASK;
	uint32_t bit = 1u << (i / UR_READ_CHUNK_PKTS % 32);

	if (to == 1 && op == UR_OPC_RC_READ_REQ) {
		req_sent++;
		chunks_open |= bit;
		if (__builtin_popcount(chunks_open) > req_max)
			req_max = __builtin_popcount(chunks_open);
	} else if (to == 0 && ur_op_is_read(op) &&
		   ((i + 1) % UR_READ_CHUNK_PKTS == 0 || i + 1 == read_npkts)) {
		chunks_open &= ~bit;
		chunks_done |= bit;
	}
}

/*
 * The responder keeps max_dest_rd_atomic READ/atomic results for replay
 * and overwrites the oldest (rxe does too); the requester must never have
 * more READ requests outstanding than max_rd_atomic, even when they are
 * chunks of one WQE.
 */
static void test_read_credits_per_request(void **state)
{
	struct t_pair *p = *state;
	uint64_t id = 7;

	p->a.qp->attr.max_rd_atomic = 4;
	fill(p->bb.buf, 1u << 20, 2);
	memset(p->ba.buf, T_CANARY, 1u << 20);
	req_sent = req_max = 0;
	chunks_open = chunks_done = 0;
	chunk_first = psn_a;
	read_npkts = 1024;
	fe_set_tap(count_requests);
	post_rdma(p, IBV_WR_RDMA_READ, 7, 0, 1u << 20, 0, 0);
	expect_sends(p, &id, 1);
	fe_set_tap(NULL);
	check_read(p->ba.buf, p->bb.buf, 1u << 20);
	/* 16 requests (more if a loaded host made the requester probe) */
	assert_true(req_sent >= 16);
	assert_int_equal(chunks_done, 0xffff);
	assert_int_equal(chunks_open, 0);
	assert_true(req_max <= 4);
}

/* ------------------------------------------------------------------ */
/* Recovery without waiting for the QP's timeout                        */
/* ------------------------------------------------------------------ */

static uint32_t drop_psn;
static unsigned int drop_left;

static bool drop_request_psn(int to, const uint8_t *d, uint32_t len)
{
	if (to == 1 && drop_left && ur_op_is_request(fe_pkt_opcode(d)) &&
	    fe_pkt_psn(d) == drop_psn) {
		drop_left--;
		return true;
	}
	return false;
}

/* One WRITE of 8 packets, psn_a + k lost `times` times; timeout 16 (268
 * ms): the probe finds it long before, and no timeout is counted. */
static void lose_and_recover(struct t_pair *p, uint32_t k, unsigned int times)
{
	uint64_t id = 1, t0 = stat(&p->a, UR_STAT_TIMEOUTS);

	fe_connect(p->a.qp, p->b.qp, psn_a, 0x100, 16, 7, 7);
	fill(p->ba.buf, 8192, 9);
	memset(p->bb.buf, T_CANARY, 8192);
	drop_psn = ur_psn_add(psn_a, (int32_t)k);
	drop_left = times;
	fe_set_filter(drop_request_psn);
	post_rdma(p, IBV_WR_RDMA_WRITE, 1, 0, 8192, 0, 0);
	expect_sends(p, &id, 1);
	assert_int_equal(fe_set_filter(NULL), times);
	assert_memory_equal(p->bb.buf, p->ba.buf, 8192);
	assert_int_equal(stat(&p->a, UR_STAT_TIMEOUTS), t0);
}

/* The last packet (the one asking for the ACK) is lost: the responder
 * sees no gap and says nothing. */
static void test_tail_loss(void **state)
{
	lose_and_recover(*state, 7, 1);
}

/* A middle packet is lost, the responder NAKs it once, and the
 * retransmission is lost too: the responder may not NAK again (IBA). */
static void test_lost_retransmission(void **state)
{
	lose_and_recover(*state, 3, 2);
}

/* ------------------------------------------------------------------ */
/* A gap kept: the lost packet resent alone                            */
/* ------------------------------------------------------------------ */

static uint32_t drop_a, drop_b;
static unsigned int requests_sent;

static bool drop_two_once(int to, const uint8_t *d, uint32_t len)
{
	uint32_t psn = fe_pkt_psn(d);

	if (to != 1 || !ur_op_is_request(fe_pkt_opcode(d)))
		return false;
	requests_sent++;
	if (psn == drop_a || psn == drop_b) {
		if (psn == drop_a)
			drop_a = UINT32_MAX;
		else
			drop_b = UINT32_MAX;
		return true;
	}
	return false;
}

/* One WRITE of 8 packets in one burst, packets k1 (and k2 unless it is
 * UINT32_MAX) lost once; returns the requests the requester sent. */
static unsigned int write_with_losses(struct t_pair *p, uint32_t k1,
				      uint32_t k2)
{
	uint64_t id = 1;

	fe_connect(p->a.qp, p->b.qp, psn_a, 0x100, 16, 7, 7);
	fill(p->ba.buf, 8192, 21);
	memset(p->bb.buf, T_CANARY, 8192);
	drop_a = ur_psn_add(psn_a, (int32_t)k1);
	drop_b = k2 == UINT32_MAX ? k2 : ur_psn_add(psn_a, (int32_t)k2);
	requests_sent = 0;
	fe_set_filter(drop_two_once);
	post_rdma(p, IBV_WR_RDMA_WRITE, 1, 0, 8192, 0, 0);
	expect_sends(p, &id, 1);
	fe_set_filter(NULL);
	assert_memory_equal(p->bb.buf, p->ba.buf, 8192);
	return requests_sent;
}

/*
 * Packet 3 of 8 is lost: the responder keeps 4-7 (they came past the
 * gap), NAKs 3 once, and the requester resends 3 alone; the responder
 * then executes 3-7 in order and acknowledges them all. Nine requests on
 * the wire (ten if a loaded host let the recovery probe fire), no
 * go-back-N, nothing dropped behind the gap.
 */
static void test_gap_kept_one_resent(void **state)
{
	struct t_pair *p = *state;
	uint64_t kept0 = stat(&p->b, UR_STAT_REORDER_KEPT);
	uint64_t one0 = stat(&p->a, UR_STAT_RESENDS);
	uint64_t gbn0 = stat(&p->a, UR_STAT_RETRANSMITS);
	uint64_t win0 = atomic_load(&p->b.dev->nic->cnt.drop[UR_DROP_PSN_WINDOW]);
	unsigned int sent = write_with_losses(p, 3, UINT32_MAX);

	assert_int_equal(stat(&p->b, UR_STAT_REORDER_KEPT) - kept0, 4);
	assert_int_equal(stat(&p->a, UR_STAT_RESENDS) - one0, 1);
	assert_int_equal(atomic_load(
		&p->b.dev->nic->cnt.drop[UR_DROP_PSN_WINDOW]) - win0, 0);
	/* retransmits count one-packet resends too */
	gbn0 = stat(&p->a, UR_STAT_RETRANSMITS) - gbn0 - 1;
	if (sent > 10 || gbn0 > 1)
		fail_msg("%u requests, %lu go-back-Ns: expected 9 and none",
			 sent, (unsigned long)gbn0);
}

/*
 * Packets 3 and 4 are lost: resent alone, 3 is acknowledged but nothing
 * past it (the responder keeps 5-7 behind the new gap and NAKs 4), which
 * is what a responder that drops past a gap would answer too: the
 * requester goes back N from 4, and every byte arrives.
 */
static void test_gap_run_goes_back(void **state)
{
	struct t_pair *p = *state;
	uint64_t one0 = stat(&p->a, UR_STAT_RESENDS);
	uint64_t gbn0 = stat(&p->a, UR_STAT_RETRANSMITS);

	write_with_losses(p, 3, 4);
	assert_int_equal(stat(&p->a, UR_STAT_RESENDS) - one0, 1);
	assert_true(stat(&p->a, UR_STAT_RETRANSMITS) - gbn0 >= 2);
	assert_true(p->a.qp->xp->resend.peer_drops);
}

/*
 * Three one-packet SENDs, the first lost, one receive posted: the
 * responder keeps the second and third, and when the first is resent and
 * takes the receive, its drain stops at the second with an RNR NAK (no
 * receive for it) and leaves the third kept. Once receives are posted the
 * requester's RNR retry goes on from the second: every SEND completes
 * once, in order, each receive gets its message.
 */
static void test_gap_drain_stops_at_rnr(void **state)
{
	struct t_pair *p = *state;
	uint64_t ids[3] = { 61, 62, 63 };
	uint64_t rnr0 = stat(&p->b, UR_STAT_RNR_NAK_SENT);
	uint32_t lkey = p->b.mr->ibmr.lkey;
	struct ibv_wc wc;
	unsigned int i;
	int waited;

	fe_connect(p->a.qp, p->b.qp, psn_a, 0x100, 16, 7, 7);
	fill(p->ba.buf, 3072, 31);
	memset(p->b.buf, T_CANARY, 3072);
	fe_rq_post(p->b.qp, 1, p->b.buf, 1024, lkey);
	drop_a = psn_a;
	drop_b = UINT32_MAX;
	requests_sent = 0;
	fe_set_filter(drop_two_once);
	pthread_mutex_lock(&p->a.qp->sq_lock);
	for (i = 0; i < 3; i++) {
		wqe_new(&p->a, IBV_WR_SEND, ids[i], &p->ba, i * 1024u, 1024);
		p->a.qp->sq.producer++;
	}
	ur_engine_sq_kick(p->a.qp);
	ur_engine_sq_unlock(p->a.qp);
	for (waited = 0; stat(&p->b, UR_STAT_RNR_NAK_SENT) == rnr0; waited++) {
		if (waited > T_TMO)
			fail_msg("no RNR NAK");
		usleep(1000);
	}
	fe_rq_post(p->b.qp, 2, p->b.buf + 1024, 1024, lkey);
	fe_rq_post(p->b.qp, 3, p->b.buf + 2048, 1024, lkey);
	expect_sends(p, ids, 3);
	fe_set_filter(NULL);
	for (i = 0; i < 3; i++) {
		assert_int_equal(fe_cq_poll(&p->b.rcq, &wc, T_TMO), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, i + 1);
		assert_int_equal(wc.byte_len, 1024);
	}
	assert_int_equal(fe_cq_poll(&p->b.rcq, &wc, 30), 0);
	assert_memory_equal(p->b.buf, p->ba.buf, 3072);
	assert_true(stat(&p->b, UR_STAT_REORDER_KEPT) > 0);
}

/* ------------------------------------------------------------------ */
/* READ responses past a lost one: placed, the lost ones asked alone   */
/* ------------------------------------------------------------------ */

#define T_RD_DROPS 4
static uint32_t rd_drop[T_RD_DROPS];
static unsigned int rd_drop_left[T_RD_DROPS];
static unsigned int rd_responses, rd_requests, rd_writes;
static uint32_t rd_request_psn[32], rd_write_psn[8];

/* If set, its max_rd_atomic becomes 1 once the last drop is done. */
static struct ur_qp *rd_limit_qp;	/* on device 0 */
static bool rd_limit_due;

/* The requester reads max_rd_atomic under the QP's sq_lock; the filter
 * runs inside senders that may hold it, so device 0's receive path,
 * which comes next, writes it. */
static void rd_limit_apply(int dev)
{
	if (dev != 0 || !__atomic_load_n(&rd_limit_due, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&rd_limit_qp->sq_lock);
	rd_limit_qp->attr.max_rd_atomic = 1;
	pthread_mutex_unlock(&rd_limit_qp->sq_lock);
	__atomic_store_n(&rd_limit_due, false, __ATOMIC_RELEASE);
}

static bool drop_read_responses(int to, const uint8_t *d, uint32_t len)
{
	uint8_t op = fe_pkt_opcode(d);
	uint32_t psn = fe_pkt_psn(d);
	unsigned int i;

	if (to == 1 && op == UR_OPC_RC_READ_REQ) {
		if (rd_requests < UR_ARRAY_SIZE(rd_request_psn))
			rd_request_psn[rd_requests] = psn;
		rd_requests++;
	}
	if (to == 1 && op == UR_OPC_RC_WRITE_ONLY) {
		if (rd_writes < UR_ARRAY_SIZE(rd_write_psn))
			rd_write_psn[rd_writes] = psn;
		rd_writes++;
	}
	if (to != 0 || !ur_op_is_read(op) || op == UR_OPC_RC_READ_REQ)
		return false;
	rd_responses++;
	for (i = 0; i < T_RD_DROPS; i++)
		if (rd_drop_left[i] && psn == rd_drop[i]) {
			if (!--rd_drop_left[i] && rd_limit_qp)
				__atomic_store_n(&rd_limit_due, true,
						 __ATOMIC_RELEASE);
			return true;
		}
	return false;
}

/* nreads READs of len bytes each (MTU 1024: one response per KiB) in one
 * doorbell, the responses at PSN offsets k[0..n) lost `times` times each,
 * then (write) a one-packet WRITE; every byte checked. */
static void reads_with_losses(struct t_pair *p, uint32_t len,
			      unsigned int nreads, const uint32_t *k,
			      unsigned int n, unsigned int times, bool write)
{
	uint32_t end = nreads * len;
	uint64_t ids[5];
	unsigned int i;

	assert_true(nreads < UR_ARRAY_SIZE(ids));
	fe_connect(p->a.qp, p->b.qp, psn_a, 0x100, 16, 7, 7);
	fill(p->bb.buf, end + 1024, 33);
	memset(p->ba.buf, T_CANARY, end);
	fill(p->ba.buf + end, 1024, 44);
	memset(rd_drop_left, 0, sizeof(rd_drop_left));
	for (i = 0; i < n; i++) {
		rd_drop[i] = ur_psn_add(psn_a, (int32_t)k[i]);
		rd_drop_left[i] = times;
	}
	rd_responses = rd_requests = rd_writes = 0;
	rd_limit_qp = write ? p->a.qp : NULL;	/* before the hooks see it */
	rd_limit_due = false;
	fe_set_rx_hook(rd_limit_apply);
	fe_set_filter(drop_read_responses);
	pthread_mutex_lock(&p->a.qp->sq_lock);
	if (write) {
		/* every request out at once, as after a long stream; after
		 * the losses the requester stops inside the second READ */
		p->a.qp->xp->cc.cwnd = UR_WINDOW_PSNS;
	}
	for (i = 0; i < nreads + write; i++) {
		struct ur_send_wqe *w = wqe_new(&p->a, i < nreads ?
						IBV_WR_RDMA_READ :
						IBV_WR_RDMA_WRITE,
						ids[i] = 60 + i, &p->ba,
						i * len,
						i < nreads ? len : 1024);

		w->rdma.remote_addr = (uintptr_t)p->bb.buf + i * len;
		w->rdma.rkey = p->bb.mr->ibmr.rkey;
		p->a.qp->sq.producer++;
	}
	ur_engine_sq_kick(p->a.qp);
	ur_engine_sq_unlock(p->a.qp);
	expect_sends(p, ids, nreads + write);
	assert_int_equal(fe_set_filter(NULL), n * times);
	fe_set_rx_hook(NULL);
	assert_false(__atomic_load_n(&rd_limit_due, __ATOMIC_ACQUIRE));
	check_read(p->ba.buf, p->bb.buf, end);
	/* the WRITE executed at the responder, not taken as a duplicate */
	if (write)
		assert_memory_equal(p->bb.buf + end, p->ba.buf + end, 1024);
}

static void read_with_losses(struct t_pair *p, uint32_t len,
			     unsigned int nreads, const uint32_t *k,
			     unsigned int n, unsigned int times)
{
	reads_with_losses(p, len, nreads, k, n, times, false);
}

/*
 * Response 5 of a READ of 16 is lost: the requester places 6-15 as they
 * come and asks for 5 alone; the responder answers that duplicate from
 * what it saved of the READ. 17 responses on the wire and two requests
 * (a go-back-N asks for 5-15 again: 27 responses).
 */
static void test_read_lost_response_asked_alone(void **state)
{
	struct t_pair *p = *state;
	uint64_t asks0 = stat(&p->a, UR_STAT_READ_ASKS);
	uint64_t ahead0 = stat(&p->a, UR_STAT_READ_AHEAD);
	uint64_t replay0 = stat(&p->b, UR_STAT_READ_REPLAY);
	const uint32_t k = 5;

	read_with_losses(p, 16384, 1, &k, 1, 1);
	assert_int_equal(stat(&p->a, UR_STAT_READ_ASKS) - asks0, 1);
	assert_int_equal(stat(&p->a, UR_STAT_READ_AHEAD) - ahead0, 10);
	assert_int_equal(stat(&p->b, UR_STAT_READ_REPLAY) - replay0, 1);
	/* 18 responses and 3 requests if a loaded host let the probe fire */
	if (rd_responses > 18 || rd_requests > 3)
		fail_msg("%u responses, %u requests: expected 17 and 2",
			 rd_responses, rd_requests);
	assert_int_equal(rd_request_psn[1], ur_psn_add(psn_a, 5));
}

/*
 * The last response of a READ's first request (chunk) and the first of
 * its second are lost: one run, two asks, each inside the request it
 * belongs to (the responder answers a duplicate only inside one saved
 * request).
 */
static void test_read_lost_run_across_requests(void **state)
{
	struct t_pair *p = *state;
	uint64_t asks0 = stat(&p->a, UR_STAT_READ_ASKS);
	const uint32_t k[] = { UR_READ_CHUNK_PKTS - 1, UR_READ_CHUNK_PKTS };

	read_with_losses(p, 2 * UR_READ_CHUNK_PKTS * 1024u, 1, k, 2, 1);
	assert_int_equal(stat(&p->a, UR_STAT_READ_ASKS) - asks0, 2);
}

/*
 * Responses 3 and 9 of one request are lost. When 10 comes, the ask for
 * 3 may still be unanswered: the ask for 9 then starts at 3, as rxe
 * answers a retried READ only from where its last retry started on. Every
 * ask of the request starts at or after the one before.
 */
static void test_read_asks_never_go_back(void **state)
{
	struct t_pair *p = *state;
	const uint32_t k[] = { 3, 9 };
	unsigned int i;

	read_with_losses(p, 16384, 1, k, 2, 1);
	assert_true(rd_requests >= 3);
	for (i = 2; i < rd_requests && i < UR_ARRAY_SIZE(rd_request_psn);
	     i++)
		assert_false(ur_psn_before(rd_request_psn[i],
					   rd_request_psn[i - 1]));
}

/* The ask is lost too (the response 5 twice): the recovery probe's
 * go-back-N asks again, and no timeout is counted. */
static void test_read_lost_ask_answer(void **state)
{
	struct t_pair *p = *state;
	uint64_t t0 = stat(&p->a, UR_STAT_TIMEOUTS);
	const uint32_t k = 5;

	read_with_losses(p, 16384, 1, &k, 1, 2);
	assert_int_equal(stat(&p->a, UR_STAT_TIMEOUTS), t0);
}

/*
 * Four READs of 16; the last response of the first is lost and so is the
 * answer to its ask, while the others arrive whole. The probe's go-back-N
 * asks for that one response, then counts the second and third (all
 * placed) as requests without sending them, and the window stops the
 * fourth; the cursor moves through the placed ones only after the
 * requester ran, and the requester must run again then: nothing else
 * would (nothing in flight, no timer), and the fourth READ's request
 * would never be counted.
 */
static void test_read_go_back_past_placed_read(void **state)
{
	struct t_pair *p = *state;
	const uint32_t k = 15;

	read_with_losses(p, 16384, 4, &k, 1, 2);
}

/*
 * The same with a WRITE after the four READs: the READs the cursor moved
 * through before the requester reached them again are done when it does,
 * and the WRITE must start after their PSNs. It started on the PSNs of
 * the last READ (the requester passed a done WQE without its PSNs), where
 * the responder took it for a duplicate, ACKed it and never executed it:
 * a soak run so lost a SEND's middle packets and completed it short.
 */
static void test_read_done_before_requester(void **state)
{
	struct t_pair *p = *state;
	const uint32_t k = 2 * UR_READ_CHUNK_PKTS - 1;

	unsigned int i;

	reads_with_losses(p, 2 * UR_READ_CHUNK_PKTS * 1024u, 2, &k, 1, 2,
			  true);
	/* always after the READs' 4 * 64 PSNs (a go-back-N may resend it
	 * there), never on a PSN of the second READ, which the responder
	 * ACKs as a duplicate: that ACK made the requester skip ahead and
	 * send it again here; in the soak it came too late */
	assert_true(rd_writes >= 1 && rd_writes <= UR_ARRAY_SIZE(rd_write_psn));
	for (i = 0; i < rd_writes; i++)
		assert_int_equal(rd_write_psn[i],
				 ur_psn_add(psn_a, 4 * UR_READ_CHUNK_PKTS));
}

/*
 * Two READs of 16; response 3 of the first and 5 of the second are lost,
 * and so are the answers to their asks. The probe's go-back-N asks for
 * the first from 3 and for the second from 5 on, not from its start: rxe
 * would not answer a retried READ that starts before its last retry did,
 * and the QP would end in RETRY_EXC. Every request for the second READ
 * starts at or after the one before.
 */
static void test_read_go_back_after_asks(void **state)
{
	struct t_pair *p = *state;
	const uint32_t k[] = { 3, 16 + 5 };
	uint32_t second = ur_psn_add(psn_a, 16), last = second;
	unsigned int i, n = 0;

	read_with_losses(p, 16384, 2, k, 2, 2);
	for (i = 0; i < rd_requests && i < UR_ARRAY_SIZE(rd_request_psn);
	     i++) {
		uint32_t psn = rd_request_psn[i];

		if (!ur_psn_in_range(psn, second, ur_psn_add(second, 15)))
			continue;
		if (ur_psn_before(psn, last))
			fail_msg("request %u for the second READ at +%u, "
				 "after one at +%u", i, (psn - second) &
				 UR_PSN_MASK, (last - second) & UR_PSN_MASK);
		last = psn;
		n++;
	}
	assert_true(n >= 2);	/* the request and its ask */
	assert_true(ur_psn_after(last, second));
}

/* Every ACK to the requester is lost until it retransmits a request. */
static bool acks_lost, seen_req;
static uint32_t req_psn_max;

static bool drop_acks_until_retransmit(int to, const uint8_t *d,
				       uint32_t len)
{
	uint32_t psn = fe_pkt_psn(d);

	if (to == 1 && ur_op_is_request(fe_pkt_opcode(d))) {
		if (seen_req && !ur_psn_after(psn, req_psn_max))
			acks_lost = false;	/* the probe */
		else
			req_psn_max = psn;
		seen_req = true;
	}
	return to == 0 && acks_lost && fe_pkt_opcode(d) == UR_OPC_RC_ACK;
}

/*
 * Eight one-packet WRITEs arrive, every ACK for them is lost: the recovery
 * probe resends the first, and the responder's ACK of that duplicate says
 * it holds all eight. The seven WQEs behind the first were reset to POSTED
 * by the probe's rewind; they are acknowledged, not sent again (the
 * responder sees the probe as its only duplicate).
 */
static void test_probe_ack_covers_rewound_wqes(void **state)
{
	struct t_pair *p = *state;
	uint64_t ids[8], dup0 = stat(&p->b, UR_STAT_DUP_REQ);
	unsigned int i;

	fill(p->ba.buf, 8192, 11);
	memset(p->bb.buf, T_CANARY, 8192);
	acks_lost = true;
	seen_req = false;
	fe_set_filter(drop_acks_until_retransmit);
	/* one doorbell for all eight: they leave in one burst */
	pthread_mutex_lock(&p->a.qp->sq_lock);
	for (i = 0; i < 8; i++) {
		struct ur_send_wqe *w = wqe_new(&p->a, IBV_WR_RDMA_WRITE,
						ids[i] = 40 + i, &p->ba,
						i * 1024u, 1024);

		w->rdma.remote_addr = (uintptr_t)p->bb.buf + i * 1024u;
		w->rdma.rkey = p->bb.mr->ibmr.rkey;
		p->a.qp->sq.producer++;
	}
	ur_engine_sq_kick(p->a.qp);
	ur_engine_sq_unlock(p->a.qp);
	expect_sends(p, ids, 8);
	assert_true(fe_set_filter(NULL) >= 1);
	assert_memory_equal(p->bb.buf, p->ba.buf, 8192);
	/* one probe (two if a loaded host delayed its answer), never the
	 * seven WQEs behind it */
	dup0 = stat(&p->b, UR_STAT_DUP_REQ) - dup0;
	if (dup0 < 1 || dup0 > 2)
		fail_msg("%lu duplicate requests, expected the probe",
			 (unsigned long)dup0);
}

/* ------------------------------------------------------------------ */
/* Mixed traffic under random faults                                   */
/* ------------------------------------------------------------------ */

/*
 * Layout. Remote (b): [0, 1M) READ source; [1M, 1.5M) WRITE target;
 * 1.75M: the atomic counter; 64 KiB fe buffer: SEND target. Local (a):
 * [0, 768K) READ 1, [768K, 1M) READ 2, [1M, 1M+300K) READ 3,
 * [1.5M, 1.75M) WRITE/SEND source, [2M-64, 2M) atomic results.
 */
#define L_R1 0u
#define L_R2 (768u << 10)
#define L_R3 (1u << 20)
#define L_SRC (1536u << 10)
#define L_ATOM (T_BIG - 64)
#define R_WRITE (1u << 20)
#define R_CTR (1792u << 10)
#define N_R1 (768u << 10)
#define N_R2 (256u << 10)
#define N_R3 (300u << 10)
#define N_WRITE (100u << 10)
#define N_SEND (20u << 10)

static void mixed_round(struct t_pair *p, unsigned int round)
{
	uint64_t ids[16], *ctr = (uint64_t *)(p->bb.buf + R_CTR);
	uint64_t v, base = round * 100;
	struct ibv_wc wc;
	unsigned int n = 0;

	fill(p->bb.buf, 1u << 20, round + 3);
	fill(p->ba.buf + L_SRC, 256u << 10, round + 5);
	memset(p->ba.buf, T_CANARY, L_SRC);
	memset(p->bb.buf + R_WRITE, T_CANARY, N_WRITE);
	memset(p->b.buf, T_CANARY, N_SEND);
	memset(p->ba.buf + L_ATOM, T_CANARY, 64);
	*ctr = 1000;
	fe_rq_post(p->b.qp, base, p->b.buf, N_SEND, p->b.mr->ibmr.lkey);

	post_rdma(p, IBV_WR_RDMA_READ, ids[n++] = base + 1, L_R1, N_R1,
		  4096, 0);
	/* an atomic right behind a multi-chunk READ */
	post_atomic(p, IBV_WR_ATOMIC_FETCH_AND_ADD, ids[n++] = base + 2,
		    L_ATOM, R_CTR, 5, 0);
	post_rdma(p, IBV_WR_RDMA_WRITE, ids[n++] = base + 3, L_SRC, N_WRITE,
		  R_WRITE, 0);
	post_rdma(p, IBV_WR_RDMA_READ, ids[n++] = base + 4, L_R2, N_R2,
		  N_R1 + 4096, 0);
	post_atomic(p, IBV_WR_ATOMIC_CMP_AND_SWP, ids[n++] = base + 5,
		    L_ATOM + 8, R_CTR, 1005, 7);
	/* a fenced SEND waits for both READs and atomics */
	{
		struct ur_send_wqe *w = wqe_new(&p->a, IBV_WR_SEND, base + 6,
						&p->ba, L_SRC + 4096, N_SEND);

		ids[n++] = base + 6;
		w->send_flags |= IBV_SEND_FENCE;
		fe_sq_post(p->a.qp);
	}
	/* a fenced READ, then an atomic after it */
	post_rdma(p, IBV_WR_RDMA_READ, ids[n++] = base + 7, L_R3, N_R3,
		  3 * 4096, IBV_SEND_FENCE);
	post_atomic(p, IBV_WR_ATOMIC_FETCH_AND_ADD, ids[n++] = base + 8,
		    L_ATOM + 16, R_CTR, 1, 0);
	expect_sends(p, ids, n);

	check_read(p->ba.buf + L_R1, p->bb.buf + 4096, N_R1);
	check_read(p->ba.buf + L_R2, p->bb.buf + N_R1 + 4096, N_R2);
	check_read(p->ba.buf + L_R3, p->bb.buf + 3 * 4096, N_R3);
	assert_memory_equal(p->bb.buf + R_WRITE, p->ba.buf + L_SRC, N_WRITE);
	/* atomics executed once each, in order */
	memcpy(&v, p->ba.buf + L_ATOM, 8);
	assert_int_equal(v, 1000);
	memcpy(&v, p->ba.buf + L_ATOM + 8, 8);
	assert_int_equal(v, 1005);
	memcpy(&v, p->ba.buf + L_ATOM + 16, 8);
	assert_int_equal(v, 7);
	assert_int_equal(*ctr, 8);
	assert_int_equal(fe_cq_poll(&p->b.rcq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, base);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, N_SEND);
	assert_memory_equal(p->b.buf, p->ba.buf + L_SRC + 4096, N_SEND);
	assert_int_equal(fe_cq_poll(&p->b.rcq, &wc, 0), 0);
}

static void mixed(void **state, unsigned int drop, unsigned int dup,
		  unsigned int reorder)
{
	struct t_pair *p = *state;
	unsigned int seed, nseeds = getenv("FE_SEEDS") ?
		(unsigned int)atoi(getenv("FE_SEEDS")) : 3;
	struct fe_counts c0, c1;
	uint64_t nak0 = stat(&p->a, UR_STAT_SEQ_NAK_RCVD);
	uint64_t rtx0 = stat(&p->a, UR_STAT_RETRANSMITS);

	fe_get_counts(&c0);
	for (seed = 1; seed <= nseeds; seed++) {
		fe_seed(seed);
		fe_set_fault(&(struct fe_fault){ .drop_pct = drop,
						 .dup_pct = dup,
						 .reorder_pct = reorder });
		mixed_round(p, seed * 2);
		mixed_round(p, seed * 2 + 1);
	}
	fe_get_counts(&c1);
	fe_set_fault(NULL);
	if (getenv("FE_STATS")) {
		ur_engine_dump_counters(p->a.dev, stderr);
		ur_engine_dump_counters(p->b.dev, stderr);
	}
	/* the faults happened and were recovered from */
	if (drop)
		assert_true(c1.dropped > c0.dropped);
	if (dup)
		assert_true(c1.duplicated > c0.duplicated);
	if (reorder)
		assert_true(c1.reordered > c0.reordered);
	assert_true(stat(&p->a, UR_STAT_RETRANSMITS) > rtx0);
	if (drop)
		assert_true(stat(&p->a, UR_STAT_SEQ_NAK_RCVD) > nak0);
}

static void test_mixed_reorder(void **state)
{
	mixed(state, 0, 0, 10);
}

static void test_mixed_drop(void **state)
{
	mixed(state, 3, 0, 0);
}

static void test_mixed_all(void **state)
{
	mixed(state, 10, 2, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_read_nak_inside_read, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_read_credits_per_request,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_tail_loss, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_retransmission, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_gap_kept_one_resent, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_gap_run_goes_back, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_gap_drain_stops_at_rnr,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_read_lost_response_asked_alone, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_read_lost_run_across_requests, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_asks_never_go_back,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_lost_ask_answer,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_go_back_after_asks,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_read_go_back_past_placed_read, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_read_done_before_requester, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_probe_ack_covers_rewound_wqes, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mixed_reorder, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_mixed_drop, setup, teardown),
		cmocka_unit_test_setup_teardown(test_mixed_all, setup, teardown),
	};
	int rc;

	fe_init();
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	fe_fini();
	return rc;
}
