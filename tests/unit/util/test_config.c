/* SPDX-License-Identifier: BSD-2-Clause */
/* util/config.c and util/parse.c: every UROCE_* variable's defaults,
 * bounds, and the message and fallback for a bad value. */
#include <errno.h>
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
#include "util/parse.h"

static const char *const all_vars[] = {
	"UROCE_ADDRS", "UROCE_NUM_DEVICES", "UROCE_LOG", "UROCE_STATS",
	"UROCE_PCAP", "UROCE_FAULT", "UROCE_BUSY_POLL", "UROCE_GSO",
	"UROCE_LAZY_DOORBELL", "UROCE_HARDENED", "UROCE_SPIN_US",
	"UROCE_QUIET_US", "UROCE_RT_PRIO", "UROCE_POLL_YIELD",
	"UROCE_WAIT_YIELD", "UROCE_PACE", "UROCE_RX_SHARDS",
};

static char messages[4096];

static int clear_env(void **state)
{
	for (size_t i = 0; i < sizeof(all_vars) / sizeof(all_vars[0]); i++)
		unsetenv(all_vars[i]);
	return 0;
}

/* ur_config_parse() with stderr captured into messages[]. */
static void parse_capturing(struct ur_config *c)
{
	struct ur_capture cap;

	ur_capture_begin(&cap);
	ur_config_parse(c);
	ur_capture_end(&cap, messages, sizeof(messages));
}

static void assert_said(const char *what)
{
	if (!strstr(messages, what))
		fail_msg("no \"%s\" in \"%s\"", what, messages);
}

static void defaults(void **state)
{
	struct ur_config c;

	parse_capturing(&c);
	assert_string_equal(messages, "");
	assert_int_equal(c.num_devices, 1);
	assert_int_equal(c.num_addrs, 0);
	assert_int_equal(c.log_level, UR_LOG_WARN);
	assert_int_equal(c.stats, UR_STATS_OFF);
	assert_null(c.stats_path);
	assert_null(c.pcap);
	assert_null(c.fault);
	assert_false(c.busy_poll);
	assert_false(c.poll_yield);
	assert_true(c.wait_yield);
	assert_true(c.gso);
	assert_true(c.lazy_doorbell);
	assert_true(c.pace);
	assert_false(c.hardened);
	assert_true(c.spin_ns == UR_CONFIG_DEFAULT);
	assert_true(c.quiet_ns == UR_CONFIG_DEFAULT);
	assert_int_equal(c.rt_prio, 0);
	ur_config_release(&c);
}

static void empty_is_unset(void **state)
{
	struct ur_config c;

	for (size_t i = 0; i < sizeof(all_vars) / sizeof(all_vars[0]); i++)
		setenv(all_vars[i], "", 1);
	parse_capturing(&c);
	assert_string_equal(messages, "");
	assert_true(c.gso);
	assert_true(c.lazy_doorbell);
	assert_true(c.pace);
	assert_false(c.poll_yield);
	assert_true(c.wait_yield);
	assert_true(c.quiet_ns == UR_CONFIG_DEFAULT);
	assert_int_equal(c.stats, UR_STATS_OFF);
	assert_null(c.pcap);
	assert_null(c.fault);
	ur_config_release(&c);
}

static void booleans(void **state)
{
	static const char *const on[] = { "1", "yes", "TRUE", "On" };
	static const char *const off[] = { "0", "no", "false", "OFF" };
	struct ur_config c;

	for (size_t i = 0; i < 4; i++) {
		setenv("UROCE_BUSY_POLL", on[i], 1);
		setenv("UROCE_GSO", off[i], 1);
		setenv("UROCE_LAZY_DOORBELL", off[i], 1);
		setenv("UROCE_HARDENED", on[i], 1);
		setenv("UROCE_POLL_YIELD", on[i], 1);
		setenv("UROCE_WAIT_YIELD", off[i], 1);
		setenv("UROCE_PACE", off[i], 1);
		parse_capturing(&c);
		assert_string_equal(messages, "");
		assert_true(c.busy_poll);
		assert_true(c.poll_yield);
		assert_false(c.wait_yield);
		assert_false(c.gso);
		assert_false(c.lazy_doorbell);
		assert_false(c.pace);
		assert_true(c.hardened);
		ur_config_release(&c);
	}
	setenv("UROCE_HARDENED", "no", 1);
	parse_capturing(&c);
	assert_false(c.hardened);
	ur_config_release(&c);
}

