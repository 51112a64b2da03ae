/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RC under fault injection (UROCE_FAULT: drop, duplicate, reorder): every
 * message still arrives exactly once, in order and intact; READs and
 * atomics (replayed from the responder's resources) give the right data.
 * The link's and the engine's counters (UROCE_STATS, written when the
 * devices close) then show that faults of each kind were injected and that
 * the requester retransmitted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "te_util.h"

#define T_TMO 10000

static char stats_path[] = "/tmp/uroce-test-fault-XXXXXX";

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void test_fault_stream(void **state)
{
	struct te_pair p;
	struct te_side *a, *b;
	/* a starved host must not end the stream (TE_TIMEOUT_LOADED):
	 * the faults are recovered by probes, and timeouts show them */
	struct te_conn_opts o = { .timeout = TE_TIMEOUT_LOADED, .retry_cnt = 7,
				  .rnr_retry = 7, .psn = { 0xfffff0, 0x10 } };
	struct ibv_wc wc;
	int i, n = 300, posted = 0, done = 0, got = 0;
	uint32_t len;
	uint64_t *ctr, progress = now_ms();

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
		if (now_ms() - progress > T_TMO)
			fail_msg("no progress for %d ms: SEND %d not completed (%s), message %d not received (%d posted)",
				 T_TMO, done, done < posted ? "posted" : "not posted",
				 got, posted);
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
			progress = now_ms();
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
			progress = now_ms();
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

/* a counter summed over both devices' sections of the UROCE_STATS file */
static uint64_t stat_sum(const char *name)
{
	size_t nl = strlen(name);
	char line[256];
	uint64_t v = 0;
	FILE *f = fopen(stats_path, "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, nl) && line[nl] == ' ')
			v += strtoull(line + nl + 1, NULL, 10);
	fclose(f);
	return v;
}

/* after test_fault_stream: the faults happened and were recovered from */
static void test_faults_counted(void **state)
{
	te_close_devices();	/* writes both devices' counters */
	print_message("injected: %llu dropped, %llu duplicated, %llu reordered; %llu retransmits, %llu timeouts, %llu duplicate requests\n",
		      (unsigned long long)stat_sum("fault_dropped"),
		      (unsigned long long)stat_sum("fault_duplicated"),
		      (unsigned long long)stat_sum("fault_reordered"),
		      (unsigned long long)stat_sum("retransmits"),
		      (unsigned long long)stat_sum("timeouts"),
		      (unsigned long long)stat_sum("duplicate_requests"));
	assert_true(stat_sum("fault_dropped") > 0);
	assert_true(stat_sum("fault_duplicated") > 0);
	assert_true(stat_sum("fault_reordered") > 0);
	/* a dropped request or ACK is recovered by a retransmission, which
	 * the responder sees as a duplicate when only the ACK was lost */
	assert_true(stat_sum("retransmits") > 0);
	assert_true(stat_sum("duplicate_requests") > 0);
}

int main(void)
{
	int rc, fd;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fault_stream),
		cmocka_unit_test(test_faults_counted),
	};

	if (!getenv("UROCE_FAULT"))
		setenv("UROCE_FAULT", UR_TEST_FAULT, 1);
	fd = mkstemp(stats_path);
	if (fd < 0)
		return 1;
	close(fd);
	setenv("UROCE_STATS", stats_path, 1);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	te_close_devices();
	unlink(stats_path);
	return rc;
}
