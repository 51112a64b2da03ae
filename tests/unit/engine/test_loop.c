/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The engine alone, on a fake obj/ and an in-memory link with programmable
 * loss, duplication and reordering: RC operations, go-back-N, READ and
 * atomic replay, RNR, error completions and flushes, UD with its GRH.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#include "fake_env.h"

#define T_TMO 5000

struct t_pair {
	struct fe_side a, b;
};

static int setup(void **state)
{
	struct t_pair *p = calloc(1, sizeof(*p));

	fe_set_fault(NULL);
	fe_side_open(&p->a, 0, IBV_QPT_RC);
	fe_side_open(&p->b, 1, IBV_QPT_RC);
	/* timeout 12 (16.8 ms): a loaded 2-core machine can starve a thread
	 * for milliseconds, which a 1 ms timer would count as losses */
	fe_connect(p->a.qp, p->b.qp, 0xfffff8, 0x100, 12, 7, 7);
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	struct t_pair *p = *state;

	fe_set_fault(NULL);
	fe_side_close(&p->a);
	fe_side_close(&p->b);
	free(p);
	return 0;
}

static void post(struct fe_side *s, enum ibv_wr_opcode op, uint64_t wr_id,
		 uint32_t off, uint32_t len, uint64_t raddr, uint32_t rkey)
{
	struct ur_send_wqe *w = fe_sq_next(s->qp);

	w->wr_id = wr_id;
	w->opcode = op;
	w->send_flags = IBV_SEND_SIGNALED;
	w->num_sge = 1;
	w->length = len;
	w->sge[0].addr = (uintptr_t)s->buf + off;
	w->sge[0].length = len;
	w->sge[0].lkey = s->mr->ibmr.lkey;
	w->rdma.remote_addr = raddr;
	w->rdma.rkey = rkey;
	fe_sq_post(s->qp);
}

static void expect(struct ur_cq *cq, uint64_t wr_id, enum ibv_wc_status st)
{
	struct ibv_wc wc;

	assert_int_equal(fe_cq_poll(cq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.status, st);
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7 + (i >> 9));
}

static void test_ops(void **state)
{
	struct t_pair *p = *state;
	struct ibv_wc wc;
	uint64_t v;

	fill(p->a.buf, 65536, 1);
	fe_rq_post(p->b.qp, 1, p->b.buf, 8192, p->b.mr->ibmr.lkey);
	post(&p->a, IBV_WR_SEND, 10, 0, 5000, 0, 0);
	expect(&p->a.scq, 10, IBV_WC_SUCCESS);
	assert_int_equal(fe_cq_poll(&p->b.rcq, &wc, T_TMO), 1);
	assert_int_equal(wc.byte_len, 5000);
	assert_memory_equal(p->b.buf, p->a.buf, 5000);

	post(&p->a, IBV_WR_RDMA_WRITE, 11, 100, 3333,
	     (uintptr_t)p->b.buf + 10000, p->b.mr->ibmr.rkey);
	expect(&p->a.scq, 11, IBV_WC_SUCCESS);
	assert_memory_equal(p->b.buf + 10000, p->a.buf + 100, 3333);

	fill(p->b.buf + 20000, 9000, 3);
	post(&p->a, IBV_WR_RDMA_READ, 12, 30000, 9000,
	     (uintptr_t)p->b.buf + 20000, p->b.mr->ibmr.rkey);
	expect(&p->a.scq, 12, IBV_WC_SUCCESS);
	assert_memory_equal(p->a.buf + 30000, p->b.buf + 20000, 9000);

	*(uint64_t *)(p->b.buf + 64) = 10;
	{
		struct ur_send_wqe *w = fe_sq_next(p->a.qp);

		w->wr_id = 13;
		w->opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		w->send_flags = IBV_SEND_SIGNALED;
		w->num_sge = 1;
		w->length = 8;
		w->sge[0].addr = (uintptr_t)p->a.buf + 40000;
		w->sge[0].length = 8;
		w->sge[0].lkey = p->a.mr->ibmr.lkey;
		w->atomic.remote_addr = (uintptr_t)p->b.buf + 64;
		w->atomic.rkey = p->b.mr->ibmr.rkey;
		w->atomic.compare_add = 32;
		fe_sq_post(p->a.qp);
	}
	expect(&p->a.scq, 13, IBV_WC_SUCCESS);
	memcpy(&v, p->a.buf + 40000, 8);
	assert_int_equal(v, 10);
	assert_int_equal(*(uint64_t *)(p->b.buf + 64), 42);
}

