/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The connection calls of rdma_cma.h: rdma_connect, rdma_accept,
 * rdma_reject, rdma_establish, rdma_notify, rdma_disconnect, and
 * rdma_destroy_id, which starts with what the connection tells the peer.
 * The protocol they start is described in recv.c, which handles the
 * answers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/rdmacm/cm_priv.h"
#include "util/log.h"
#include "util/random.h"
#include "util/time.h"

/*
 * rdma-core's rule: 0xFF (RDMA_MAX_*), or no conn_param, means "the
 * default": the device's maximum when connecting, what the REQ offered
 * (bounded by the device) when accepting. Anything else must fit the device.
 */
static int pick_rd(struct cma_dev *dev, const struct rdma_conn_param *p,
		   uint8_t v, uint8_t dflt, uint8_t *out)
{
	if (!p || v == RDMA_MAX_RESP_RES) {
		*out = dflt < dev->max_rd_atom ? dflt : dev->max_rd_atom;
		return 0;
	}
	if (v > dev->max_rd_atom)
		return EINVAL;
	*out = v;
	return 0;
}

static void addr_to16(const struct sockaddr *sa, uint8_t out[16])
{
	ur_sockaddr_to_gid((const union ur_sockaddr *)sa, out);
	if (sa->sa_family == AF_INET)
		memset(out, 0, 12);	/* cma_hdr: 12 zero bytes, then IPv4 */
}

static int sidr_connect(struct cma_id *cid, const struct rdma_conn_param *p);

/*
 * The private data of a REQ or SIDR_REQ: rdma_cm's header (the IP version,
 * source port, both addresses), then the user's bytes. An AF_IB id sends
 * no header, as the kernel's rdma_cm: its user data starts at byte 0 (the
 * listener, AF_IB too, expects none). Returns the user data's offset.
 */
static unsigned int put_cma_hdr(const struct cma_id *cid, uint8_t *pdata)
{
	struct ur_cma_hdr h;

	if (cid->af_ib)
		return 0;
	memset(&h, 0, sizeof(h));
	h.ip_version = cid->src.sa.sa_family == AF_INET6 ? 6 : 4;
	h.src_port = cma_addr_port(&cid->src.sa);
	addr_to16(&cid->src.sa, h.src_addr);
	addr_to16(&cid->dst.sa, h.dst_addr);
	ur_cma_hdr_encode(&h, pdata);
	return UR_CMA_HDR_SIZE;
}

/* The most user private data a REQ (or SIDR_REQ) of cid carries. */
static unsigned int req_user_pdata(struct rdma_cm_id *id, unsigned int room)
{
	return id && to_cma_id(id)->af_ib ? room : room - UR_CMA_HDR_SIZE;
}

/*
 * What rdma_connect and rdma_accept do first: check the arguments (*p
 * becomes given, or rdma-core's defaults none when given is NULL; private
 * data up to max_pdata bytes), take cma.lock, check that the id is in state want and, for RC
 * and UC, settle the RDMA read depths (pick_rd: from the device when
 * connecting, from the REQ when accepting). Returns 0 with the lock held,
 * or an errno without it.
 */
static int conn_prologue(struct rdma_cm_id *id,
			 const struct rdma_conn_param *given,
			 const struct rdma_conn_param *none,
			 const struct rdma_conn_param **p,
			 unsigned int max_pdata, enum cma_state want)
{
	bool accepting = want == CMA_REQ_RCVD;
	struct cma_id *cid;

	if (!id)
		return EINVAL;
	*p = given ? given : none;
	if ((*p)->private_data_len > max_pdata ||
	    ((*p)->private_data_len && !(*p)->private_data))
		return EINVAL;
	cid = to_cma_id(id);
	pthread_mutex_lock(&cma.lock);
	if (cid->state != want)
		goto invalid;
	if (id->qp_type == IBV_QPT_UD)
		return 0;
	if (pick_rd(cid->dev, given, (*p)->responder_resources,
		    accepting ? cid->resp_res : 0xFF, &cid->resp_res) ||
	    pick_rd(cid->dev, given, (*p)->initiator_depth,
		    accepting ? cid->init_depth : 0xFF, &cid->init_depth))
		goto invalid;
	return 0;
invalid:
	pthread_mutex_unlock(&cma.lock);
	return EINVAL;
}