/* A bad boolean: the message names variable, value and the spellings,
 * and the default stays. */
static void bad_boolean_keeps_default(void **state)
{
	struct ur_config c;

	setenv("UROCE_GSO", "nope", 1);
	setenv("UROCE_BUSY_POLL", "2", 1);
	parse_capturing(&c);
	assert_true(c.gso);
	assert_false(c.busy_poll);
	assert_said("UROCE_GSO=nope: want " UR_PARSE_BOOL_WORDS
		    "; using the default (on)");
	assert_said("UROCE_BUSY_POLL=2: want " UR_PARSE_BOOL_WORDS
		    "; using the default (off)");
	ur_config_release(&c);
}

/* Hardened mode fails safe: a value meant to enable it that we do not
 * understand enables it. */
static void bad_hardened_is_on(void **state)
{
	struct ur_config c;

	setenv("UROCE_HARDENED", "enable", 1);
	parse_capturing(&c);
	assert_true(c.hardened);
	assert_said("UROCE_HARDENED=enable: want " UR_PARSE_BOOL_WORDS
		    "; taking it as on");
	ur_config_release(&c);
}

static void numbers_in_range(void **state)
{
	struct ur_config c;

	setenv("UROCE_SPIN_US", "250", 1);
	setenv("UROCE_QUIET_US", "1000000", 1);
	setenv("UROCE_RT_PRIO", "99", 1);
	setenv("UROCE_NUM_DEVICES", "16", 1);
	parse_capturing(&c);
	assert_string_equal(messages, "");
	assert_int_equal(c.spin_ns, 250000);
	assert_int_equal(c.quiet_ns, 1000000000ull);
	assert_int_equal(c.rt_prio, 99);
	assert_int_equal(c.num_devices, 16);
	ur_config_release(&c);
	setenv("UROCE_QUIET_US", "0", 1);
	setenv("UROCE_NUM_DEVICES", "1", 1);
	parse_capturing(&c);
	assert_int_equal(c.quiet_ns, 0);
	assert_int_equal(c.num_devices, 1);
	ur_config_release(&c);
}

static void bad_numbers_keep_default(void **state)
{
	static const char *const bad[] = {
		"-1", "12abc", "0x10", " 5", "1000001",
		"99999999999999999999999",
	};
	struct ur_config c;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("UROCE_QUIET_US", bad[i], 1);
		parse_capturing(&c);
		assert_true(c.quiet_ns == UR_CONFIG_DEFAULT);
		assert_said("UROCE_QUIET_US=");
		assert_said(bad[i]);
		assert_said(": want a whole number 0..1000000; using the "
			    "default");
		ur_config_release(&c);
	}
	setenv("UROCE_QUIET_US", "7", 1);
	setenv("UROCE_RT_PRIO", "100", 1);
	setenv("UROCE_NUM_DEVICES", "0", 1);
	setenv("UROCE_SPIN_US", "x", 1);
	parse_capturing(&c);
	assert_int_equal(c.quiet_ns, 7000);
	assert_int_equal(c.rt_prio, 0);
	assert_int_equal(c.num_devices, 1);
	assert_true(c.spin_ns == UR_CONFIG_DEFAULT);
	assert_said("UROCE_RT_PRIO=100: want a whole number 0..99; using the "
		    "default (0)");
	assert_said("UROCE_NUM_DEVICES=0: want a whole number 1..16; using "
		    "the default (1)");
	assert_said("UROCE_SPIN_US=x: want");
	ur_config_release(&c);
	setenv("UROCE_NUM_DEVICES", "17", 1);
	parse_capturing(&c);
	assert_int_equal(c.num_devices, 1);
	assert_said("UROCE_NUM_DEVICES=17");
	ur_config_release(&c);
}

