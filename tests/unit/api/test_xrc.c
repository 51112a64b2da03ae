/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * XRC through the public verbs, in one process over loopback: an XRC_SEND
 * QP reaches the XRC SRQ its work requests name through the peer's
 * XRC_RECV QP (SEND, RDMA WRITE/READ, atomics; receive completions on the
 * SRQ's CQ with the XRC_RECV QP's number), and the error paths: an SRQ of
 * another XRC domain or no SRQ at all (remote access error, the target QP
 * in ERR with IBV_EVENT_QP_ACCESS_ERR), creation rules of each half,
 * posting to the queues XRC QPs do not have, close_xrcd while used,
 * ibv_open_qp.
 */
#include <fcntl.h>

#include "rc_pair.h"

#define MSG 3000		/* three packets at MTU 1024 */

struct xrc_side {
	struct ibv_xrcd *xrcd;
	struct ibv_srq *srq;
	uint32_t srqn;
	struct ibv_qp *recv;	/* XRC_RECV */
	struct ibv_qp *send;	/* XRC_SEND */
};

static struct ibv_xrcd *xrcd_new(void)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1,
		.oflags = O_CREAT,
	};
	struct ibv_xrcd *x = ibv_open_xrcd(ctx, &a);

	assert_non_null(x);
	return x;
}

static struct ibv_srq *xrc_srq_new(struct ibv_xrcd *xrcd)
{
	struct ibv_srq_init_attr_ex a = {
		.attr = { .max_wr = 16, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
		.pd = pd,
		.xrcd = xrcd,
		.cq = cq,
	};
	struct ibv_srq *srq = ibv_create_srq_ex(ctx, &a);

	assert_non_null(srq);
	return srq;
}

static struct ibv_qp *xrc_recv_new(struct ibv_xrcd *xrcd)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = xrcd,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &a);

	assert_non_null(qp);
	return qp;
}

static struct ibv_qp *xrc_send_new(void)
{
	struct ibv_qp_init_attr_ex a = {
		.qp_type = IBV_QPT_XRC_SEND,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
		.send_cq = cq,
		.cap = { .max_send_wr = 16, .max_send_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &a);

	assert_non_null(qp);
	return qp;
}

/* One XRC_SEND -> XRC_RECV connection on an XRC domain with an SRQ. */
static void side_new(struct xrc_side *s)
{
	s->xrcd = xrcd_new();
	s->srq = xrc_srq_new(s->xrcd);
	assert_int_equal(ibv_get_srq_num(s->srq, &s->srqn), 0);
	assert_true(s->srqn && s->srqn <= 0xffffff);
	s->recv = xrc_recv_new(s->xrcd);
	s->send = xrc_send_new();
	/* the full RC masks: each half drops what it has no use for */
	rc_to_rts(s->recv, s->send->qp_num, &gid, &rc_conn_default);
	rc_to_rts(s->send, s->recv->qp_num, &gid, &rc_conn_default);
}

static void side_free(struct xrc_side *s)
{
	assert_int_equal(ibv_destroy_qp(s->send), 0);
	assert_int_equal(ibv_destroy_qp(s->recv), 0);
	assert_int_equal(ibv_destroy_srq(s->srq), 0);
	assert_int_equal(ibv_close_xrcd(s->xrcd), 0);
	nstash = 0;
}

static void post_xrc(struct ibv_qp *qp, uint64_t id, enum ibv_wr_opcode op,
		     struct ibv_mr *mr, void *addr, uint32_t len,
		     uint64_t raddr, uint32_t srqn)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;

