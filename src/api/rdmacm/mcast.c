/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma_join_multicast(_ex) and rdma_leave_multicast for UD ids (RDMA_PS_UDP,
 * RDMA_PS_IPOIB). RoCE has no SA: as the kernel's rdma_cm does on a RoCE
 * port, a join is local. The group's GID is the address's RoCEv2 GID
 * (::ffff:a.b.c.d for IPv4, the IPv6 address itself); the id's QP, if it
 * has one and the join is not send-only, is attached to it (which makes
 * the device's link join the IP group), and the id gets
 * RDMA_CM_EVENT_MULTICAST_JOIN with param.ud: an address vector for the
 * group, QPN 0xFFFFFF, Q_Key RDMA_UDP_QKEY (0x01234567, the kernel's for
 * RoCE groups) and private_data = the join's context, as rdma-core
 * reports it; or RDMA_CM_EVENT_MULTICAST_ERROR with the attach's error.
 * A synchronous id waits for that event.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/rdmacm/rdmacm_priv.h"

struct cma_mc *cma_mc_find(struct cma_id *id, const union ur_sockaddr *addr)
{
	struct ur_list *pos;

	ur_list_for_each(pos, &id->mcs) {
		struct cma_mc *mc = ur_list_entry(pos, struct cma_mc, node);

		if (ur_sockaddr_same_host(&mc->addr, addr))
			return mc;
	}
	return NULL;
}

/* The join event: what the kernel's cma_iboe_join_multicast() reports. */
static void mc_post_event(struct cma_id *id, const struct cma_mc *mc,
			  int err)
{
	struct rdma_ud_param ud;
	struct cma_event *e;

	memset(&ud, 0, sizeof(ud));
	cma_ud_av(id, mc->mgid, &ud.ah_attr);
	ud.qp_num = UR_QPN_MCAST;
	ud.qkey = RDMA_UDP_QKEY;
	e = cma_event_post(id, err ? RDMA_CM_EVENT_MULTICAST_ERROR :
				     RDMA_CM_EVENT_MULTICAST_JOIN,
			   err ? -err : 0, NULL, 0, NULL, NULL);
	if (!e)
		return;
	e->ev.param.ud = ud;
	e->ev.param.ud.private_data = mc->context;
	e->ev.param.ud.private_data_len = 0;
}

/* Lock held. 0 or an errno value (the join is not recorded). */
static int mc_join(struct cma_id *id, const struct sockaddr *sa,
		   uint32_t flags, void *context)
{
	union ur_sockaddr addr;
	struct cma_mc *mc;
	int err = 0;

	cma_addr_to_ip(sa, &addr);	/* AF_IB: the group's GID */
	if (id->id.qp_type != IBV_QPT_UD || !id->dev ||
	    (id->state != CMA_BOUND && id->state != CMA_ADDR_RESOLVED &&
	     id->state != CMA_ROUTE_RESOLVED))
		return EINVAL;
	if (!ur_addr_is_multicast(&addr))
		return EINVAL;
	if (cma_mc_find(id, &addr))
		return EADDRINUSE;
	mc = calloc(1, sizeof(*mc));
	if (!mc)
		return ENOMEM;
	mc->addr = addr;
	ur_sockaddr_to_gid(&addr, mc->mgid);
	mc->context = context;
	mc->flags = flags;
	if (id->id.qp && flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER) {
		union ibv_gid g;

		memcpy(g.raw, mc->mgid, 16);
		err = ibv_attach_mcast(id->id.qp, &g, 0);
		mc->attached = !err;
	}
	ur_list_add_tail(&id->mcs, &mc->node);
	mc_post_event(id, mc, err);
	return 0;
}

static int join(struct rdma_cm_id *id, const struct sockaddr *addr,
		uint32_t flags, void *context)
{
	struct cma_id *cid;
	int err;

	if (!id || !addr || !cma_addr_len(addr))
		return cma_err(EINVAL);
	cid = to_cma_id(id);
	pthread_mutex_lock(&cma.lock);
	err = mc_join(cid, addr, flags, context);
	pthread_mutex_unlock(&cma.lock);
	if (err)
		return cma_err(err);
	return cid->sync ? cma_sync_wait(cid, RDMA_CM_EVENT_MULTICAST_JOIN) : 0;
}

UR_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
				  void *context)
{
	return join(id, addr, RDMA_MC_JOIN_FLAG_FULLMEMBER, context);
}

UR_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
				     struct rdma_cm_join_mc_attr_ex *attr,
				     void *context)
{
	if (!attr)
		return cma_err(EINVAL);
	if (attr->comp_mask >= RDMA_CM_JOIN_MC_ATTR_RESERVED)
		return cma_err(ENOTSUP);
	if (!(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_ADDRESS) ||
	    !(attr->comp_mask & RDMA_CM_JOIN_MC_ATTR_JOIN_FLAGS) ||
	    attr->join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
		return cma_err(EINVAL);
	return join(id, attr->addr, attr->join_flags, context);
}

/* Lock held: detaches the id's QP if this join attached it, forgets it. */
static void mc_drop(struct cma_id *id, struct cma_mc *mc)
{
	union ibv_gid g;

	if (mc->attached && id->id.qp) {
		memcpy(g.raw, mc->mgid, 16);
		ibv_detach_mcast(id->id.qp, &g, 0);
	}
	ur_list_del(&mc->node);
	free(mc);
}

UR_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id,
				   struct sockaddr *addr)
{
	union ur_sockaddr a;
	struct cma_mc *mc;
	struct cma_id *cid;

	if (!id || !addr || !cma_addr_len(addr))
		return cma_err(EINVAL);
	cid = to_cma_id(id);
	cma_addr_to_ip(addr, &a);
	pthread_mutex_lock(&cma.lock);
	mc = cma_mc_find(cid, &a);
	if (mc)
		mc_drop(cid, mc);
	pthread_mutex_unlock(&cma.lock);
	return mc ? 0 : cma_err(EADDRNOTAVAIL);
}

void cma_mc_leave_all(struct cma_id *id)
{
	while (!ur_list_empty(&id->mcs))
		mc_drop(id, ur_list_entry(id->mcs.next, struct cma_mc, node));
}
