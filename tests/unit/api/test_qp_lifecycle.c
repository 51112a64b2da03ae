/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * QP lifecycle rules that span obj/ and engine/, through the real library:
 * a QP reset or destroyed leaves none of its completions in its CQs,
 * destroy waits for its async events to be acknowledged, ON_DEMAND is a
 * valid QP access flag, and the device reports ODP (memory is never pinned)
 * but not the fast-register extensions it lacks; ECE is answered as by a
 * NIC that supports no vendor option.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include <infiniband/verbs.h>

static struct ibv_device **list;
static struct ibv_context *ctx;
static struct ibv_pd *pd;
static struct ibv_cq *cq;
static struct ibv_mr *mr;
static char buf[4096];

static int setup(void **state)
{
	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		return -1;
	ctx = ibv_open_device(list[0]);
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	cq = pd ? ibv_create_cq(ctx, 64, NULL, NULL, 0) : NULL;
	mr = cq ? ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	return mr ? 0 : -1;
}

static int teardown(void **state)
{
	int rc = ibv_dereg_mr(mr) | ibv_destroy_cq(cq) | ibv_dealloc_pd(pd) |
		 ibv_close_device(ctx);

	ibv_free_device_list(list);
	return rc;
}

static struct ibv_qp *rc_qp_init(unsigned int access)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = access };
	struct ibv_qp *qp = ibv_create_qp(pd, &ia);

	assert_non_null(qp);
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					IBV_QP_PORT | IBV_QP_ACCESS_FLAGS), 0);
	return qp;
}

/* Posts n receives, moves the QP to ERR and returns the flushed count. */
static int flush_receives(struct ibv_qp *qp, int n)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 64,
			       .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	for (int i = 0; i < n; i++) {
		wr.wr_id = (uint64_t)i;
		assert_int_equal(ibv_post_recv(qp, &wr, &bad), 0);
	}
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	return n;
}

static int cq_count(void)
{
	struct ibv_wc wc[16];
	int total = 0, n;

	/* flushes are produced by the modify itself; poll twice to be sure
	 * nothing arrives late */
	for (int i = 0; i < 2; i++) {
		while ((n = ibv_poll_cq(cq, 16, wc)) > 0) {
			for (int j = 0; j < n; j++)
				assert_int_equal(wc[j].status, IBV_WC_WR_FLUSH_ERR);
			total += n;
		}
		usleep(1000);
	}
	return total;
}

