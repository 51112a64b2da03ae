/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of libibverbs.so.1 shared between the files of api/ibverbs.
 * The exported ibv_* functions are defined across device.c (devices,
 * contexts, queries), verbs_mem.c (PD, MR, MW, CQ, channels, SRQ, AH,
 * async events), verbs_qp.c (QP, posting, ibv_wr_*) and stubs.c (symbols
 * that exist so binaries load and that return EOPNOTSUPP).
 */
#ifndef UR_API_IBVERBS_PRIV_H
#define UR_API_IBVERBS_PRIV_H

#include <infiniband/verbs.h>

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

#endif
