/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A long-lived process's keys never run out (issue 28, item 9): more
 * register/deregister cycles than there are key slots (2^24), with the
 * production slot space and quarantine (params.h), every one succeeds;
 * slots come back, a reissued slot never repeats its last key, and the
 * key space's memory stays bounded. Empty MRs (length 0) take the whole
 * key path without the registration probe's madvise, which is most of a
 * real cycle's cost: about 0.5 us a cycle here instead of 2 us through
 * libibverbs.so.1 (tests/README.md has both), so the test fits in CI.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "obj/params.h"
#include "to_util.h"

/* every slot issued once, then the quarantine's worth again, and more */
#define FULL_CYCLES ((1u << UR_KEY_SLOT_BITS) + 2 * UR_KEY_QUARANTINE)
/* MRs that stay registered throughout, their slots never reissued */
#define FULL_LIVE 16

static char buf[64];

static void test_more_cycles_than_slots(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_device *dev = ut_dev(ctx);
	uint8_t *last = calloc(1u << UR_KEY_SLOT_BITS, 1);	/* key byte */
	uint8_t *seen = calloc((1u << UR_KEY_SLOT_BITS) / 8, 1);
	struct ur_mr *keep[FULL_LIVE], *mr;
	uint32_t reissued = 0, k, slot;
	struct timespec t0, t1;
	struct ur_pd *pd;
	int i;

	assert_non_null(last);
	assert_non_null(seen);
	pd = ut_pd(ctx);
	for (i = 0; i < FULL_LIVE; i++)
		assert_int_equal(ur_mr_reg(pd, buf, 0, (uintptr_t)buf, 0,
					   &keep[i]), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint32_t n = 0; n < FULL_CYCLES; n++) {
		if (ur_mr_reg(pd, buf, 0, (uintptr_t)buf, 0, &mr))
			fail_msg("registration %u of %u failed", n,
				 FULL_CYCLES);
		k = mr->ibmr.rkey;
		slot = k >> 8;
		if (seen[slot >> 3] & (1u << (slot & 7))) {
			reissued++;
			if ((k & 0xFF) == last[slot])
				fail_msg("slot %u reissued with its last key "
					 "0x%08x (cycle %u)", slot, k, n);
		}
		seen[slot >> 3] |= (uint8_t)(1u << (slot & 7));
		last[slot] = (uint8_t)k;
		for (i = 0; i < FULL_LIVE; i++)
			if (slot == keep[i]->ibmr.rkey >> 8)
				fail_msg("a live MR's slot was issued");
		assert_int_equal(ur_mr_dereg(mr), 0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%u cycles in %.1f s, %u reissued slots, quarantine %u\n",
	       FULL_CYCLES, (double)(t1.tv_sec - t0.tv_sec) +
	       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, reissued,
	       dev->keys.len);
	/* more cycles than slots: reissue is what kept it going */
	assert_true(reissued >= FULL_CYCLES - (1u << UR_KEY_SLOT_BITS));
	assert_true(dev->keys.len <= UR_KEY_QUARANTINE + 1);
	assert_int_equal(dev->keys.live, FULL_LIVE);
	assert_true(dev->keys.size <= 2 * (UR_KEY_QUARANTINE + FULL_LIVE + 1));
	for (i = 0; i < FULL_LIVE; i++)
		assert_int_equal(ur_mr_dereg(keep[i]), 0);
	assert_int_equal(ur_pd_free(pd), 0);
	ut_ctx_free(ctx);
	free(last);
	free(seen);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_more_cycles_than_slots),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
