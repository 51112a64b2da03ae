/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An RC QP taken RESET -> INIT -> RTR -> RTS towards a peer QP of the same
 * process over loopback (port 1, GID gid, MTU 1024, PSNs 0): the one place
 * the api tests connect QPs. What tests choose differently is in struct
 * rc_conn; rc_conn_default is what rc_pair.h's connect_pair uses.
 */
#ifndef UR_TESTS_API_RC_CONNECT_H
#define UR_TESTS_API_RC_CONNECT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <infiniband/verbs.h>

struct rc_conn {
	unsigned int access;	/* qp_access_flags */
	uint8_t rd_atomic;	/* max_rd_atomic and max_dest_rd_atomic */
	uint8_t timeout;	/* local ACK timeout exponent */
	uint8_t retry_cnt;
	uint8_t rnr_retry;
};

static const struct rc_conn rc_conn_default = {
	.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		  IBV_ACCESS_REMOTE_ATOMIC,
	.rd_atomic = 4,
	.timeout = 10,
	.retry_cnt = 2,
	.rnr_retry = 2,
};

static inline void rc_to_rts(struct ibv_qp *qp, uint32_t dest,
			     const union ibv_gid *gid, const struct rc_conn *c)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = c->access,
	};

	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE |
				       IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	a.max_dest_rd_atomic = c->rd_atomic;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = *gid;
	a.ah_attr.grh.hop_limit = 1;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
				       IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				       IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC |
				       IBV_QP_MIN_RNR_TIMER), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = c->timeout;
	a.retry_cnt = c->retry_cnt;
	a.rnr_retry = c->rnr_retry;
	a.max_rd_atomic = c->rd_atomic;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_SQ_PSN |
				       IBV_QP_MAX_QP_RD_ATOMIC), 0);
}

#endif