static void log_level(void **state)
{
	struct ur_config c;

	setenv("UROCE_LOG", "DEBUG", 1);
	parse_capturing(&c);
	assert_int_equal(c.log_level, UR_LOG_DEBUG);
	ur_config_release(&c);
	setenv("UROCE_LOG", "error", 1);
	parse_capturing(&c);
	assert_int_equal(c.log_level, UR_LOG_ERR);
	ur_config_release(&c);
	setenv("UROCE_LOG", "loud", 1);
	parse_capturing(&c);
	assert_int_equal(c.log_level, UR_LOG_WARN);
	assert_said("UROCE_LOG=loud: want error, warn, info or debug; using "
		    "the default (warn)");
	ur_config_release(&c);
}

static void stats_pcap_fault(void **state)
{
	struct ur_config c;

	setenv("UROCE_STATS", "1", 1);
	parse_capturing(&c);
	assert_int_equal(c.stats, UR_STATS_STDERR);
	assert_null(c.stats_path);
	ur_config_release(&c);
	setenv("UROCE_STATS", "off", 1);
	parse_capturing(&c);
	assert_int_equal(c.stats, UR_STATS_OFF);
	ur_config_release(&c);
	setenv("UROCE_STATS", "/tmp/s.txt", 1);
	setenv("UROCE_PCAP", "/tmp/cap-%p.pcap", 1);
	setenv("UROCE_FAULT", "seed=7,drop=0.1", 1);
	parse_capturing(&c);
	assert_string_equal(messages, "");
	assert_int_equal(c.stats, UR_STATS_FILE);
	assert_string_equal(c.stats_path, "/tmp/s.txt");
	assert_string_equal(c.pcap, "/tmp/cap-%p.pcap");
	assert_string_equal(c.fault, "seed=7,drop=0.1");
	/* copies: a later setenv() does not change the configuration */
	setenv("UROCE_PCAP", "/elsewhere", 1);
	assert_string_equal(c.pcap, "/tmp/cap-%p.pcap");
	ur_config_release(&c);
}

static void addrs(void **state)
{
	struct ur_config c;

	setenv("UROCE_ADDRS", " 10.0.0.1 ,, ::1", 1);
	parse_capturing(&c);
	assert_string_equal(messages, "");
	assert_int_equal(c.num_addrs, 2);
	assert_false(c.addrs_bad);
	assert_int_equal(c.addrs[0].sa.sa_family, AF_INET);
	assert_int_equal(c.addrs[1].sa.sa_family, AF_INET6);
	ur_config_release(&c);
}

/*
 * regress_bad_addrs_silent: an UROCE_ADDRS entry that is not an address
 * was skipped with a warning, and a list with none left ran on a private
 * 127.X.Y.Z that reached no peer. Now it is an error that names the entry,
 * and addrs_bad makes obj/device.c create no device.
 */
static void test_regress_bad_addrs_silent(void **state)
{
	static const char *const bad[] = {
		"1.2.3.4.5", "nothing", "10.0.0.1, bogus, ::1", "127.0.0.256",
	};
	struct ur_config c;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("UROCE_ADDRS", bad[i], 1);
		parse_capturing(&c);
		assert_true(c.addrs_bad);
		assert_said("no uroce device is created");
		ur_config_release(&c);
	}
	assert_said("UROCE_ADDRS: '127.0.0.256' is not an IPv4 or IPv6 address");
	setenv("UROCE_ADDRS", "10.0.0.1, bogus, ::1", 1);
	parse_capturing(&c);
	assert_said("UROCE_ADDRS: 'bogus' is not an IPv4 or IPv6 address");
	ur_config_release(&c);
}

/*
 * regress_addrs_over_limit: a 17th UROCE_ADDRS entry was dropped with no
 * word, so a peer addressing it by GID index 16 reached nobody. More
 * entries than the GID table holds is an error like a bad entry.
 */
