/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma_join_multicast(_ex) / rdma_leave_multicast through the real
 * librdmacm.so.1 and libibverbs.so.1, in one process on its own device:
 * the errors (TCP ids, unbound ids, unicast addresses, bad join
 * attributes, a second join, leaving a group not joined), the
 * MULTICAST_JOIN event (group AV, QPN 0xFFFFFF, Q_Key 0x01234567, the
 * join's context), a SEND from one UD id to the group received by
 * another, a send-only join that is not attached, and a synchronous id.
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>
#include <rdma/rdma_cma.h>

#include "ta_cm.h"

#define TMO_MS 5000
#define LEN 64

static struct rdma_event_channel *ch;

static struct sockaddr_in v4(const char *ip)
{
	struct sockaddr_in a = { .sin_family = AF_INET };

	inet_pton(AF_INET, ip, &a.sin_addr);
	return a;
}

static struct rdma_cm_event *expect(enum rdma_cm_event_type t)
{
	return ta_event(ch, t, TMO_MS);
}

/* A UD id bound to the device (127.0.0.1 binds the first one). */
static struct rdma_cm_id *ud_id(struct rdma_event_channel *c)
{
	struct sockaddr_in a = v4("127.0.0.1");
	struct rdma_cm_id *id;

	assert_int_equal(rdma_create_id(c, &id, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&a), 0);
	return id;
}

static void ud_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_UD;
	ia.cap.max_send_wr = ia.cap.max_recv_wr = 4;
	ia.cap.max_send_sge = ia.cap.max_recv_sge = 1;
	ia.sq_sig_all = 1;
	assert_int_equal(rdma_create_qp(id, NULL, &ia), 0);
}

