/* SPDX-License-Identifier: BSD-2-Clause */
/* ur_config_quiet(): librdmacm's copy of util/config loads without a
 * word, so a bad value is reported once per process (by libibverbs'
 * copy), and still gets its default. A program of its own: the process
 * configuration loads once. */
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

#include "util/config.h"
#include "util/log.h"

static void quiet_load(void **state)
{
	const struct ur_config *c;
	struct ur_capture cap;
	char out[512];

	setenv("UROCE_GSO", "bogus", 1);
	setenv("UROCE_LOG", "loud", 1);
	setenv("UROCE_HARDENED", "enable", 1);
	ur_capture_begin(&cap);
	ur_config_quiet();
	c = ur_config_get();
	ur_capture_end(&cap, out, sizeof(out));
	assert_string_equal(out, "");
	assert_true(c->gso);
	assert_true(c->hardened);
	assert_int_equal(c->log_level, UR_LOG_WARN);
	/* the level is this copy's again after the load */
	assert_int_equal(ur_log_level, UR_LOG_WARN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(quiet_load),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
