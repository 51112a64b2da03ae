/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The exported verbs of PDs and MRs, and the advise_mr op. obj/pd.c and
 * obj/mem.c check and apply (0/-errno); this file translates to each
 * verb's convention (api_priv.h), ibv_rereg_mr's own included.
 */
#include <errno.h>

#include "api/ibverbs/api_priv.h"
#include "engine/engine.h"
#include "obj/obj_priv.h"
#include "util/compiler.h"

/* ------------------------------------------------------------------ */
/* PD                                                                   */
/* ------------------------------------------------------------------ */

UR_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct ur_pd *pd = NULL;
	int err = ur_pd_alloc(context, &pd);

	if (!err) {
		err = ur_api_track(context, UR_OBJ_PD, &pd->ibpd,
				   pd->ibpd.handle);
		if (err)
			ur_pd_free(pd);
	}
	return ur_api_ptr(err, err ? NULL : &pd->ibpd);
}

UR_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	int err = ur_live_take(UR_OBJ_PD, pd);

	if (err)
		return ur_api_ret(err);
	return ur_api_destroyed(pd, ur_pd_free(to_ur_pd(pd)));
}

/* ------------------------------------------------------------------ */
/* MR                                                                   */
/* ------------------------------------------------------------------ */

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

UR_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr,
					  size_t length, uint64_t iova,
					  unsigned int access)
{
	struct ur_mr *mr = NULL;
	int err;

	err = ur_live_check(UR_OBJ_PD, pd);
	if (!err)
		err = ur_mr_reg(to_ur_pd(pd), addr, length, iova, access, &mr);
	if (!err) {
		err = ur_api_track(pd->context, UR_OBJ_MR, &mr->ibmr,
				   mr->ibmr.handle);
		if (err)
			ur_mr_dereg(mr);
		else
			ur_engine_mr_publish(mr);
	}
	return ur_api_ptr(err, err ? NULL : &mr->ibmr);
}

UR_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr,
				    size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr,
				(unsigned int)access);
}

UR_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr,
					 size_t length, uint64_t iova,
					 int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

/*
 * rdma-core's split: what libibverbs itself checks before asking the
 * kernel (unknown or no flags, a translation without address or length, a
 * PD change without a PD) is IBV_REREG_MR_ERR_INPUT; everything the kernel
 * refuses, permissions included (remote write without local write), is
 * IBV_REREG_MR_ERR_CMD. errno is set either way; the MR is unchanged.
 */
UR_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd,
			   void *addr, size_t length, int access)
{
	int err;

	if (!flags || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!addr || !length)) ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) && !pd)) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	err = ur_live_check(UR_OBJ_MR, mr);
	if (!err && (flags & IBV_REREG_MR_CHANGE_PD))
		err = ur_live_check(UR_OBJ_PD, pd);
	if (!err) {
		ur_engine_mr_withdraw(to_ur_mr(mr));
		err = ur_mr_rereg(to_ur_mr(mr), flags,
				  pd ? to_ur_pd(pd) : NULL, addr, length,
				  (unsigned int)access);
		/* receive WQEs of shared XRC SRQs resolved through it */
		if (!err)
			ur_xring_mr_gone(ur_ctx_dev(mr->context), mr->lkey);
		ur_engine_mr_publish(to_ur_mr(mr));
	}
	if (!err)
		return 0;
	errno = -err;
	return IBV_REREG_MR_ERR_CMD;
}

UR_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	int err = ur_live_take(UR_OBJ_MR, mr);
	struct ur_device *dev;
	uint32_t lkey;

	if (err)
		return ur_api_ret(err);
	dev = ur_ctx_dev(mr->context);
	lkey = mr->lkey;
	ur_engine_mr_withdraw(to_ur_mr(mr));
	err = ur_mr_dereg(to_ur_mr(mr));
	if (err)	/* still registered (windows bound to it) */
		ur_engine_mr_publish(to_ur_mr(mr));
	else	/* receive WQEs other processes write through it */
		ur_xring_mr_gone(dev, lkey);
	return ur_api_destroyed(mr, err);
}

int ur_op_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		    uint32_t flags, struct ibv_sge *sg, uint32_t num_sge)
{
	int err = ur_live_check(UR_OBJ_PD, pd);

	if (!err)
		err = ur_mr_advise(to_ur_pd(pd), (int)advice, flags, sg,
				   num_sge);
	return ur_api_ret(err);
}
