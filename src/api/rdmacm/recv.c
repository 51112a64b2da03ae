/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The IB CM protocol as rdma_cm uses it over RoCEv2 (IBA vol 1 ch. 12),
 * receive side and timers:
 *
 *   active  ROUTE_RESOLVED -REQ-> REQ_SENT -REP/RTU-> ESTABLISHED
 *   passive LISTEN: REQ -> new id REQ_RCVD -accept/REP-> REP_SENT -RTU->
 *           ESTABLISHED
 *   either  ESTABLISHED -DREQ-> DREQ_SENT -DREP-> TIMEWAIT
 *           ESTABLISHED <-DREQ (DREP sent) -> TIMEWAIT
 *   UD ids  SIDR_REQ -> SIDR_REP
 *
 * REQ, REP, DREQ and SIDR_REQ are retransmitted every
 * UR_CM_RESPONSE_TIMEOUT until answered, at most UR_CM_MAX_RETRIES times;
 * then the id gets UNREACHABLE (or, for DREQ, DISCONNECTED). Duplicates are
 * answered from state: a REQ seen again while the application has not yet
 * accepted gets an MRA (so the active side waits instead of giving up),
 * after accept the REP again; a REP seen again the RTU again; a DREQ seen
 * again (or for a connection we no longer know) a DREP; a SIDR_REQ seen
 * again the SIDR_REP again. LAP is refused with REJ. A REJ ends a
 * connection in any state before ESTABLISHED, the passive side's
 * REQ_RCVD included.
 * Everything here runs with cma.lock held.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/rdmacm/cm_priv.h"
#include "util/log.h"
#include "util/random.h"
#include "util/time.h"

static struct cma_id *find_by_local(struct cma_dev *dev, uint32_t comm_id)
{
	struct ur_list *pos;

	if (!comm_id)
		return NULL;
	ur_list_for_each(pos, &cma.ids) {
		struct cma_id *o = ur_list_entry(pos, struct cma_id, node);

		if (o->dev == dev && o->local_comm_id == comm_id &&
		    !o->destroying)
			return o;
	}
	return NULL;
}

/* A listener of dev on (ps, port). */
static bool listener_on(const struct cma_id *l, struct cma_dev *dev,
			uint16_t ps, uint16_t port)
{
	return l->state == CMA_LISTEN && !l->destroying &&
	       cma_id_ps(l) == ps && cma_addr_port(&l->src.sa) == port &&
	       (!l->dev || l->dev == dev);
}

/* ... that listens on dst: its address, or the wildcard. An AF_IB
 * listener on a loopback address (reached through the rendezvous) takes
 * what comes to its device: with no rdma_cm header, the REQ names only the
 * device's GID it was sent to, not the loopback address. */
static bool listener_takes(const struct cma_id *l,
			   const union ur_sockaddr *dst)
{
	const union ur_sockaddr *la = &l->src;

	if (cma_addr_is_any(la))
		return !(l->afonly && la->sa.sa_family != dst->sa.sa_family);
	if (l->af_ib && ur_addr_is_loopback(la))
		return true;
	return ur_sockaddr_same_host(la, dst);
}

/* What a REQ or SIDR_REQ tells the id it makes: the peer's address (src)
 * and ours (dst), and where the user's private data starts. */
struct req_view {
	union ur_sockaddr src, dst;
	unsigned int pdata_off;
};

static struct cma_id *req_listener(struct cma_dev *dev, uint8_t sgid,
				   const uint8_t src_gid[16], uint64_t sid,
				   const uint8_t *pdata, struct req_view *v);
static void conn_id_init(struct cma_id *c, struct cma_id *l,
			 struct cma_dev *dev, uint8_t sgid,
			 const struct req_view *v);

