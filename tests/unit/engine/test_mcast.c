/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * UD multicast through the public verbs API, two devices of one process
 * on loopback: ibv_attach_mcast/ibv_detach_mcast's errors and limit,
 * delivery of one datagram to every attached QP whose Q_Key matches,
 * detach stopping it,
 * the sender's own copy and IBV_QP_CREATE_BLOCK_SELF_MCAST_LB, and a
 * destroyed QP leaving its groups.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "te_util.h"

#define T_TMO 3000
#define T_QKEY 0x11111111u	/* te_util's Q_Key */
#define T_LEN 200

/* ::ffff:239.1.2.x, an IPv4 group as RoCEv2 writes it */
static union ibv_gid group_gid(uint8_t last)
{
	union ibv_gid g;

	memset(&g, 0, sizeof(g));
	g.raw[10] = g.raw[11] = 0xff;
	g.raw[12] = 239;
	g.raw[13] = 1;
	g.raw[14] = 2;
	g.raw[15] = last;
	return g;
}

/* A UD QP on s's PD and CQs, in RTS with Q_Key qkey. */
static struct ibv_qp *ud_qp(struct te_side *s, uint32_t qkey, bool no_self)
{
	struct ibv_qp_init_attr_ex ia;
	struct ibv_qp_attr a;
	struct ibv_qp *qp;

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_UD;
	ia.send_cq = s->scq;
	ia.recv_cq = s->rcq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 16;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	ia.pd = s->pd;
	if (no_self) {
		ia.comp_mask |= IBV_QP_INIT_ATTR_CREATE_FLAGS;
		ia.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
	}
	qp = ibv_create_qp_ex(s->ctx, &ia);
	if (!qp)
		return NULL;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = qkey;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY))
		goto fail;
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		goto fail;
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		goto fail;
	return qp;
fail:
	ibv_destroy_qp(qp);
	return NULL;
}

static int post_recv(struct te_side *s, struct ibv_qp *qp, uint64_t id,
		     uint32_t off)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + off, 40 + T_LEN,
			       s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(qp, &wr, &bad);
}

/* Sends T_LEN bytes of byte v from s's QP to the group through an AH of
 * hop limit hops; waits for the send completion. */
