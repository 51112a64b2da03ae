/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RC through the public verbs API, two devices in one process: every
 * operation with its data and both sides' completions, multi-packet
 * messages over several SGEs, inline and zero-length, and the error paths
 * (bad rkey, RNR, dead peer, RESET recovery).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "te_util.h"

#define T_TMO 3000

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static int setup_rc(void **state)
{
	struct te_pair *p = calloc(1, sizeof(*p));

	if (!p || te_pair_open(p, IBV_QPT_RC) || te_pair_connect(p, NULL))
		return -1;
	*state = p;
	return 0;
}

static void expect_wc(struct ibv_cq *cq, uint64_t wr_id,
		      enum ibv_wc_status st, enum ibv_wc_opcode op)
{
	struct ibv_wc wc;

	assert_int_equal(te_poll(cq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, st);
	assert_int_equal(wc.wr_id, wr_id);
	if (st == IBV_WC_SUCCESS)
		assert_int_equal(wc.opcode, op);
}

/* SEND of 3000 bytes (3 packets at MTU 1024) gathered from 3 SGEs,
 * scattered into 2 SGEs. */
static void test_send_multi_sge(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	struct ibv_sge ss[3] = {
		{ (uintptr_t)a->buf, 1000, a->mr->lkey },
		{ (uintptr_t)a->buf + 4096, 1500, a->mr->lkey },
		{ (uintptr_t)a->buf + 8192, 500, a->mr->lkey },
	};
	struct ibv_sge rs[2] = {
		{ (uintptr_t)b->buf, 2000, b->mr->lkey },
		{ (uintptr_t)b->buf + 16384, 2000, b->mr->lkey },
	};
	struct ibv_send_wr swr = { .wr_id = 7, .sg_list = ss, .num_sge = 3,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *sbad;
	struct ibv_recv_wr rwr = { .wr_id = 9, .sg_list = rs, .num_sge = 2 },
			   *rbad;
	struct ibv_wc wc;

	fill(a->buf, TE_BUF, 1);
	memset(b->buf, 0, TE_BUF);
	assert_int_equal(ibv_post_recv(b->qp, &rwr, &rbad), 0);
	assert_int_equal(ibv_post_send(a->qp, &swr, &sbad), 0);
	expect_wc(a->scq, 7, IBV_WC_SUCCESS, IBV_WC_SEND);
	assert_int_equal(te_poll(b->rcq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, 3000);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.qp_num, b->qp->qp_num);
	assert_false(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_memory_equal(b->buf, a->buf, 1000);
	assert_memory_equal(b->buf + 1000, a->buf + 4096, 1000);
	assert_memory_equal(b->buf + 16384, a->buf + 4096 + 1000, 500);
	assert_memory_equal(b->buf + 16384 + 500, a->buf + 8192, 500);
}

static void test_send_imm_inline_zero(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge = { (uintptr_t)a->buf + 100, 200, a->mr->lkey };
	struct ibv_wc wc;

	fill(a->buf, 4096, 2);
	assert_int_equal(te_post_recv(b, 1, 0, 1024), 0);
	assert_int_equal(te_post_recv(b, 2, 1024, 1024), 0);
	assert_int_equal(te_post_recv(b, 3, 2048, 1024), 0);
	/* SEND_WITH_IMM */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 11;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htobe32(0xdeadbeef);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_SOLICITED;
	assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
	/* inline: the buffer may change right after posting */
	wr.wr_id = 12;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	sge.addr = (uintptr_t)a->buf + 300;
	sge.length = 64;
	assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
	memset(a->buf + 300, 0xee, 64);
	/* zero length */
	wr.wr_id = 13;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.num_sge = 0;
	assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);

	expect_wc(a->scq, 11, IBV_WC_SUCCESS, IBV_WC_SEND);
	expect_wc(a->scq, 12, IBV_WC_SUCCESS, IBV_WC_SEND);
	expect_wc(a->scq, 13, IBV_WC_SUCCESS, IBV_WC_SEND);

	assert_int_equal(te_poll(b->rcq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.byte_len, 200);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0xdeadbeef);
	assert_memory_equal(b->buf, a->buf + 100, 200);
	assert_int_equal(te_poll(b->rcq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, 2);
	assert_int_equal(wc.byte_len, 64);
	fill(a->buf, 4096, 2);	/* what it was when posted */
	assert_memory_equal(b->buf + 1024, a->buf + 300, 64);
	assert_int_equal(te_poll(b->rcq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, 3);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 0);
}

static void test_write_and_imm(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge = { (uintptr_t)a->buf, 5000, a->mr->lkey };
	struct ibv_wc wc;

	fill(a->buf, TE_BUF, 3);
	memset(b->buf, 0, TE_BUF);
	/* plain WRITE: the target never calls the library */
	assert_int_equal(te_post_send(a, IBV_WR_RDMA_WRITE, 21, 0, 5000,
				      (uintptr_t)b->buf + 8, b->mr->rkey, 0),
			 0);
	expect_wc(a->scq, 21, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	assert_memory_equal(b->buf + 8, a->buf, 5000);
	assert_int_equal(b->buf[7], 0);
	assert_int_equal(b->buf[5008], 0);

	/* WRITE_WITH_IMM consumes a receive WQE */
	assert_int_equal(te_post_recv(b, 22, 0, 16), 0);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 23;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htobe32(42);
	sge.addr = (uintptr_t)a->buf + 1;
	sge.length = 2049;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = (uintptr_t)b->buf + 30000;
	wr.wr.rdma.rkey = b->mr->rkey;
	assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
	expect_wc(a->scq, 23, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	assert_int_equal(te_poll(b->rcq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.wr_id, 22);
	assert_int_equal(be32toh(wc.imm_data), 42);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_memory_equal(b->buf + 30000, a->buf + 1, 2049);
}

static void test_read(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	struct ibv_wc wc;

	fill(b->buf, TE_BUF, 4);
	memset(a->buf, 0, TE_BUF);
	assert_int_equal(te_post_send(a, IBV_WR_RDMA_READ, 31, 100, 10000,
				      (uintptr_t)b->buf + 3, b->mr->rkey, 0),
			 0);
	assert_int_equal(te_post_send(a, IBV_WR_RDMA_READ, 32, 20000, 1,
				      (uintptr_t)b->buf + 50000, b->mr->rkey,
				      0),
			 0);
	assert_int_equal(te_poll(a->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_READ);
	assert_int_equal(wc.wr_id, 31);
	assert_int_equal(wc.byte_len, 10000);
	expect_wc(a->scq, 32, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	assert_memory_equal(a->buf + 100, b->buf + 3, 10000);
	assert_int_equal(a->buf[20000], b->buf[50000]);
	assert_int_equal(a->buf[99], 0);
	assert_int_equal(a->buf[10100], 0);
}

static void test_atomics(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	struct ibv_sge sge = { (uintptr_t)a->buf, 8, a->mr->lkey };
	struct ibv_send_wr wr, *bad;
	uint64_t *target = (uint64_t *)(b->buf + 64), v;

	*target = 100;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 41;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = b->mr->rkey;
	wr.wr.atomic.compare_add = 5;
	assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
	expect_wc(a->scq, 41, IBV_WC_SUCCESS, IBV_WC_FETCH_ADD);
	memcpy(&v, a->buf, 8);
	assert_int_equal(v, 100);
	assert_int_equal(*target, 105);

	/* CAS that succeeds, then one that fails */
	wr.wr_id = 42;
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 105;
	wr.wr.atomic.swap = 0x1122334455667788ull;
	sge.addr = (uintptr_t)a->buf + 8;
	assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
	wr.wr_id = 43;
	wr.wr.atomic.compare_add = 1;
	wr.wr.atomic.swap = 7;
	sge.addr = (uintptr_t)a->buf + 16;
	assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
	expect_wc(a->scq, 42, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP);
	expect_wc(a->scq, 43, IBV_WC_SUCCESS, IBV_WC_COMP_SWAP);
	memcpy(&v, a->buf + 8, 8);
	assert_int_equal(v, 105);
	memcpy(&v, a->buf + 16, 8);
	assert_int_equal(v, 0x1122334455667788ull);
	assert_int_equal(*target, 0x1122334455667788ull);
}

/* Next async event of ctx within ms; its type, or -1. */
static int next_async(struct ibv_context *ctx, int ms, struct ibv_qp **qp)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int type;

	if (poll(&pfd, 1, ms) != 1 || ibv_get_async_event(ctx, &ev))
		return -1;
	type = ev.event_type;
	if (qp)
		*qp = ev.element.qp;
	ibv_ack_async_event(&ev);
	return type;
}

/* Bad rkey: REM_ACCESS_ERR, the following WR is flushed, the responder's
 * QP fails with IBV_EVENT_QP_ACCESS_ERR, both recover through RESET. */
static void test_bad_rkey_flush_reset(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	struct ibv_wc wc;
	struct te_conn_opts o = { .retry_cnt = 7, .rnr_retry = 7,
				  .psn = { 77, 0xfffffe } };

	struct ibv_qp *evqp = NULL;
	assert_int_equal(te_post_send(a, IBV_WR_RDMA_WRITE, 51, 0, 64,
				      (uintptr_t)b->buf, b->mr->rkey ^ 0x5a5a,
				      0),
			 0);
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 52, 0, 64, 0, 0, 0), 0);
	assert_int_equal(te_poll(a->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, 51);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(te_poll(a->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, 52);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	/* posted in ERR: flushed too */
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 53, 0, 64, 0, 0, 0), 0);
	assert_int_equal(te_poll(a->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, 53);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	/* (events of earlier tests' QPs were purged when they were
	 * destroyed, so this is the first one queued) */
	assert_int_equal(next_async(b->ctx, 1000, &evqp),
			 IBV_EVENT_QP_ACCESS_ERR);
	assert_ptr_equal(evqp, b->qp);

	assert_int_equal(te_qp_to_reset(a->qp), 0);
	assert_int_equal(te_qp_to_reset(b->qp), 0);
	while (ibv_poll_cq(b->rcq, 1, &wc) > 0)
		;
	assert_int_equal(te_pair_connect(p, &o), 0);
	fill(a->buf, 256, 5);
	assert_int_equal(te_post_recv(b, 54, 0, 256), 0);
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 55, 0, 256, 0, 0, 0), 0);
	expect_wc(a->scq, 55, IBV_WC_SUCCESS, IBV_WC_SEND);
	expect_wc(b->rcq, 54, IBV_WC_SUCCESS, IBV_WC_RECV);
	assert_memory_equal(b->buf, a->buf, 256);
}

static void test_rnr_retry_exceeded(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0];
	struct te_conn_opts o = { .retry_cnt = 7, .rnr_retry = 0,
				  .min_rnr_timer = 1, .psn = { 5, 6 } };
	struct ibv_wc wc;

	assert_int_equal(te_qp_to_reset(p->s[0].qp), 0);
	assert_int_equal(te_qp_to_reset(p->s[1].qp), 0);
	assert_int_equal(te_pair_connect(p, &o), 0);
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 61, 0, 64, 0, 0, 0), 0);
	assert_int_equal(te_poll(a->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, 61);
	assert_int_equal(wc.status, IBV_WC_RNR_RETRY_EXC_ERR);
}

/* RNR with retries: the receive is posted late and the SEND arrives. */
static void test_rnr_then_recv(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	struct te_conn_opts o = { .retry_cnt = 7, .rnr_retry = 7,
				  .min_rnr_timer = 4, .psn = { 5, 6 } };
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	assert_int_equal(te_qp_to_reset(a->qp), 0);
	assert_int_equal(te_qp_to_reset(b->qp), 0);
	assert_int_equal(te_pair_connect(p, &o), 0);
	fill(a->buf, 128, 9);
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 71, 0, 128, 0, 0, 0), 0);
	nanosleep(&ts, NULL);
	assert_int_equal(te_post_recv(b, 72, 0, 128), 0);
	expect_wc(a->scq, 71, IBV_WC_SUCCESS, IBV_WC_SEND);
	expect_wc(b->rcq, 72, IBV_WC_SUCCESS, IBV_WC_RECV);
	assert_memory_equal(b->buf, a->buf, 128);
}

