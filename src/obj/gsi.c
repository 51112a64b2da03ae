/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * QP1 (the GSI QP) for the connection manager. Verbs give applications no
 * way to create QP number 1, so librdmacm creates an ordinary UD QP and asks
 * for it to be renumbered; the engine then treats it as the GSI QP
 * (UR_GSI_QKEY, docs/wire-notes.md §5.2) because of its number alone.
 */
#include <errno.h>

#include "obj/obj_priv.h"

int ur_qp_claim_gsi(struct ur_qp *qp)
{
	struct ur_device *dev = qp->dev;
	uint32_t old = qp->ibqp_ex.qp_base.qp_num;
	int ret;

	pthread_rwlock_wrlock(&dev->obj_lock);
	if (qp->type != IBV_QPT_UD || qp->state != IBV_QPS_RESET) {
		ret = -EINVAL;
		goto out;
	}
	if (ur_u32_map_contains(&dev->qpns, UR_QPN_GSI)) {
		ret = -EBUSY;
		goto out;
	}
	ret = ur_u32_map_insert(&dev->qpns, UR_QPN_GSI, qp);
	if (ret)
		goto out;
	if (ur_u32_map_find(&dev->qpns, old) == qp)
		ur_u32_map_remove(&dev->qpns, old);
	/* the handle stays: the live-object registry knows the QP by it */
	qp->ibqp_ex.qp_base.qp_num = UR_QPN_GSI;
out:
	pthread_rwlock_unlock(&dev->obj_lock);
	return ret;
}
