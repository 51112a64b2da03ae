/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of libibverbs.so.1 shared between the files of api/ibverbs.
 * The exported ibv_* functions are defined across device.c (devices,
 * contexts, queries), verbs_mem.c (PD, MR, MW, CQ, channels, SRQ, AH,
 * async events), verbs_dm.c (device memory), verbs_domain.c (thread and
 * parent domains), verbs_clock.c (device clock), verbs_qp.c (QP, posting,
 * ibv_wr_*) and stubs.c (symbols
 * that exist so binaries load and that return EOPNOTSUPP).
 */
#ifndef UR_API_IBVERBS_PRIV_H
#define UR_API_IBVERBS_PRIV_H

#include <errno.h>
#include <infiniband/verbs.h>

#include "obj/obj_priv.h"

/*
 * Fill the ibv_context_ops / verbs_context slots that the inline functions
 * of verbs.h jump through. open_device calls all three; each file owns the
 * slots of its objects. Slots nobody sets stay NULL, which verbs.h turns
 * into EOPNOTSUPP/ENOSYS for the verbs_get_ctx_op() users; the legacy
 * ibv_context_ops slots must all be set (stubs.c fills them).
 */
void ur_api_install_device_ops(struct verbs_context *vctx);
void ur_api_install_mem_cq_ops(struct verbs_context *vctx);
void ur_api_install_qp_ops(struct verbs_context *vctx);
/* verbs_post.c: ibv_wr_start/complete/abort for a QP created with
 * send_ops_flags (obj/ sets the builders). */
void ur_api_init_wr_batch_ops(struct ur_qp *qp);
void ur_api_install_post_ops(struct verbs_context *vctx);
/* verbs_dm.c; ur_api_install_mem_cq_ops calls it (device memory is a
 * memory verb, and open_device need not know one more file). */
void ur_api_install_dm_ops(struct verbs_context *vctx);
/* verbs_domain.c (TDs, parent domains); called the same way. */
void ur_api_install_domain_ops(struct verbs_context *vctx);
/* verbs_clock.c (ibv_query_rt_values_ex); called the same way. */
void ur_api_install_clock_ops(struct verbs_context *vctx);

/*
 * An int verb's return from obj/'s 0/-errno: 0, or the positive errno
 * value with errno set to it as well (rdma-core sets both).
 */
static inline int ur_api_ret(int err)
{
	if (!err)
		return 0;
	errno = -err;
	return -err;
}

/*
 * Ends a destroy begun with ur_live_take(): the object is forgotten when
 * err is 0, visible again when the destroy refused (e.g. -EBUSY).
 */
static inline int ur_api_destroyed(const void *obj, int err)
{
	if (err)
		ur_live_restore(obj);
	else
		ur_live_drop(obj);
	return ur_api_ret(err);
}

/* Records a new object in the live registry (limits, handle checks). */
static inline int ur_api_track(struct ibv_context *ctx, enum ur_obj_kind kind,
			       const void *obj, uint32_t handle)
{
	return ur_live_add(ur_ctx_dev(ctx), kind, obj, ctx, handle);
}

#endif