/* ... and last: drop the lock, report ret the rdma-core way, and on a
 * synchronous id wait for ESTABLISHED. */
static int conn_epilogue(struct cma_id *cid, int ret)
{
	pthread_mutex_unlock(&cma.lock);
	if (ret)
		return cma_err(ret);
	return cid->sync ? cma_sync_wait(cid, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

UR_EXPORT int rdma_connect(struct rdma_cm_id *id,
			   struct rdma_conn_param *given)
{
	const struct rdma_conn_param none = { .retry_count = 7,
					      .rnr_retry_count = 7 };
	const struct rdma_conn_param *p;
	struct ur_cm_msg m;
	struct ur_cm_req *r = &m.req;
	struct cma_id *cid;
	unsigned int off;
	int ret;

	ret = conn_prologue(id, given, &none, &p,
			    req_user_pdata(id, UR_CM_REQ_PDATA),
			    CMA_ROUTE_RESOLVED);
	if (ret)
		return cma_err(ret);
	cid = to_cma_id(id);
	if (id->qp_type == IBV_QPT_UD) {
		ret = sidr_connect(cid, p);
		goto out;
	}
	if (cid->loop_dst) {	/* a listener may have appeared since */
		ret = cma_route_dst(cid, &cid->dst);
		if (ret)
			goto out;
		cma_fill_path(cid);
	}
	memcpy(cid->peer_gid, cid->dgid, 16);
	cid->path_mtu = cid->dev->mtu;
	cid->retry_count = p->retry_count > 7 ? 7 : p->retry_count;
	cid->rnr_retry = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;
	cid->qp_num = id->qp ? id->qp->qp_num : p->qp_num;
	/* A REQ's and a REP's Starting PSN is what the sender expects to
	 * receive: the peer's send queue starts there. The Linux CM (rxe,
	 * every kernel peer) sets rq_psn from the REQ it sends and sq_psn
	 * from the REQ it receives; the e2e rping capture checks it. */
	cid->rq_psn = ur_random_u32() & UR_PSN_MASK;
	cid->local_comm_id = cma_new_comm_id();
	cid->remote_comm_id = 0;
	cid->tid = cma_new_tid();
	cid->srq = id->qp ? id->qp->srq != NULL : p->srq;

	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_REQ, cid->tid);
	cma_ece_req_fill(cid, &m);
	r->local_comm_id = cid->local_comm_id;
	r->service_id = ur_cm_service_id(cma_id_ps(cid),
					 cma_addr_port(&cid->dst.sa));
	r->local_ca_guid = cid->dev->guid;
	r->local_qpn = cid->qp_num & UR_QPN_MASK;
	r->responder_resources = cid->resp_res;
	r->initiator_depth = cid->init_depth;
	r->remote_cm_response_timeout = UR_CM_RESPONSE_TIMEOUT;
	r->transport = id->qp_type == IBV_QPT_UC ? 1 : 0;
	r->flow_control = p->flow_control != 0;
	r->starting_psn = cid->rq_psn;
	r->local_cm_response_timeout = UR_CM_RESPONSE_TIMEOUT;
	r->retry_count = cid->retry_count;
	r->pkey = UR_PKEY_DEFAULT;
	r->path_mtu = (uint8_t)cid->path_mtu;
	r->rnr_retry_count = cid->rnr_retry;
	r->max_cm_retries = UR_CM_MAX_RETRIES;
	r->srq = cid->srq;
	if (id->qp_type == IBV_QPT_XRC_SEND) {
		/* IBA A14: transport "extended", type 1 XRC; an initiator
		 * has no receive side, so no responder resources, retry
		 * counts or SRQ (its retry counts stay its own) */
		r->transport = UR_CM_TRANSPORT_EXT;
		r->ext_transport = UR_CM_EXT_TRANSPORT_XRC;
		r->responder_resources = 0;
		r->retry_count = 0;
		r->rnr_retry_count = 0;
		r->srq = false;
	}
	r->primary.local_lid = 0xFFFF;
	r->primary.remote_lid = 0xFFFF;
	memcpy(r->primary.local_gid, cid->dev->gids[cid->sgid], 16);
	memcpy(r->primary.remote_gid, cid->dgid, 16);
	r->primary.packet_rate = (uint8_t)cid->path.rate;
	r->primary.traffic_class = cid->tos;
	r->primary.hop_limit = UR_DEFAULT_HOP_LIMIT;
	r->primary.local_ack_timeout = cid->ack_timeout;

	off = put_cma_hdr(cid, r->private_data);
	if (p->private_data_len)
		memcpy(r->private_data + off, p->private_data,
		       p->private_data_len);
	cid->state = CMA_REQ_SENT;
	ret = cma_send_req(cid, &m);
out:
	return conn_epilogue(cid, ret);
}

/*
 * UD ids resolve the peer's QPN and Q_Key with SIDR (IBA 12.11): a
 * SIDR_REQ with the service ID and rdma_cm's header, answered by a
 * SIDR_REP that gives the active side ESTABLISHED with param.ud.
 */
static int sidr_connect(struct cma_id *cid, const struct rdma_conn_param *p)
{
	struct ur_cm_msg m;
	unsigned int off;

	if (p->private_data_len >
	    req_user_pdata(&cid->id, UR_CM_SIDR_REQ_PDATA))
		return EINVAL;
	if (cid->loop_dst) {
		int ret = cma_route_dst(cid, &cid->dst);

		if (ret)
			return ret;
		cma_fill_path(cid);
	}
	memcpy(cid->peer_gid, cid->dgid, 16);
	cid->local_comm_id = cma_new_comm_id();	/* the SIDR request ID */
	cid->remote_comm_id = 0;
	cid->tid = cma_new_tid();
	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_SIDR_REQ, cid->tid);
	m.sidr_req.request_id = cid->local_comm_id;
	m.sidr_req.pkey = UR_PKEY_DEFAULT;
	m.sidr_req.service_id = ur_cm_service_id(cma_id_ps(cid),
						 cma_addr_port(&cid->dst.sa));
	off = put_cma_hdr(cid, m.sidr_req.private_data);
	if (p->private_data_len)
		memcpy(m.sidr_req.private_data + off, p->private_data,
		       p->private_data_len);
	cid->state = CMA_REQ_SENT;
	return cma_send_req(cid, &m);
}