static void handle_req(struct cma_dev *dev, uint8_t sgid,
		       const uint8_t src_gid[16], const struct ur_cm_msg *m)
{
	const struct ur_cm_req *r = &m->req;
	struct cma_id *l, *c;
	struct rdma_conn_param cp;
	struct req_view v;
	struct ur_list *pos;
	int pending = 0;

	/* a duplicate of a REQ we already have a connection for */
	ur_list_for_each(pos, &cma.ids) {
		c = ur_list_entry(pos, struct cma_id, node);
		if (c->dev != dev || c->remote_comm_id != r->local_comm_id ||
		    memcmp(c->peer_gid, src_gid, 16) || c->listener == NULL)
			continue;
		if (c->state == CMA_REQ_RCVD) {
			struct ur_cm_msg mra;

			memset(&mra, 0, sizeof(mra));
			ur_cm_hdr_init(&mra.hdr, UR_CM_ATTR_MRA, m->hdr.tid);
			mra.mra.local_comm_id = c->local_comm_id;
			mra.mra.remote_comm_id = c->remote_comm_id;
			mra.mra.msg_mraed = UR_CM_MSG_REQ;
			mra.mra.service_timeout = UR_CM_MRA_TIMEOUT;
			cma_send_stateless(dev, c->sgid, src_gid, &mra);
		} else if (c->state == CMA_REP_SENT) {
			cma_agent_send(dev, c->sgid, c->peer_gid, c->mad);
			dev->stats[CMA_STAT_RETX]++;
		} else if (c->state == CMA_TIMEWAIT) {
			cma_send_rej(dev, c->sgid, src_gid, m->hdr.tid,
				     c->local_comm_id, r->local_comm_id,
				     UR_CM_MSG_REQ,
				 UR_CM_REJ_STALE_CONN, NULL, 0);
		}
		return;
	}

	if (!(r->transport == UR_CM_TRANSPORT_RC ||
	      r->transport == UR_CM_TRANSPORT_UC ||
	      (r->transport == UR_CM_TRANSPORT_EXT &&
	       r->ext_transport == UR_CM_EXT_TRANSPORT_XRC)) ||
	    !r->local_qpn) {
		cma_send_rej(dev, sgid, src_gid, m->hdr.tid, 0,
			     r->local_comm_id, UR_CM_MSG_REQ,
			     UR_CM_REJ_UNSUPPORTED_REQ, NULL, 0);
		dev->stats[CMA_STAT_DROP]++;
		return;
	}
	l = req_listener(dev, sgid, src_gid, r->service_id, r->private_data,
			 &v);
	if (!l) {
		ur_info("rdmacm: a connection request for port %u refused: no "
			"listener on that port and this address (REJ reason "
			"8, invalid service ID)",
			(unsigned int)(r->service_id & 0xFFFF));
		cma_send_rej(dev, sgid, src_gid, m->hdr.tid, 0,
			     r->local_comm_id, UR_CM_MSG_REQ,
			     UR_CM_REJ_INVALID_SERVICE_ID, NULL, 0);
		return;
	}
	ur_list_for_each(pos, &cma.ids) {
		c = ur_list_entry(pos, struct cma_id, node);
		if (c->listener == l && c->state == CMA_REQ_RCVD)
			pending++;
	}
	if (pending >= l->backlog) {
		dev->stats[CMA_STAT_DROP]++;	/* the peer retries */
		return;
	}
	/* the new id's QP type is the REQ's, as the kernel's rdma_cm: an
	 * XRC initiator's peer is an XRC target */
	c = cma_id_new(l->chan, l->id.context, l->id.ps,
		       r->transport == UR_CM_TRANSPORT_UC ? IBV_QPT_UC :
		       r->transport == UR_CM_TRANSPORT_EXT ? IBV_QPT_XRC_RECV :
							     IBV_QPT_RC);
	if (!c)
		return;
	c->sync = false;	/* rdma_get_request gives it its own channel */
	conn_id_init(c, l, dev, sgid, &v);
	memcpy(c->dgid, src_gid, 16);
	memcpy(c->peer_gid, src_gid, 16);
	c->tos = r->primary.traffic_class;
	c->ack_timeout = l->ack_timeout;
	cma_fill_path(c);
	c->state = CMA_REQ_RCVD;
	c->local_comm_id = cma_new_comm_id();
	c->remote_comm_id = r->local_comm_id;
	c->tid = m->hdr.tid;
	c->remote_qpn = r->local_qpn;
	cma_ece_req_rcvd(c, m);
	c->sq_psn = r->starting_psn;	/* where the peer's receiver starts */
	/* drawn now, not at accept: rdma_init_qp_attr(RTR) may come first */
	c->rq_psn = ur_random_u32() & UR_PSN_MASK;
	c->path_mtu = r->path_mtu < dev->mtu && r->path_mtu ?
			      (enum ibv_mtu)r->path_mtu : dev->mtu;
	c->retry_count = r->retry_count;
	c->rnr_retry = r->rnr_retry_count;
	/* accept's defaults: what the peer offered, mirrored */
	c->resp_res = r->initiator_depth;
	c->init_depth = r->responder_resources;
	/* the peer's view, mirrored: what it reads is what we answer */
	cma_conn_param_of(&cp, r->initiator_depth, r->responder_resources,
		      r->flow_control, r->retry_count, r->rnr_retry_count,
		      r->srq, r->local_qpn);
	cma_event_post(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0,
		       r->private_data + v.pdata_off,
		       UR_CM_REQ_PDATA - v.pdata_off, &cp, l);
}

