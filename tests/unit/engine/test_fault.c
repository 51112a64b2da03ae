/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RC under fault injection (UROCE_FAULT: drop, duplicate, reorder): every
 * message still arrives exactly once, in order and intact; READs and
 * atomics (replayed from the responder's resources) give the right data.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "te_util.h"

#define T_TMO 10000

static void test_fault_stream(void **state)
{
	struct te_pair p;
	struct te_side *a, *b;
	struct te_conn_opts o = { .timeout = 12, .retry_cnt = 7,
				  .rnr_retry = 7, .psn = { 0xfffff0, 0x10 } };
	struct ibv_wc wc;
	int i, n = 300, posted = 0, done = 0, got = 0;
	uint32_t len;
	uint64_t *ctr;

	assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
	assert_int_equal(te_pair_connect(&p, &o), 0);
	a = &p.s[0];
	b = &p.s[1];
	for (i = 0; i < TE_BUF; i++)
		a->buf[i] = (uint8_t)(i * 31 + (i >> 10));
	/* 8 receive buffers, each reposted only after it was checked */
	for (i = 0; i < 8; i++)
		assert_int_equal(te_post_recv(b, i, (i % 8) * 8192, 8192), 0);
	while (got < n || done < n) {
		while (posted < n && posted - done < 8) {
			len = 1 + (posted * 977) % 6000;
			/* the message carries its own index */
			memcpy(a->buf + (posted % 8) * 8192, &posted, 4);
			assert_int_equal(te_post_send(a, IBV_WR_SEND, posted,
						      (posted % 8) * 8192,
						      len < 4 ? 4 : len, 0, 0,
						      0), 0);
			posted++;
		}
		while (ibv_poll_cq(a->scq, 1, &wc) > 0) {
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, done);
			done++;
		}
		if (got < n && ibv_poll_cq(b->rcq, 1, &wc) > 0) {
			int idx;

			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, got);
			memcpy(&idx, b->buf + (got % 8) * 8192, 4);
			assert_int_equal(idx, got);
			len = 1 + (got * 977) % 6000;
			assert_int_equal(wc.byte_len, len < 4 ? 4 : len);
			if (got + 8 < n)
				assert_int_equal(te_post_recv(b, got + 8,
					(got % 8) * 8192, 8192), 0);
			got++;
		}
	}
	/* The receive buffers are reused, so the contents were checked
	 * through the index; READ and atomics check the bytes. */
	for (i = 0; i < 20; i++) {
		memset(a->buf + 32768, 0, 20000);
		assert_int_equal(te_post_send(a, IBV_WR_RDMA_READ, 5000 + i,
					      32768, 20000,
					      (uintptr_t)b->buf + 4,
					      b->mr->rkey, 0), 0);
		assert_int_equal(te_poll(a->scq, &wc, T_TMO), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 5000 + i);
		assert_memory_equal(a->buf + 32768, b->buf + 4, 20000);
	}
	ctr = (uint64_t *)(b->buf + 60000);
	*ctr = 0;
	for (i = 0; i < 50; i++) {
		struct ibv_sge sge = { (uintptr_t)a->buf + 64000, 8,
				       a->mr->lkey };
		struct ibv_send_wr wr, *bad;
		uint64_t v;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 6000 + i;
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.atomic.remote_addr = (uintptr_t)ctr;
		wr.wr.atomic.rkey = b->mr->rkey;
		wr.wr.atomic.compare_add = 1;
		assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
		assert_int_equal(te_poll(a->scq, &wc, T_TMO), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 6000 + i);
		memcpy(&v, a->buf + 64000, 8);
		assert_int_equal(v, (uint64_t)i);	/* executed once */
	}
	assert_int_equal(*ctr, 50);
	te_pair_close(&p);
}

int main(void)
{
	int rc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fault_stream),
	};

	if (!getenv("UROCE_FAULT"))
		setenv("UROCE_FAULT", UR_TEST_FAULT, 1);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	te_close_devices();
	return rc;
}
