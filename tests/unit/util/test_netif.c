/* SPDX-License-Identifier: BSD-2-Clause */
/* util/netif.c: the interface and MTU of an address, the one answer the
 * device (its IB MTU) and the link (its datagram size) share. Lookups
 * only, nothing is sent. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

#include "util/netif.h"

static union ur_sockaddr addr(const char *s)
{
	union ur_sockaddr a;

	assert_true(ur_addr_parse(s, &a));
	return a;
}

static uint32_t lo_mtu(void)
{
	unsigned int mtu = 0;
	FILE *f = fopen("/sys/class/net/lo/mtu", "r");

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%u", &mtu), 1);
	fclose(f);
	return mtu;
}

/* Every loopback address is on lo, also those lo does not list. */
static void loopback_is_lo(void **state)
{
	static const char *const loop[] = {
		"127.0.0.1", "127.77.3.9", "::ffff:127.0.0.2",
	};
	unsigned int lo = if_nametoindex("lo");
	uint32_t mtu;
	unsigned int ifindex;

	assert_int_not_equal(lo, 0);
	for (size_t i = 0; i < sizeof(loop) / sizeof(loop[0]); i++) {
		union ur_sockaddr a = addr(loop[i]);

		mtu = 0;
		ifindex = 0;
		assert_int_equal(ur_netif_of_addr(&a, &mtu, &ifindex), 0);
		assert_int_equal(mtu, lo_mtu());
		assert_int_equal(ifindex, lo);
	}
}

static void no_interface(void **state)
{
	static const char *const none[] = { "0.0.0.0", "192.0.2.77", "2001:db8::5" };
	uint32_t mtu;
	unsigned int ifindex;

	for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
		union ur_sockaddr a = addr(none[i]);

		mtu = 0;
		ifindex = 99;
		assert_int_equal(ur_netif_of_addr(&a, &mtu, &ifindex), -ENODEV);
		assert_int_equal(mtu, UR_NETIF_DEFAULT_MTU);
		assert_int_equal(ifindex, 0);
	}
	/* ifindex is optional */
	{
		union ur_sockaddr a = addr("192.0.2.77");

		assert_int_equal(ur_netif_of_addr(&a, &mtu, NULL), -ENODEV);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(loopback_is_lo),
		cmocka_unit_test(no_interface),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