/*
 * The view of a REQ for a listener that is not AF_IB: rdma_cm's header in
 * front of the private data names both IP addresses. false when it is not
 * there.
 */
static bool req_view_ip(const uint8_t *pdata, uint16_t port,
			struct req_view *v)
{
	struct ur_cma_hdr h;
	uint8_t g[16];

	if (ur_cma_hdr_decode(pdata, &h))
		return false;
	memset(v, 0, sizeof(*v));
	if (h.ip_version == 4) {
		ur_gid_from_ipv4(h.src_addr + 12, g);
		ur_gid_to_sockaddr(g, h.src_port, &v->src);
		ur_gid_from_ipv4(h.dst_addr + 12, g);
		ur_gid_to_sockaddr(g, port, &v->dst);
	} else {
		ur_gid_to_sockaddr(h.src_addr, h.src_port, &v->src);
		ur_gid_to_sockaddr(h.dst_addr, port, &v->dst);
	}
	v->pdata_off = UR_CMA_HDR_SIZE;
	return true;
}

/* ... for an AF_IB listener: no header (the kernel's rdma_cm sends none
 * between AF_IB ids); the addresses are the GIDs of the datagram, the
 * peer's port unknown (0, as the kernel reports it). */
static void req_view_ib(const uint8_t our_gid[16], const uint8_t src_gid[16],
			uint16_t port, struct req_view *v)
{
	memset(v, 0, sizeof(*v));
	ur_gid_to_sockaddr(src_gid, 0, &v->src);
	ur_gid_to_sockaddr(our_gid, port, &v->dst);
	v->pdata_off = 0;
}

/* Finds the listener for (ps, port) of a REQ/SIDR_REQ that arrived at our
 * GID sgid from src_gid, and the new id's view of it. */
static struct cma_id *req_listener(struct cma_dev *dev, uint8_t sgid,
				   const uint8_t src_gid[16], uint64_t sid,
				   const uint8_t *pdata, struct req_view *v)
{
	uint16_t ps = (uint16_t)(sid >> 16), port = (uint16_t)sid;
	struct req_view ip, ib;
	bool has_ip;
	struct ur_list *pos;

	if (sid >> 32)
		return NULL;
	has_ip = req_view_ip(pdata, port, &ip);
	req_view_ib(dev->gids[sgid], src_gid, port, &ib);
	ur_list_for_each(pos, &cma.ids) {
		struct cma_id *c = ur_list_entry(pos, struct cma_id, node);
		const struct req_view *cv = c->af_ib ? &ib : &ip;

		if (!listener_on(c, dev, ps, port) || (!c->af_ib && !has_ip) ||
		    !listener_takes(c, &cv->dst))
			continue;
		*v = *cv;
		return c;
	}
	return NULL;
}

/*
 * UROCE_LOG=info: what a REJ means, in words, for the side that asked (an
 * application shows "REJECTED, error 8" at best). The address is the one
 * the id connected to.
 */
