/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Default configuration (UROCE_ADDRS and UROCE_NUM_DEVICES unset): one
 * device with one automatic loopback GID; its attributes, queries, error
 * conventions, and the helpers of misc.c.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <cmocka.h>
#include <infiniband/verbs.h>

#include "obj/limits.h"

static struct ibv_device **list;
static struct ibv_context *ctx;

static int setup(void **state)
{
	int n;

	unsetenv("UROCE_ADDRS");
	unsetenv("UROCE_NUM_DEVICES");
	list = ibv_get_device_list(&n);
	if (!list || n != 1)
		return -1;
	ctx = ibv_open_device(list[0]);
	return ctx ? 0 : -1;
}

static int teardown(void **state)
{
	int rc = ctx ? ibv_close_device(ctx) : -1;

	ibv_free_device_list(list);
	return rc;
}

static void device_list(void **state)
{
	struct ibv_device **l2;
	int n = -1;

	assert_string_equal(ibv_get_device_name(list[0]), "uroce0");
	assert_null(list[1]);
	assert_int_equal(list[0]->node_type, IBV_NODE_CA);
	assert_int_equal(list[0]->transport_type, IBV_TRANSPORT_IB);
	assert_int_equal(ibv_get_device_index(list[0]), 0);
	assert_true(ibv_get_device_guid(list[0]) != 0);
	/* a second list names the same device objects */
	l2 = ibv_get_device_list(&n);
	assert_non_null(l2);
	assert_int_equal(n, 1);
	assert_ptr_equal(l2[0], list[0]);
	ibv_free_device_list(l2);
	/* num_devices is optional */
	l2 = ibv_get_device_list(NULL);
	assert_non_null(l2);
	ibv_free_device_list(l2);
}