UR_EXPORT int rdma_accept(struct rdma_cm_id *id,
			  struct rdma_conn_param *given)
{
	const struct rdma_conn_param none = { .rnr_retry_count = 7 };
	const struct rdma_conn_param *p;
	struct ur_cm_msg m;
	struct ur_cm_rep *r = &m.rep;
	struct cma_id *cid;
	int ret;

	ret = conn_prologue(id, given, &none, &p, UR_CM_REP_PDATA,
			    CMA_REQ_RCVD);
	if (ret)
		return cma_err(ret);
	cid = to_cma_id(id);
	if (id->qp_type == IBV_QPT_UD) {
		if (p->private_data_len > UR_CM_SIDR_REP_PDATA) {
			ret = EINVAL;
			goto out;
		}
		cma_send_sidr_rep(cid->dev, cid->sgid, cid->peer_gid, cid->tid,
			      cid->remote_comm_id, UR_CM_SIDR_OK,
			      cma_id_service_id(cid),
			      id->qp ? id->qp->qp_num : p->qp_num,
			      RDMA_UDP_QKEY, p->private_data,
			      p->private_data_len, cid->mad);
		cid->state = CMA_ESTABLISHED;	/* no event on this side */
		pthread_mutex_unlock(&cma.lock);
		return 0;
	}
	cid->qp_num = id->qp ? id->qp->qp_num : p->qp_num;
	cid->srq = id->qp ? id->qp->srq != NULL : p->srq;
	cid->state = CMA_REP_SENT;
	ret = cma_qp_connect(cid);
	if (ret) {
		cid->state = CMA_REQ_RCVD;
		goto out;
	}
	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_REP, cid->tid);
	cma_ece_rep_fill(cid, &m);
	r->local_comm_id = cid->local_comm_id;
	r->remote_comm_id = cid->remote_comm_id;
	r->local_qpn = cid->qp_num & UR_QPN_MASK;
	r->starting_psn = cid->rq_psn;
	r->responder_resources = cid->resp_res;
	r->initiator_depth = cid->init_depth;
	r->target_ack_delay = UR_CM_TARGET_ACK_DELAY;
	r->flow_control = p->flow_control != 0;
	r->rnr_retry_count = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;
	r->srq = cid->srq;
	r->local_ca_guid = cid->dev->guid;
	if (id->qp_type == IBV_QPT_XRC_RECV) {
		/* IBA A14: an XRC target names itself in the EE context
		 * field, receives through SRQs only and sends nothing */
		r->local_eecn = r->local_qpn;
		r->local_qpn = 0;
		r->srq = true;
		r->initiator_depth = 0;
		r->flow_control = false;
	}
	if (p->private_data_len)
		memcpy(r->private_data, p->private_data, p->private_data_len);
	cma_send_msg(cid, &m, true);