static void rej_hint(const struct cma_id *id, uint16_t reason)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	const char *why;

	if (ur_log_level < UR_LOG_INFO)
		return;
	if (id->dst.sa.sa_family == AF_INET)
		inet_ntop(AF_INET, &id->dst.in.sin_addr, ip, sizeof(ip));
	else if (id->dst.sa.sa_family == AF_INET6)
		inet_ntop(AF_INET6, &id->dst.in6.sin6_addr, ip, sizeof(ip));
	switch (reason) {
	case UR_CM_REJ_INVALID_SERVICE_ID:
		why = "no listener on that address and port";
		break;
	case UR_CM_REJ_CONSUMER_DEFINED:
		why = "the peer's application refused it (rdma_reject)";
		break;
	case UR_CM_REJ_STALE_CONN:
		why = "the peer still holds an earlier connection of these ids";
		break;
	case UR_CM_REJ_TIMEOUT:
		why = "the peer gave up waiting for our answer";
		break;
	case UR_CM_REJ_UNSUPPORTED_REQ:
		why = "the peer does not take this transport";
		break;
	case UR_CM_REJ_NO_QP:
		why = "the peer has no such QP";
		break;
	default:
		why = "see the IBA's REJ reasons (table 107)";
		break;
	}
	ur_info("rdmacm: connection to %s port %u rejected: %s (REJ reason %u)",
		ip, (unsigned int)ntohs(id->dst.in.sin_port) /* = sin6_port */, why,
		(unsigned int)reason);
}

/* A passive id's place: its listener's, the device and GID its REQ came
 * to, and the addresses the REQ gave. */
static void conn_id_init(struct cma_id *c, struct cma_id *l,
			 struct cma_dev *dev, uint8_t sgid,
			 const struct req_view *v)
{
	c->listener = l;
	c->dev = dev;
	c->id.verbs = dev->verbs;
	c->id.pd = dev->pd;
	c->id.port_num = 1;
	c->sgid = sgid;
	c->af_ib = l->af_ib;
	c->sid_ps = l->sid_ps;
	cma_id_set_addrs(c, &v->dst, &v->src);
}

static void handle_sidr_req(struct cma_dev *dev, uint8_t sgid,
			    const uint8_t src_gid[16],
			    const struct ur_cm_msg *m)
{
	const struct ur_cm_sidr_req *r = &m->sidr_req;
	struct req_view v;
	struct rdma_ud_param ud;
	struct ur_list *pos;
	struct cma_id *l, *c;

	ur_list_for_each(pos, &cma.ids) {	/* seen before? */
		c = ur_list_entry(pos, struct cma_id, node);
		if (c->dev != dev || c->id.qp_type != IBV_QPT_UD ||
		    c->remote_comm_id != r->request_id ||
		    memcmp(c->peer_gid, src_gid, 16) || !c->remote_comm_id)
			continue;
		if (c->state == CMA_ESTABLISHED)	/* our SIDR_REP was lost */
			cma_agent_send(dev, c->sgid, c->peer_gid, c->mad);
		return;
	}
	l = req_listener(dev, sgid, src_gid, r->service_id, r->private_data,
			 &v);
	if (!l) {
		cma_send_sidr_rep(dev, sgid, src_gid, m->hdr.tid,
				  r->request_id,
			      UR_CM_SIDR_NO_SERVICE, r->service_id, 0, 0, NULL,
			      0, NULL);
		return;
	}
	c = cma_id_new(l->chan, l->id.context, l->id.ps, IBV_QPT_UD);
	if (!c)
		return;
	c->sync = false;
	conn_id_init(c, l, dev, sgid, &v);
	memcpy(c->dgid, src_gid, 16);
	memcpy(c->peer_gid, src_gid, 16);
	cma_fill_path(c);
	c->state = CMA_REQ_RCVD;
	c->local_comm_id = cma_new_comm_id();
	c->remote_comm_id = r->request_id;
	c->tid = m->hdr.tid;
	memset(&ud, 0, sizeof(ud));
	cma_event_post_ud(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0,
			  r->private_data + v.pdata_off,
			  UR_CM_SIDR_REQ_PDATA - v.pdata_off, &ud, l);
}

static void handle_sidr_rep(struct cma_dev *dev, const struct ur_cm_msg *m)
{
	const struct ur_cm_sidr_rep *r = &m->sidr_rep;
	struct cma_id *id = find_by_local(dev, r->request_id);
	struct rdma_ud_param ud;

	if (!id || id->id.qp_type != IBV_QPT_UD || id->state != CMA_REQ_SENT) {
		dev->stats[CMA_STAT_DROP]++;
		return;
	}
	id->deadline_ns = 0;
	memset(&ud, 0, sizeof(ud));
	if (r->status != UR_CM_SIDR_OK) {
		id->state = CMA_CLOSED;
		cma_event_post_ud(id, RDMA_CM_EVENT_UNREACHABLE, r->status,
				  r->private_data, UR_CM_SIDR_REP_PDATA, &ud,
				  NULL);
		return;
	}
	id->state = CMA_ESTABLISHED;
	id->remote_qpn = r->qpn;
	ud.qp_num = r->qpn;
	ud.qkey = r->qkey;
	cma_ud_av(id, id->peer_gid, &ud.ah_attr);
	cma_event_post_ud(id, RDMA_CM_EVENT_ESTABLISHED, 0, r->private_data,
			  UR_CM_SIDR_REP_PDATA, &ud, NULL);
}