static void test_dead_peer_retry_exceeded(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0];
	struct te_conn_opts o = { .timeout = 8, .retry_cnt = 2,
				  .rnr_retry = 7, .psn = { 1, 2 } };
	struct ibv_wc wc;

	assert_int_equal(te_qp_to_reset(a->qp), 0);
	assert_int_equal(te_qp_to_reset(p->s[1].qp), 0);
	assert_int_equal(te_pair_connect(p, &o), 0);
	assert_int_equal(ibv_destroy_qp(p->s[1].qp), 0);
	p->s[1].qp = NULL;
	assert_int_equal(te_post_send(a, IBV_WR_RDMA_WRITE, 81, 0, 64,
				      (uintptr_t)p->s[1].buf,
				      p->s[1].mr->rkey, 0),
			 0);
	assert_int_equal(te_poll(a->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, 81);
	assert_int_equal(wc.status, IBV_WC_RETRY_EXC_ERR);
}

/* Many messages in a row, window and ACK coalescing at work. */
static void test_stream(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	struct ibv_wc wc;
	int i, n = 200, got = 0, sent = 0;

	fill(a->buf, TE_BUF, 11);
	memset(b->buf, 0, TE_BUF);
	for (i = 0; i < n; i++)
		assert_int_equal(te_post_recv(b, 1000 + i, (i % 16) * 4096,
					      4096), 0);
	for (i = 0; i < n; i++) {
		assert_int_equal(te_post_send(a, IBV_WR_SEND, 2000 + i,
					      (i % 16) * 4096, 4000 - i, 0, 0,
					      0), 0);
		while (ibv_poll_cq(a->scq, 1, &wc) > 0) {
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, 2000 + sent);
			sent++;
		}
		if (i - sent > 200)
			break;
	}
	while (sent < n) {
		assert_int_equal(te_poll(a->scq, &wc, T_TMO), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 2000 + sent);
		sent++;
	}
	while (got < n) {
		assert_int_equal(te_poll(b->rcq, &wc, T_TMO), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 1000 + got);
		assert_int_equal(wc.byte_len, 4000 - got);
		got++;
	}
	assert_memory_equal(b->buf + ((n - 1) % 16) * 4096,
			    a->buf + ((n - 1) % 16) * 4096, 4000 - (n - 1));
}