out:
	return conn_epilogue(cid, ret);
}

static int reject_locked(struct cma_id *cid, const void *pdata, uint8_t len,
			 uint16_t reason)
{
	uint8_t kind;

	if (len > UR_CM_REJ_PDATA || (len && !pdata))
		return EINVAL;
	if (cid->id.qp_type == IBV_QPT_UD && cid->state == CMA_REQ_RCVD) {
		cma_send_sidr_rep(cid->dev, cid->sgid, cid->peer_gid, cid->tid,
			      cid->remote_comm_id, UR_CM_SIDR_REJECT,
			      cma_id_service_id(cid), 0, 0, pdata, len, NULL);
		cid->state = CMA_CLOSED;
		return 0;
	}
	if (cid->state == CMA_REQ_RCVD)
		kind = UR_CM_MSG_REQ;
	else if (cid->state == CMA_REP_RCVD)
		kind = UR_CM_MSG_REP;
	else
		return EINVAL;
	cma_send_rej(cid->dev, cid->sgid, cid->peer_gid, cid->tid,
		     cid->local_comm_id, cid->remote_comm_id, kind, reason,
		     pdata, len);
	cid->state = CMA_CLOSED;
	cid->deadline_ns = 0;
	cma_qp_to_err(cid);
	return 0;
}

UR_EXPORT int rdma_reject(struct rdma_cm_id *id, const void *private_data,
			  uint8_t private_data_len)
{
	int ret;

	if (!id)
		return cma_err(EINVAL);
	pthread_mutex_lock(&cma.lock);
	ret = reject_locked(to_cma_id(id), private_data, private_data_len,
			    UR_CM_REJ_CONSUMER_DEFINED);
	pthread_mutex_unlock(&cma.lock);
	return ret ? cma_err(ret) : 0;
}

UR_EXPORT int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data,
			      uint8_t private_data_len)
{
	int ret;

	if (!id)
		return cma_err(EINVAL);
	/* the peer's ECE options are not acceptable: the IBA's own reason */
	pthread_mutex_lock(&cma.lock);
	ret = reject_locked(to_cma_id(id), private_data, private_data_len,
			    UR_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED);
	pthread_mutex_unlock(&cma.lock);
	return ret ? cma_err(ret) : 0;
}