static void handle_rep(struct cma_dev *dev, struct cma_id *id,
		       const struct ur_cm_msg *m)
{
	const struct ur_cm_rep *r = &m->rep;
	struct rdma_conn_param cp;

	if (id->state == CMA_ESTABLISHED &&
	    id->remote_comm_id == r->local_comm_id) {
		cma_send_rtu(id);	/* our RTU was lost */
		return;
	}
	if (id->state != CMA_REQ_SENT) {
		dev->stats[CMA_STAT_DROP]++;
		return;
	}
	id->remote_comm_id = r->local_comm_id;
	/* an XRC target names its QP in the EE context field (IBA A14) */
	id->remote_qpn = id->id.qp_type == IBV_QPT_XRC_SEND ? r->local_eecn :
							     r->local_qpn;
	id->sq_psn = r->starting_psn;	/* where the peer's receiver starts */
	/* what the passive side grants bounds what we use */
	if (r->initiator_depth < id->resp_res)
		id->resp_res = r->initiator_depth;
	if (r->responder_resources < id->init_depth)
		id->init_depth = r->responder_resources;
	id->rnr_retry = r->rnr_retry_count;
	id->deadline_ns = 0;
	cma_conn_param_of(&cp, r->responder_resources, r->initiator_depth,
		      r->flow_control, id->retry_count, r->rnr_retry_count,
		      r->srq, id->remote_qpn);
	if (!id->id.qp) {
		cma_ece_rep_rcvd(id, m);	/* for rdma_get_remote_ece */
		id->state = CMA_REP_RCVD;
		cma_event_post(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0,
			       r->private_data, UR_CM_REP_PDATA, &cp, NULL);
		return;
	}
	id->state = CMA_ESTABLISHED;
	if (cma_ece_rep_rcvd(id, m) || cma_qp_connect(id)) {
		cma_send_rej(dev, id->sgid, id->peer_gid, id->tid,
			     id->local_comm_id, id->remote_comm_id,
			     UR_CM_MSG_REP, UR_CM_REJ_NO_QP, NULL, 0);
		id->state = CMA_CLOSED;
		cma_qp_to_err(id);
		cma_event_post(id, RDMA_CM_EVENT_CONNECT_ERROR, -EINVAL, NULL,
			       0, NULL, NULL);
		return;
	}
	cma_send_rtu(id);
	cma_event_post(id, RDMA_CM_EVENT_ESTABLISHED, 0, r->private_data,
		       UR_CM_REP_PDATA, &cp, NULL);
}

static void handle_dreq(struct cma_dev *dev, uint8_t sgid,
			const uint8_t src_gid[16], struct cma_id *id,
			const struct ur_cm_msg *m)
{
	const struct ur_cm_dreq *d = &m->dreq;

	if (!id || id->remote_comm_id != d->local_comm_id) {
		/* a connection we no longer know: confirm anyway */
		cma_send_drep(dev, sgid, src_gid, m->hdr.tid,
			      d->remote_comm_id, d->local_comm_id);
		return;
	}
	cma_send_drep(dev, id->sgid, id->peer_gid, m->hdr.tid,
		      id->local_comm_id, id->remote_comm_id);
	switch (id->state) {
	case CMA_ESTABLISHED:
	case CMA_REP_SENT:
	case CMA_DREQ_SENT:
		cma_qp_to_err(id);
		id->dreq_rcvd = true;
		cma_disconnected(id);
		break;
	default:
		break;	/* TIMEWAIT: our DREP was lost, sent again */
	}
}

