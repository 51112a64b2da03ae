/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * UD (GRH image, Q_Key, ibv_create_ah_from_wc and a reply) and UC (SEND and
 * WRITE without ACKs) through the public verbs API.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "te_util.h"

#define T_TMO 3000

static struct ibv_ah *ah_to(struct te_side *from, struct te_side *to)
{
	struct ibv_ah_attr aa;

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = to->gid;
	aa.grh.sgid_index = 0;
	aa.grh.hop_limit = 64;
	aa.port_num = 1;
	return ibv_create_ah(from->pd, &aa);
}

static int ud_send(struct te_side *s, struct ibv_ah *ah, uint32_t qpn,
		   uint32_t qkey, uint64_t wr_id, uint32_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + off, len, s->mr->lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htobe32(0x1234);
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	return ibv_post_send(s->qp, &wr, &bad);
}

static void test_ud_grh_reply(void **state)
{
	struct te_pair p;
	struct te_side *a, *b;
	struct ibv_ah *ah, *back;
	struct ibv_wc wc;

	assert_int_equal(te_pair_open(&p, IBV_QPT_UD), 0);
	assert_int_equal(te_pair_connect(&p, NULL), 0);
	a = &p.s[0];
	b = &p.s[1];
	ah = ah_to(a, b);
	assert_non_null(ah);
	memset(a->buf, 0x5c, 600);
	assert_int_equal(te_post_recv(b, 1, 0, 40 + 600), 0);
	/* wrong Q_Key: dropped */
	assert_int_equal(ud_send(a, ah, b->qp->qp_num, 0x22222222, 9, 0, 600),
			 0);
	assert_int_equal(te_poll(a->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(te_poll_none(b->rcq, 50), 0);
	/* right Q_Key */
	assert_int_equal(ud_send(a, ah, b->qp->qp_num, 0x11111111, 10, 0, 600),
			 0);
	assert_int_equal(te_poll(a->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, 10);
	assert_int_equal(te_poll(b->rcq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.byte_len, 640);
	assert_int_equal(wc.src_qp, a->qp->qp_num);
	assert_true(wc.wc_flags & IBV_WC_GRH);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0x1234);
	assert_memory_equal(b->buf + 40, a->buf, 600);

	/* reply through an AH made from the completion and its GRH */
	back = ibv_create_ah_from_wc(b->pd, &wc, (struct ibv_grh *)b->buf, 1);
	assert_non_null(back);
	assert_int_equal(te_post_recv(a, 2, 4096, 40 + 100), 0);
	memset(b->buf + 8192, 0x7d, 100);
	assert_int_equal(ud_send(b, back, wc.src_qp, 0x11111111, 11, 8192,
				 100), 0);
	assert_int_equal(te_poll(b->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(te_poll(a->rcq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 140);
	assert_int_equal(wc.src_qp, b->qp->qp_num);
	assert_memory_equal(a->buf + 4096 + 40, b->buf + 8192, 100);
	ibv_destroy_ah(back);
	ibv_destroy_ah(ah);
	te_pair_close(&p);
}

static void test_uc_send_write(void **state)
{
	struct te_pair p;
	struct te_side *a, *b;
	struct ibv_wc wc;
	int i;

	assert_int_equal(te_pair_open(&p, IBV_QPT_UC), 0);
	assert_int_equal(te_pair_connect(&p, NULL), 0);
	a = &p.s[0];
	b = &p.s[1];
	for (i = 0; i < 4096; i++)
		a->buf[i] = (uint8_t)(i * 13);
	assert_int_equal(te_post_recv(b, 1, 0, 4096), 0);
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 2, 0, 3000, 0, 0, 0), 0);
	assert_int_equal(te_poll(a->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
	assert_int_equal(te_poll(b->rcq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 3000);
	assert_memory_equal(b->buf, a->buf, 3000);

	assert_int_equal(te_post_send(a, IBV_WR_RDMA_WRITE, 3, 0, 2500,
				      (uintptr_t)b->buf + 10000, b->mr->rkey,
				      0), 0);
	assert_int_equal(te_poll(a->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	/* A WRITE without immediate completes nothing at the responder: a
	 * SEND behind it (UC places in order) says when the data is there,
	 * instead of reading the buffer while the engine writes it. */
	assert_int_equal(te_post_recv(b, 4, 0, 16), 0);
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 5, 0, 16, 0, 0, 0), 0);
	assert_int_equal(te_poll(a->scq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(te_poll(b->rcq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 4);
	assert_memory_equal(b->buf + 10000, a->buf, 2500);
	te_pair_close(&p);
}

int main(void)
{
	int rc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ud_grh_reply),
		cmocka_unit_test(test_uc_send_write),
	};

	rc = cmocka_run_group_tests(tests, NULL, NULL);
	te_close_devices();
	return rc;
}
