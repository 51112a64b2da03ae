/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers that need no device state: enum-to-string, rate conversions, fork
 * support, kernel-ABI struct copies, sysfs access, L2 address resolution.
 *
 * Where our world differs from a kernel RDMA stack:
 *  - fork: nothing is pinned or madvise()d, so fork is always safe:
 *    ibv_fork_init() succeeds and ibv_is_fork_initialized() reports
 *    IBV_FORK_UNNEEDED; the (do|dont)fork_range calls do nothing.
 *  - sysfs: the device tree of devtree/ stands for it (and holds
 *    ibv_get_sysfs_path and ibv_read_*sysfs_file).
 *  - Ethernet: there is no MAC behind a GID; ibv_resolve_eth_l2_from_gid()
 *    reports the derived MAC 02:00:<last 4 bytes of the GID> and VLAN id
 *    0xFFFF (no VLAN).
 */
#include <errno.h>
#include <string.h>
#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include "obj/device.h"
#include "util/compiler.h"

/* Exported by libibverbs but not declared in the installed verbs.h. */
UR_EXPORT int ibv_dontfork_range(void *base, size_t size);
UR_EXPORT int ibv_dofork_range(void *base, size_t size);
UR_EXPORT void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
					  struct ib_uverbs_qp_attr *src);
UR_EXPORT void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst,
					  struct ib_uverbs_ah_attr *src);
UR_EXPORT void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
					   struct ib_user_path_rec *src);
UR_EXPORT void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
					 struct ibv_sa_path_rec *src);

/* ------------------------------------------------------------------ */
/* Strings                                                              */
/* ------------------------------------------------------------------ */