static void linger_done(struct cma_dev *dev, const struct ur_cm_dreq *drep)
{
	struct ur_list *pos, *tmp;

	ur_list_for_each_safe(pos, tmp, &cma.lingering) {
		struct cma_linger *l = ur_list_entry(pos, struct cma_linger, node);

		if (l->dev == dev && l->local_comm_id == drep->remote_comm_id &&
		    l->remote_comm_id == drep->local_comm_id) {
			ur_list_del(&l->node);
			free(l);
		}
	}
}

static void handle_mad(struct cma_dev *dev, const uint8_t src_gid[16],
		       const uint8_t dst_gid[16], const uint8_t *mad,
		       size_t len)
{
	/* what belongs to no id is answered from where it came to */
	int k = cma_dev_gid_index(dev, dst_gid);
	uint8_t sgid = k < 0 ? 0 : (uint8_t)k;
	struct ur_cm_msg m;
	struct cma_id *id;
	int ret;

	ret = ur_cm_decode(mad, len, &m);
	if (ret == -EOPNOTSUPP) {
		/* LAP, APR: refuse a path change rather than let it wait */
		if (m.hdr.attr_id == UR_CM_ATTR_LAP)
			cma_send_rej(dev, sgid, src_gid, m.hdr.tid, 0,
				 m.rej.local_comm_id, UR_CM_MSG_OTHER,
				 UR_CM_REJ_UNSUPPORTED_REQ, NULL, 0);
		dev->stats[CMA_STAT_DROP]++;
		return;
	}
	if (ret) {
		dev->stats[CMA_STAT_DROP]++;
		return;
	}
	ur_dbg("rdmacm: got %s", ur_cm_attr_str(m.hdr.attr_id));
	switch (m.hdr.attr_id) {
	case UR_CM_ATTR_REQ:
		handle_req(dev, sgid, src_gid, &m);
		return;
	case UR_CM_ATTR_SIDR_REQ:
		handle_sidr_req(dev, sgid, src_gid, &m);
		return;
	case UR_CM_ATTR_SIDR_REP:
		handle_sidr_rep(dev, &m);
		return;
	case UR_CM_ATTR_REP:
		id = find_by_local(dev, m.rep.remote_comm_id);
		if (!id) {
			cma_send_rej(dev, sgid, src_gid, m.hdr.tid, 0,
				 m.rep.local_comm_id, UR_CM_MSG_REP,
				 UR_CM_REJ_INVALID_COMM_ID, NULL, 0);
			return;
		}
		handle_rep(dev, id, &m);
		return;
	case UR_CM_ATTR_RTU:
		id = find_by_local(dev, m.rtu.remote_comm_id);
		if (id && id->state == CMA_REP_SENT &&
		    id->remote_comm_id == m.rtu.local_comm_id)
			cma_established(id);
		else
			dev->stats[CMA_STAT_DROP]++;
		return;
	case UR_CM_ATTR_MRA:
		id = find_by_local(dev, m.mra.remote_comm_id);
		if (id && (id->state == CMA_REQ_SENT ||
			   id->state == CMA_REP_SENT)) {
			/* the peer is alive but slow: wait, do not resend */
			id->retries_left = 0;
			id->deadline_ns = ur_now_ns() + cma_interval_ns() +
				ur_iba_timeout_ns(m.mra.service_timeout);
		}
		return;
	case UR_CM_ATTR_REJ:
		id = find_by_local(dev, m.rej.remote_comm_id);
		/* REQ_RCVD too: an active side that gave up while our
		 * application held its request (the kernel's rdma_cm
		 * reports REJECTED on that id as well) */
		if (!id || id->id.qp_type == IBV_QPT_UD ||
		    (id->state != CMA_REQ_SENT && id->state != CMA_REQ_RCVD &&
		     id->state != CMA_REP_RCVD &&
		     id->state != CMA_REP_SENT)) {
			dev->stats[CMA_STAT_DROP]++;
			return;
		}
		id->state = CMA_CLOSED;
		id->deadline_ns = 0;
		cma_qp_to_err(id);
		rej_hint(id, m.rej.reason);
		cma_event_post(id, RDMA_CM_EVENT_REJECTED, m.rej.reason,
			       m.rej.private_data, UR_CM_REJ_PDATA, NULL, NULL);
		return;
	case UR_CM_ATTR_DREQ:
		id = find_by_local(dev, m.dreq.remote_comm_id);
		handle_dreq(dev, sgid, src_gid, id, &m);
		return;
	case UR_CM_ATTR_DREP:
		id = find_by_local(dev, m.dreq.remote_comm_id);
		if (id && id->state == CMA_DREQ_SENT &&
		    id->remote_comm_id == m.dreq.local_comm_id)
			cma_disconnected(id);
		else
			linger_done(dev, &m.dreq);
		return;
	default:
		dev->stats[CMA_STAT_DROP]++;
	}
}