static void test_errors(void **state)
{
	struct sockaddr_in g = v4("239.9.8.7"), u = v4("127.0.0.1");
	struct rdma_cm_join_mc_attr_ex ax;
	struct rdma_cm_id *tcp, *id;

	assert_int_equal(rdma_create_id(ch, &tcp, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(tcp, (struct sockaddr *)&u), 0);
	assert_int_equal(rdma_join_multicast(tcp, (struct sockaddr *)&g, NULL),
			 -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_destroy_id(tcp), 0);

	/* not bound to a device */
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(rdma_join_multicast(id, (struct sockaddr *)&g, NULL),
			 -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_destroy_id(id), 0);

	id = ud_id(ch);
	/* a unicast address is no group */
	assert_int_equal(rdma_join_multicast(id, (struct sockaddr *)&u, NULL),
			 -1);
	assert_int_equal(errno, EINVAL);
	memset(&ax, 0, sizeof(ax));
	ax.addr = (struct sockaddr *)&g;
	ax.comp_mask = RDMA_CM_JOIN_MC_ATTR_RESERVED;
	assert_int_equal(rdma_join_multicast_ex(id, &ax, NULL), -1);
	assert_int_equal(errno, ENOTSUP);
	ax.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS;	/* no flags */
	assert_int_equal(rdma_join_multicast_ex(id, &ax, NULL), -1);
	assert_int_equal(errno, EINVAL);
	ax.comp_mask |= RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	ax.join_flags = RDMA_MC_JOIN_FLAG_RESERVED;
	assert_int_equal(rdma_join_multicast_ex(id, &ax, NULL), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_leave_multicast(id, (struct sockaddr *)&g), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
	assert_int_equal(rdma_destroy_id(id), 0);
}

static void test_join_send_leave(void **state)
{
	struct sockaddr_in g = v4("239.9.8.6");
	struct rdma_cm_join_mc_attr_ex ax;
	struct rdma_cm_id *rx, *tx;
	struct rdma_cm_event *ev;
	struct rdma_ud_param ud;
	struct ibv_send_wr sw, *bs;
	struct ibv_recv_wr rw, *br;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	static char buf[2][40 + LEN];
	int n, tries;

	rx = ud_id(ch);
	tx = ud_id(ch);
	ud_qp(rx);
	ud_qp(tx);
	assert_int_equal(rdma_join_multicast(rx, (struct sockaddr *)&g, buf), 0);
	ev = expect(RDMA_CM_EVENT_MULTICAST_JOIN);
	assert_ptr_equal(ev->id, rx);
	assert_ptr_equal(ev->param.ud.private_data, buf);
	assert_int_equal(ev->param.ud.qp_num, 0xFFFFFF);
	assert_int_equal(ev->param.ud.qkey, RDMA_UDP_QKEY);
	assert_true(ev->param.ud.ah_attr.is_global);
	assert_int_equal(ev->param.ud.ah_attr.grh.dgid.raw[10], 0xff);
	assert_int_equal(ev->param.ud.ah_attr.grh.dgid.raw[11], 0xff);
	assert_memory_equal(ev->param.ud.ah_attr.grh.dgid.raw + 12,
			    &g.sin_addr, 4);
	ud = ev->param.ud;
	rdma_ack_cm_event(ev);
	assert_int_equal(rdma_join_multicast(rx, (struct sockaddr *)&g, NULL),
			 -1);
	assert_int_equal(errno, EADDRINUSE);

	/* the sender joins send-only: its QP is not attached */
	memset(&ax, 0, sizeof(ax));
	ax.addr = (struct sockaddr *)&g;
	ax.comp_mask = RDMA_CM_JOIN_MC_ATTR_ADDRESS |
		       RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS;
	ax.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	assert_int_equal(rdma_join_multicast_ex(tx, &ax, NULL), 0);
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_MULTICAST_JOIN));
	assert_int_equal(ibv_detach_mcast(tx->qp, &ud.ah_attr.grh.dgid, 0),
			 EINVAL);

	mr = ibv_reg_mr(rx->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	sge = (struct ibv_sge){ (uintptr_t)buf[0], sizeof(buf[0]), mr->lkey };
	rw = (struct ibv_recv_wr){ .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
	assert_int_equal(ibv_post_recv(rx->qp, &rw, &br), 0);
	ah = ibv_create_ah(tx->pd, &ud.ah_attr);
	assert_non_null(ah);
	memset(buf[1], 0x3c, LEN);
	{
		struct ibv_mr *smr = ibv_reg_mr(tx->pd, buf[1], LEN, 0);
		struct ibv_sge ss = { (uintptr_t)buf[1], LEN, smr->lkey };

		memset(&sw, 0, sizeof(sw));
		sw.opcode = IBV_WR_SEND;
		sw.sg_list = &ss;
		sw.num_sge = 1;
		sw.wr.ud.ah = ah;
		sw.wr.ud.remote_qpn = ud.qp_num;
		sw.wr.ud.remote_qkey = ud.qkey;
		assert_int_equal(ibv_post_send(tx->qp, &sw, &bs), 0);
		for (tries = 0; (n = ibv_poll_cq(tx->send_cq, 1, &wc)) == 0 &&
		     tries < 500000; tries++)
			;
		assert_int_equal(n, 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		for (tries = 0; (n = ibv_poll_cq(rx->recv_cq, 1, &wc)) == 0 &&
		     tries < 5000000; tries++)
			;
		assert_int_equal(n, 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.byte_len, 40 + LEN);
		assert_int_equal(wc.src_qp, tx->qp->qp_num);
		assert_int_equal((unsigned char)buf[0][40], 0x3c);
		ibv_dereg_mr(smr);
	}
	/* leave: detached, a second leave finds nothing */
	assert_int_equal(rdma_leave_multicast(rx, (struct sockaddr *)&g), 0);
	assert_int_equal(ibv_detach_mcast(rx->qp, &ud.ah_attr.grh.dgid, 0),
			 EINVAL);
	assert_int_equal(rdma_leave_multicast(rx, (struct sockaddr *)&g), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
	assert_int_equal(rdma_leave_multicast(tx, (struct sockaddr *)&g), 0);
	ibv_destroy_ah(ah);
	ibv_dereg_mr(mr);
	rdma_destroy_qp(rx);
	rdma_destroy_qp(tx);
	assert_int_equal(rdma_destroy_id(rx), 0);
	assert_int_equal(rdma_destroy_id(tx), 0);
}

/* A synchronous id: the join returns with the event in id->event; its
 * destroy ends the join it still holds. */
static void test_sync_join(void **state)
{
	struct sockaddr_in g = v4("239.9.8.5");
	struct rdma_cm_id *id = ud_id(NULL);

	ud_qp(id);
	assert_int_equal(rdma_join_multicast(id, (struct sockaddr *)&g, id), 0);
	assert_non_null(id->event);
	assert_int_equal(id->event->event, RDMA_CM_EVENT_MULTICAST_JOIN);
	assert_ptr_equal(id->event->param.ud.private_data, id);
	rdma_destroy_qp(id);
	assert_int_equal(rdma_destroy_id(id), 0);
}

static int setup(void **state)
{
	ch = rdma_create_event_channel();
	return ch ? 0 : -1;
}

static int teardown(void **state)
{
	rdma_destroy_event_channel(ch);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_join_send_leave),
		cmocka_unit_test(test_sync_join),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