static void send_to_group_hops(struct te_side *s, const union ibv_gid *g,
			       uint8_t v, uint8_t hops)
{
	struct ibv_ah_attr aa;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct ibv_ah *ah;

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = *g;
	aa.grh.hop_limit = hops;
	aa.port_num = 1;
	ah = ibv_create_ah(s->pd, &aa);
	assert_non_null(ah);
	memset(s->buf + 8192, v, T_LEN);
	sge = (struct ibv_sge){ (uintptr_t)s->buf + 8192, T_LEN, s->mr->lkey };
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_SEND;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = 0xFFFFFF;
	wr.wr.ud.remote_qkey = T_QKEY;
	assert_int_equal(ibv_post_send(s->qp, &wr, &bad), 0);
	assert_int_equal(te_poll(s->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	ibv_destroy_ah(ah);
}

static void send_to_group(struct te_side *s, const union ibv_gid *g,
			  uint8_t v)
{
	send_to_group_hops(s, g, v, 64);
}

/* Collects what arrives on cq for ms: a bit per receiving QP in *mask
 * (bit i for qps[i]); every payload must be byte v. */
static int collect(struct te_side *s, struct ibv_qp **qps, int n,
		   uint8_t v, int ms)
{
	struct ibv_wc wc;
	int mask = 0, i, k, got = 0;

	while (te_poll(s->rcq, &wc, ms) == 1) {
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.byte_len, 40 + T_LEN);
		assert_true(wc.wc_flags & IBV_WC_GRH);
		for (k = 0; k < T_LEN; k++)
			assert_int_equal(s->buf[wc.wr_id * 1024 + 40 + k], v);
		for (i = 0; i < n; i++)
			if (qps[i]->qp_num == wc.qp_num) {
				assert_false(mask & (1 << i));	/* once */
				mask |= 1 << i;
			}
		got++;
	}
	return got == __builtin_popcount(mask) ? mask : -1;
}

static void test_attach_errors(void **state)
{
	union ibv_gid g = group_gid(1);
	struct te_pair rc, ud;

	assert_int_equal(te_pair_open(&rc, IBV_QPT_RC), 0);
	errno = 0;
	assert_int_equal(ibv_attach_mcast(rc.s[0].qp, &g, 0), EINVAL);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(ibv_detach_mcast(rc.s[0].qp, &g, 0), EINVAL);
	te_pair_close(&rc);

	assert_int_equal(te_pair_open(&ud, IBV_QPT_UD), 0);
	/* a unicast GID (the device's own) is not a group */
	assert_int_equal(ibv_attach_mcast(ud.s[0].qp, &ud.s[0].gid, 0),
			 EINVAL);
	/* not attached */
	assert_int_equal(ibv_detach_mcast(ud.s[0].qp, &g, 0), EINVAL);
	/* twice is once: one detach ends it, the second finds nothing */
	assert_int_equal(ibv_attach_mcast(ud.s[0].qp, &g, 0), 0);
	assert_int_equal(ibv_attach_mcast(ud.s[0].qp, &g, 0xC001), 0);
	assert_int_equal(ibv_detach_mcast(ud.s[0].qp, &g, 0), 0);
	assert_int_equal(ibv_detach_mcast(ud.s[0].qp, &g, 0), EINVAL);
	/* an IPv6 group on a device with only an IPv4 address */
	memset(&g, 0, sizeof(g));
	g.raw[0] = 0xff;
	g.raw[1] = 0x0e;
	g.raw[15] = 1;
	assert_int_equal(ibv_attach_mcast(ud.s[0].qp, &g, 0), EINVAL);
	te_pair_close(&ud);
}

/* max_mcast_qp_attach QPs in one group, then ENOMEM; nothing changed. */
static void test_attach_limit(void **state)
{
	union ibv_gid g = group_gid(4);
	struct ibv_device_attr da;
	struct ibv_qp **q;
	struct te_pair p;
	int i, n;

	assert_int_equal(te_pair_open(&p, IBV_QPT_UD), 0);
	assert_int_equal(ibv_query_device(p.s[1].ctx, &da), 0);
	n = da.max_mcast_qp_attach;
	assert_true(n > 0 && da.max_mcast_grp > 0 &&
		    da.max_total_mcast_qp_attach >= n);
	q = calloc((size_t)n + 1, sizeof(*q));
	assert_non_null(q);
	for (i = 0; i <= n; i++) {
		q[i] = ud_qp(&p.s[1], T_QKEY, false);
		assert_non_null(q[i]);
		assert_int_equal(ibv_attach_mcast(q[i], &g, 0),
				 i < n ? 0 : ENOMEM);
	}
	/* the one refused was not attached; the others were */
	assert_int_equal(ibv_detach_mcast(q[n], &g, 0), EINVAL);
	for (i = 0; i <= n; i++) {
		if (i < n)
			assert_int_equal(ibv_detach_mcast(q[i], &g, 0), 0);
		assert_int_equal(ibv_destroy_qp(q[i]), 0);
	}
	free(q);
	te_pair_close(&p);
}

static void test_create_flag_rules(void **state)
{
	struct ibv_qp_init_attr_ex ia;
	struct te_pair p;

	assert_int_equal(te_pair_open(&p, IBV_QPT_UD), 0);
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_RC;
	ia.send_cq = ia.recv_cq = p.s[0].scq;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 1;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	ia.pd = p.s[0].pd;
	ia.create_flags = IBV_QP_CREATE_BLOCK_SELF_MCAST_LB;
	assert_null(ibv_create_qp_ex(p.s[0].ctx, &ia));
	assert_int_equal(errno, EOPNOTSUPP);
	te_pair_close(&p);
}

static void test_two_qps_qkey_detach(void **state)
{
	union ibv_gid g = group_gid(2);
	struct ibv_qp *q[3];
	struct te_side *a, *b;
	struct te_pair p;
	int i;

	assert_int_equal(te_pair_open(&p, IBV_QPT_UD), 0);
	assert_int_equal(te_pair_connect(&p, NULL), 0);
	a = &p.s[0];
	b = &p.s[1];
	q[0] = b->qp;
	q[1] = ud_qp(b, T_QKEY, false);
	q[2] = ud_qp(b, 0x22222222, false);	/* another Q_Key */
	assert_non_null(q[1]);
	assert_non_null(q[2]);
	for (i = 0; i < 3; i++) {
		assert_int_equal(ibv_attach_mcast(q[i], &g, 0), 0);
		assert_int_equal(post_recv(b, q[i], (uint64_t)i, i * 1024), 0);
		assert_int_equal(post_recv(b, q[i], (uint64_t)i, i * 1024), 0);
	}
	/* one datagram: one copy for each QP of the right Q_Key */
	send_to_group(a, &g, 0x71);
	assert_int_equal(collect(b, q, 3, 0x71, 300), 3);

	/* detach stops delivery to that QP only */
	assert_int_equal(ibv_detach_mcast(q[1], &g, 0), 0);
	send_to_group(a, &g, 0x72);
	assert_int_equal(collect(b, q, 3, 0x72, 300), 1);

	/* a destroyed QP leaves the group: the last one left takes the
	 * link out of it, and nothing arrives any more */
	assert_int_equal(ibv_destroy_qp(q[2]), 0);
	assert_int_equal(ibv_destroy_qp(q[1]), 0);
	assert_int_equal(ibv_detach_mcast(q[0], &g, 0), 0);
	assert_int_equal(post_recv(b, q[0], 0, 0), 0);
	send_to_group(a, &g, 0x73);
	assert_int_equal(te_poll_none(b->rcq, 200), 0);
	te_pair_close(&p);
}

/* The sender's QP, attached, hears itself unless created not to; the
 * other device hears it either way. */
static void test_self_copy(void **state)
{
	union ibv_gid g = group_gid(3);
	struct te_side *a, *b;
	struct ibv_qp *deaf, *qa[1], *qb[1];
	struct te_pair p;

	assert_int_equal(te_pair_open(&p, IBV_QPT_UD), 0);
	assert_int_equal(te_pair_connect(&p, NULL), 0);
	a = &p.s[0];
	b = &p.s[1];
	qa[0] = a->qp;
	qb[0] = b->qp;
	assert_int_equal(ibv_attach_mcast(a->qp, &g, 0), 0);
	assert_int_equal(ibv_attach_mcast(b->qp, &g, 0), 0);
	assert_int_equal(post_recv(a, a->qp, 0, 0), 0);
	assert_int_equal(post_recv(b, b->qp, 0, 0), 0);
	send_to_group(a, &g, 0x81);
	assert_int_equal(collect(a, qa, 1, 0x81, 300), 1);
	assert_int_equal(collect(b, qb, 1, 0x81, 300), 1);

	/* the same from a QP created with BLOCK_SELF_MCAST_LB */
	deaf = ud_qp(a, T_QKEY, true);
	assert_non_null(deaf);
	assert_int_equal(ibv_attach_mcast(deaf, &g, 0), 0);
	assert_int_equal(ibv_detach_mcast(a->qp, &g, 0), 0);
	assert_int_equal(post_recv(a, deaf, 0, 0), 0);
	assert_int_equal(post_recv(b, b->qp, 0, 0), 0);
	qa[0] = deaf;
	{
		struct ibv_qp *keep = a->qp;

		a->qp = deaf;
		send_to_group(a, &g, 0x82);
		a->qp = keep;
	}
	assert_int_equal(collect(a, qa, 1, 0x82, 300), 0);
	assert_int_equal(collect(b, qb, 1, 0x82, 300), 1);
	assert_int_equal(ibv_destroy_qp(deaf), 0);
	te_pair_close(&p);
}

/* The TTL a received IPv4 datagram carried: byte 8 of the IPv4 header,
 * which the GRH image holds in its last 20 bytes. */
static uint8_t grh_ttl(const struct te_side *s, uint32_t off)
{
	return s->buf[off + 20 + 8];
}

/* A datagram to a group leaves with the AH's hop limit as its IP TTL (as
 * rxe sends it), not the socket's multicast TTL; hop limit 0 leaves the
 * socket's (64). */
static void test_hop_limit_is_ttl(void **state)
{
	union ibv_gid g = group_gid(5);
	struct ibv_qp *qb[1];
	struct te_side *a, *b;
	struct te_pair p;

	assert_int_equal(te_pair_open(&p, IBV_QPT_UD), 0);
	assert_int_equal(te_pair_connect(&p, NULL), 0);
	a = &p.s[0];
	b = &p.s[1];
	qb[0] = b->qp;
	assert_int_equal(ibv_attach_mcast(b->qp, &g, 0), 0);
	assert_int_equal(post_recv(b, b->qp, 0, 0), 0);
	send_to_group_hops(a, &g, 0x91, 5);
	assert_int_equal(collect(b, qb, 1, 0x91, 300), 1);
	assert_int_equal(grh_ttl(b, 0), 5);

	assert_int_equal(post_recv(b, b->qp, 0, 0), 0);
	send_to_group_hops(a, &g, 0x92, 0);
	assert_int_equal(collect(b, qb, 1, 0x92, 300), 1);
	assert_int_equal(grh_ttl(b, 0), 64);
	te_pair_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attach_errors),
		cmocka_unit_test(test_attach_limit),
		cmocka_unit_test(test_create_flag_rules),
		cmocka_unit_test(test_two_qps_qkey_detach),
		cmocka_unit_test(test_self_copy),
		cmocka_unit_test(test_hop_limit_is_ttl),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);

	te_close_devices();
	return rc;
}