static void test_lossy_stream(void **state)
{
	struct t_pair *p = *state;
	struct ibv_wc wc;
	int i, n = 300, done = 0, got = 0, posted = 0;

	fe_set_fault(&(struct fe_fault){
		.drop_pct = getenv("FE_DROP") ? atoi(getenv("FE_DROP")) : 5,
		.dup_pct = 3,
		.reorder_pct = 5,
	});
	fill(p->a.buf, 65536, 2);
	/* 8 receive buffers, each reposted only after it was checked */
	for (i = 0; i < 8; i++)
		fe_rq_post(p->b.qp, i, p->b.buf + (i % 8) * 8192, 8192,
			   p->b.mr->ibmr.lkey);
	while (got < n || done < n) {
		while (posted < n && posted - done < 8) {
			uint32_t len = 4 + (posted * 977) % 6000;

			memcpy(p->a.buf + (posted % 8) * 8192, &posted, 4);
			post(&p->a, IBV_WR_SEND, posted, (posted % 8) * 8192,
			     len, 0, 0);
			posted++;
		}
		if (done < n && fe_cq_poll(&p->a.scq, &wc, 1) == 1) {
			if (wc.status != IBV_WC_SUCCESS) {
				struct ur_resp_state_qp *r = &p->b.qp->xp->resp;

				fprintf(stderr, "resp epsn %u nak %d msg %d "
					"len %u rwqe %d rq %u/%u state %d "
					"got %d done %d posted %d\n",
					r->epsn, r->nak_sent, r->msg,
					r->msg_len, r->have_rwqe,
					p->b.qp->rq.consumer,
					p->b.qp->rq.producer, p->b.qp->state,
					got, done, posted);
				fe_debug();
				if (getenv("FE_ABORT"))
					abort();
				ur_engine_dump_counters(p->a.dev, stderr);
				ur_engine_dump_counters(p->b.dev, stderr);
			}
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, done);
			done++;
		}
		if (got < n && fe_cq_poll(&p->b.rcq, &wc, 1) == 1) {
			int idx;

			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, got);
			assert_int_equal(wc.byte_len, 4 + (got * 977) % 6000);
			memcpy(&idx, p->b.buf + (got % 8) * 8192, 4);
			assert_int_equal(idx, got);
			if (got + 8 < n)
				fe_rq_post(p->b.qp, got + 8,
					   p->b.buf + (got % 8) * 8192, 8192,
					   p->b.mr->ibmr.lkey);
			got++;
		}
	}
	/* READs and atomics under loss: replayed, never re-executed */
	*(uint64_t *)(p->b.buf + 60000) = 0;
	for (i = 0; i < 40; i++) {
		struct ur_send_wqe *w;
		uint64_t v;

		fill(p->b.buf + 1000, 12000, (unsigned int)i);
		post(&p->a, IBV_WR_RDMA_READ, 1000 + i, 20000, 12000,
		     (uintptr_t)p->b.buf + 1000, p->b.mr->ibmr.rkey);
		expect(&p->a.scq, 1000 + i, IBV_WC_SUCCESS);
		assert_memory_equal(p->a.buf + 20000, p->b.buf + 1000, 12000);

		w = fe_sq_next(p->a.qp);
		w->wr_id = 2000 + i;
		w->opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		w->send_flags = IBV_SEND_SIGNALED;
		w->num_sge = 1;
		w->length = 8;
		w->sge[0].addr = (uintptr_t)p->a.buf + 40000;
		w->sge[0].length = 8;
		w->sge[0].lkey = p->a.mr->ibmr.lkey;
		w->atomic.remote_addr = (uintptr_t)p->b.buf + 60000;
		w->atomic.rkey = p->b.mr->ibmr.rkey;
		w->atomic.compare_add = 1;
		fe_sq_post(p->a.qp);
		expect(&p->a.scq, 2000 + i, IBV_WC_SUCCESS);
		memcpy(&v, p->a.buf + 40000, 8);
		assert_int_equal(v, (uint64_t)i);
	}
	assert_int_equal(*(uint64_t *)(p->b.buf + 60000), 40);
	if (getenv("FE_STATS")) {
		ur_engine_dump_counters(p->a.dev, stderr);
		ur_engine_dump_counters(p->b.dev, stderr);
	}
}