	wr.qp_type.xrc.remote_srqn = srqn;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = mr->rkey;
		wr.wr.atomic.compare_add = 5;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = mr->rkey;
	}
	assert_int_equal(ibv_post_send(qp, &wr, &bad), 0);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	assert_int_equal(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

static void test_xrc_traffic(void **state)
{
	uint8_t *buf = calloc(4, MSG);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 4 * MSG,
				       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_READ |
				       IBV_ACCESS_REMOTE_ATOMIC);
	uint8_t *src = buf, *dst = buf + MSG, *rd = buf + 2 * MSG;
	uint64_t *ctr = (uint64_t *)(buf + 3 * MSG), *old = ctr + 1;
	struct xrc_side s;
	struct ibv_wc wc;

	assert_non_null(mr);
	side_new(&s);
	for (int i = 0; i < MSG; i++)
		src[i] = (uint8_t)(i * 7 + 1);

	/* SEND: the receive WQE comes from the SRQ, its completion names the
	 * XRC_RECV QP and goes to the SRQ's CQ */
	post_recv_buf(NULL, s.srq, 100, mr, dst, MSG);
	post_xrc(s.send, 1, IBV_WR_SEND, mr, src, MSG, 0, s.srqn);
	wc = wait_wr(1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	wc = wait_wr(100);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.byte_len, MSG);
	assert_int_equal(wc.qp_num, s.recv->qp_num);
	assert_int_equal(wc.src_qp, s.send->qp_num);
	assert_memory_equal(src, dst, MSG);

	/* WRITE, READ, FETCH_ADD: the SRQ's PD vouches for the rkey */
	memset(dst, 0, MSG);
	post_xrc(s.send, 2, IBV_WR_RDMA_WRITE, mr, src, MSG, (uintptr_t)dst,
		 s.srqn);
	assert_int_equal(wait_wr(2).status, IBV_WC_SUCCESS);
	assert_memory_equal(src, dst, MSG);
	post_xrc(s.send, 3, IBV_WR_RDMA_READ, mr, rd, MSG, (uintptr_t)dst,
		 s.srqn);
	assert_int_equal(wait_wr(3).status, IBV_WC_SUCCESS);
	assert_memory_equal(src, rd, MSG);
	*ctr = 10;
	post_xrc(s.send, 4, IBV_WR_ATOMIC_FETCH_AND_ADD, mr, old, 8,
		 (uintptr_t)ctr, s.srqn);
	assert_int_equal(wait_wr(4).status, IBV_WC_SUCCESS);
	assert_int_equal(*old, 10);
	assert_int_equal(*ctr, 15);

	side_free(&s);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	free(buf);
}

/* A request naming an SRQ of another XRC domain, or no SRQ at all: the
 * target answers with a remote access error and goes to ERR, as hardware
 * does for an XRC domain violation or an invalid XRCETH. */
