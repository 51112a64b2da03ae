/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The GRH traffic class of an AH reaches the wire: a UD send through an AH
 * with traffic class T arrives in an IP datagram whose TOS (IPv4) or
 * traffic class (IPv6) has T's DSCP and ECT(0) in its ECN bits, which the
 * receiver sees in the GRH image of its receive buffer; ibv_init_ah_from_wc()
 * gives T back (the ECN bits are the path's, not the class). Two classes in
 * one batch of sends check that the GSO train is cut between them.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <infiniband/verbs.h>

#define QKEY 0x11111111u
#define NMSG 8

static struct ibv_device **list;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_qp *qa, *qb;
static union ibv_gid gid;
static uint8_t sbuf[256], rbuf[NMSG][40 + 256];
static struct ibv_mr *smr, *rmr;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void ud_ready(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qkey = QKEY };

	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE |
				       IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_QKEY), 0);
	a.qp_state = IBV_QPS_RTR;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN),
			 0);
}

static int setup(void **state)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = NMSG, .max_recv_wr = NMSG,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		return -1;
	ctx = ibv_open_device(list[0]);
	if (!ctx || ibv_query_gid(ctx, 1, 0, &gid))
		return -1;
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 64, NULL, NULL, 0);
	if (!pd || !cq)
		return -1;
	ia.send_cq = ia.recv_cq = cq;
	qa = ibv_create_qp(pd, &ia);
	qb = ibv_create_qp(pd, &ia);
	smr = ibv_reg_mr(pd, sbuf, sizeof(sbuf), 0);
	rmr = ibv_reg_mr(pd, rbuf, sizeof(rbuf), IBV_ACCESS_LOCAL_WRITE);
	return qa && qb && smr && rmr ? 0 : -1;
}

static int teardown(void **state)
{
	int rc = ibv_destroy_qp(qa) | ibv_destroy_qp(qb) | ibv_dereg_mr(smr) |
		 ibv_dereg_mr(rmr) | ibv_destroy_cq(cq) | ibv_dealloc_pd(pd) |
		 ibv_close_device(ctx);

	ibv_free_device_list(list);
	return rc;
}

static struct ibv_ah *ah_with_class(uint8_t tclass)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1 };
	struct ibv_ah *ah;

	a.grh.dgid = gid;
	a.grh.hop_limit = 64;
	a.grh.traffic_class = tclass;
	ah = ibv_create_ah(pd, &a);
	assert_non_null(ah);
	return ah;
}

static void test_ah_traffic_class_on_wire(void **state)
{
	static const uint8_t classes[2] = { 0x48, 0xB8 };	/* AF21, EF */
	struct ibv_ah *ah[2] = { ah_with_class(classes[0]),
				 ah_with_class(classes[1]) };
	struct ibv_sge sge = { .addr = (uintptr_t)sbuf, .length = 200,
			       .lkey = smr->lkey };
	struct ibv_send_wr wr[NMSG], *bad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge rsge;
	int seen_recv = 0, seen_send = 0;
	uint64_t end;

	ud_ready(qa);
	ud_ready(qb);
	for (int i = 0; i < NMSG; i++) {
		rsge.addr = (uintptr_t)rbuf[i];
		rsge.length = sizeof(rbuf[i]);
		rsge.lkey = rmr->lkey;
		memset(&rwr, 0, sizeof(rwr));
		rwr.wr_id = (uint64_t)i;
		rwr.sg_list = &rsge;
		rwr.num_sge = 1;
		assert_int_equal(ibv_post_recv(qb, &rwr, &rbad), 0);
	}
	/* one list: equal sizes to one peer, alternating classes */
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < NMSG; i++) {
		wr[i].wr_id = 100 + (uint64_t)i;
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_SEND_WITH_IMM;
		wr[i].imm_data = htobe32((uint32_t)i);
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.ud.ah = ah[(i / 2) & 1];
		wr[i].wr.ud.remote_qpn = qb->qp_num;
		wr[i].wr.ud.remote_qkey = QKEY;
		wr[i].next = i + 1 < NMSG ? &wr[i + 1] : NULL;
	}
	assert_int_equal(ibv_post_send(qa, wr, &bad), 0);

	end = now_ms() + 3000;
	while ((seen_recv < NMSG || seen_send < NMSG) && now_ms() < end) {
		struct ibv_ah_attr got;
		struct ibv_wc wc;
		uint32_t i;

		if (ibv_poll_cq(cq, 1, &wc) != 1) {
			usleep(100);
			continue;
		}
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		if (wc.opcode != IBV_WC_RECV) {
			seen_send++;
			continue;
		}
		i = be32toh(wc.imm_data);
		assert_true(i < NMSG);
		assert_true(wc.wc_flags & IBV_WC_GRH);
		assert_int_equal(ibv_init_ah_from_wc(ctx, 1, &wc,
						     (struct ibv_grh *)rbuf[wc.wr_id],
						     &got), 0);
		assert_int_equal(got.grh.traffic_class, classes[(i / 2) & 1]);
		if (rbuf[wc.wr_id][20] >> 4 == 4)	/* IPv4: TOS, byte 1 */
			assert_int_equal(rbuf[wc.wr_id][21],
					 classes[(i / 2) & 1] | 0x2);
		else					/* IPv6 */
			assert_int_equal((rbuf[wc.wr_id][0] & 0xf) << 4 |
						 rbuf[wc.wr_id][1] >> 4,
					 classes[(i / 2) & 1] | 0x2);
		seen_recv++;
	}
	assert_int_equal(seen_recv, NMSG);
	assert_int_equal(seen_send, NMSG);
	assert_int_equal(ibv_destroy_ah(ah[0]), 0);
	assert_int_equal(ibv_destroy_ah(ah[1]), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ah_traffic_class_on_wire),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
