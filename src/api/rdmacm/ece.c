/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Enhanced Connection Establishment over rdma_cm, as rdma-core's librdmacm
 * and the Linux CM do it: the REQ carries the active side's vendor id
 * (24 bits in the message) and options (the MAD's attribute modifier);
 * the passive side's QP is set to the peer's options when it is created
 * (none when the vendors differ), and its REP returns the peer's vendor id
 * with the options its device kept; the active side's QP is set to the
 * REP's options before it reaches RTR. Programs that manage their own QP
 * (no rdma_create_qp) read the peer's values with rdma_get_remote_ece and
 * offer theirs with rdma_set_local_ece, both before the id has a QP.
 *
 * uroce's device keeps no option (ibv_set_ece, api/ibverbs/verbs_qp.c),
 * so between two uroce peers every exchange ends with options 0; the
 * exchange still happens, so that a peer's vendor id and options are
 * what rdma_get_remote_ece reports.
 */
#include <errno.h>

#include "api/rdmacm/rdmacm_priv.h"

UR_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	struct cma_id *cid;

	if (!id || id->qp || !ece || !ece->vendor_id || ece->comp_mask)
		return cma_err(EINVAL);
	cid = to_cma_id(id);
	pthread_mutex_lock(&cma.lock);
	cid->local_ece.vendor_id = ece->vendor_id;
	cid->local_ece.options = ece->options;
	pthread_mutex_unlock(&cma.lock);
	return 0;
}

UR_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	struct cma_id *cid;

	if (!id || id->qp || !ece)
		return cma_err(EINVAL);
	cid = to_cma_id(id);
	pthread_mutex_lock(&cma.lock);
	ece->vendor_id = cid->remote_ece.vendor_id;
	ece->options = cid->remote_ece.options;
	ece->comp_mask = 0;
	pthread_mutex_unlock(&cma.lock);
	return 0;
}

/* A device without ECE answers EOPNOTSUPP: not an error here. */
static int ece_ret(int ret)
{
	return ret == EOPNOTSUPP ? 0 : ret;
}

/* The options the QP's device kept become the ones we offer. */
static int ece_take_local(struct cma_id *id, struct ibv_qp *qp)
{
	struct ibv_ece ece = { 0 };
	int ret = ibv_query_ece(qp, &ece);

	if (ret)
		return ece_ret(ret);
	id->local_ece.vendor_id = ece.vendor_id;
	id->local_ece.options = ece.options;
	return 0;
}

/* Sets what the peer offered on qp: its options when the vendor is ours,
 * none otherwise (a peer without ECE, vendor 0, included). */
static int ece_apply_remote(struct cma_id *id, struct ibv_qp *qp)
{
	struct ibv_ece ece = { .vendor_id = id->local_ece.vendor_id };

	if (!ece.vendor_id)
		return 0;	/* our device has no ECE */
	if (id->remote_ece.vendor_id == id->local_ece.vendor_id)
		ece.options = id->remote_ece.options;
	return ece_ret(ibv_set_ece(qp, &ece));
}

int cma_ece_qp_created(struct cma_id *id, struct ibv_qp *qp)
{
	int ret = ece_take_local(id, qp);

	/* an active id's QP, or one made before any REQ: offered as is */
	if (ret || !id->remote_ece.vendor_id)
		return ret;
	ret = ece_apply_remote(id, qp);
	return ret ? ret : ece_take_local(id, qp);
}

void cma_ece_req_fill(const struct cma_id *id, struct ur_cm_msg *m)
{
	m->req.vendor_id = id->local_ece.vendor_id & UR_CM_VENDOR_ID_MASK;
	m->hdr.attr_mod = id->local_ece.options;
}

void cma_ece_req_rcvd(struct cma_id *id, const struct ur_cm_msg *m)
{
	id->remote_ece.vendor_id = m->req.vendor_id;
	id->remote_ece.options = m->hdr.attr_mod;
}

void cma_ece_rep_fill(const struct cma_id *id, struct ur_cm_msg *m)
{
	/* the REQ's vendor id comes back, with the options we kept */
	m->rep.vendor_id = id->remote_ece.vendor_id & UR_CM_VENDOR_ID_MASK;
	m->hdr.attr_mod = id->local_ece.options;
}

int cma_ece_rep_rcvd(struct cma_id *id, const struct ur_cm_msg *m)
{
	id->remote_ece.vendor_id = m->rep.vendor_id;
	id->remote_ece.options = m->hdr.attr_mod;
	if (!id->id.qp)
		return 0;
	return ece_apply_remote(id, id->id.qp);
}