static void test_regress_addrs_over_limit(void **state)
{
	char list[UR_CONFIG_MAX_ADDRS * 16 + 16] = "";
	struct ur_config c;
	size_t len = 0;

	for (unsigned int i = 1; i <= UR_CONFIG_MAX_ADDRS; i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len,
					"%s10.0.0.%u", i > 1 ? "," : "", i);
	setenv("UROCE_ADDRS", list, 1);
	parse_capturing(&c);
	assert_string_equal(messages, "");
	assert_false(c.addrs_bad);
	assert_int_equal(c.num_addrs, UR_CONFIG_MAX_ADDRS);
	ur_config_release(&c);

	/* one more, and an empty entry after it that does not count */
	snprintf(list + len, sizeof(list) - len, ", 10.0.0.99,");
	setenv("UROCE_ADDRS", list, 1);
	parse_capturing(&c);
	assert_true(c.addrs_bad);
	assert_said("UROCE_ADDRS: 17 addresses, but a device has at most 16 "
		    "GIDs; no uroce device is created");
	ur_config_release(&c);
}

static void parse_bool_strict(void **state)
{
	bool b = true;

	assert_int_equal(ur_parse_bool("0", &b), 0);
	assert_false(b);
	assert_int_equal(ur_parse_bool("YeS", &b), 0);
	assert_true(b);
	b = false;
	assert_int_equal(ur_parse_bool("", &b), -EINVAL);
	assert_int_equal(ur_parse_bool("1 ", &b), -EINVAL);
	assert_int_equal(ur_parse_bool("y", &b), -EINVAL);
	assert_int_equal(ur_parse_bool("10", &b), -EINVAL);
	assert_int_equal(ur_parse_bool(NULL, &b), -EINVAL);
	assert_false(b);	/* untouched on error */
}

static void parse_uint_strict(void **state)
{
	uint64_t x = 42;

	assert_int_equal(ur_parse_uint("0", 0, 10, &x), 0);
	assert_int_equal(x, 0);
	assert_int_equal(ur_parse_uint("18446744073709551615", 0, UINT64_MAX,
				       &x), 0);
	assert_int_equal(x, UINT64_MAX);
	x = 42;
	assert_int_equal(ur_parse_uint("18446744073709551616", 0, UINT64_MAX,
				       &x), -ERANGE);
	assert_int_equal(ur_parse_uint("11", 0, 10, &x), -ERANGE);
	assert_int_equal(ur_parse_uint("4", 5, 10, &x), -ERANGE);
	assert_int_equal(ur_parse_uint("", 0, 10, &x), -EINVAL);
	assert_int_equal(ur_parse_uint("+1", 0, 10, &x), -EINVAL);
	assert_int_equal(ur_parse_uint("1e3", 0, 10000, &x), -EINVAL);
	assert_int_equal(x, 42);
}

/* The process configuration is read once and applies UROCE_LOG. */
static void get_once_applies_log(void **state)
{
	const struct ur_config *c;

	setenv("UROCE_LOG", "error", 1);
	setenv("UROCE_QUIET_US", "3", 1);
	c = ur_config_get();
	assert_int_equal(ur_log_level, UR_LOG_ERR);
	assert_int_equal(c->quiet_ns, 3000);
	setenv("UROCE_QUIET_US", "4", 1);
	assert_ptr_equal(ur_config_get(), c);
	assert_int_equal(c->quiet_ns, 3000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(defaults, clear_env),
		cmocka_unit_test_setup(empty_is_unset, clear_env),
		cmocka_unit_test_setup(booleans, clear_env),
		cmocka_unit_test_setup(bad_boolean_keeps_default, clear_env),
		cmocka_unit_test_setup(bad_hardened_is_on, clear_env),
		cmocka_unit_test_setup(numbers_in_range, clear_env),
		cmocka_unit_test_setup(bad_numbers_keep_default, clear_env),
		cmocka_unit_test_setup(log_level, clear_env),
		cmocka_unit_test_setup(stats_pcap_fault, clear_env),
		cmocka_unit_test_setup(addrs, clear_env),
		cmocka_unit_test_setup(test_regress_bad_addrs_silent, clear_env),
		cmocka_unit_test_setup(test_regress_addrs_over_limit, clear_env),
		cmocka_unit_test(parse_bool_strict),
		cmocka_unit_test(parse_uint_strict),
		cmocka_unit_test_setup(get_once_applies_log, clear_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
