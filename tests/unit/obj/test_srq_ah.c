/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SRQ rules (sizes, post validation, full queue, resize, the limit event
 * raised once, destroy ordering) and AH rules (creation checks, AH
 * attributes from synthetic IPv4/IPv6 GRH images, IPv4 checksum check).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "to_util.h"

static struct ur_srq *mksrq(struct ur_pd *pd, uint32_t max_wr,
			    uint32_t max_sge)
{
	struct ibv_srq_attr a = { .max_wr = max_wr, .max_sge = max_sge };
	struct ur_srq *srq = NULL;

	assert_int_equal(ur_srq_create(pd, NULL, &a, &srq), 0);
	assert_true(a.max_wr >= max_wr);
	assert_true(a.max_sge >= max_sge);
	return srq;
}

static int post_n(struct ur_srq *srq, int n, uint64_t first_id)
{
	struct ibv_sge sge = { .addr = 0x1000, .length = 64, .lkey = 5 };
	struct ibv_recv_wr wr[64], *bad = NULL;
	int i;

	for (i = 0; i < n; i++) {
		wr[i].wr_id = first_id + (uint64_t)i;
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
	return ur_srq_post(srq, wr, &bad);
}

static uint64_t take(struct ur_srq *srq)
{
	union {
		struct ur_recv_wqe w;
		uint8_t b[sizeof(struct ur_recv_wqe) +
			  UR_MAX_SGE * sizeof(struct ur_sge)];
	} r;

	assert_int_equal(ur_srq_take(srq, &r.w), 0);
	assert_int_equal(r.w.num_sge, 1);
	assert_int_equal(r.w.length, 64);
	assert_int_equal(r.w.sge[0].lkey, 5);
	return r.w.wr_id;
}

/*
 * An SRQ and a CQ asked for the same depth: every WQE the SRQ grants fits
 * the CQ, as with mlx5 (SRQ: 2^k - 1 >= max_wr, the CQ's cqe the same),
 * so a transport that sizes its receive CQ by its receive queue never
 * overruns it. UCX's rc_verbs (an SRQ and a CQ of IB_RX_QUEUE_LEN each)
 * posted 4 096 WQEs into one asked for 4 095 and overran its CQ of 4 095.
 */
static void test_regress_srq_fits_cq_of_its_depth(void **state)
{
	static const uint32_t depth[] = { 1, 2, 3, 63, 64, 100, 4095, 4096,
					  UR_MAX_SRQ_WR };
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_pd *pd = ut_pd(ctx);

	(void)state;
	for (size_t i = 0; i < sizeof(depth) / sizeof(depth[0]); i++) {
		struct ibv_cq_init_attr_ex ca = { .cqe = depth[i] };
		struct ur_srq *srq = mksrq(pd, depth[i], 1);
		struct ur_cq *cq = NULL;
		uint32_t want = 1;

		while (want < depth[i] + 1)
			want <<= 1;
		assert_int_equal(ur_cq_create(ctx, &ca, &cq), 0);
		assert_int_equal(srq->rq.max_wr, want - 1);
		assert_true(srq->rq.max_wr <= (uint32_t)cq->ibcq.cqe);
		assert_int_equal(post_n(srq, 1, 1), 0);	/* usable */
		assert_int_equal(ur_cq_destroy(cq), 0);
		assert_int_equal(ur_srq_destroy(srq), 0);
	}
	assert_int_equal(ur_pd_free(pd), 0);
	ut_ctx_free(ctx);
}

static void test_srq_create_post(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_pd *pd = ut_pd(ctx);
	struct ibv_srq_attr a = { .max_wr = 0, .max_sge = 1 };
	struct ur_srq *srq = NULL;
	struct ibv_sge sge[3] = { { 0 } };
	struct ibv_recv_wr wr[2], *bad = NULL;
	union {
		struct ur_recv_wqe w;
		uint8_t b[sizeof(struct ur_recv_wqe) +
			  UR_MAX_SGE * sizeof(struct ur_sge)];
	} r;
	uint32_t cap;
	int i;

	assert_int_equal(ur_srq_create(pd, NULL, &a, &srq), -EINVAL);
	a.max_wr = UR_MAX_SRQ_WR + 1;
	assert_int_equal(ur_srq_create(pd, NULL, &a, &srq), -EINVAL);
	a.max_wr = 4;
	a.max_sge = UR_MAX_SRQ_SGE + 1;
	assert_int_equal(ur_srq_create(pd, NULL, &a, &srq), -EINVAL);
	srq = mksrq(pd, 5, 2);
	cap = srq->rq.max_wr;
	assert_int_equal(ur_pd_free(pd), -EBUSY);

	/* too many SGEs: EINVAL, bad_wr names it, the first one is posted */
	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 1;
	wr[0].sg_list = sge;
	wr[0].num_sge = 2;
	wr[0].next = &wr[1];
	wr[1].wr_id = 2;
	wr[1].sg_list = sge;
	wr[1].num_sge = 3;
	assert_int_equal(ur_srq_post(srq, wr, &bad), -EINVAL);
	assert_ptr_equal(bad, &wr[1]);
	assert_int_equal(ur_wq_count(&srq->rq), 1);
	assert_int_equal(ur_srq_take(srq, &r.w), 0);
	assert_int_equal(r.w.wr_id, 1);
	assert_int_equal(ur_srq_take(srq, &r.w), -EAGAIN);

	/* full: ENOMEM on the first that does not fit */
	assert_int_equal(post_n(srq, (int)cap, 100), 0);
	assert_int_equal(post_n(srq, 1, 999), -ENOMEM);
	for (i = 0; i < (int)cap; i++)
		assert_int_equal(take(srq), 100 + (uint64_t)i);

	atomic_store(&srq->usecnt, 1);	/* as a QP would */
	assert_int_equal(ur_srq_destroy(srq), -EBUSY);
	atomic_store(&srq->usecnt, 0);
	assert_int_equal(ur_srq_destroy(srq), 0);
	assert_int_equal(ur_pd_free(pd), 0);
	ut_ctx_free(ctx);
}

static void test_srq_limit(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_pd *pd = ut_pd(ctx);
	struct ur_srq *srq = mksrq(pd, 16, 1);
	struct ibv_srq_attr a = { 0 };
	struct ibv_async_event ev;
	int i;

	a.srq_limit = srq->rq.max_wr + 1;
	assert_int_equal(ur_srq_modify(srq, &a, IBV_SRQ_LIMIT), -EINVAL);
	assert_int_equal(ur_srq_modify(srq, &a, 1 << 5), -EINVAL);
	assert_int_equal(post_n(srq, 6, 0), 0);
	a.srq_limit = 4;
	assert_int_equal(ur_srq_modify(srq, &a, IBV_SRQ_LIMIT), 0);
	ur_srq_query(srq, &a);
	assert_int_equal(a.srq_limit, 4);
	take(srq);			/* 5 left */
	take(srq);			/* 4 left: not below */
	assert_int_equal(ut_async_pending(ctx), 0);
	take(srq);			/* 3 left: below */
	assert_int_equal(ut_async_pending(ctx), 1);
	take(srq);
	take(srq);
	assert_int_equal(ut_async_pending(ctx), 1);	/* once */
	ur_srq_query(srq, &a);
	assert_int_equal(a.srq_limit, 0);		/* disarmed */
	assert_int_equal(ur_async_event_get(to_ur_context(ctx), &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	assert_ptr_equal(ev.element.srq, &srq->ibsrq);
	ur_async_event_ack(&ev);
	assert_int_equal(srq->ibsrq.events_completed, 1);

	/* resize: not below what is queued; entries survive in order */
	assert_int_equal(post_n(srq, 10, 50), 0);	/* 11 queued */
	a.max_wr = 4;	/* 7 granted */
	assert_int_equal(ur_srq_modify(srq, &a, IBV_SRQ_MAX_WR), -EINVAL);
	a.max_wr = 40;
	assert_int_equal(ur_srq_modify(srq, &a, IBV_SRQ_MAX_WR), 0);
	assert_true(a.max_wr >= 40);
	assert_int_equal(take(srq), 5);
	for (i = 0; i < 10; i++)
		assert_int_equal(take(srq), 50 + (uint64_t)i);
	assert_int_equal(post_n(srq, 40, 0), 0);
	assert_int_equal(ur_srq_destroy(srq), 0);
	assert_int_equal(ur_pd_free(pd), 0);
	ut_ctx_free(ctx);
}

static void gid_of(const char *ip, union ibv_gid *gid)
{
	union ur_sockaddr sa;

	memset(&sa, 0, sizeof(sa));
	if (strchr(ip, ':')) {
		sa.in6.sin6_family = AF_INET6;
		inet_pton(AF_INET6, ip, &sa.in6.sin6_addr);
	} else {
		sa.in.sin_family = AF_INET;
		inet_pton(AF_INET, ip, &sa.in.sin_addr);
	}
	ur_sockaddr_to_gid(&sa, gid->raw);
}

static void test_ah_create(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_pd *pd = ut_pd(ctx);
	struct ibv_ah_attr a = { .port_num = 1, .is_global = 1 };
	struct ur_ah *ah = NULL;

	gid_of("127.0.0.2", &a.grh.dgid);
	a.grh.hop_limit = 64;
	a.port_num = 2;
	assert_int_equal(ur_ah_create(pd, &a, &ah), -EINVAL);
	a.port_num = 1;
	a.is_global = 0;
	assert_int_equal(ur_ah_create(pd, &a, &ah), -EINVAL);
	a.is_global = 1;
	a.grh.sgid_index = 5;
	assert_int_equal(ur_ah_create(pd, &a, &ah), -EINVAL);
	a.grh.sgid_index = 1;		/* IPv6 source, IPv4 destination */
	assert_int_equal(ur_ah_create(pd, &a, &ah), -EINVAL);
	a.grh.sgid_index = 0;
	assert_int_equal(ur_ah_create(pd, &a, &ah), 0);
	assert_int_equal(ah->av.dest.sa.sa_family, AF_INET);
	assert_int_equal(ntohs(ah->av.dest.in.sin_port), 4791);
	assert_int_equal(ah->av.dest.in.sin_addr.s_addr, htonl(0x7F000002));
	assert_int_equal(ah->av.src.in.sin_addr.s_addr, htonl(0x7F000001));
	assert_int_equal(ah->av.hop_limit, 64);
	assert_int_equal(ur_pd_free(pd), -EBUSY);
	ur_ah_destroy(ah);
	assert_int_equal(ur_pd_free(pd), 0);
	ut_ctx_free(ctx);
}

static void grh_v4(uint8_t *g, const char *src, const char *dst, uint8_t tos)
{
	uint8_t *h = g + 20;
	uint32_t sum = 0;
	int i;

	memset(g, 0, 40);
	h[0] = 0x45;
	h[1] = tos;
	h[3] = 60;
	h[6] = 0x40;		/* DF */
	h[8] = 64;		/* TTL */
	h[9] = 17;		/* UDP */
	inet_pton(AF_INET, src, h + 12);
	inet_pton(AF_INET, dst, h + 16);
	for (i = 0; i < 20; i += 2)
		sum += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	sum = ~sum & 0xFFFF;
	h[10] = (uint8_t)(sum >> 8);
	h[11] = (uint8_t)sum;
}

static void test_ah_from_grh(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_device *dev = ut_dev(ctx);
	struct ibv_wc wc = { .wc_flags = IBV_WC_GRH, .sl = 3 };
	struct ibv_ah_attr a;
	union ibv_gid want;
	uint8_t g[40];

	/* AF11 and CE: the ECN bits were the path's, not the class */
	grh_v4(g, "127.0.0.9", "127.0.0.1", 0x2b);
	assert_int_equal(ur_ah_attr_from_grh(dev, 1, &wc, g, &a), 0);
	gid_of("127.0.0.9", &want);
	assert_memory_equal(a.grh.dgid.raw, want.raw, 16);
	assert_int_equal(a.grh.sgid_index, 0);
	assert_int_equal(a.grh.traffic_class, 0x28);
	assert_int_equal(a.grh.hop_limit, 0xFF);
	assert_int_equal(a.grh.flow_label, 0);
	assert_int_equal(a.is_global, 1);
	assert_int_equal(a.port_num, 1);
	assert_int_equal(a.sl, 3);

	g[20 + 11] ^= 1;		/* broken IPv4 checksum */
	assert_int_equal(ur_ah_attr_from_grh(dev, 1, &wc, g, &a), -EINVAL);
	grh_v4(g, "127.0.0.9", "127.0.0.7", 0);	/* not our address */
	assert_int_equal(ur_ah_attr_from_grh(dev, 1, &wc, g, &a), -EINVAL);
	grh_v4(g, "127.0.0.9", "127.0.0.1", 0);
	assert_int_equal(ur_ah_attr_from_grh(dev, 2, &wc, g, &a), -EINVAL);
	wc.wc_flags = 0;		/* no GRH */
	assert_int_equal(ur_ah_attr_from_grh(dev, 1, &wc, g, &a), -EINVAL);
	wc.wc_flags = IBV_WC_GRH;

	/* IPv6: version 6, traffic class 0xA5, flow label 0x12345 */
	memset(g, 0, sizeof(g));
	g[0] = 0x6A;
	g[1] = 0x51;
	g[2] = 0x23;
	g[3] = 0x45;
	g[6] = 17;
	g[7] = 9;
	inet_pton(AF_INET6, "fe80::2", g + 8);
	inet_pton(AF_INET6, "::1", g + 24);
	assert_int_equal(ur_ah_attr_from_grh(dev, 1, &wc, g, &a), 0);
	gid_of("fe80::2", &want);
	assert_memory_equal(a.grh.dgid.raw, want.raw, 16);
	assert_int_equal(a.grh.sgid_index, 1);
	assert_int_equal(a.grh.traffic_class, 0xA4);	/* ECN bits off */
	assert_int_equal(a.grh.flow_label, 0x12345);
	g[0] = 0x5A;			/* neither IPv4 image nor IPv6 */
	assert_int_equal(ur_ah_attr_from_grh(dev, 1, &wc, g, &a), -EINVAL);
	ut_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_srq_create_post),
		cmocka_unit_test(test_regress_srq_fits_cq_of_its_depth),
		cmocka_unit_test(test_srq_limit),
		cmocka_unit_test(test_ah_create),
		cmocka_unit_test(test_ah_from_grh),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