UR_EXPORT int rdma_establish(struct rdma_cm_id *id)
{
	struct cma_id *cid;
	int ret = 0;

	if (!id)
		return cma_err(EINVAL);
	cid = to_cma_id(id);
	pthread_mutex_lock(&cma.lock);
	if (cid->state != CMA_REP_RCVD) {
		ret = EINVAL;
	} else {
		ret = cma_qp_connect(cid);
		if (!ret) {
			cma_send_rtu(cid);
			cid->state = CMA_ESTABLISHED;
		}
	}
	pthread_mutex_unlock(&cma.lock);
	return ret ? cma_err(ret) : 0;
}

UR_EXPORT int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	struct cma_id *cid;
	int ret = 0;

	if (!id)
		return cma_err(EINVAL);
	cid = to_cma_id(id);
	pthread_mutex_lock(&cma.lock);
	if (cid->state == CMA_REP_SENT && event == IBV_EVENT_COMM_EST)
		cma_established(cid);	/* data came before the RTU */
	else if (cid->state != CMA_ESTABLISHED)
		ret = EINVAL;
	pthread_mutex_unlock(&cma.lock);
	return ret ? cma_err(ret) : 0;
}

UR_EXPORT int rdma_disconnect(struct rdma_cm_id *id)
{
	struct cma_id *cid;
	bool wait = false;
	int ret = 0;

	if (!id)
		return cma_err(EINVAL);
	cid = to_cma_id(id);
	pthread_mutex_lock(&cma.lock);
	if (id->qp_type == IBV_QPT_UD) {
		/* nothing to tear down on the wire for a datagram id */
		ret = cid->state == CMA_ESTABLISHED ? 0 : EINVAL;
		if (!ret)
			cid->state = CMA_TIMEWAIT;
		pthread_mutex_unlock(&cma.lock);
		return ret ? cma_err(ret) : 0;
	}
	switch (cid->state) {
	case CMA_ESTABLISHED:
	case CMA_REP_SENT:
		cma_qp_to_err(cid);
		cid->state = CMA_DREQ_SENT;
		cma_send_dreq(cid, true);
		wait = true;
		break;
	case CMA_REQ_SENT:
		cma_qp_to_err(cid);
		cma_send_rej(cid->dev, cid->sgid, cid->peer_gid, cid->tid,
			     cid->local_comm_id, cid->remote_comm_id,
			     UR_CM_MSG_REQ, UR_CM_REJ_TIMEOUT, NULL, 0);
		cid->state = CMA_CLOSED;
		cid->deadline_ns = 0;
		break;
	case CMA_TIMEWAIT:
		/* the peer's DREQ came first; its DISCONNECTED is queued */
		cma_qp_to_err(cid);
		wait = cid->dreq_rcvd;
		cid->dreq_rcvd = false;
		break;
	case CMA_DREQ_SENT:
		break;
	default:
		ret = EINVAL;
	}
	pthread_mutex_unlock(&cma.lock);
	if (ret)
		return cma_err(ret);
	return cid->sync && wait ?
		       cma_sync_wait(cid, RDMA_CM_EVENT_DISCONNECTED) : 0;
}

/* Keeps id's DREQ going after the id is gone (struct cma_linger). */
static void linger(struct cma_id *id)
{
	struct cma_linger *l = calloc(1, sizeof(*l));

	if (!l)
		return;
	l->dev = id->dev;
	l->sgid = id->sgid;
	memcpy(l->peer_gid, id->peer_gid, 16);
	l->local_comm_id = id->local_comm_id;
	l->remote_comm_id = id->remote_comm_id;
	memcpy(l->mad, id->mad, UR_MAD_SIZE);
	l->retries_left = id->retries_left;
	l->interval_ns = cma_dreq_interval_ns(id);
	l->deadline_ns = id->deadline_ns ? id->deadline_ns :
					   ur_now_ns() + l->interval_ns;
	ur_list_add_tail(&cma.lingering, &l->node);
}