static void bad_srqn(uint32_t (*pick)(const struct xrc_side *, uint32_t))
{
	uint8_t *buf = calloc(1, 64);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_xrcd *other = xrcd_new();
	struct ibv_srq *osrq = xrc_srq_new(other);
	struct ibv_async_event ev;
	struct xrc_side s;
	uint32_t on;

	assert_int_equal(ibv_get_srq_num(osrq, &on), 0);
	side_new(&s);
	/* receive into the upper half, send from the lower: one buffer for
	 * both would be the NIC writing what it is still reading */
	post_recv_buf(NULL, osrq, 200, mr, buf + 32, 32);
	post_xrc(s.send, 5, IBV_WR_SEND, mr, buf, 16, 0, pick(&s, on));
	assert_int_equal(wait_wr(5).status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(qp_state(s.recv), IBV_QPS_ERR);
	assert_int_equal(ibv_get_async_event(ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_ACCESS_ERR);
	assert_ptr_equal(ev.element.qp, s.recv);
	ibv_ack_async_event(&ev);
	/* the other domain's receive was not consumed */
	assert_int_equal(ibv_poll_cq(cq, 1, &(struct ibv_wc){ 0 }), 0);

	side_free(&s);
	assert_int_equal(ibv_destroy_srq(osrq), 0);
	assert_int_equal(ibv_close_xrcd(other), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	free(buf);
}

static uint32_t pick_other_domain(const struct xrc_side *s, uint32_t other)
{
	return other;
}

static uint32_t pick_missing(const struct xrc_side *s, uint32_t other)
{
	return 0;	/* no SRQ is ever numbered 0 */
}

static void test_xrc_srq_of_other_domain(void **state)
{
	bad_srqn(pick_other_domain);
}

static void test_xrc_srq_missing(void **state)
{
	bad_srqn(pick_missing);
}

static void test_xrc_create_rules(void **state)
{
	struct ibv_xrcd *x = xrcd_new();
	struct ibv_srq *srq, *basic;
	struct ibv_srq_init_attr bs = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 4, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD,
		.srq_type = IBV_SRQT_XRC, .pd = pd, .xrcd = x,
	};
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_XRC_RECV,
	};
	struct ibv_qp_attr attr;
	struct ibv_qp_init_attr init;
	struct ibv_qp *recv, *send;
	uint32_t n;

	/* an XRC SRQ needs its CQ; a basic SRQ has no number */
	errno = 0;
	assert_null(ibv_create_srq_ex(ctx, &sa));
	assert_int_equal(errno, EINVAL);
	basic = ibv_create_srq(pd, &bs);
	assert_non_null(basic);
	assert_int_equal(ibv_get_srq_num(basic, &n), EINVAL);
	assert_int_equal(ibv_destroy_srq(basic), 0);

	/* XRC_RECV needs an XRCD */
	errno = 0;
	assert_null(ibv_create_qp_ex(ctx, &qa));
	assert_int_equal(errno, EINVAL);
	qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	errno = 0;
	assert_null(ibv_create_qp_ex(ctx, &qa));	/* xrcd NULL */
	assert_int_equal(errno, EINVAL);

	/* an XRCD of another context: neither an SRQ nor a QP takes it */
	{
		struct ibv_context *ctx2 = ibv_open_device(list[0]);
		struct ibv_xrcd_init_attr xa = {
			.comp_mask = IBV_XRCD_INIT_ATTR_FD |
				     IBV_XRCD_INIT_ATTR_OFLAGS,
			.fd = -1, .oflags = O_CREAT,
		};
		struct ibv_xrcd *x2;

		assert_non_null(ctx2);
		x2 = ibv_open_xrcd(ctx2, &xa);
		assert_non_null(x2);
		qa.xrcd = x2;
		errno = 0;
		assert_null(ibv_create_qp_ex(ctx, &qa));
		assert_int_equal(errno, EINVAL);
		sa.comp_mask |= IBV_SRQ_INIT_ATTR_CQ;
		sa.cq = cq;
		sa.xrcd = x2;
		errno = 0;
		assert_null(ibv_create_srq_ex(ctx, &sa));
		assert_int_equal(errno, EINVAL);
		assert_int_equal(ibv_close_xrcd(x2), 0);
		assert_int_equal(ibv_close_device(ctx2), 0);
	}

	/* close_xrcd while an SRQ or a QP uses it: EBUSY, nothing freed */
	srq = xrc_srq_new(x);
	assert_int_equal(ibv_close_xrcd(x), EBUSY);
	assert_int_equal(errno, EBUSY);
	recv = xrc_recv_new(x);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(ibv_close_xrcd(x), EBUSY);

	/* an XRC target has no queue: nothing can be posted to it */
	{
		struct ibv_recv_wr rw = { .wr_id = 1 }, *rbad;
		struct ibv_send_wr sw = { .wr_id = 1, .opcode = IBV_WR_SEND },
				   *sbad;

		assert_int_equal(ibv_post_recv(recv, &rw, &rbad), EINVAL);
		assert_int_equal(ibv_post_send(recv, &sw, &sbad), EINVAL);
	}
	assert_int_equal(ibv_query_qp(recv, &attr, IBV_QP_CAP, &init), 0);
	assert_int_equal(init.cap.max_send_wr, 0);
	assert_int_equal(init.cap.max_recv_wr, 0);
	assert_null(init.send_cq);
	assert_int_equal(ibv_destroy_qp(recv), 0);
	assert_int_equal(ibv_close_xrcd(x), 0);

	/*
	 * An XRC initiator has a send queue only. Receive fields given to it
	 * are ignored, as the kernel ignores them (uverbs zeroes an XRC_INI
	 * QP's receive caps and never looks at its SRQ): it is created with
	 * no receive queue, and a receive posted to it is refused.
	 */
	{
		struct ibv_qp_init_attr_ex sa2 = {
			.qp_type = IBV_QPT_XRC_SEND,
			.comp_mask = IBV_QP_INIT_ATTR_PD,
			.pd = pd, .send_cq = cq, .recv_cq = cq,
			.cap = { .max_send_wr = 4, .max_send_sge = 1,
				 .max_recv_wr = 8, .max_recv_sge = 1 },
		};
		struct ibv_recv_wr rw = { .wr_id = 1 }, *rbad;
		struct ibv_send_wr sw = { .wr_id = 1, .opcode = IBV_WR_SEND },
				   *sbad;

		send = ibv_create_qp_ex(ctx, &sa2);
		assert_non_null(send);
		assert_int_equal(sa2.cap.max_recv_wr, 0);
		assert_int_equal(sa2.cap.max_recv_sge, 0);
		assert_null(send->recv_cq);
		assert_int_equal(ibv_post_recv(send, &rw, &rbad), EINVAL);
		/* an XRCETH holds 24 bits of SRQ number */
		recv = xrc_send_new();	/* a peer to reach RTS with */
		rc_to_rts(send, recv->qp_num, &gid, &rc_conn_default);
		sw.qp_type.xrc.remote_srqn = 1u << 24;
		assert_int_equal(ibv_post_send(send, &sw, &sbad), EINVAL);
		assert_int_equal(ibv_destroy_qp(recv), 0);
		assert_int_equal(ibv_destroy_qp(send), 0);
	}
}

/*
 * ibv_open_qp: an XRC_RECV QP by number within its XRC domain (any XRCD of
 * the same file), not in another domain, not a missing QPN; the opened
 * handle modifies and queries the QP, which lives until its last handle,
 * the creator's included, is destroyed, and keeps receiving meanwhile.
 */
static void test_xrc_open_qp(void **state)
{
	char path[] = "/tmp/ur-xrc-open-XXXXXX";
	int fd = mkstemp(path);
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = fd, .oflags = O_CREAT,
	};
	struct ibv_xrcd *x1, *x2, *other = xrcd_new();
	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE | IBV_QP_OPEN_ATTR_CONTEXT,
		.qp_type = IBV_QPT_XRC_RECV,
		.qp_context = &oa,
	};
	uint8_t *buf = calloc(1, 64);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE);
	struct ibv_qp *recv, *send, *op;
	struct ibv_srq *srq;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	uint32_t srqn;

	assert_true(fd >= 0);
	x1 = ibv_open_xrcd(ctx, &xa);
	x2 = ibv_open_xrcd(ctx, &xa);		/* the same file: one domain */
	assert_non_null(x1);
	assert_non_null(x2);
	recv = xrc_recv_new(x1);
	srq = xrc_srq_new(x1);
	assert_int_equal(ibv_get_srq_num(srq, &srqn), 0);

	/* missing QPN, wrong type, another domain, incomplete mask */
	oa.xrcd = x2;
	oa.qp_num = recv->qp_num ^ 0x5a5a5a;
	errno = 0;
	assert_null(ibv_open_qp(ctx, &oa));
	assert_int_equal(errno, EINVAL);
	oa.qp_num = recv->qp_num;
	oa.qp_type = IBV_QPT_RC;
	assert_null(ibv_open_qp(ctx, &oa));
	assert_int_equal(errno, EINVAL);
	oa.qp_type = IBV_QPT_XRC_RECV;
	oa.xrcd = other;
	assert_null(ibv_open_qp(ctx, &oa));
	assert_int_equal(errno, EINVAL);
	oa.xrcd = x2;
	oa.comp_mask &= ~IBV_QP_OPEN_ATTR_TYPE;
	assert_null(ibv_open_qp(ctx, &oa));
	assert_int_equal(errno, EINVAL);
	oa.comp_mask |= IBV_QP_OPEN_ATTR_TYPE;

	op = ibv_open_qp(ctx, &oa);
	assert_non_null(op);
	assert_int_equal(op->qp_num, recv->qp_num);
	assert_ptr_equal(op->qp_context, &oa);
	/* the creator's handle goes first: the QP stays, driven by op */
	assert_int_equal(ibv_destroy_qp(recv), 0);
	assert_int_equal(ibv_close_xrcd(x1), EBUSY);	/* still used */
	assert_int_equal(ibv_close_xrcd(x2), EBUSY);	/* op holds it */
	send = xrc_send_new();
	rc_to_rts(op, send->qp_num, &gid, &rc_conn_default);
	rc_to_rts(send, op->qp_num, &gid, &rc_conn_default);
	assert_int_equal(ibv_query_qp(op, &a, IBV_QP_STATE, &ia), 0);
	assert_int_equal(a.qp_state, IBV_QPS_RTS);
	post_recv_buf(NULL, srq, 300, mr, buf + 32, 32);
	post_xrc(send, 6, IBV_WR_SEND, mr, buf, 16, 0, srqn);
	assert_int_equal(wait_wr(6).status, IBV_WC_SUCCESS);
	assert_int_equal(wait_wr(300).qp_num, op->qp_num);
	assert_int_equal(ibv_destroy_qp(op), 0);	/* the last handle */
	assert_int_equal(ibv_destroy_qp(op), ENOENT);	/* closed */
	assert_int_equal(ibv_destroy_qp(send), 0);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(ibv_close_xrcd(x1), 0);
	assert_int_equal(ibv_close_xrcd(x2), 0);
	assert_int_equal(ibv_close_xrcd(other), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	free(buf);
	close(fd);
	unlink(path);
	nstash = 0;
}