/* A REQ held for a loopback listener (rdma_connect): look again. */
static void rv_retry(struct cma_id *id, uint64_t now)
{
	bool found = !cma_rv_lookup(cma_id_ps(id), &id->dst,
				    id->dev->gids[id->sgid], id->dgid);

	if (!found && now < id->rv_until_ns) {
		id->deadline_ns = now + UR_CM_RV_POLL_NS;
		return;
	}
	id->rv_until_ns = 0;
	id->rv_miss = !found;
	if (!found)
		memcpy(id->dgid, id->dev->gids[id->sgid], 16);
	memcpy(id->peer_gid, id->dgid, 16);
	cma_fill_path(id);
	if (id->id.qp_type != IBV_QPT_UD)	/* a SIDR_REQ names no GID */
		ur_cm_req_set_remote_gid(id->mad, id->dgid);
	cma_agent_send(id->dev, id->sgid, id->peer_gid, id->mad);
	id->deadline_ns = now + id->interval_ns;
}

/* The last retransmission went unanswered. */
static void gave_up(struct cma_dev *dev, struct cma_id *id)
{
	switch (id->state) {
	case CMA_REQ_SENT:
	case CMA_REP_SENT:
		ur_info("rdmacm: peer unreachable (no answer to %s)",
			ur_cm_attr_str((uint16_t)(id->mad[16] << 8 | id->mad[17])));
		if (id->id.qp_type != IBV_QPT_UD)
			cma_send_rej(dev, id->sgid, id->peer_gid, id->tid,
				     id->local_comm_id, id->remote_comm_id,
				 id->state == CMA_REQ_SENT ? UR_CM_MSG_REQ :
							     UR_CM_MSG_REP,
				 UR_CM_REJ_TIMEOUT, NULL, 0);
		id->state = CMA_CLOSED;
		cma_qp_to_err(id);
		cma_event_post(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL,
			       0, NULL, NULL);
		break;
	case CMA_DREQ_SENT:
		cma_disconnected(id);
		break;
	default:
		break;
	}
}

static uint64_t run_timers(struct cma_dev *dev, uint64_t now)
{
	struct ur_list *pos, *tmp;
	uint64_t next = 0;

	ur_list_for_each_safe(pos, tmp, &cma.lingering) {
		struct cma_linger *l = ur_list_entry(pos, struct cma_linger, node);

		if (l->dev != dev)
			continue;
		if (l->deadline_ns <= now) {
			if (l->retries_left-- <= 0) {
				ur_list_del(&l->node);
				free(l);
				continue;
			}
			cma_agent_send(dev, l->sgid, l->peer_gid, l->mad);
			dev->stats[CMA_STAT_RETX]++;
			l->deadline_ns = now + l->interval_ns;
		}
		if (!next || l->deadline_ns < next)
			next = l->deadline_ns;
	}

	ur_list_for_each(pos, &cma.ids) {
		struct cma_id *id = ur_list_entry(pos, struct cma_id, node);

		if (id->dev != dev || !id->deadline_ns)
			continue;
		if (id->rv_until_ns && id->deadline_ns <= now)
			rv_retry(id, now);
		if (id->deadline_ns <= now) {
			if (id->retries_left > 0) {
				id->retries_left--;
				id->deadline_ns = now + id->interval_ns;
				cma_agent_send(dev, id->sgid, id->peer_gid,
					       id->mad);
				dev->stats[CMA_STAT_RETX]++;
			} else {
				id->deadline_ns = 0;
				gave_up(dev, id);
				continue;
			}
		}
		if (!next || id->deadline_ns < next)
			next = id->deadline_ns;
	}
	return next;
}

const struct cma_agent_handlers cma_cm_handlers = {
	.mad = handle_mad,
	.timers = run_timers,
};