static void reset_cleans_cq(void **state)
{
	struct ibv_qp *qp = rc_qp_init(IBV_ACCESS_LOCAL_WRITE);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	flush_receives(qp, 4);
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	assert_int_equal(cq_count(), 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

static void flush_then_poll_sees_all(void **state)
{
	struct ibv_qp *qp = rc_qp_init(IBV_ACCESS_LOCAL_WRITE);

	flush_receives(qp, 5);
	assert_int_equal(cq_count(), 5);
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

static void destroy_cleans_cq(void **state)
{
	struct ibv_qp *qp = rc_qp_init(IBV_ACCESS_LOCAL_WRITE);

	flush_receives(qp, 3);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(cq_count(), 0);
}

static void on_demand_access(void **state)
{
	struct ibv_qp *qp = rc_qp_init(IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_ON_DEMAND);
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	assert_int_equal(ibv_query_qp(qp, &a, IBV_QP_ACCESS_FLAGS, &ia), 0);
	assert_true(a.qp_access_flags & IBV_ACCESS_ON_DEMAND);
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

static void odp_caps_no_fastreg(void **state)
{
	struct ibv_device_attr_ex attr;

	assert_int_equal(ibv_query_device_ex(ctx, NULL, &attr), 0);
	assert_true(attr.odp_caps.general_caps & IBV_ODP_SUPPORT);
	assert_true(attr.odp_caps.per_transport_caps.rc_odp_caps &
		    IBV_ODP_SUPPORT_READ);
	assert_false(attr.orig_attr.device_cap_flags &
		     IBV_DEVICE_MEM_MGT_EXTENSIONS);
}

/*
 * Regression: a QP on an SRQ moved to ERR by ibv_modify_qp raises
 * IBV_EVENT_QP_LAST_WQE_REACHED, as mlx5 does and as a transport that
 * reclaims such a QP waits for (UCX's rc_verbs: its own test suite,
 * uct_p2p_test_event.last_wqe_*, timed out). Only a move to ERR by the
 * engine raised it.
 */
static void test_regress_last_wqe_on_modify_to_err(void **state)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .srq = srq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_send_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_async_event ev;
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_qp *qp;

	(void)state;
	assert_non_null(srq);
	qp = ibv_create_qp(pd, &ia);
	assert_non_null(qp);
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
			 0);
	a.qp_state = IBV_QPS_ERR;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	assert_int_equal(poll(&pfd, 1, 2000), 1);
	assert_int_equal(ibv_get_async_event(ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	assert_ptr_equal(ev.element.qp, qp);
	ibv_ack_async_event(&ev);
	/* once: ERR again raises nothing */
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	assert_int_equal(poll(&pfd, 1, 100), 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_srq(srq), 0);
}

/*
 * ECE as mlx5 answers it, for a device with no option: query gives the
 * vendor id of ibv_query_device and options 0 in every state; set takes
 * any options of that vendor before the connection is up (RESET, INIT,
 * RTR) and keeps none; bad input fails with mlx5's errno and changes
 * nothing. UCX's ECE probe (query then set on a RESET QP) must pass.
 */
static void ece_no_options(void **state)
{
	struct ibv_device_attr da;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_ece ece, q;
	struct ibv_qp *qp;
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	assert_int_equal(ibv_query_device(ctx, &da), 0);
	qp = ibv_create_qp(pd, &ia);
	assert_non_null(qp);

	/* RESET: UCX's probe */
	memset(&ece, 0xa5, sizeof(ece));
	assert_int_equal(ibv_query_ece(qp, &ece), 0);
	assert_int_equal(ece.vendor_id, da.vendor_id);
	assert_int_equal(ece.options, 0);
	assert_int_equal(ece.comp_mask, 0);
	assert_int_equal(ibv_set_ece(qp, &ece), 0);

	/* options the device lacks are accepted and masked off */
	ece.options = 0xffffffff;
	assert_int_equal(ibv_set_ece(qp, &ece), 0);
	assert_int_equal(ece.options, 0xffffffff);	/* IN only, as mlx5 */
	assert_int_equal(ibv_query_ece(qp, &q), 0);
	assert_int_equal(q.options, 0);

	/* bad input: errno as mlx5 (vendor 0 is libibverbs' EOPNOTSUPP) */
	errno = 0;
	ece.vendor_id = 0;
	assert_int_equal(ibv_set_ece(qp, &ece), EOPNOTSUPP);
	assert_int_equal(errno, EOPNOTSUPP);
	ece.vendor_id = 0x02c9;		/* Mellanox's */
	assert_int_equal(ibv_set_ece(qp, &ece), EINVAL);
	ece.vendor_id = da.vendor_id;
	ece.comp_mask = 1;
	errno = 0;
	assert_int_equal(ibv_set_ece(qp, &ece), EINVAL);
	assert_int_equal(errno, EINVAL);
	ece.comp_mask = 0;
	assert_int_equal(ibv_set_ece(qp, NULL), EINVAL);
	assert_int_equal(ibv_query_ece(qp, NULL), EINVAL);
	assert_int_equal(ibv_query_ece(NULL, &q), EINVAL);
	assert_int_equal(ibv_set_ece(NULL, &ece), EINVAL);
	assert_int_equal(ibv_destroy_qp(qp), 0);

	/* INIT: accepted; ERR (past the connection's setup): refused */
	qp = rc_qp_init(0);
	assert_int_equal(ibv_set_ece(qp, &ece), 0);
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	assert_int_equal(ibv_set_ece(qp, &ece), EINVAL);
	assert_int_equal(ibv_query_ece(qp, &q), 0);
	assert_int_equal(q.vendor_id, da.vendor_id);
	assert_int_equal(q.options, 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	/* a destroyed QP: refused as every verb refuses a stale handle */
	assert_int_equal(ibv_query_ece(qp, &q), ENOENT);
	assert_int_equal(ibv_set_ece(qp, &ece), ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(flush_then_poll_sees_all),
		cmocka_unit_test(reset_cleans_cq),
		cmocka_unit_test(destroy_cleans_cq),
		cmocka_unit_test(on_demand_access),
		cmocka_unit_test(odp_caps_no_fastreg),
		cmocka_unit_test(test_regress_last_wqe_on_modify_to_err),
		cmocka_unit_test(ece_no_options),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
