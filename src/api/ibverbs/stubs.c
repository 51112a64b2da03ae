/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Symbols that exist so that binaries and rdma-core providers load, and that
 * report "not supported" without crashing.
 *
 * Who defines which exported verb (libibverbs.map lists them all):
 *  - device.c: device list, names, GUID, index, open/close,
 *    query_device(_ex), query_port, query_gid(_ex/_table), query_gid_type,
 *    query_pkey, get_pkey_index.
 *  - misc.c: *_str helpers, rate helpers, fork helpers,
 *    ibv_copy_*_kern, sysfs, ibv_resolve_eth_l2_from_gid,
 *    ibv_query_qp_data_in_order.
 *  - verbs_pd_mr.c: ibv_alloc_pd, ibv_dealloc_pd, ibv_reg_mr,
 *    ibv_reg_mr_iova, ibv_reg_mr_iova2, ibv_rereg_mr, ibv_dereg_mr,
 *    advise_mr op.
 *  - verbs_mw.c: alloc_mw/dealloc_mw ops.
 *  - verbs_cq.c: ibv_create_comp_channel, ibv_destroy_comp_channel,
 *    ibv_create_cq, create_cq_ex op, ibv_resize_cq, ibv_destroy_cq,
 *    ibv_get_cq_event, ibv_ack_cq_events, poll/notify ops.
 *  - verbs_srq.c: ibv_create_srq, create_srq_ex op, ibv_modify_srq,
 *    ibv_query_srq, ibv_destroy_srq, post_srq_recv op.
 *  - verbs_ah.c: ibv_create_ah, ibv_create_ah_from_wc,
 *    ibv_init_ah_from_wc, ibv_destroy_ah.
 *  - verbs_async.c: ibv_get_async_event, ibv_ack_async_event.
 *  - verbs_qp.c: ibv_create_qp, create_qp_ex op, ibv_qp_to_qp_ex,
 *    ibv_query_qp, ibv_modify_qp, ibv_destroy_qp, ibv_query_ece,
 *    ibv_set_ece.
 *  - verbs_post.c: post_send/post_recv/bind_mw ops, ibv_wr_start/
 *    complete/abort (obj/post.c holds the ibv_wr_* builders).
 *  - compat.c: the IBVERBS_1.0 compatibility versions.
 *  - gsi.c: uroce_gsi_claim (UROCE_PRIVATE_1, for our librdmacm).
 *  - verbs_mcast.c: ibv_attach_mcast, ibv_detach_mcast.
 *  - here: IBVERBS_PRIVATE_34 (the provider interface: providers such as
 *    libmlx5 and libefa are loaded by perftest/UCX and call
 *    verbs_register_driver_34 from a constructor; we accept and ignore it,
 *    no provider is ever used) and the public verbs we do not implement:
 *    import/unimport (needs a kernel context to share), dma-buf MRs
 *    (needs kernel dma-buf).
 *    Verbs that are inline in verbs.h (XRC, flows, WQs, RWQ indirection
 *    tables, counters, open_qp ...) go through context slots, which
 *    ops.c fills: uroce's ops where we implement the verb, otherwise a
 *    default that fails with EOPNOTSUPP.
 *
 * int-returning private functions return EOPNOTSUPP (they follow the
 * errno-value convention), pointer-returning ones NULL with errno set.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "api/ibverbs/api_priv.h"
#include "util/compiler.h"

/* ------------------------------------------------------------------ */
/* IBVERBS_PRIVATE_34                                                   */
/* ------------------------------------------------------------------ */

/*
 * The argument lists of the ibv_cmd_* helpers do not matter: nothing can
 * reach them with a real object (no provider context is ever created), and
 * on x86-64/aarch64 a callee that ignores its arguments is ABI-safe.
 */
#define UR_STUB_INT(name)                                                     \
	UR_EXPORT int name(void);                                              \
	int name(void)                                                         \
	{                                                                      \
		return EOPNOTSUPP;                                             \
	}

#define UR_STUB_PTR(name)                                                     \
	UR_EXPORT void *name(void);                                            \
	void *name(void)                                                       \
	{                                                                      \
		errno = EOPNOTSUPP;                                            \
		return NULL;                                                   \
	}

#define UR_STUB_VOID(name)                                                    \
	UR_EXPORT void name(void);                                             \
	void name(void)                                                        \
	{                                                                      \
	}