/* Type 2 window bound by a WR, written through, invalidated by the peer's
 * SEND_WITH_INV, then refused; type 1 window bound with ibv_bind_mw. */
static void test_mw_send_inv(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	uint8_t *mem = calloc(1, 8192);
	struct ibv_mr *mr = ibv_reg_mr(b->pd, mem, 8192,
				       IBV_ACCESS_LOCAL_WRITE |
					       IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = ibv_alloc_mw(b->pd, IBV_MW_TYPE_2);
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	uint32_t rkey;

	assert_non_null(mr);
	assert_non_null(mw);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 90;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)mem + 4096;
	wr.bind_mw.bind_info.length = 1024;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	assert_int_equal(ibv_post_send(b->qp, &wr, &bad), 0);
	assert_int_equal(te_poll(b->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_BIND_MW);

	fill(a->buf, 1024, 7);
	assert_int_equal(te_post_send(a, IBV_WR_RDMA_WRITE, 91, 0, 1024,
				      (uintptr_t)mem + 4096, rkey, 0), 0);
	expect_wc(a->scq, 91, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE);
	assert_memory_equal(mem + 4096, a->buf, 1024);

	assert_int_equal(te_post_recv(b, 92, 0, 64), 0);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 93;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = rkey;
	assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
	expect_wc(a->scq, 93, IBV_WC_SUCCESS, IBV_WC_SEND);
	assert_int_equal(te_poll(b->rcq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 92);
	assert_true(wc.wc_flags & IBV_WC_WITH_INV);
	assert_int_equal(wc.invalidated_rkey, rkey);

	/* the window is gone: remote access error */
	assert_int_equal(te_post_send(a, IBV_WR_RDMA_WRITE, 94, 0, 16,
				      (uintptr_t)mem + 4096, rkey, 0), 0);
	expect_wc(a->scq, 94, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_WRITE);
	ibv_dealloc_mw(mw);
	ibv_dereg_mr(mr);
	free(mem);
}

static void test_mw_type1(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	uint8_t *mem = calloc(1, 8192);
	struct ibv_mr *mr = ibv_reg_mr(b->pd, mem, 8192,
				       IBV_ACCESS_LOCAL_WRITE |
					       IBV_ACCESS_REMOTE_READ |
					       IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = ibv_alloc_mw(b->pd, IBV_MW_TYPE_1);
	struct ibv_mw_bind bind;
	struct ibv_wc wc;

	assert_non_null(mr);
	assert_non_null(mw);
	memset(mem, 0x3c, 8192);
	memset(&bind, 0, sizeof(bind));
	bind.wr_id = 95;
	bind.send_flags = IBV_SEND_SIGNALED;
	bind.bind_info.mr = mr;
	bind.bind_info.addr = (uintptr_t)mem + 100;
	bind.bind_info.length = 200;
	bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_READ;
	assert_int_equal(ibv_bind_mw(b->qp, mw, &bind), 0);
	assert_int_equal(te_poll(b->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_BIND_MW);
	memset(a->buf, 0, 256);
	assert_int_equal(te_post_send(a, IBV_WR_RDMA_READ, 96, 0, 200,
				      (uintptr_t)mem + 100, mw->rkey, 0), 0);
	expect_wc(a->scq, 96, IBV_WC_SUCCESS, IBV_WC_RDMA_READ);
	assert_memory_equal(a->buf, mem + 100, 200);
	/* one byte past the window */
	assert_int_equal(te_post_send(a, IBV_WR_RDMA_READ, 97, 0, 200,
				      (uintptr_t)mem + 101, mw->rkey, 0), 0);
	expect_wc(a->scq, 97, IBV_WC_REM_ACCESS_ERR, IBV_WC_RDMA_READ);
	ibv_dealloc_mw(mw);
	ibv_dereg_mr(mr);
	free(mem);
}

int main(void)
{
	int rc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_send_multi_sge, setup_rc,
						te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_send_imm_inline_zero,
						setup_rc, te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_write_and_imm, setup_rc,
						te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_read, setup_rc,
						te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_atomics, setup_rc,
						te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_stream, setup_rc,
						te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_mw_send_inv, setup_rc,
						te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_mw_type1, setup_rc,
						te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_bad_rkey_flush_reset,
						setup_rc, te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_rnr_retry_exceeded,
						setup_rc, te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_rnr_then_recv, setup_rc,
						te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_dead_peer_retry_exceeded,
						setup_rc, te_pair_teardown),
	};

	rc = cmocka_run_group_tests(tests, NULL, NULL);
	te_close_devices();
	return rc;
}