static void device_attr(void **state)
{
	struct ibv_device_attr a;

	memset(&a, 0xAB, sizeof(a));
	assert_int_equal(ibv_query_device(ctx, &a), 0);
	assert_memory_equal(a.fw_ver, "uroce ", 6);
	assert_true(a.node_guid == ibv_get_device_guid(list[0]));
	assert_int_equal(a.max_qp_wr, UR_MAX_QP_WR);
	assert_int_equal(a.max_qp, UR_MAX_QP);
	assert_int_equal(a.max_sge, UR_MAX_SGE);
	assert_int_equal(a.max_cqe, UR_MAX_CQE);
	assert_int_equal(a.max_mr, UR_MAX_MR);
	assert_int_equal(a.max_srq_wr, UR_MAX_SRQ_WR);
	assert_int_equal(a.max_qp_rd_atom, UR_MAX_QP_RD_ATOM);
	assert_int_equal(a.max_pkeys, 1);
	assert_int_equal(a.phys_port_cnt, 1);
	assert_int_equal(a.atomic_cap, IBV_ATOMIC_HCA);
	assert_true(a.device_cap_flags & IBV_DEVICE_RC_RNR_NAK_GEN);
	assert_true(a.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	assert_true(a.device_cap_flags & IBV_DEVICE_XRC);
	assert_int_equal(a.vendor_id, UR_VENDOR_ID);
}

static void port_attr(void **state)
{
	struct ibv_port_attr p;

	assert_int_equal(ibv_query_port(ctx, 1, &p), 0);
	assert_int_equal(p.state, IBV_PORT_ACTIVE);
	assert_int_equal(p.phys_state, 5);
	assert_int_equal(p.link_layer, IBV_LINK_LAYER_ETHERNET);
	assert_int_equal(p.active_mtu, IBV_MTU_4096);	/* loopback */
	assert_int_equal(p.max_mtu, IBV_MTU_4096);
	assert_int_equal(p.gid_tbl_len, UR_MAX_GID);
	assert_int_equal(p.pkey_tbl_len, 1);
	assert_int_equal(p.lid, 0);
	assert_true(p.port_cap_flags & IBV_PORT_CM_SUP);
	assert_int_equal(p.max_msg_sz, UR_MAX_MSG_SZ);
	assert_int_equal(ibv_rate_to_mbps(IBV_RATE_25_GBPS) / 1000, 25);

	/* bad port numbers: errno value returned */
	assert_int_equal(ibv_query_port(ctx, 0, &p), EINVAL);
	assert_int_equal(ibv_query_port(ctx, 2, &p), EINVAL);
}

static void gid_default(void **state)
{
	static const uint8_t v4mapped[12] = { [10] = 0xff, [11] = 0xff };
	struct ibv_gid_entry e, tbl[UR_MAX_GID];
	union ibv_gid gid, gid0;

	assert_int_equal(ibv_query_gid(ctx, 1, 0, &gid), 0);
	gid0 = gid;
	assert_memory_equal(gid.raw, v4mapped, sizeof(v4mapped));
	assert_int_equal(gid.raw[12], 127);
	assert_true(gid.raw[13] != 0);	/* 127.0.0.0/16 stays free */

	/* unused slot reads as zero; out of range / bad port are errors */
	assert_int_equal(ibv_query_gid(ctx, 1, 1, &gid), 0);
	assert_true(gid.global.subnet_prefix == 0 &&
		    gid.global.interface_id == 0);
	errno = 0;
	assert_int_equal(ibv_query_gid(ctx, 1, UR_MAX_GID, &gid), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(ibv_query_gid(ctx, 2, 0, &gid), -1);
	assert_int_equal(errno, EINVAL);

	assert_int_equal(ibv_query_gid_ex(ctx, 1, 0, &e, 0), 0);
	assert_int_equal(e.gid_type, IBV_GID_TYPE_ROCE_V2);
	assert_int_equal(e.gid_index, 0);
	assert_int_equal(e.port_num, 1);
	assert_true(e.ndev_ifindex > 0);	/* the loopback interface */
	assert_int_equal(ibv_query_gid_ex(ctx, 1, 1, &e, 0), ENODATA);
	assert_int_equal(ibv_query_gid_ex(ctx, 1, UR_MAX_GID, &e, 0), EINVAL);
	assert_int_equal(ibv_query_gid_ex(ctx, 3, 0, &e, 0), EINVAL);

	assert_int_equal(ibv_query_gid_table(ctx, tbl, UR_MAX_GID, 0), 1);
	assert_memory_equal(tbl[0].gid.raw, gid0.raw, 16);
	assert_int_equal(tbl[0].gid_type, IBV_GID_TYPE_ROCE_V2);
	assert_int_equal(ibv_query_gid_table(ctx, tbl, 0, 0), -EINVAL);
}

static void pkey(void **state)
{
	__be16 pk = 0;

	assert_int_equal(ibv_query_pkey(ctx, 1, 0, &pk), 0);
	assert_int_equal(pk, 0xFFFF);
	assert_int_equal(ibv_get_pkey_index(ctx, 1, htobe16(0xFFFF)), 0);
	errno = 0;
	assert_int_equal(ibv_get_pkey_index(ctx, 1, htobe16(0x7FFF)), -1);
	assert_int_equal(errno, ENOENT);
	errno = 0;
	assert_int_equal(ibv_query_pkey(ctx, 1, 1, &pk), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(ibv_query_pkey(ctx, 9, 0, &pk), -1);
	assert_int_equal(errno, EINVAL);
}

static void second_context(void **state)
{
	struct ibv_context *c2 = ibv_open_device(list[0]);
	struct ibv_port_attr p;

	assert_non_null(c2);
	assert_ptr_not_equal(c2, ctx);
	assert_int_equal(ibv_query_port(c2, 1, &p), 0);
	assert_int_equal(ibv_close_device(c2), 0);
	/* the first context still works after the second closed */
	assert_int_equal(ibv_query_port(ctx, 1, &p), 0);
	assert_int_equal(p.state, IBV_PORT_ACTIVE);
}

static void unsupported(void **state)
{
	errno = 0;
	assert_null(ibv_import_device(ctx->cmd_fd));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_import_pd(ctx, 1));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_reg_dmabuf_mr(NULL, 0, 4096, 0, -1, 0));
	assert_int_equal(errno, EOPNOTSUPP);
}

static void strings_and_rates(void **state)
{
	assert_string_equal(ibv_port_state_str(IBV_PORT_ACTIVE), "PORT_ACTIVE");
	assert_string_equal(ibv_port_state_str(IBV_PORT_DOWN), "PORT_DOWN");
	assert_string_equal(ibv_port_state_str(99), "unknown");
	assert_string_equal(ibv_wc_status_str(IBV_WC_SUCCESS), "success");
	assert_string_equal(ibv_wc_status_str(1000), "unknown");
	assert_string_equal(ibv_node_type_str(IBV_NODE_CA),
			    "InfiniBand channel adapter");
	assert_string_equal(ibv_event_type_str(IBV_EVENT_PORT_ACTIVE),
			    "port active");
	assert_string_equal(ibv_event_type_str(-1), "unknown");

	assert_int_equal(ibv_rate_to_mult(IBV_RATE_10_GBPS), 4);
	assert_int_equal(mult_to_ibv_rate(4), IBV_RATE_10_GBPS);
	assert_int_equal(ibv_rate_to_mult(IBV_RATE_25_GBPS), -1);
	assert_int_equal(mult_to_ibv_rate(3), IBV_RATE_MAX);
	assert_int_equal(ibv_rate_to_mbps(IBV_RATE_2_5_GBPS), 2500);
	assert_int_equal(mbps_to_ibv_rate(2500), IBV_RATE_2_5_GBPS);
	assert_int_equal(mbps_to_ibv_rate(1), IBV_RATE_MAX);
	assert_int_equal(ibv_rate_to_mbps(IBV_RATE_MAX), -1);

	assert_int_equal(ibv_fork_init(), 0);
	assert_int_equal(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
}

static void l2_from_gid(void **state)
{
	struct ibv_ah_attr ah = { 0 };
	uint8_t mac[6];
	uint16_t vid = 0;

	assert_int_equal(ibv_resolve_eth_l2_from_gid(ctx, &ah, mac, &vid),
			 EINVAL);
	ah.is_global = 1;
	assert_int_equal(ibv_query_gid(ctx, 1, 0, &ah.grh.dgid), 0);
	assert_int_equal(ibv_resolve_eth_l2_from_gid(ctx, &ah, mac, &vid), 0);
	assert_int_equal(mac[0], 0x02);
	assert_memory_equal(mac + 2, ah.grh.dgid.raw + 12, 4);
	assert_int_equal(vid, 0xFFFF);
}

/*
 * Another socket holds our automatic address: the next open must pick a new
 * one (engine bind -> EADDRINUSE -> ur_device_reroll_auto_addr) and GID 0
 * must follow. Runs last: it reopens the shared context.
 */
static void auto_addr_in_use(void **state)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
				   .sin_port = htons(4791) };
	union ibv_gid before, after;
	int fd;

	assert_int_equal(ibv_query_gid(ctx, 1, 0, &before), 0);
	assert_int_equal(ibv_close_device(ctx), 0);	/* releases the port */
	ctx = NULL;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	assert_true(fd >= 0);
	memcpy(&sin.sin_addr, before.raw + 12, 4);
	assert_int_equal(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);

	ctx = ibv_open_device(list[0]);
	assert_non_null(ctx);
	assert_int_equal(ibv_query_gid(ctx, 1, 0, &after), 0);
	assert_memory_not_equal(before.raw, after.raw, 16);
	assert_int_equal(after.raw[12], 127);
	assert_true(ibv_get_device_guid(list[0]) != 0);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(device_list),
		cmocka_unit_test(device_attr),
		cmocka_unit_test(port_attr),
		cmocka_unit_test(gid_default),
		cmocka_unit_test(pkey),
		cmocka_unit_test(second_context),
		cmocka_unit_test(unsupported),
		cmocka_unit_test(strings_and_rates),
		cmocka_unit_test(l2_from_gid),
		cmocka_unit_test(auto_addr_in_use),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
