/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * At UROCE_LOG=info, a refused ibv_modify_qp() says why on stderr, in the
 * call's terms (issue 25: a beginner got EINVAL and no log level said
 * why): an AV without a GRH, a GID index the device does not have, a
 * transition that does not exist, a mask without a required attribute.
 * Each call still fails with EINVAL and changes nothing.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "capture.h"
#include <infiniband/verbs.h>

static struct ibv_device **list;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static char said[4096];

static int setup(void **state)
{
	/* read once, at the first device list */
	setenv("UROCE_LOG", "info", 1);
	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		return -1;
	ctx = ibv_open_device(list[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = pd ? ibv_create_cq(ctx, 8, NULL, NULL, 0) : NULL;
	return cq ? 0 : -1;
}

static int teardown(void **state)
{
	int rc = ibv_destroy_cq(cq) | ibv_dealloc_pd(pd) | ibv_close_device(ctx);

	ibv_free_device_list(list);
	return rc;
}

/* ibv_modify_qp() with stderr captured into said[]; returns its result. */
static int modify_capturing(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	struct ur_capture cap;
	int ret;

	ur_capture_begin(&cap);
	ret = ibv_modify_qp(qp, a, mask);
	ur_capture_end(&cap, said, sizeof(said));
	return ret;
}

static void assert_said(const char *what)
{
	if (!strstr(said, what))
		fail_msg("no \"%s\" in \"%s\"", what, said);
}

static struct ibv_qp *rc_qp_init(void)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	assert_non_null(qp);
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	return qp;
}

/* INIT -> RTR with everything right but what the test changes */
static void rtr_attr(struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = 0x123;
	a->max_dest_rd_atomic = 1;
	a->min_rnr_timer = 12;
	a->ah_attr.is_global = 1;
	a->ah_attr.port_num = 1;
	a->ah_attr.grh.hop_limit = 1;
	/* ::ffff:127.0.0.1 */
	a->ah_attr.grh.dgid.raw[10] = 0xff;
	a->ah_attr.grh.dgid.raw[11] = 0xff;
	a->ah_attr.grh.dgid.raw[12] = 127;
	a->ah_attr.grh.dgid.raw[15] = 1;
}

#define RTR_MASK (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | \
		  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | \
		  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)

static void assert_still_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	assert_int_equal(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	assert_int_equal(a.qp_state, IBV_QPS_INIT);
}

static void test_no_grh(void **state)
{
	struct ibv_qp *qp = rc_qp_init();
	struct ibv_qp_attr a;

	rtr_attr(&a);
	a.ah_attr.is_global = 0;
	assert_int_equal(modify_capturing(qp, &a, RTR_MASK), EINVAL);
	assert_said(" I: uroce0: ibv_modify_qp of RC QP ");
	assert_said(", INIT -> RTR, refused: ah_attr.is_global is 0: RoCE has "
		    "no LIDs");
	assert_still_init(qp);
	/* the same attributes with the GRH: accepted, no refusal said (the
	 * progress thread may log something else meanwhile) */
	rtr_attr(&a);
	assert_int_equal(modify_capturing(qp, &a, RTR_MASK), 0);
	assert_null(strstr(said, "refused"));
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

static void test_no_such_gid(void **state)
{
	struct ibv_qp *qp = rc_qp_init();
	struct ibv_qp_attr a;

	rtr_attr(&a);
	a.ah_attr.grh.sgid_index = 5;
	assert_int_equal(modify_capturing(qp, &a, RTR_MASK), EINVAL);
	assert_said("refused: ah_attr.grh.sgid_index 5: uroce0 has no such "
		    "GID, it has 1 (UROCE_ADDRS sets them");
	assert_still_init(qp);
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

static void test_no_such_transition(void **state)
{
	struct ibv_qp *qp = rc_qp_init();
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_SQD };

	assert_int_equal(modify_capturing(qp, &a, IBV_QP_STATE), EINVAL);
	assert_said("INIT -> SQD, refused: no such transition (a new QP goes "
		    "RESET -> INIT -> RTR -> RTS");
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

static void test_missing_attribute(void **state)
{
	struct ibv_qp *qp = rc_qp_init();
	struct ibv_qp_attr a;

	rtr_attr(&a);
	assert_int_equal(modify_capturing(qp, &a, RTR_MASK & ~IBV_QP_AV &
					  ~IBV_QP_DEST_QPN), EINVAL);
	assert_said("refused: attr_mask lacks IBV_QP_AV | IBV_QP_DEST_QPN, "
		    "which this transition needs for RC QPs");
	rtr_attr(&a);
	assert_int_equal(modify_capturing(qp, &a, RTR_MASK | IBV_QP_SQ_PSN),
			 EINVAL);
	assert_said("refused: attr_mask has IBV_QP_SQ_PSN, which this "
		    "transition does not take for RC QPs");
	rtr_attr(&a);
	a.path_mtu = 7;
	assert_int_equal(modify_capturing(qp, &a, RTR_MASK), EINVAL);
	assert_said("refused: path_mtu is 7, not IBV_MTU_256 (1)");
	assert_still_init(qp);
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_no_grh),
		cmocka_unit_test(test_no_such_gid),
		cmocka_unit_test(test_no_such_transition),
		cmocka_unit_test(test_missing_attribute),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