/* The ACK of a READ response is lost once: the READ is replayed. */
static void test_lost_read_response(void **state)
{
	struct t_pair *p = *state;

	fill(p->b.buf, 5000, 9);
	fe_set_fault(&(struct fe_fault){
		.drop_opcode_once = UR_OPC_RC_READ_RESP_MIDDLE + 1,
	});
	post(&p->a, IBV_WR_RDMA_READ, 1, 10000, 5000, (uintptr_t)p->b.buf,
	     p->b.mr->ibmr.rkey);
	expect(&p->a.scq, 1, IBV_WC_SUCCESS);
	assert_memory_equal(p->a.buf + 10000, p->b.buf, 5000);
	assert_true(atomic_load(&p->b.dev->nic->cnt.stat[UR_STAT_READ_REPLAY]) >
		    0);
}

static void test_bad_rkey(void **state)
{
	struct t_pair *p = *state;

	post(&p->a, IBV_WR_RDMA_WRITE, 1, 0, 100, (uintptr_t)p->b.buf,
	     p->b.mr->ibmr.rkey + 77);
	post(&p->a, IBV_WR_SEND, 2, 0, 100, 0, 0);
	expect(&p->a.scq, 1, IBV_WC_REM_ACCESS_ERR);
	expect(&p->a.scq, 2, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(p->a.qp->state, IBV_QPS_ERR);
	assert_int_equal(p->b.qp->state, IBV_QPS_ERR);
	post(&p->a, IBV_WR_SEND, 3, 0, 100, 0, 0);
	expect(&p->a.scq, 3, IBV_WC_WR_FLUSH_ERR);
	/* recovery */
	fe_connect(p->a.qp, p->b.qp, 5, 6, 8, 7, 7);
	fe_rq_post(p->b.qp, 4, p->b.buf, 100, p->b.mr->ibmr.lkey);
	post(&p->a, IBV_WR_SEND, 5, 0, 100, 0, 0);
	expect(&p->a.scq, 5, IBV_WC_SUCCESS);
	expect(&p->b.rcq, 4, IBV_WC_SUCCESS);
}

static void test_bad_lkey(void **state)
{
	struct t_pair *p = *state;
	struct ur_send_wqe *w = fe_sq_next(p->a.qp);

	w->wr_id = 1;
	w->opcode = IBV_WR_RDMA_WRITE;
	w->num_sge = 1;
	w->length = 10;
	w->sge[0].addr = (uintptr_t)p->a.buf;
	w->sge[0].length = 10;
	w->sge[0].lkey = 0xdead;
	w->rdma.remote_addr = (uintptr_t)p->b.buf;
	w->rdma.rkey = p->b.mr->ibmr.rkey;
	fe_sq_post(p->a.qp);
	expect(&p->a.scq, 1, IBV_WC_LOC_PROT_ERR);
}

static void test_rnr(void **state)
{
	struct t_pair *p = *state;

	fe_connect(p->a.qp, p->b.qp, 1, 2, 8, 7, 0);
	post(&p->a, IBV_WR_SEND, 1, 0, 100, 0, 0);
	expect(&p->a.scq, 1, IBV_WC_RNR_RETRY_EXC_ERR);

	fe_connect(p->a.qp, p->b.qp, 1, 2, 8, 7, 7);
	post(&p->a, IBV_WR_SEND, 2, 0, 3000, 0, 0);
	assert_int_equal(fe_cq_poll(&p->a.scq, (struct ibv_wc[1]){}, 30), 0);
	fe_rq_post(p->b.qp, 3, p->b.buf, 4096, p->b.mr->ibmr.lkey);
	expect(&p->a.scq, 2, IBV_WC_SUCCESS);
	expect(&p->b.rcq, 3, IBV_WC_SUCCESS);
}

static void test_retry_exceeded(void **state)
{
	struct t_pair *p = *state;

	fe_connect(p->a.qp, p->b.qp, 1, 2, 6, 2, 7);
	fe_qp_destroy(p->b.qp);
	p->b.qp = NULL;
	post(&p->a, IBV_WR_RDMA_WRITE, 1, 0, 100, (uintptr_t)p->b.buf,
	     p->b.mr->ibmr.rkey);
	post(&p->a, IBV_WR_RDMA_WRITE, 2, 0, 100, (uintptr_t)p->b.buf,
	     p->b.mr->ibmr.rkey);
	expect(&p->a.scq, 1, IBV_WC_RETRY_EXC_ERR);
	expect(&p->a.scq, 2, IBV_WC_WR_FLUSH_ERR);
}

static void test_ud(void **state)
{
	struct fe_side a, b;
	struct ur_ah ah;
	struct ur_send_wqe *w;
	struct ibv_wc wc;

	fe_side_open(&a, 0, IBV_QPT_UD);
	fe_side_open(&b, 1, IBV_QPT_UD);
	a.qp->attr.qkey = b.qp->attr.qkey = 0x1234;
	fe_qp_modify(a.qp, IBV_QPS_INIT, 0);
	fe_qp_modify(a.qp, IBV_QPS_RTR, 0);
	fe_qp_modify(a.qp, IBV_QPS_RTS, 0);
	fe_qp_modify(b.qp, IBV_QPS_INIT, 0);
	fe_qp_modify(b.qp, IBV_QPS_RTR, 0);
	memset(&ah, 0, sizeof(ah));
	ah.pd = a.qp->pd;	/* one of another PD fails (req_ud()) */
	ah.av.dest = b.dev->gids[0].addr;
	fe_set_port(&ah.av.dest);
	fill(a.buf, 1000, 4);
	fe_rq_post(b.qp, 7, b.buf, 1040, b.mr->ibmr.lkey);
	w = fe_sq_next(a.qp);
	w->wr_id = 1;
	w->opcode = IBV_WR_SEND;
	w->send_flags = IBV_SEND_SIGNALED;
	w->num_sge = 1;
	w->length = 1000;
	w->sge[0].addr = (uintptr_t)a.buf;
	w->sge[0].length = 1000;
	w->sge[0].lkey = a.mr->ibmr.lkey;
	w->ud.ah = &ah;
	w->ud.remote_qpn = ur_qp_num(b.qp);
	w->ud.remote_qkey = 0x1234;
	fe_sq_post(a.qp);
	expect(&a.scq, 1, IBV_WC_SUCCESS);
	assert_int_equal(fe_cq_poll(&b.rcq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 1040);
	assert_int_equal(wc.src_qp, ur_qp_num(a.qp));
	assert_true(wc.wc_flags & IBV_WC_GRH);
	assert_memory_equal(b.buf + 40, a.buf, 1000);
	if (a.dev->gids[0].addr.sa.sa_family == AF_INET6) {
		/* IPv6 image: the header itself, source at byte 8 */
		assert_int_equal(b.buf[0] >> 4, 6);
		assert_memory_equal(b.buf + 8,
				    &a.dev->gids[0].addr.in6.sin6_addr, 16);
		/* RoCEv2 over IPv6 in sl, as mlx5 reports it (UCX reads it) */
		assert_int_equal(wc.sl, 0x9);
		assert_memory_equal(b.buf + 24,
				    &b.dev->gids[0].addr.in6.sin6_addr, 16);
	} else {
		/* IPv4: 20 zero bytes, then a header with the sender's IP */
		assert_int_equal(b.buf[20] >> 4, 4);
		assert_memory_equal(b.buf + 20 + 12,
				    &a.dev->gids[0].addr.in.sin_addr, 4);
		/*
		 * RoCEv2 over IPv4 in sl; UCX then takes the last 4 bytes of
		 * the GRH's DGID field, which must be our own address.
		 */
		assert_int_equal(wc.sl, 0xA);
		assert_memory_equal(b.buf + 36,
				    &b.dev->gids[0].addr.in.sin_addr, 4);
	}
	fe_side_close(&a);
	fe_side_close(&b);
}

/* ------------------------------------------------------------------ */
/* Hostile input: mutated packets with a valid ICRC never crash the     */
/* engine nor touch memory outside the MR.                              */
/* ------------------------------------------------------------------ */

#define T_CAP 256

static struct {
	int to;
	uint32_t len;
	uint8_t data[2048];
} cap[T_CAP];
static unsigned int ncap;

static void tap(int to_dev, const uint8_t *data, uint32_t len)
{
	if (ncap < T_CAP && len <= sizeof(cap[0].data)) {
		cap[ncap].to = to_dev;
		cap[ncap].len = len;
		memcpy(cap[ncap].data, data, len);
		ncap++;
	}
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

static void test_mutated_packets(void **state)
{
	struct t_pair *p = *state;
	uint8_t *arena = calloc(1, 3 * 65536), pkt[2048];
	uint8_t *win = arena + 65536;	/* the MR, canaries around it */
	struct ur_mr *mr;
	struct ur_ip_flow flow;
	struct ibv_wc wc;
	unsigned int i, k;

	memset(arena, 0xa5, 3 * 65536);
	mr = fe_reg_mr(p->b.dev, &p->b.pd, win, 65536,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			       IBV_ACCESS_REMOTE_READ |
			       IBV_ACCESS_REMOTE_ATOMIC);
	fe_set_tap(tap);
	ncap = 0;
	fill(p->a.buf, 65536, 5);
	for (i = 0; i < 4; i++)
		fe_rq_post(p->b.qp, i, win + i * 4096, 4096, mr->ibmr.lkey);
	post(&p->a, IBV_WR_SEND, 1, 0, 3000, 0, 0);
	post(&p->a, IBV_WR_SEND_WITH_IMM, 2, 0, 100, 0, 0);
	post(&p->a, IBV_WR_RDMA_WRITE, 3, 0, 2500, (uintptr_t)win + 60000,
	     mr->ibmr.rkey);
	post(&p->a, IBV_WR_RDMA_WRITE_WITH_IMM, 4, 0, 10,
	     (uintptr_t)win + 65526, mr->ibmr.rkey);
	post(&p->a, IBV_WR_RDMA_READ, 5, 8192, 3000, (uintptr_t)win + 62000,
	     mr->ibmr.rkey);
	for (i = 1; i <= 5; i++)
		expect(&p->a.scq, i, IBV_WC_SUCCESS);
	fe_set_tap(NULL);
	assert_true(ncap > 8);
	for (i = 0; i < 20000; i++) {
		unsigned int c = rnd() % ncap, nmut = 1 + rnd() % 4;
		uint32_t len = cap[c].len;
		union ur_sockaddr src = fe_dev(!cap[c].to)->gids[0].addr;
		union ur_sockaddr dst = fe_dev(cap[c].to)->gids[0].addr;

		memcpy(pkt, cap[c].data, len);
		for (k = 0; k < nmut; k++) {
			/* headers mostly: that is where the decisions are */
			uint32_t at = rnd() % (len < 48 ? len : 48);

			pkt[at] ^= (uint8_t)(1u << (rnd() % 8));
			if (rnd() % 4 == 0)
				pkt[rnd() % len] = (uint8_t)rnd();
		}
		if (rnd() % 8 == 0)
			len = 12 + rnd() % len;
		fe_set_port(&src);
		fe_set_port(&dst);
		ur_ip_flow_from_sockaddr(&flow, &src, &dst);
		if (len >= UR_BTH_BYTES + UR_ICRC_BYTES)
			ur_icrc_store(pkt + len - 4,
				      ur_icrc_compute(&flow, pkt, len));
		fe_inject(cap[c].to, pkt, len);
		if (i % 64 == 0) {
			ur_engine_poll(p->a.dev);
			ur_engine_poll(p->b.dev);
			while (fe_cq_poll(&p->a.scq, &wc, 0) == 1)
				;
			while (fe_cq_poll(&p->b.rcq, &wc, 0) == 1)
				;
			if (p->b.qp->state != IBV_QPS_RTR &&
			    p->b.qp->state != IBV_QPS_RTS)
				fe_connect(p->a.qp, p->b.qp, 0xfffff8, 0x100,
					   8, 7, 7);
		}
	}
	fe_cq_poll(&p->b.rcq, &wc, 50);
	for (i = 0; i < 65536; i++) {
		assert_int_equal(arena[i], 0xa5);
		assert_int_equal(arena[2 * 65536 + i], 0xa5);
	}
	fe_dereg_mr(p->b.dev, mr);
	free(arena);
}

/* A valid WRITE replayed from a third address is dropped as wrong_peer
 * and writes nothing; from the real peer the same bytes are a duplicate. */
static void test_wrong_peer(void **state)
{
	struct t_pair *p = *state;
	union ur_sockaddr evil = p->a.dev->gids[0].addr;
	struct ur_ip_flow flow;
	uint8_t pkt[2048];
	uint64_t before;
	uint32_t len;

	fe_set_tap(tap);
	ncap = 0;
	fill(p->a.buf, 100, 3);
	post(&p->a, IBV_WR_RDMA_WRITE, 1, 0, 100, (uintptr_t)p->b.buf + 500,
	     p->b.mr->ibmr.rkey);
	expect(&p->a.scq, 1, IBV_WC_SUCCESS);
	fe_set_tap(NULL);
	assert_true(ncap >= 1);
	assert_int_equal(cap[0].to, 1);
	len = cap[0].len;
	memcpy(pkt, cap[0].data, len);
	memset(p->b.buf + 500, 0, 100);
	/* another host: same packet, ICRC recomputed for its address */
	if (evil.sa.sa_family == AF_INET)
		evil.in.sin_addr.s_addr ^= htonl(0x00ff0000);
	else
		evil.in6.sin6_addr.s6_addr[15] ^= 0x80;
	{
		union ur_sockaddr dst = p->b.dev->gids[0].addr;

		fe_set_port(&evil);
		fe_set_port(&dst);
		ur_ip_flow_from_sockaddr(&flow, &evil, &dst);
	}
	ur_icrc_store(pkt + len - 4, ur_icrc_compute(&flow, pkt, len));
	before = atomic_load(&p->b.dev->nic->cnt.drop[UR_DROP_WRONG_PEER]);
	fe_inject_from(1, &evil, pkt, len);
	fe_cq_poll(&p->b.rcq, (struct ibv_wc[1]){}, 20);
	assert_int_equal(atomic_load(
		&p->b.dev->nic->cnt.drop[UR_DROP_WRONG_PEER]), before + 1);
	assert_int_equal(p->b.buf[500], 0);
	assert_int_equal(p->b.qp->state, IBV_QPS_RTS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ops, setup, teardown),
		cmocka_unit_test_setup_teardown(test_lost_read_response, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_lossy_stream, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bad_rkey, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_lkey, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rnr, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retry_exceeded, setup,
						teardown),
		cmocka_unit_test(test_ud),
		cmocka_unit_test_setup_teardown(test_mutated_packets, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_wrong_peer, setup, teardown),
	};
	int rc;

	fe_init();
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	fe_fini();
	return rc;
}