static const char *const wc_status_names[] = {
	[IBV_WC_SUCCESS] = "success",
	[IBV_WC_LOC_LEN_ERR] = "local length error",
	[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
	[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
	[IBV_WC_LOC_PROT_ERR] = "local protection error",
	[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
	[IBV_WC_MW_BIND_ERR] = "memory management operation error",
	[IBV_WC_BAD_RESP_ERR] = "bad response error",
	[IBV_WC_LOC_ACCESS_ERR] = "local access error",
	[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
	[IBV_WC_REM_ACCESS_ERR] = "remote access error",
	[IBV_WC_REM_OP_ERR] = "remote operation error",
	[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
	[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
	[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
	[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
	[IBV_WC_REM_ABORT_ERR] = "aborted error",
	[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
	[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
	[IBV_WC_FATAL_ERR] = "fatal error",
	[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
	[IBV_WC_GENERAL_ERR] = "general error",
	[IBV_WC_TM_ERR] = "TM error",
	[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
};

static const char *const node_type_names[] = {
	[IBV_NODE_CA] = "InfiniBand channel adapter",
	[IBV_NODE_SWITCH] = "InfiniBand switch",
	[IBV_NODE_ROUTER] = "InfiniBand router",
	[IBV_NODE_RNIC] = "iWARP NIC",
	[IBV_NODE_USNIC] = "usNIC",
	[IBV_NODE_USNIC_UDP] = "usNIC UDP",
	[IBV_NODE_UNSPECIFIED] = "unspecified",
};

static const char *const port_state_names[] = {
	[IBV_PORT_NOP] = "PORT_NOP",
	[IBV_PORT_DOWN] = "PORT_DOWN",
	[IBV_PORT_INIT] = "PORT_INIT",
	[IBV_PORT_ARMED] = "PORT_ARMED",
	[IBV_PORT_ACTIVE] = "PORT_ACTIVE",
	[IBV_PORT_ACTIVE_DEFER] = "PORT_ACTIVE_DEFER",
};

static const char *const event_type_names[] = {
	[IBV_EVENT_CQ_ERR] = "CQ error",
	[IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
	[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
	[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
	[IBV_EVENT_COMM_EST] = "communication established",
	[IBV_EVENT_SQ_DRAINED] = "send queue drained",
	[IBV_EVENT_PATH_MIG] = "path migrated",
	[IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
	[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
	[IBV_EVENT_PORT_ACTIVE] = "port active",
	[IBV_EVENT_PORT_ERR] = "port error",
	[IBV_EVENT_LID_CHANGE] = "LID change",
	[IBV_EVENT_PKEY_CHANGE] = "P_Key change",
	[IBV_EVENT_SM_CHANGE] = "SM change",
	[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
	[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
	[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
	[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
	[IBV_EVENT_GID_CHANGE] = "GID table change",
	[IBV_EVENT_WQ_FATAL] = "WQ fatal",
};

static const char *name_of(const char *const *tbl, size_t n, unsigned int v,
			   const char *unknown)
{
	return v < n && tbl[v] ? tbl[v] : unknown;
}

UR_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	return name_of(wc_status_names, UR_ARRAY_SIZE(wc_status_names),
		       (unsigned int)status, "unknown");
}

UR_EXPORT const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	return name_of(node_type_names, UR_ARRAY_SIZE(node_type_names),
		       (unsigned int)node_type, "unknown");
}

UR_EXPORT const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	return name_of(port_state_names, UR_ARRAY_SIZE(port_state_names),
		       (unsigned int)port_state, "unknown");
}

UR_EXPORT const char *ibv_event_type_str(enum ibv_event_type event)
{
	return name_of(event_type_names, UR_ARRAY_SIZE(event_type_names),
		       (unsigned int)event, "unknown");
}

/* ------------------------------------------------------------------ */
/* Rates                                                                */
/* ------------------------------------------------------------------ */

/* mult: multiple of 2.5 Gb/s (0 = not expressible); mbps: signalling rate. */
static const struct {
	enum ibv_rate rate;
	int mult;
	int mbps;
} rate_tbl[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 },	    { IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 },	    { IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },    { IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },    { IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 },  { IBV_RATE_14_GBPS, 0, 14062 },
	{ IBV_RATE_56_GBPS, 0, 56250 },	    { IBV_RATE_112_GBPS, 0, 112500 },
	{ IBV_RATE_168_GBPS, 0, 168750 },   { IBV_RATE_25_GBPS, 0, 25781 },
	{ IBV_RATE_100_GBPS, 0, 103125 },   { IBV_RATE_200_GBPS, 0, 206250 },
	{ IBV_RATE_300_GBPS, 0, 309375 },   { IBV_RATE_28_GBPS, 0, 28125 },
	{ IBV_RATE_50_GBPS, 0, 53125 },	    { IBV_RATE_400_GBPS, 0, 425000 },
	{ IBV_RATE_600_GBPS, 0, 637500 },   { IBV_RATE_800_GBPS, 0, 850000 },
	{ IBV_RATE_1200_GBPS, 0, 1275000 },
};

UR_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
	for (size_t i = 0; i < UR_ARRAY_SIZE(rate_tbl); i++)
		if (rate_tbl[i].rate == rate && rate_tbl[i].mult)
			return rate_tbl[i].mult;
	return -1;
}

UR_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
	for (size_t i = 0; i < UR_ARRAY_SIZE(rate_tbl); i++)
		if (mult && rate_tbl[i].mult == mult)
			return rate_tbl[i].rate;
	return IBV_RATE_MAX;
}

UR_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
	for (size_t i = 0; i < UR_ARRAY_SIZE(rate_tbl); i++)
		if (rate_tbl[i].rate == rate)
			return rate_tbl[i].mbps;
	return -1;
}

UR_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < UR_ARRAY_SIZE(rate_tbl); i++)
		if (rate_tbl[i].mbps == mbps)
			return rate_tbl[i].rate;
	return IBV_RATE_MAX;
}

/* ------------------------------------------------------------------ */
/* Fork                                                                 */
/* ------------------------------------------------------------------ */

UR_EXPORT int ibv_fork_init(void)
{
	return 0;
}

UR_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

UR_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	return 0;
}

UR_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	return 0;
}

/* ------------------------------------------------------------------ */
/* Kernel ABI copies (field by field; the layouts differ)               */
/* ------------------------------------------------------------------ */

UR_EXPORT void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst,
					  struct ib_uverbs_ah_attr *src)
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid.raw));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;
	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

UR_EXPORT void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
					  struct ib_uverbs_qp_attr *src)
{
	memset(dst, 0, sizeof(*dst));
	dst->qp_state = src->qp_state;
	dst->cur_qp_state = src->cur_qp_state;
	dst->path_mtu = src->path_mtu;
	dst->path_mig_state = src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = src->qp_access_flags;
	dst->cap.max_send_wr = src->max_send_wr;
	dst->cap.max_recv_wr = src->max_recv_wr;
	dst->cap.max_send_sge = src->max_send_sge;
	dst->cap.max_recv_sge = src->max_recv_sge;
	dst->cap.max_inline_data = src->max_inline_data;
	ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

UR_EXPORT void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
					   struct ib_user_path_rec *src)
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid.raw));
	memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid.raw));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = (int)src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = (int)src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = (uint8_t)src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

UR_EXPORT void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
					 struct ibv_sa_path_rec *src)
{
	memset(dst, 0, sizeof(*dst));
	memcpy(dst->dgid, src->dgid.raw, sizeof(dst->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(dst->sgid));
	dst->dlid = src->dlid;
	dst->slid = src->slid;
	dst->raw_traffic = (__u32)src->raw_traffic;
	dst->flow_label = src->flow_label;
	dst->hop_limit = src->hop_limit;
	dst->traffic_class = src->traffic_class;
	dst->reversible = (__u32)src->reversible;
	dst->numb_path = src->numb_path;
	dst->pkey = src->pkey;
	dst->sl = src->sl;
	dst->mtu_selector = src->mtu_selector;
	dst->mtu = src->mtu;
	dst->rate_selector = src->rate_selector;
	dst->rate = src->rate;
	dst->packet_life_time_selector = src->packet_life_time_selector;
	dst->packet_life_time = src->packet_life_time;
	dst->preference = src->preference;
}

/* ------------------------------------------------------------------ */
/* Addressing and QP properties                                         */
/* ------------------------------------------------------------------ */

UR_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
					  struct ibv_ah_attr *attr,
					  uint8_t eth_mac[6], uint16_t *vid)
{
	if (!attr->is_global) {
		errno = EINVAL;
		return EINVAL;
	}
	ur_gid_to_mac(&attr->grh.dgid, eth_mac);
	if (vid)
		*vid = 0xFFFF;
	return 0;
}

/*
 * Data reaches memory through memcpy(), which does not promise to write
 * bytes in ascending order, so in-order placement is never guaranteed.
 */
UR_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp,
					 enum ibv_wr_opcode op, uint32_t flags)
{
	return 0;
}
