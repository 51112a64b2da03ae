/* SPDX-License-Identifier: BSD-2-Clause */
/* The facts several layers share (util/iba.h, util/addr.h): each had two or
 * three definitions, some with different answers at the edges. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <infiniband/verbs.h>

#include "util/addr.h"
#include "util/iba.h"

static void mtu_codes(void **state)
{
	assert_int_equal(ur_mtu_bytes(IBV_MTU_256), 256);
	assert_int_equal(ur_mtu_bytes(IBV_MTU_512), 512);
	assert_int_equal(ur_mtu_bytes(IBV_MTU_1024), 1024);
	assert_int_equal(ur_mtu_bytes(IBV_MTU_2048), 2048);
	assert_int_equal(ur_mtu_bytes(IBV_MTU_4096), 4096);
	/* not an MTU: 0 (the engine's copy said 1024, obj's said 0) */
	assert_int_equal(ur_mtu_bytes(0), 0);
	assert_int_equal(ur_mtu_bytes(6), 0);
	assert_int_equal(ur_mtu_bytes(-1), 0);
}

/* The device's IB MTU from its link's: the largest whose fullest packet
 * (IP + UDP + BTH + XRCETH + RETH + ImmDt + payload + ICRC) fits. obj/device.c took
 * 80 bytes for every family, 4 short for IPv6: a 4176-byte IPv6 link got
 * 4096 and a WRITE with immediate of 4096 bytes did not fit. */
static void mtu_for_link(void **state)
{
	assert_int_equal(ur_mtu_for_link(65536, false), IBV_MTU_4096);
	assert_int_equal(ur_mtu_for_link(9000, true), IBV_MTU_4096);
	assert_int_equal(ur_mtu_for_link(4184, true), IBV_MTU_4096);
	assert_int_equal(ur_mtu_for_link(4183, true), IBV_MTU_2048);
	assert_int_equal(ur_mtu_for_link(4176, true), IBV_MTU_2048);
	assert_int_equal(ur_mtu_for_link(4164, false), IBV_MTU_4096);
	assert_int_equal(ur_mtu_for_link(4163, false), IBV_MTU_2048);
	assert_int_equal(ur_mtu_for_link(1500, false), IBV_MTU_1024);
	assert_int_equal(ur_mtu_for_link(1500, true), IBV_MTU_1024);
	assert_int_equal(ur_mtu_for_link(1280, true), IBV_MTU_1024);
	assert_int_equal(ur_mtu_for_link(600, false), IBV_MTU_512);
	assert_int_equal(ur_mtu_for_link(0, false), IBV_MTU_256);
}

/* 4.096 us * 2^t: the QP's ACK timeout (engine) and the CM's timeouts
 * (librdmacm) had one formula each. */
static void timeouts(void **state)
{
	assert_int_equal(ur_iba_timeout_ns(0), 4096);
	assert_int_equal(ur_iba_timeout_ns(14), 67108864);	/* 67 ms */
	assert_int_equal(ur_iba_timeout_ns(18), 1073741824);	/* 1.07 s */
	assert_int_equal(ur_iba_timeout_ns(31), 4096ull << 31);
	assert_int_equal(ur_iba_timeout_ns(32), 4096ull << 31);
	assert_int_equal(ur_iba_timeout_ns(255), 4096ull << 31);
}

static union ur_sockaddr addr(const char *s)
{
	union ur_sockaddr a;

	assert_true(ur_addr_parse(s, &a));
	return a;
}

/* The v4-mapped GID was built by hand in librdmacm (twice) and obj/ah.c. */
static void gid_from_ipv4(void **state)
{
	static const uint8_t want[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
					  0xff, 0xff, 10, 1, 2, 3 };
	union ur_sockaddr a = addr("10.1.2.3"), back;
	uint8_t gid[16];

	memset(gid, 0x55, sizeof(gid));
	ur_gid_from_ipv4(&a.in.sin_addr, gid);
	assert_memory_equal(gid, want, 16);
	memset(gid, 0x55, sizeof(gid));
	ur_sockaddr_to_gid(&a, gid);
	assert_memory_equal(gid, want, 16);
	ur_gid_to_sockaddr(gid, 7, &back);
	assert_int_equal(back.sa.sa_family, AF_INET);
	assert_int_equal(back.in.sin_addr.s_addr, a.in.sin_addr.s_addr);
	assert_int_equal(UR_GRH_IPV4_OFF, 20);
}

static void loopback(void **state)
{
	static const char *const yes[] = {
		"127.0.0.1", "127.200.3.4", "::1", "::ffff:127.9.8.7",
	};
	static const char *const no[] = {
		"128.0.0.1", "10.0.0.1", "0.0.0.0", "::", "::2",
		"::ffff:10.1.2.3", "fe80::1",
	};
	union ur_sockaddr a;

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		a = addr(yes[i]);
		if (!ur_addr_is_loopback(&a))
			fail_msg("%s is loopback", yes[i]);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		a = addr(no[i]);
		if (ur_addr_is_loopback(&a))
			fail_msg("%s is not loopback", no[i]);
	}
	a.sa.sa_family = AF_UNIX;
	assert_false(ur_addr_is_loopback(&a));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(mtu_codes),
		cmocka_unit_test(timeouts),
		cmocka_unit_test(mtu_for_link),
		cmocka_unit_test(gid_from_ipv4),
		cmocka_unit_test(loopback),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
