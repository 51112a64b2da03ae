/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * UROCE_ADDRS and UROCE_NUM_DEVICES, set before the first
 * ibv_get_device_list() (the configuration is read once per process).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <infiniband/verbs.h>

#include "obj/limits.h"

#include <unistd.h>

static struct ibv_device **list;
static int num;
/* GID 0 address, per process so parallel runs do not share a port */
static uint8_t a0[4];

static int setup(void **state)
{
	unsigned int pid = (unsigned int)getpid();
	char addrs[128];

	a0[0] = 127;
	a0[1] = (uint8_t)(200 + pid % 50);
	a0[2] = (uint8_t)(pid >> 8);
	a0[3] = (uint8_t)(pid | 1);
	/* blanks around entries and empty entries are fine */
	snprintf(addrs, sizeof(addrs), " %u.%u.%u.%u, ::1 ,,10.9.8.7",
		 a0[0], a0[1], a0[2], a0[3]);
	setenv("UROCE_ADDRS", addrs, 1);
	setenv("UROCE_NUM_DEVICES", "2", 1);
	setenv("UROCE_LOG", "error", 1);
	list = ibv_get_device_list(&num);
	return list ? 0 : -1;
}

static int teardown(void **state)
{
	ibv_free_device_list(list);
	return 0;
}

static void two_devices(void **state)
{
	assert_int_equal(num, 2);
	assert_string_equal(ibv_get_device_name(list[0]), "uroce0");
	assert_string_equal(ibv_get_device_name(list[1]), "uroce1");
	assert_int_equal(ibv_get_device_index(list[1]), 1);
	assert_null(list[2]);
	assert_true(ibv_get_device_guid(list[0]) !=
		    ibv_get_device_guid(list[1]));
}

static void configured_gids(void **state)
{
	struct ibv_context *ctx;
	struct ibv_gid_entry tbl[UR_MAX_GID];
	union ibv_gid g;
	uint8_t v4[16] = { [10] = 0xff, [11] = 0xff };
	uint8_t v4b[16] = { [10] = 0xff, [11] = 0xff, 10, 9, 8, 7 };
	uint8_t v6[16];
	/* EUI-64 of MAC 02:00:a0[0..3] */
	const uint8_t guid[8] = { 0x00, 0x00, a0[0], 0xff,
				  0xfe, a0[1], a0[2], a0[3] };
	__be64 g64 = ibv_get_device_guid(list[0]);

	memcpy(v4 + 12, a0, 4);
	assert_int_equal(inet_pton(AF_INET6, "::1", v6), 1);
	assert_memory_equal(&g64, guid, 8);

	/* only GID 0 is bound: 10.9.8.7 need not exist on this host */
	ctx = ibv_open_device(list[0]);
	if (!ctx)
		fail_msg("open uroce0: %s", strerror(errno));
	assert_int_equal(ibv_query_gid(ctx, 1, 0, &g), 0);
	assert_memory_equal(g.raw, v4, 16);
	assert_int_equal(ibv_query_gid(ctx, 1, 1, &g), 0);
	assert_memory_equal(g.raw, v6, 16);
	assert_int_equal(ibv_query_gid(ctx, 1, 2, &g), 0);
	assert_memory_equal(g.raw, v4b, 16);
	assert_int_equal(ibv_query_gid_table(ctx, tbl, UR_MAX_GID, 0), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(tbl[i].gid_index, i);
		assert_int_equal(tbl[i].gid_type, IBV_GID_TYPE_ROCE_V2);
	}
	assert_true(tbl[0].ndev_ifindex > 0);	/* loopback */
	assert_int_equal(tbl[2].ndev_ifindex, 0);	/* no such interface */
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void auto_gid_second_device(void **state)
{
	struct ibv_context *ctx = ibv_open_device(list[1]);
	struct ibv_gid_entry tbl[UR_MAX_GID];

	assert_non_null(ctx);
	assert_int_equal(ibv_query_gid_table(ctx, tbl, UR_MAX_GID, 0), 1);
	assert_int_equal(tbl[0].gid.raw[10], 0xff);
	assert_int_equal(tbl[0].gid.raw[12], 127);
	assert_true(tbl[0].gid.raw[13] != 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(two_devices),
		cmocka_unit_test(configured_gids),
		cmocka_unit_test(auto_gid_second_device),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
