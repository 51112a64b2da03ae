/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One process, one device, one PD and CQ, RC pairs connected over
 * loopback (rc_connect.h): the harness of the api tests that move data
 * (test_mem_rules.c, test_dm.c, test_post_paths.c, ...). Include once per test program; setup/teardown are the group's.
 */
#ifndef UR_TESTS_API_RC_PAIR_H
#define UR_TESTS_API_RC_PAIR_H

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <infiniband/verbs.h>

#include "rc_connect.h"

static struct ibv_device **list;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static union ibv_gid gid;

/* Completions that arrived while waiting for another wr_id. */
static struct ibv_wc stash[64];
static int nstash;

static inline uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The completion of wr_id (3 s at most); each completion is seen once. */
static inline struct ibv_wc wait_wr(uint64_t wr_id)
{
	uint64_t end = now_ms() + 3000;
	struct ibv_wc wc;

	for (int i = 0; i < nstash; i++) {
		if (stash[i].wr_id == wr_id) {
			wc = stash[i];
			stash[i] = stash[--nstash];
			return wc;
		}
	}
	while (now_ms() < end) {
		int n = ibv_poll_cq(cq, 1, &wc);

		assert_true(n >= 0);
		if (!n) {
			usleep(100);
			continue;
		}
		if (wc.wr_id == wr_id)
			return wc;
		assert_true(nstash < 64);
		stash[nstash++] = wc;
	}
	fail_msg("no completion for wr_id %llu", (unsigned long long)wr_id);
	return wc;
}

static inline struct ibv_qp *qp_new(struct ibv_srq *srq)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .srq = srq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 2, .max_recv_sge = 2 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &qa);

	assert_non_null(qp);
	return qp;
}

static inline void connect_pair(struct ibv_qp *a, struct ibv_qp *b)
{
	rc_to_rts(a, b->qp_num, &gid, &rc_conn_default);
	rc_to_rts(b, a->qp_num, &gid, &rc_conn_default);
}

/* Two new RC QPs on the shared CQ, connected to each other. */
static inline void pair_new(struct ibv_qp *qps[2])
{
	qps[0] = qp_new(NULL);
	qps[1] = qp_new(NULL);
	connect_pair(qps[0], qps[1]);
}

static inline void destroy_qps(struct ibv_qp **qps, int n)
{
	for (int i = 0; i < n; i++)
		assert_int_equal(ibv_destroy_qp(qps[i]), 0);
	nstash = 0;
}

static inline void post_one(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	wr->send_flags |= IBV_SEND_SIGNALED;
	assert_int_equal(ibv_post_send(qp, wr, &bad), 0);
}

static inline void post_rdma(struct ibv_qp *qp, uint64_t id,
			     enum ibv_wr_opcode op, struct ibv_mr *local,
			     void *laddr, uint32_t len, uint64_t raddr,
			     uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)laddr, .length = len,
			       .lkey = local->lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	};

	post_one(qp, &wr);
}

static inline void post_recv_buf(struct ibv_qp *qp, struct ibv_srq *srq,
				 uint64_t id, struct ibv_mr *mr, void *addr,
				 uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len,
			       .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 },
			   *bad;

	if (srq)
		assert_int_equal(ibv_post_srq_recv(srq, &wr, &bad), 0);
	else
		assert_int_equal(ibv_post_recv(qp, &wr, &bad), 0);
}

static inline int setup(void **state)
{
	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		return -1;
	ctx = ibv_open_device(list[0]);
	if (!ctx || ibv_query_gid(ctx, 1, 0, &gid))
		return -1;
	pd = ibv_alloc_pd(ctx);
	cq = pd ? ibv_create_cq(ctx, 256, NULL, NULL, 0) : NULL;
	return cq ? 0 : -1;
}

static inline int teardown(void **state)
{
	int rc = ibv_destroy_cq(cq) | ibv_dealloc_pd(pd) |
		 ibv_close_device(ctx);

	ibv_free_device_list(list);
	return rc;
}

#endif