UR_STUB_INT(ibv_cmd_advise_mr)
UR_STUB_INT(ibv_cmd_alloc_dm)
UR_STUB_INT(ibv_cmd_alloc_mw)
UR_STUB_INT(ibv_cmd_alloc_pd)
UR_STUB_INT(ibv_cmd_attach_mcast)
UR_STUB_INT(ibv_cmd_close_xrcd)
UR_STUB_INT(ibv_cmd_create_ah)
UR_STUB_INT(ibv_cmd_create_counters)
UR_STUB_INT(ibv_cmd_create_cq)
UR_STUB_INT(ibv_cmd_create_cq_ex)
UR_STUB_INT(ibv_cmd_create_flow)
UR_STUB_INT(ibv_cmd_create_flow_action_esp)
UR_STUB_INT(ibv_cmd_create_qp)
UR_STUB_INT(ibv_cmd_create_qp_ex)
UR_STUB_INT(ibv_cmd_create_qp_ex2)
UR_STUB_INT(ibv_cmd_create_rwq_ind_table)
UR_STUB_INT(ibv_cmd_create_srq)
UR_STUB_INT(ibv_cmd_create_srq_ex)
UR_STUB_INT(ibv_cmd_create_wq)
UR_STUB_INT(ibv_cmd_dealloc_mw)
UR_STUB_INT(ibv_cmd_dealloc_pd)
UR_STUB_INT(ibv_cmd_dereg_mr)
UR_STUB_INT(ibv_cmd_destroy_ah)
UR_STUB_INT(ibv_cmd_destroy_counters)
UR_STUB_INT(ibv_cmd_destroy_cq)
UR_STUB_INT(ibv_cmd_destroy_flow)
UR_STUB_INT(ibv_cmd_destroy_flow_action)
UR_STUB_INT(ibv_cmd_destroy_qp)
UR_STUB_INT(ibv_cmd_destroy_rwq_ind_table)
UR_STUB_INT(ibv_cmd_destroy_srq)
UR_STUB_INT(ibv_cmd_destroy_wq)
UR_STUB_INT(ibv_cmd_detach_mcast)
UR_STUB_INT(ibv_cmd_free_dm)
UR_STUB_INT(ibv_cmd_get_context)
UR_STUB_INT(ibv_cmd_modify_cq)
UR_STUB_INT(ibv_cmd_modify_flow_action_esp)
UR_STUB_INT(ibv_cmd_modify_qp)
UR_STUB_INT(ibv_cmd_modify_qp_ex)
UR_STUB_INT(ibv_cmd_modify_srq)
UR_STUB_INT(ibv_cmd_modify_wq)
UR_STUB_INT(ibv_cmd_open_qp)
UR_STUB_INT(ibv_cmd_open_xrcd)
UR_STUB_INT(ibv_cmd_poll_cq)
UR_STUB_INT(ibv_cmd_post_recv)
UR_STUB_INT(ibv_cmd_post_send)
UR_STUB_INT(ibv_cmd_post_srq_recv)
UR_STUB_INT(ibv_cmd_query_context)
UR_STUB_INT(ibv_cmd_query_device_any)
UR_STUB_INT(ibv_cmd_query_mr)
UR_STUB_INT(ibv_cmd_query_port)
UR_STUB_INT(ibv_cmd_query_qp)
UR_STUB_INT(ibv_cmd_query_srq)
UR_STUB_INT(ibv_cmd_read_counters)
UR_STUB_INT(ibv_cmd_reg_dm_mr)
UR_STUB_INT(ibv_cmd_reg_dmabuf_mr)
UR_STUB_INT(ibv_cmd_reg_mr)
UR_STUB_INT(ibv_cmd_req_notify_cq)
UR_STUB_INT(ibv_cmd_rereg_mr)
UR_STUB_INT(ibv_cmd_resize_cq)
UR_STUB_INT(execute_ioctl)

UR_STUB_PTR(_verbs_init_and_alloc_context)
UR_STUB_PTR(verbs_open_device)

/* verbs_register_driver_34: providers register from a constructor. */
UR_STUB_VOID(verbs_register_driver_34)
UR_STUB_VOID(verbs_set_ops)
UR_STUB_VOID(verbs_uninit_context)
UR_STUB_VOID(verbs_init_cq)

UR_EXPORT bool verbs_allow_disassociate_destroy;

UR_EXPORT void __verbs_log(struct verbs_context *ctx, uint32_t level,
			   const char *fmt, ...);
void __verbs_log(struct verbs_context *ctx, uint32_t level,
		 const char *fmt, ...)
{
}

/* Attribute count of an ioctl command buffer chain: no chaining here. */
UR_EXPORT unsigned int __ioctl_final_num_attrs(unsigned int num_attrs,
					       void *link);
unsigned int __ioctl_final_num_attrs(unsigned int num_attrs, void *link)
{
	return num_attrs;
}

/* ------------------------------------------------------------------ */
/* Public verbs we do not implement                                     */
/* ------------------------------------------------------------------ */

/* Import shares objects of a kernel uverbs context between processes. */
UR_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	errno = EOPNOTSUPP;
	return NULL;
}

UR_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context,
				       uint32_t pd_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

UR_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
}

UR_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

UR_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
}

UR_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context,
				       uint32_t dm_handle)
{
	errno = EOPNOTSUPP;
	return NULL;
}

UR_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
}

/* dma-buf memory belongs to a kernel device driver we cannot reach. */
UR_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset,
					   size_t length, uint64_t iova,
					   int fd, int access)
{
	errno = EOPNOTSUPP;
	return NULL;
}