/* rdma_destroy_id: tell the peer; only a DREQ is retransmitted after. */
static void conn_teardown(struct cma_id *id)
{
	struct ur_list *pos;

	if (id->id.qp_type == IBV_QPT_UD) {
		if (id->state == CMA_REQ_RCVD)
			reject_locked(id, NULL, 0, 0);
		id->state = CMA_CLOSED;
		id->deadline_ns = 0;
		goto children;
	}
	switch (id->state) {
	case CMA_REQ_SENT:
		cma_send_rej(id->dev, id->sgid, id->peer_gid, id->tid,
			     id->local_comm_id, id->remote_comm_id,
			     UR_CM_MSG_REQ, UR_CM_REJ_TIMEOUT, NULL, 0);
		break;
	case CMA_REQ_RCVD:
	case CMA_REP_RCVD:
		reject_locked(id, NULL, 0, UR_CM_REJ_CONSUMER_DEFINED);
		break;
	case CMA_REP_SENT:
		cma_send_rej(id->dev, id->sgid, id->peer_gid, id->tid,
			     id->local_comm_id, id->remote_comm_id,
			     UR_CM_MSG_OTHER, UR_CM_REJ_CONSUMER_DEFINED, NULL,
			     0);
		break;
	case CMA_ESTABLISHED:
		cma_qp_to_err(id);
		cma_send_dreq(id, true);
		linger(id);
		break;
	case CMA_DREQ_SENT:
		linger(id);
		break;
	default:
		break;
	}
	id->state = CMA_CLOSED;
	id->deadline_ns = 0;
children:
	ur_list_for_each(pos, &cma.ids) {
		struct cma_id *o = ur_list_entry(pos, struct cma_id, node);

		if (o->listener == id)
			o->listener = NULL;
	}
}

/*
 * The kernel's rdma_cm destroys the ids a process leaves behind when the
 * process ends (closing /dev/infiniband/rdma_cm does it), so its peers get
 * a DREQ or a REJ and their DISCONNECTED or REJECTED, not silence. The
 * same here for a process that returns from main or calls exit() with
 * connections up (one killed by a signal sends nothing: docs/features.md, "CM on the wire"). A forked
 * child that exits holds copies of its parent's ids: those stay alone.
 */
__attribute__((destructor(UR_CM_DTOR_IDS))) static void conn_exit(void)
{
	struct ur_list *pos;

	if (!cma_owned())
		return;
	pthread_mutex_lock(&cma.lock);
	ur_list_for_each(pos, &cma.ids) {
		struct cma_id *id = ur_list_entry(pos, struct cma_id, node);

		if (!id->destroying)
			conn_teardown(id);
		/* and the loopback rendezvous forgets our listeners: a stale
		 * entry whose pid the system reuses looks alive, and sends a
		 * later client's REQ to an address nobody listens on */
		cma_rv_withdraw(id);
	}
	pthread_mutex_unlock(&cma.lock);
}

/* ------------------------------------------------------------------ */
/* Receive                                                              */
/* ------------------------------------------------------------------ */

/* Here rather than in id.c: an id's end starts with what its connection
 * tells the peer (conn_teardown), and id.c sits below this file. */
UR_EXPORT int rdma_destroy_id(struct rdma_cm_id *id)
{
	struct cma_id *cid;

	if (!id)
		return cma_err(EINVAL);
	cid = to_cma_id(id);
	pthread_mutex_lock(&cma.lock);
	cid->destroying = true;
	cma_mc_leave_all(cid);
	conn_teardown(cid);
	cma_rv_withdraw(cid);
	if (cid->sync && id->event) {
		struct rdma_cm_event *ev = id->event;

		id->event = NULL;
		pthread_mutex_unlock(&cma.lock);
		rdma_ack_cm_event(ev);
		pthread_mutex_lock(&cma.lock);
	}
	cma_chan_drop_events(cid);
	/* rdma-core's rule: wait until every event handed out is acked */
	while (cid->events_out > 0)
		pthread_cond_wait(&cma.cond, &cma.lock);
	ur_list_del(&cid->node);
	pthread_mutex_unlock(&cma.lock);
	if (cid->sync)
		cma_chan_free(cid->chan);
	free(cid);
	return 0;
}
