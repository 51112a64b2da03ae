/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/u32map.h"

static void insert_find_remove(void **state)
{
	struct ur_u32_map m;
	int vals[1000];

	ur_u32_map_init(&m);
	for (uint32_t i = 0; i < 1000; i++)
		assert_int_equal(ur_u32_map_insert(&m, i * 7919 + 1, &vals[i]), 0);
	assert_int_equal(ur_u32_map_insert(&m, 1, &vals[0]), -EEXIST);
	assert_int_equal(ur_u32_map_insert(&m, 0, &vals[0]), -EINVAL);
	for (uint32_t i = 0; i < 1000; i++)
		assert_ptr_equal(ur_u32_map_find(&m, i * 7919 + 1), &vals[i]);
	assert_null(ur_u32_map_find(&m, 2));
	for (uint32_t i = 0; i < 1000; i += 2)
		assert_ptr_equal(ur_u32_map_remove(&m, i * 7919 + 1), &vals[i]);
	for (uint32_t i = 0; i < 1000; i++)
		assert_int_equal(ur_u32_map_contains(&m, i * 7919 + 1), i & 1);
	assert_int_equal(m.live, 500);
	ur_u32_map_fini(&m);
}

static void churn_reuses_tombstones(void **state)
{
	struct ur_u32_map m;
	int v;

	ur_u32_map_init(&m);
	for (uint32_t i = 1; i < 100000; i++) {
		assert_int_equal(ur_u32_map_insert(&m, i, &v), 0);
		assert_ptr_equal(ur_u32_map_remove(&m, i), &v);
	}
	/* Tombstone clean-up must keep the table small under churn. */
	assert_true(m.cap <= 64);
	ur_u32_map_fini(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(insert_find_remove),
		cmocka_unit_test(churn_reuses_tombstones),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