/* The kernel's XRC_INI/XRC_TGT columns of the transition table. */
static void test_xrc_masks(void **state)
{
	struct ibv_xrcd *x = xrcd_new();
	struct ibv_qp *recv = xrc_recv_new(x);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	const int init = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			 IBV_QP_ACCESS_FLAGS;
	const int rtr = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

	assert_int_equal(ibv_modify_qp(recv, &a, init), 0);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = 0x123;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = gid;
	/* the target is a responder: it needs responder resources and an
	 * RNR timer to reach RTR */
	assert_int_equal(ibv_modify_qp(recv, &a, rtr), EINVAL);
	assert_int_equal(ibv_modify_qp(recv, &a, rtr | IBV_QP_MIN_RNR_TIMER |
				       IBV_QP_MAX_DEST_RD_ATOMIC), 0);
	/* ... and only a timeout and a send PSN to reach RTS */
	a.qp_state = IBV_QPS_RTS;
	assert_int_equal(ibv_modify_qp(recv, &a, IBV_QP_STATE), EINVAL);
	assert_int_equal(ibv_modify_qp(recv, &a, IBV_QP_STATE |
				       IBV_QP_TIMEOUT | IBV_QP_SQ_PSN), 0);
	assert_int_equal(qp_state(recv), IBV_QPS_RTS);
	assert_int_equal(ibv_destroy_qp(recv), 0);
	assert_int_equal(ibv_close_xrcd(x), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xrc_traffic),
		cmocka_unit_test(test_xrc_srq_of_other_domain),
		cmocka_unit_test(test_xrc_srq_missing),
		cmocka_unit_test(test_xrc_create_rules),
		cmocka_unit_test(test_xrc_masks),
		cmocka_unit_test(test_xrc_open_qp),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
