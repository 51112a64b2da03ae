/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Same-host RDMA WRITE and READ by one copy (engine/direct.c), between two
 * devices of one process (their rings are on loopback, so their RC QPs
 * copy with process_vm_writev/readv into this very process): every byte,
 * the counters that show which path carried it, the ordering rule, the
 * responder's checks (an MR of another PD) and a deregistration racing
 * copies into the MR. Memory the target unmapped is test_memfault.c's
 * (two processes, so that cmocka's signal handlers stay out of the way):
 * its WRITEs and READs take this path first. With UR_TEST_NO_XMEM=1 the test first
 * installs a seccomp filter that refuses process_vm_readv/writev with
 * EPERM, as a container's profile may: then every operation must still
 * complete, by packets, with the refusal counted.
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
#include <sys/mman.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "te_util.h"
#include "../skip.h"

#define T_TMO 3000
#define RACE_ROUNDS 30
#define RACE_LEN (1u << 20)

static bool refused;	/* UR_TEST_NO_XMEM: copies are refused */

/* ------------------------------------------------------------------ */

/*
 * Every pair of this file: copies of it run at once (ctest -j, three at
 * load 10 gave RETRY_EXC in 5 of 102 runs with the default 16.8 ms
 * timeout) starve each other's responders for longer than 8 timeouts;
 * the statuses checked here are success and access errors, never that.
 */
static const struct te_conn_opts loaded = {
	.timeout = TE_TIMEOUT_LOADED, .retry_cnt = 7, .rnr_retry = 7,
	.psn = { 0x123456, 0xfffff0 }
};

static int setup(void **state)
{
	struct te_pair *p = calloc(1, sizeof(*p));

	if (!p || te_pair_open(p, IBV_QPT_RC) || te_pair_connect(p, &loaded))
		return -1;
	*state = p;
	return 0;
}

static void expect_wc(struct ibv_cq *cq, uint64_t wr_id,
		      enum ibv_wc_status st)
{
	struct ibv_wc wc;

	assert_int_equal(te_poll(cq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.status, st);
}

/* WRITE then READ back, every byte; which path carried them. */
static void test_write_read_bytes(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	uint64_t w0 = te_counter(a, "direct_writes");
	uint64_t r0 = te_counter(a, "direct_reads");
	uint32_t half = TE_BUF / 2, i;

	for (i = 0; i < half; i++)
		a->buf[i] = (uint8_t)(i * 7 + 3);
	memset(b->buf, 0, TE_BUF);
	assert_int_equal(te_post_send(a, IBV_WR_RDMA_WRITE, 1, 0, half,
				      (uintptr_t)b->buf, b->mr->rkey, 0), 0);
	expect_wc(a->scq, 1, IBV_WC_SUCCESS);
	assert_memory_equal(b->buf, a->buf, half);
	assert_int_equal(te_post_send(a, IBV_WR_RDMA_READ, 2, half, half,
				      (uintptr_t)b->buf, b->mr->rkey, 0), 0);
	expect_wc(a->scq, 2, IBV_WC_SUCCESS);
	assert_memory_equal(a->buf + half, a->buf, half);
	if (refused) {
		assert_true(te_counter_reaches(a, "direct_refused", 1) >= 1);
		assert_int_equal(te_counter_settled(a, "direct_writes"), w0);
		assert_int_equal(te_counter(a, "direct_reads"), r0);
	} else {
		assert_true(te_counter_reaches(a, "direct_writes", w0 + 1) >=
			    w0 + 1);
		assert_true(te_counter_reaches(a, "direct_reads", r0 + 1) >=
			    r0 + 1);
	}
}

/*
 * A WRITE posted behind a SEND the responder cannot take yet (no receive
 * posted: RNR) must not overtake it: its data may not land before the
 * SEND is received, as on a NIC, where the responder discards what
 * follows a NAKed request.
 */
static void test_write_behind_rnr_send_waits(void **state)
{
	struct te_conn_opts o = { .timeout = TE_TIMEOUT_LOADED,
				  .retry_cnt = 7, .rnr_retry = 7,
				  .min_rnr_timer = 1 };
	struct te_pair p;
	struct te_side *a, *b;
	struct ibv_sge s1, s2;
	struct ibv_send_wr wr[2], *bad;

	(void)state;
	assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
	assert_int_equal(te_pair_connect(&p, &o), 0);
	a = &p.s[0];
	b = &p.s[1];
	memset(a->buf, 0x5a, 8192);
	s1 = (struct ibv_sge){ (uintptr_t)a->buf, 64, a->mr->lkey };
	s2 = (struct ibv_sge){ (uintptr_t)a->buf + 4096, 4096, a->mr->lkey };
	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 1;
	wr[0].opcode = IBV_WR_SEND;
	wr[0].sg_list = &s1;
	wr[0].num_sge = 1;
	wr[0].send_flags = IBV_SEND_SIGNALED;
	wr[0].next = &wr[1];
	wr[1].wr_id = 2;
	wr[1].opcode = IBV_WR_RDMA_WRITE;
	wr[1].sg_list = &s2;
	wr[1].num_sge = 1;
	wr[1].send_flags = IBV_SEND_SIGNALED;
	wr[1].wr.rdma.remote_addr = (uintptr_t)b->buf + 8192;
	wr[1].wr.rdma.rkey = b->mr->rkey;
	assert_int_equal(ibv_post_send(a->qp, wr, &bad), 0);
	/* the SEND is NAKed (RNR) and retried meanwhile */
	usleep(30000);
	assert_int_equal(te_nonzero_bytes(b->buf + 8192, 4096), 0);
	assert_int_equal(te_post_recv(b, 10, 0, 64), 0);
	expect_wc(a->scq, 1, IBV_WC_SUCCESS);
	expect_wc(a->scq, 2, IBV_WC_SUCCESS);
	expect_wc(b->rcq, 10, IBV_WC_SUCCESS);
	assert_memory_equal(b->buf + 8192, a->buf + 4096, 4096);
	te_pair_close(&p);
}

/* A WRITE with immediate at b's buf + roff of a's [off, off+len). */
static void imm_wr(struct ibv_send_wr *wr, struct ibv_sge *sge,
		   struct te_side *a, struct te_side *b, uint64_t wr_id,
		   uint32_t off, uint32_t len, uint32_t roff, uint32_t imm)
{
	*sge = (struct ibv_sge){ (uintptr_t)a->buf + off, len, a->mr->lkey };
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = wr_id;
	wr->opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr->sg_list = sge;
	wr->num_sge = 1;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->imm_data = htonl(imm);
	wr->wr.rdma.remote_addr = (uintptr_t)b->buf + roff;
	wr->wr.rdma.rkey = b->mr->rkey;
}

static void expect_imm(struct te_side *b, uint64_t wr_id, uint32_t len,
		       uint32_t imm)
{
	struct ibv_wc wc;

	assert_int_equal(te_poll(b->rcq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.byte_len, len);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(ntohl(wc.imm_data), imm);
}

/*
 * WRITE with immediate: the payload copied, the immediate and the
 * receive's completion by one packet without payload, byte_len the
 * WRITE's length as on the wire. A WRITE posted in front of it joins its
 * copy; one of several MTUs is still one packet.
 */
static void test_write_imm_bytes(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	uint64_t i0 = te_counter(a, "direct_write_imms");
	uint64_t w0 = te_counter(a, "direct_writes");
	struct ibv_send_wr wr[2], *bad;
	struct ibv_sge sge[2];
	uint32_t i;

	for (i = 0; i < 32768; i++)
		a->buf[i] = (uint8_t)(i * 13 + 1);
	memset(b->buf, 0, TE_BUF);
	assert_int_equal(te_post_recv(b, 20, 60000, 16), 0);
	assert_int_equal(te_post_recv(b, 21, 60000, 16), 0);
	imm_wr(&wr[1], &sge[1], a, b, 2, 4096, 20000, 8192, 0x12345678);
	wr[0] = wr[1];
	sge[0] = (struct ibv_sge){ (uintptr_t)a->buf, 4096, a->mr->lkey };
	wr[0].wr_id = 1;
	wr[0].opcode = IBV_WR_RDMA_WRITE;
	wr[0].sg_list = &sge[0];
	wr[0].wr.rdma.remote_addr = (uintptr_t)b->buf;
	wr[0].next = &wr[1];
	assert_int_equal(ibv_post_send(a->qp, wr, &bad), 0);
	expect_wc(a->scq, 1, IBV_WC_SUCCESS);
	expect_wc(a->scq, 2, IBV_WC_SUCCESS);
	expect_imm(b, 20, 20000, 0x12345678);
	assert_memory_equal(b->buf, a->buf, 4096);
	assert_memory_equal(b->buf + 8192, a->buf + 4096, 20000);
	/* nothing beyond the range */
	for (i = 8192 + 20000; i < 60000; i++)
		assert_int_equal(b->buf[i], 0);
	imm_wr(&wr[0], &sge[0], a, b, 3, 30000, 64, 40000, 7);
	assert_int_equal(ibv_post_send(a->qp, wr, &bad), 0);
	expect_wc(a->scq, 3, IBV_WC_SUCCESS);
	expect_imm(b, 21, 64, 7);
	assert_memory_equal(b->buf + 40000, a->buf + 30000, 64);
	if (refused) {
		assert_int_equal(te_counter_settled(a, "direct_write_imms"), i0);
	} else {
		assert_true(te_counter_reaches(a, "direct_write_imms", i0 + 2) >=
			    i0 + 2);
		assert_true(te_counter_reaches(a, "direct_writes", w0 + 3) >=
			    w0 + 3);
	}
}

/*
 * A WRITE with immediate the responder cannot complete yet (no receive:
 * RNR) holds what follows as on the wire: the WRITE behind it lands only
 * after the receive was posted and the immediate taken.
 */
static void test_write_behind_rnr_write_imm_waits(void **state)
{
	struct te_conn_opts o = { .timeout = TE_TIMEOUT_LOADED,
				  .retry_cnt = 7, .rnr_retry = 7,
				  .min_rnr_timer = 1 };
	struct te_pair p;
	struct te_side *a, *b;
	struct ibv_sge s[2];
	struct ibv_send_wr wr[2], *bad;

	(void)state;
	assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
	assert_int_equal(te_pair_connect(&p, &o), 0);
	a = &p.s[0];
	b = &p.s[1];
	memset(a->buf, 0x5a, 16384);
	memset(b->buf, 0, TE_BUF);
	imm_wr(&wr[0], &s[0], a, b, 1, 0, 4096, 0, 99);
	wr[1] = wr[0];
	s[1] = (struct ibv_sge){ (uintptr_t)a->buf + 8192, 4096, a->mr->lkey };
	wr[1].wr_id = 2;
	wr[1].opcode = IBV_WR_RDMA_WRITE;
	wr[1].sg_list = &s[1];
	wr[1].wr.rdma.remote_addr = (uintptr_t)b->buf + 8192;
	wr[0].next = &wr[1];
	assert_int_equal(ibv_post_send(a->qp, wr, &bad), 0);
	usleep(30000);
	assert_int_equal(te_nonzero_bytes(b->buf + 8192, 4096), 0);
	assert_int_equal(te_post_recv(b, 10, 60000, 16), 0);
	expect_wc(a->scq, 1, IBV_WC_SUCCESS);
	expect_wc(a->scq, 2, IBV_WC_SUCCESS);
	expect_imm(b, 10, 4096, 99);
	assert_memory_equal(b->buf, a->buf, 4096);
	assert_memory_equal(b->buf + 8192, a->buf + 8192, 4096);
	te_pair_close(&p);
}

/*
 * A post list of WRITEs naming one local MR: its key is looked up once
 * for the batch, but every WQE's range is still checked. The second
 * reaches past the MR's end: a local protection error, nothing of it
 * written, the first written whole, the third flushed.
 */
static void test_batch_local_range_checked(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	struct ibv_send_wr wr[3], *bad;
	struct ibv_sge sge[3];
	struct ibv_wc wc;
	unsigned int i;

	for (i = 0; i < 3; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)a->buf + 1024 * i, 512,
					   a->mr->lkey };
		memset(&wr[i], 0, sizeof(wr[i]));
		wr[i].wr_id = 30 + i;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].sg_list = &sge[i];
		wr[i].num_sge = 1;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.rdma.remote_addr = (uintptr_t)b->buf + 1024 * i;
		wr[i].wr.rdma.rkey = b->mr->rkey;
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	sge[1].addr = (uintptr_t)a->buf + TE_BUF - 256;	/* 256 B past */
	memset(a->buf, 0x77, TE_BUF);
	memset(b->buf, 0, TE_BUF);
	assert_int_equal(ibv_post_send(a->qp, wr, &bad), 0);
	expect_wc(a->scq, 30, IBV_WC_SUCCESS);
	assert_int_equal(te_poll(a->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, 31);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	expect_wc(a->scq, 32, IBV_WC_WR_FLUSH_ERR);
	assert_memory_equal(b->buf, a->buf, 512);
	assert_int_equal(te_nonzero_bytes(b->buf + 1024, TE_BUF - 1024), 0);
}

/* An MR of another PD than the target QP's: the responder's answer,
 * whichever path asked. */
static void test_other_pd_remote_access_error(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	struct ibv_pd *pd2 = ibv_alloc_pd(b->ctx);
	uint8_t *buf = calloc(1, 4096);
	struct ibv_mr *mr2;

	assert_non_null(pd2);
	mr2 = ibv_reg_mr(pd2, buf, 4096,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(mr2);
	assert_int_equal(te_post_send(a, IBV_WR_RDMA_WRITE, 3, 0, 64,
				      (uintptr_t)buf, mr2->rkey, 0), 0);
	expect_wc(a->scq, 3, IBV_WC_REM_ACCESS_ERR);
	for (unsigned int i = 0; i < 4096; i++)
		assert_int_equal(buf[i], 0);
	assert_int_equal(ibv_dereg_mr(mr2), 0);
	assert_int_equal(ibv_dealloc_pd(pd2), 0);
	free(buf);
}

/* ------------------------------------------------------------------ */
/* A deregistration racing copies                                      */
/* ------------------------------------------------------------------ */

struct racer {
	struct te_side *a;
	uint8_t *src;
	struct ibv_mr *src_mr;
	uint64_t raddr;
	uint32_t rkey;
	atomic_uint done;		/* WRITEs completed successfully */
	atomic_bool stop;
	_Atomic enum ibv_wc_status last;
};

static void *race_writer(void *arg)
{
	struct racer *r = arg;
	struct ibv_wc wc;

	r->last = IBV_WC_SUCCESS;
	struct ibv_sge sge = { (uintptr_t)r->src, RACE_LEN, r->src_mr->lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 7;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = r->raddr;
	wr.wr.rdma.rkey = r->rkey;
	while (!atomic_load(&r->stop)) {
		if (ibv_post_send(r->a->qp, &wr, &bad) ||
		    te_poll(r->a->scq, &wc, T_TMO) != 1) {
			r->last = IBV_WC_GENERAL_ERR;
			break;
		}
		r->last = wc.status;
		if (wc.status != IBV_WC_SUCCESS)
			break;
		atomic_fetch_add(&r->done, 1);
	}
	return NULL;
}

/*
 * Once ibv_dereg_mr returns, nothing may land in the memory any more: the
 * test zeroes it and watches. The WRITE in flight at the deregistration
 * completes whole, or fails with an access error; never half afterwards.
 */
static void test_dereg_races_writes(void **state)
{
	struct te_side *a, *b;
	unsigned int round, nz;

	(void)state;
	for (round = 0; round < RACE_ROUNDS; round++) {
		struct te_pair p;
		struct racer r;
		pthread_t th;
		uint8_t *m;
		struct ibv_mr *mr2;
		unsigned int want = 2 + (unsigned int)(rand() % 8);

		assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
		assert_int_equal(te_pair_connect(&p, &loaded), 0);
		a = &p.s[0];
		b = &p.s[1];
		memset(&r, 0, sizeof(r));
		r.src = aligned_alloc(4096, RACE_LEN);
		assert_non_null(r.src);
		memset(r.src, 0xab, RACE_LEN);
		r.src_mr = ibv_reg_mr(a->pd, r.src, RACE_LEN,
				      IBV_ACCESS_LOCAL_WRITE);
		assert_non_null(r.src_mr);
		m = aligned_alloc(4096, RACE_LEN);
		assert_non_null(m);
		memset(m, 0, RACE_LEN);
		mr2 = ibv_reg_mr(b->pd, m, RACE_LEN,
				 IBV_ACCESS_LOCAL_WRITE |
					 IBV_ACCESS_REMOTE_WRITE);
		assert_non_null(mr2);
		r.a = a;
		r.raddr = (uintptr_t)m;
		r.rkey = mr2->rkey;
		assert_int_equal(pthread_create(&th, NULL, race_writer, &r),
				 0);
		while (atomic_load(&r.done) < want && r.last == IBV_WC_SUCCESS)
			sched_yield();
		assert_int_equal(ibv_dereg_mr(mr2), 0);
		/* from here on the memory is the application's again */
		memset(m, 0, RACE_LEN);
		usleep(2000);
		nz = te_nonzero_bytes(m, RACE_LEN);
		atomic_store(&r.stop, true);
		pthread_join(th, NULL);
		assert_int_equal(nz, 0);
		if (r.last != IBV_WC_SUCCESS && r.last != IBV_WC_REM_ACCESS_ERR)
			fail_msg("round %u: the racing WRITE ended with %s",
				 round, ibv_wc_status_str(r.last));
		free(m);
		assert_int_equal(ibv_dereg_mr(r.src_mr), 0);
		free(r.src);
		te_pair_close(&p);
	}
}

/* ------------------------------------------------------------------ */

int main(void)
{
	const char *nx = getenv("UR_TEST_NO_XMEM");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_write_read_bytes, setup,
						te_pair_teardown),
		cmocka_unit_test(test_write_behind_rnr_send_waits),
		cmocka_unit_test_setup_teardown(test_write_imm_bytes, setup,
						te_pair_teardown),
		cmocka_unit_test(test_write_behind_rnr_write_imm_waits),
		cmocka_unit_test_setup_teardown(test_batch_local_range_checked,
						setup, te_pair_teardown),
		cmocka_unit_test_setup_teardown(
			test_other_pd_remote_access_error, setup,
			te_pair_teardown),
		cmocka_unit_test(test_dereg_races_writes),
	};
	int rc;

	refused = nx && !strcmp(nx, "1");
	srand((unsigned int)time(NULL));
	rc = ur_run_tests(tests);
	te_close_devices();
	return rc;
}
