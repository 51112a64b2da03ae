/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Skips that ctest reports as skips. A cmocka program exits 0 when a test
 * called skip(), so ctest would count it as passed. Tests call ur_skip()
 * instead and main() returns ur_run_tests(tests): the exit status is then
 * UR_SKIP_RC (every entry's SKIP_RETURN_CODE, tests/CMakeLists.txt) when a
 * test skipped and none failed, so one skipped test marks its whole ctest
 * entry skipped. Tests that skip for different reasons are split into
 * entries with UR_TEST_ONLY / UR_TEST_EXCEPT (cmocka name patterns, from
 * the entry's environment). A plain skip() makes the entry fail.
 */
#ifndef UR_TESTS_UNIT_SKIP_H
#define UR_TESTS_UNIT_SKIP_H

#include <stdlib.h>

#define UR_SKIP_RC 77

static unsigned int ur_skipped;

#define ur_skip(...)                                           \
	do {                                                   \
		print_message("skipped: " __VA_ARGS__);        \
		ur_skipped++;                                  \
		skip();                                        \
	} while (0)

static inline void ur_test_filters(void)
{
	const char *only = getenv("UR_TEST_ONLY");
	const char *except = getenv("UR_TEST_EXCEPT");

	if (only && *only)
		cmocka_set_test_filter(only);
	if (except && *except)
		cmocka_set_skip_filter(except);
}

/* cmocka's result (the number of failed tests) as an exit status: a
 * count could wrap to 0 or hit UR_SKIP_RC. */
static inline int ur_test_exit(int failed)
{
	if (failed)
		return 1;
	return ur_skipped ? UR_SKIP_RC : 0;
}

#define ur_run_tests(tests)                                             \
	(ur_test_filters(),                                             \
	 ur_test_exit(cmocka_run_group_tests(tests, NULL, NULL)))

#endif
