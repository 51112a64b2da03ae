/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * UD multicast: ibv_attach_mcast / ibv_detach_mcast. The rules are the
 * kernel's (ib_attach_mcast and uverbs): only a UD QP, only a multicast
 * GID (ff00::/8, or an IPv4-mapped 224.0.0.0/4), else EINVAL; the LID is
 * ignored on a RoCE port (the RoCE annex); attaching a QP twice is one
 * attachment; detaching a group the QP is not attached to is EINVAL. A
 * destroyed QP is detached from everything (engine/mcast.c). Both return
 * 0 or the errno value, with errno set too.
 */
#include <errno.h>

#include "api/ibverbs/api_priv.h"
#include "engine/engine.h"
#include "util/addr.h"

static int mcast_check(struct ibv_qp *ibqp, const union ibv_gid *gid)
{
	int err = ur_live_check(UR_OBJ_QP, ibqp);

	if (err)
		return err;
	if (!gid || !ur_gid_is_multicast(gid->raw) ||
	    ibqp->qp_type != IBV_QPT_UD)
		return -EINVAL;
	return 0;
}

UR_EXPORT int ibv_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
			       uint16_t lid)
{
	int err = mcast_check(ibqp, gid);

	if (!err)
		err = ur_engine_mcast_attach(to_ur_qp(ibqp), gid->raw);
	return ur_api_ret(err);
}

UR_EXPORT int ibv_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid,
			       uint16_t lid)
{
	int err = mcast_check(ibqp, gid);

	if (!err)
		err = ur_engine_mcast_detach(to_ur_qp(ibqp), gid->raw);
	return ur_api_ret(err);
}
