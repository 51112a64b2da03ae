/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The IB CM protocol as rdma_cm uses it over RoCEv2 (IBA vol 1 ch. 12):
 *
 *   active  ROUTE_RESOLVED -REQ-> REQ_SENT -REP/RTU-> ESTABLISHED
 *   passive LISTEN: REQ -> new id REQ_RCVD -accept/REP-> REP_SENT -RTU->
 *           ESTABLISHED
 *   either  ESTABLISHED -DREQ-> DREQ_SENT -DREP-> TIMEWAIT
 *           ESTABLISHED <-DREQ (DREP sent) -> TIMEWAIT
 *
 * REQ, REP and DREQ are retransmitted every UR_CM_RESPONSE_TIMEOUT until
 * answered, at most UR_CM_MAX_RETRIES times; then the id gets UNREACHABLE
 * (or, for DREQ, DISCONNECTED). Duplicates are answered from state: a REQ
 * seen again while the application has not yet accepted gets an MRA (so the
 * active side waits instead of giving up), after accept the REP again; a
 * REP seen again the RTU again; a DREQ seen again (or for a connection we
 * no longer know) a DREP. LAP and SIDR are refused with REJ.
 * Everything here runs with cma.lock held.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/rdmacm/rdmacm_priv.h"
#include "util/log.h"
#include "util/random.h"
#include "util/time.h"

#define CMA_REQ_USER_PDATA (UR_CM_REQ_PDATA - UR_CMA_HDR_SIZE)

static uint64_t cm_interval_ns(void)
{
	return ur_cm_timeout_us(UR_CM_RESPONSE_TIMEOUT) * 1000;
}

static uint32_t new_comm_id(void)
{
	for (;;) {
		uint32_t v = ur_random_u32();
		struct ur_list *pos;
		bool used = false;

		if (!v)
			continue;
		ur_list_for_each(pos, &cma.ids) {
			struct cma_id *o = ur_list_entry(pos, struct cma_id, node);

			if (o->local_comm_id == v)
				used = true;
		}
		if (!used)
			return v;
	}
}

static uint64_t new_tid(void)
{
	return (uint64_t)ur_random_u32() << 32 | ur_random_u32();
}

/* Encodes msg and sends it to the peer; with retransmit, arms the timer. */
static int send_msg(struct cma_id *id, struct ur_cm_msg *msg, bool retransmit)
{
	int ret = ur_cm_encode(msg, id->mad);

	if (ret)
		return -ret;
	ret = cma_agent_send(id->dev, id->peer_gid, id->mad);
	if (ret)
		ur_dbg("rdmacm: send %s: %s", ur_cm_attr_str(msg->hdr.attr_id),
		       strerror(ret));
	if (retransmit) {
		id->retries_left = UR_CM_MAX_RETRIES;
		id->interval_ns = cm_interval_ns();
		id->deadline_ns = ur_now_ns() + id->interval_ns;
		cma_agent_kick(id->dev);
	} else {
		id->deadline_ns = 0;
	}
	return 0;	/* a lost first try is what retransmission is for */
}

/* A message that belongs to no id (REJ to a stray REQ, DREP, ...). */
static void send_stateless(struct cma_dev *dev, const uint8_t gid[16],
			   struct ur_cm_msg *msg)
{
	uint8_t buf[UR_MAD_SIZE];

	if (!ur_cm_encode(msg, buf))
		cma_agent_send(dev, gid, buf);
}

static void send_rej(struct cma_dev *dev, const uint8_t gid[16], uint64_t tid,
		     uint32_t local, uint32_t remote, uint8_t kind,
		     uint16_t reason, const void *pdata, unsigned int len)
{
	struct ur_cm_msg m;

	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_REJ, tid);
	m.rej.local_comm_id = local;
	m.rej.remote_comm_id = remote;
	m.rej.msg_rejected = kind;
	m.rej.reason = reason;
	if (pdata && len)
		memcpy(m.rej.private_data, pdata,
		       len > UR_CM_REJ_PDATA ? UR_CM_REJ_PDATA : len);
	send_stateless(dev, gid, &m);
}

static void send_drep(struct cma_dev *dev, const uint8_t gid[16], uint64_t tid,
		      uint32_t local, uint32_t remote)
{
	struct ur_cm_msg m;

	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_DREP, tid);
	m.dreq.local_comm_id = local;
	m.dreq.remote_comm_id = remote;
	send_stateless(dev, gid, &m);
}

static void send_rtu(struct cma_id *id)
{
	struct ur_cm_msg m;

	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_RTU, id->tid);
	m.rtu.local_comm_id = id->local_comm_id;
	m.rtu.remote_comm_id = id->remote_comm_id;
	send_msg(id, &m, false);
}

static void send_dreq(struct cma_id *id, bool retransmit)
{
	struct ur_cm_msg m;

	memset(&m, 0, sizeof(m));
	/* one TID per connection, as the kernel's CM does */
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_DREQ, id->tid);
	m.dreq.local_comm_id = id->local_comm_id;
	m.dreq.remote_comm_id = id->remote_comm_id;
	m.dreq.remote_qpn = id->remote_qpn;
	send_msg(id, &m, retransmit);
}

static void conn_param_of(struct rdma_conn_param *c, uint8_t resp_res,
			  uint8_t init_depth, bool fc, uint8_t retry,
			  uint8_t rnr, bool srq, uint32_t qpn)
{
	memset(c, 0, sizeof(*c));
	c->responder_resources = resp_res;
	c->initiator_depth = init_depth;
	c->flow_control = fc;
	c->retry_count = retry;
	c->rnr_retry_count = rnr;
	c->srq = srq;
	c->qp_num = qpn;
}

/* RC/UC: INIT with the connection's access flags, then RTR and RTS. */
static int qp_connect(struct cma_id *id)
{
	int ret = cma_modify_qp(id, IBV_QPS_INIT);

	if (!ret)
		ret = cma_modify_qp(id, IBV_QPS_RTR);
	if (!ret)
		ret = cma_modify_qp(id, IBV_QPS_RTS);
	return ret;
}

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

static int send_req(struct cma_id *cid, struct ur_cm_msg *m);
static int sidr_connect(struct cma_id *cid, const struct rdma_conn_param *p);

UR_EXPORT int rdma_connect(struct rdma_cm_id *id,
			   struct rdma_conn_param *p)
{
	struct rdma_conn_param none = { .retry_count = 7,
					.rnr_retry_count = 7 };
	const struct rdma_conn_param *given = p;
	struct ur_cma_hdr h;
	struct ur_cm_msg m;
	struct ur_cm_req *r = &m.req;
	struct cma_id *cid;
	int ret = 0;

	if (!id)
		return cma_err(EINVAL);
	if (!p)
		p = &none;
	if (p->private_data_len > CMA_REQ_USER_PDATA ||
	    (p->private_data_len && !p->private_data))
		return cma_err(EINVAL);
	cid = to_cma_id(id);
	pthread_mutex_lock(&cma.lock);
	if (cid->state != CMA_ROUTE_RESOLVED) {
		ret = EINVAL;
		goto out;
	}
	if (id->qp_type == IBV_QPT_UD) {
		ret = sidr_connect(cid, p);
		goto out;
	}
	if (pick_rd(cid->dev, given, p->responder_resources, 0xFF,
		    &cid->resp_res) ||
	    pick_rd(cid->dev, given, p->initiator_depth, 0xFF,
		    &cid->init_depth)) {
		ret = EINVAL;
		goto out;
	}
	if (cid->loop_dst) {	/* a listener may have appeared since */
		ret = cma_route_dst(cid, (union ur_sockaddr *)
				    &id->route.addr.dst_storage);
		if (ret)
			goto out;
		cma_fill_path(cid);
	}
	memcpy(cid->peer_gid, cid->dgid, 16);
	cid->path_mtu = cid->dev->mtu;
	cid->retry_count = p->retry_count > 7 ? 7 : p->retry_count;
	cid->rnr_retry = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;
	cid->qp_num = id->qp ? id->qp->qp_num : p->qp_num;
	cid->sq_psn = ur_random_u32() & 0xFFFFFF;
	cid->local_comm_id = new_comm_id();
	cid->remote_comm_id = 0;
	cid->tid = new_tid();
	cid->srq = id->qp ? id->qp->srq != NULL : p->srq;

	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_REQ, cid->tid);
	r->local_comm_id = cid->local_comm_id;
	r->service_id = ur_cm_service_id((uint16_t)id->ps,
					 cma_addr_port(&id->route.addr.dst_addr));
	r->local_ca_guid = cid->dev->guid;
	r->local_qpn = cid->qp_num & 0xFFFFFF;
	r->responder_resources = cid->resp_res;
	r->initiator_depth = cid->init_depth;
	r->remote_cm_response_timeout = UR_CM_RESPONSE_TIMEOUT;
	r->transport = id->qp_type == IBV_QPT_UC ? 1 : 0;
	r->flow_control = p->flow_control != 0;
	r->starting_psn = cid->sq_psn;
	r->local_cm_response_timeout = UR_CM_RESPONSE_TIMEOUT;
	r->retry_count = cid->retry_count;
	r->pkey = 0xFFFF;
	r->path_mtu = (uint8_t)cid->path_mtu;
	r->rnr_retry_count = cid->rnr_retry;
	r->max_cm_retries = UR_CM_MAX_RETRIES;
	r->srq = cid->srq;
	r->primary.local_lid = 0xFFFF;
	r->primary.remote_lid = 0xFFFF;
	memcpy(r->primary.local_gid, cid->dev->gid, 16);
	memcpy(r->primary.remote_gid, cid->dgid, 16);
	r->primary.packet_rate = (uint8_t)cid->path.rate;
	r->primary.traffic_class = cid->tos;
	r->primary.hop_limit = UR_CM_HOP_LIMIT;
	r->primary.local_ack_timeout = cid->ack_timeout;

	memset(&h, 0, sizeof(h));
	h.ip_version = id->route.addr.src_addr.sa_family == AF_INET6 ? 6 : 4;
	h.src_port = cma_addr_port(&id->route.addr.src_addr);
	addr_to16(&id->route.addr.src_addr, h.src_addr);
	addr_to16(&id->route.addr.dst_addr, h.dst_addr);
	ur_cma_hdr_encode(&h, r->private_data);
	if (p->private_data_len)
		memcpy(r->private_data + UR_CMA_HDR_SIZE, p->private_data,
		       p->private_data_len);
	cid->state = CMA_REQ_SENT;
	ret = send_req(cid, &m);
out:
	pthread_mutex_unlock(&cma.lock);
	if (ret)
		return cma_err(ret);
	return cid->sync ? cma_sync_wait(cid, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

/* Sends a REQ or SIDR_REQ, or holds it for a loopback listener. */
static int send_req(struct cma_id *cid, struct ur_cm_msg *m)
{
	int ret;

	if (cid->loop_dst && cid->rv_miss) {
		/*
		 * Nobody has published this loopback address and port yet.
		 * A server that is about to listen (perftest listens again
		 * for its test connection right after its handshake) gets
		 * the time a kernel would spend resolving the address: the
		 * REQ waits while the directory is read again (cma_timers);
		 * after UR_CM_RV_WAIT_NS it goes to our own device, which
		 * refuses it (REJ 8) as a host without a listener does.
		 */
		ret = -ur_cm_encode(m, cid->mad);
		if (ret)
			return ret;
		cid->rv_until_ns = ur_now_ns() + UR_CM_RV_WAIT_NS;
		cid->retries_left = UR_CM_MAX_RETRIES;
		cid->interval_ns = cm_interval_ns();
		cid->deadline_ns = ur_now_ns() + UR_CM_RV_POLL_NS;
		cma_agent_kick(cid->dev);
		return 0;
	}
	return send_msg(cid, m, true);
}

/*
 * UD ids resolve the peer's QPN and Q_Key with SIDR (IBA 12.11): a
 * SIDR_REQ with the service ID and rdma_cm's header, answered by a
 * SIDR_REP that gives the active side ESTABLISHED with param.ud.
 */
static int sidr_connect(struct cma_id *cid, const struct rdma_conn_param *p)
{
	struct rdma_cm_id *id = &cid->id;
	struct ur_cma_hdr h;
	struct ur_cm_msg m;

	if (p->private_data_len > UR_CM_SIDR_REQ_PDATA - UR_CMA_HDR_SIZE)
		return EINVAL;
	if (cid->loop_dst) {
		int ret = cma_route_dst(cid, (union ur_sockaddr *)
					&id->route.addr.dst_storage);

		if (ret)
			return ret;
		cma_fill_path(cid);
	}
	memcpy(cid->peer_gid, cid->dgid, 16);
	cid->local_comm_id = new_comm_id();	/* the SIDR request ID */
	cid->remote_comm_id = 0;
	cid->tid = new_tid();
	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_SIDR_REQ, cid->tid);
	m.sidr_req.request_id = cid->local_comm_id;
	m.sidr_req.pkey = 0xFFFF;
	m.sidr_req.service_id = ur_cm_service_id(
		(uint16_t)id->ps, cma_addr_port(&id->route.addr.dst_addr));
	memset(&h, 0, sizeof(h));
	h.ip_version = id->route.addr.src_addr.sa_family == AF_INET6 ? 6 : 4;
	h.src_port = cma_addr_port(&id->route.addr.src_addr);
	addr_to16(&id->route.addr.src_addr, h.src_addr);
	addr_to16(&id->route.addr.dst_addr, h.dst_addr);
	ur_cma_hdr_encode(&h, m.sidr_req.private_data);
	if (p->private_data_len)
		memcpy(m.sidr_req.private_data + UR_CMA_HDR_SIZE,
		       p->private_data, p->private_data_len);
	cid->state = CMA_REQ_SENT;
	return send_req(cid, &m);
}

static void send_sidr_rep(struct cma_dev *dev, const uint8_t gid[16],
			  uint64_t tid, uint32_t request_id, uint8_t status,
			  uint64_t sid, uint32_t qpn, uint32_t qkey,
			  const void *pdata, unsigned int len, uint8_t *keep)
{
	struct ur_cm_msg m;
	uint8_t buf[UR_MAD_SIZE];

	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_SIDR_REP, tid);
	m.sidr_rep.request_id = request_id;
	m.sidr_rep.status = status;
	m.sidr_rep.qpn = qpn & 0xFFFFFF;
	m.sidr_rep.service_id = sid;
	m.sidr_rep.qkey = qkey;
	if (pdata && len)
		memcpy(m.sidr_rep.private_data, pdata,
		       len > UR_CM_SIDR_REP_PDATA ? UR_CM_SIDR_REP_PDATA : len);
	if (ur_cm_encode(&m, buf))
		return;
	if (keep)	/* answered again when the SIDR_REQ comes again */
		memcpy(keep, buf, UR_MAD_SIZE);
	cma_agent_send(dev, gid, buf);
}

static uint64_t id_service_id(const struct cma_id *id)
{
	return ur_cm_service_id((uint16_t)id->id.ps,
				cma_addr_port(&id->id.route.addr.src_addr));
}

UR_EXPORT int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *p)
{
	struct rdma_conn_param none = { .rnr_retry_count = 7 };
	const struct rdma_conn_param *given = p;
	struct ur_cm_msg m;
	struct ur_cm_rep *r = &m.rep;
	struct cma_id *cid;
	int ret = 0;

	if (!id)
		return cma_err(EINVAL);
	if (!p)
		p = &none;
	if (p->private_data_len > UR_CM_REP_PDATA ||
	    (p->private_data_len && !p->private_data))
		return cma_err(EINVAL);
	cid = to_cma_id(id);
	pthread_mutex_lock(&cma.lock);
	if (cid->state != CMA_REQ_RCVD) {
		ret = EINVAL;
		goto out;
	}
	if (id->qp_type == IBV_QPT_UD) {
		if (p->private_data_len > UR_CM_SIDR_REP_PDATA) {
			ret = EINVAL;
			goto out;
		}
		send_sidr_rep(cid->dev, cid->peer_gid, cid->tid,
			      cid->remote_comm_id, UR_CM_SIDR_OK,
			      id_service_id(cid),
			      id->qp ? id->qp->qp_num : p->qp_num,
			      RDMA_UDP_QKEY, p->private_data,
			      p->private_data_len, cid->mad);
		cid->state = CMA_ESTABLISHED;	/* no event on this side */
		pthread_mutex_unlock(&cma.lock);
		return 0;
	}
	if (pick_rd(cid->dev, given, p->responder_resources, cid->resp_res,
		    &cid->resp_res) ||
	    pick_rd(cid->dev, given, p->initiator_depth, cid->init_depth,
		    &cid->init_depth)) {
		ret = EINVAL;
		goto out;
	}
	cid->qp_num = id->qp ? id->qp->qp_num : p->qp_num;
	cid->sq_psn = ur_random_u32() & 0xFFFFFF;
	cid->srq = id->qp ? id->qp->srq != NULL : p->srq;
	cid->state = CMA_REP_SENT;
	ret = qp_connect(cid);
	if (ret) {
		cid->state = CMA_REQ_RCVD;
		goto out;
	}
	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_REP, cid->tid);
	r->local_comm_id = cid->local_comm_id;
	r->remote_comm_id = cid->remote_comm_id;
	r->local_qpn = cid->qp_num & 0xFFFFFF;
	r->starting_psn = cid->sq_psn;
	r->responder_resources = cid->resp_res;
	r->initiator_depth = cid->init_depth;
	r->target_ack_delay = UR_CM_TARGET_ACK_DELAY;
	r->flow_control = p->flow_control != 0;
	r->rnr_retry_count = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;
	r->srq = cid->srq;
	r->local_ca_guid = cid->dev->guid;
	if (p->private_data_len)
		memcpy(r->private_data, p->private_data, p->private_data_len);
	send_msg(cid, &m, true);
out:
	pthread_mutex_unlock(&cma.lock);
	if (ret)
		return cma_err(ret);
	return cid->sync ? cma_sync_wait(cid, RDMA_CM_EVENT_ESTABLISHED) : 0;
}

static int reject_locked(struct cma_id *cid, const void *pdata, uint8_t len,
			 uint16_t reason)
{
	uint8_t kind;

	if (len > UR_CM_REJ_PDATA || (len && !pdata))
		return EINVAL;
	if (cid->id.qp_type == IBV_QPT_UD && cid->state == CMA_REQ_RCVD) {
		send_sidr_rep(cid->dev, cid->peer_gid, cid->tid,
			      cid->remote_comm_id, UR_CM_SIDR_REJECT,
			      id_service_id(cid), 0, 0, pdata, len, NULL);
		cid->state = CMA_CLOSED;
		return 0;
	}
	if (cid->state == CMA_REQ_RCVD)
		kind = UR_CM_MSG_REQ;
	else if (cid->state == CMA_REP_RCVD)
		kind = UR_CM_MSG_REP;
	else
		return EINVAL;
	send_rej(cid->dev, cid->peer_gid, cid->tid, cid->local_comm_id,
		 cid->remote_comm_id, kind, reason, pdata, len);
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
	/* ECE is negotiated by kernels with vendor options: none here */
	return rdma_reject(id, private_data, private_data_len);
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
		ret = qp_connect(cid);
		if (!ret) {
			send_rtu(cid);
			cid->state = CMA_ESTABLISHED;
		}
	}
	pthread_mutex_unlock(&cma.lock);
	return ret ? cma_err(ret) : 0;
}

static void established(struct cma_id *id)
{
	struct rdma_conn_param c;

	id->state = CMA_ESTABLISHED;
	id->deadline_ns = 0;
	conn_param_of(&c, id->resp_res, id->init_depth, false, id->retry_count,
		      id->rnr_retry, id->srq, id->remote_qpn);
	cma_event_post(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0, &c, NULL);
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
		established(cid);	/* data came before the RTU */
	else if (cid->state != CMA_ESTABLISHED)
		ret = EINVAL;
	pthread_mutex_unlock(&cma.lock);
	return ret ? cma_err(ret) : 0;
}

static void disconnected(struct cma_id *id)
{
	id->state = CMA_TIMEWAIT;
	id->deadline_ns = 0;
	cma_event_post(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0, NULL, NULL);
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
		send_dreq(cid, true);
		wait = true;
		break;
	case CMA_REQ_SENT:
		cma_qp_to_err(cid);
		send_rej(cid->dev, cid->peer_gid, cid->tid, cid->local_comm_id,
			 cid->remote_comm_id, UR_CM_MSG_REQ, UR_CM_REJ_TIMEOUT,
			 NULL, 0);
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
	memcpy(l->peer_gid, id->peer_gid, 16);
	l->local_comm_id = id->local_comm_id;
	l->remote_comm_id = id->remote_comm_id;
	memcpy(l->mad, id->mad, UR_MAD_SIZE);
	l->retries_left = id->retries_left;
	l->deadline_ns = id->deadline_ns ? id->deadline_ns :
					   ur_now_ns() + cm_interval_ns();
	ur_list_add_tail(&cma.lingering, &l->node);
}

/* rdma_destroy_id: tell the peer; only a DREQ is retransmitted after. */
void cma_conn_teardown(struct cma_id *id)
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
		send_rej(id->dev, id->peer_gid, id->tid, id->local_comm_id,
			 id->remote_comm_id, UR_CM_MSG_REQ, UR_CM_REJ_TIMEOUT,
			 NULL, 0);
		break;
	case CMA_REQ_RCVD:
	case CMA_REP_RCVD:
		reject_locked(id, NULL, 0, UR_CM_REJ_CONSUMER_DEFINED);
		break;
	case CMA_REP_SENT:
		send_rej(id->dev, id->peer_gid, id->tid, id->local_comm_id,
			 id->remote_comm_id, UR_CM_MSG_OTHER,
			 UR_CM_REJ_CONSUMER_DEFINED, NULL, 0);
		break;
	case CMA_ESTABLISHED:
		cma_qp_to_err(id);
		send_dreq(id, true);
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

/* ------------------------------------------------------------------ */
/* Receive                                                              */
/* ------------------------------------------------------------------ */

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

static bool listener_matches(const struct cma_id *l, struct cma_dev *dev,
			     uint16_t ps, uint16_t port,
			     const union ur_sockaddr *dst)
{
	const union ur_sockaddr *la =
		(const union ur_sockaddr *)&l->id.route.addr.src_storage;

	if (l->state != CMA_LISTEN || l->destroying || l->id.ps != ps ||
	    cma_addr_port(&la->sa) != port)
		return false;
	if (l->dev && l->dev != dev)
		return false;
	if (cma_addr_is_any(la))
		return !(l->afonly && la->sa.sa_family != dst->sa.sa_family);
	return ur_sockaddr_same_host(la, dst);
}

static struct cma_id *req_listener(struct cma_dev *dev, uint64_t sid,
				   const uint8_t *hdr, union ur_sockaddr *src,
				   union ur_sockaddr *dst);

static void handle_req(struct cma_dev *dev, const uint8_t src_gid[16],
		       const struct ur_cm_msg *m)
{
	const struct ur_cm_req *r = &m->req;
	struct cma_id *l, *c;
	struct rdma_conn_param cp;
	union ur_sockaddr src, dst;
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
			send_stateless(dev, src_gid, &mra);
		} else if (c->state == CMA_REP_SENT) {
			cma_agent_send(dev, c->peer_gid, c->mad);
			dev->stats[CMA_STAT_RETX]++;
		} else if (c->state == CMA_TIMEWAIT) {
			send_rej(dev, src_gid, m->hdr.tid, c->local_comm_id,
				 r->local_comm_id, UR_CM_MSG_REQ,
				 UR_CM_REJ_STALE_CONN, NULL, 0);
		}
		return;
	}

	if ((r->transport != 0 && r->transport != 1) || !r->local_qpn) {
		send_rej(dev, src_gid, m->hdr.tid, 0, r->local_comm_id,
			 UR_CM_MSG_REQ, UR_CM_REJ_UNSUPPORTED_REQ, NULL, 0);
		dev->stats[CMA_STAT_DROP]++;
		return;
	}
	l = req_listener(dev, r->service_id, r->private_data, &src, &dst);
	if (!l) {
		send_rej(dev, src_gid, m->hdr.tid, 0, r->local_comm_id,
			 UR_CM_MSG_REQ, UR_CM_REJ_INVALID_SERVICE_ID, NULL, 0);
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
	c = cma_id_new(l->chan, l->id.context, l->id.ps,
		       r->transport == 1 ? IBV_QPT_UC : IBV_QPT_RC);
	if (!c)
		return;
	c->sync = false;	/* rdma_get_request gives it its own channel */
	c->listener = l;
	c->dev = dev;
	c->id.verbs = dev->verbs;
	c->id.port_num = 1;
	memcpy(&c->id.route.addr.src_storage, &dst, cma_addr_len(&dst.sa));
	memcpy(&c->id.route.addr.dst_storage, &src, cma_addr_len(&src.sa));
	memcpy(c->dgid, src_gid, 16);
	memcpy(c->peer_gid, src_gid, 16);
	c->tos = r->primary.traffic_class;
	c->ack_timeout = l->ack_timeout;
	cma_fill_path(c);
	c->state = CMA_REQ_RCVD;
	c->local_comm_id = new_comm_id();
	c->remote_comm_id = r->local_comm_id;
	c->tid = m->hdr.tid;
	c->remote_qpn = r->local_qpn;
	c->rq_psn = r->starting_psn;
	c->path_mtu = r->path_mtu < dev->mtu && r->path_mtu ?
			      (enum ibv_mtu)r->path_mtu : dev->mtu;
	c->retry_count = r->retry_count;
	c->rnr_retry = r->rnr_retry_count;
	/* accept's defaults: what the peer offered, mirrored */
	c->resp_res = r->initiator_depth;
	c->init_depth = r->responder_resources;
	/* the peer's view, mirrored: what it reads is what we answer */
	conn_param_of(&cp, r->initiator_depth, r->responder_resources,
		      r->flow_control, r->retry_count, r->rnr_retry_count,
		      r->srq, r->local_qpn);
	cma_event_post(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0,
		       r->private_data + UR_CMA_HDR_SIZE, CMA_REQ_USER_PDATA,
		       &cp, l);
}

/* Finds the listener for (ps, port) of a REQ/SIDR_REQ and its addresses. */
static struct cma_id *req_listener(struct cma_dev *dev, uint64_t sid,
				   const uint8_t *hdr, union ur_sockaddr *src,
				   union ur_sockaddr *dst)
{
	uint16_t ps = (uint16_t)(sid >> 16), port = (uint16_t)sid;
	struct ur_cma_hdr h;
	struct ur_list *pos;
	uint8_t g[16];

	if ((sid >> 32) || ur_cma_hdr_decode(hdr, &h))
		return NULL;
	memset(src, 0, sizeof(*src));
	memset(dst, 0, sizeof(*dst));
	if (h.ip_version == 4) {
		memset(g, 0, 16);
		g[10] = g[11] = 0xff;
		memcpy(g + 12, h.src_addr + 12, 4);
		ur_gid_to_sockaddr(g, h.src_port, src);
		memcpy(g + 12, h.dst_addr + 12, 4);
		ur_gid_to_sockaddr(g, port, dst);
	} else {
		ur_gid_to_sockaddr(h.src_addr, h.src_port, src);
		ur_gid_to_sockaddr(h.dst_addr, port, dst);
	}
	ur_list_for_each(pos, &cma.ids) {
		struct cma_id *c = ur_list_entry(pos, struct cma_id, node);

		if (listener_matches(c, dev, ps, port, dst))
			return c;
	}
	return NULL;
}

static void handle_sidr_req(struct cma_dev *dev, const uint8_t src_gid[16],
			    const struct ur_cm_msg *m)
{
	const struct ur_cm_sidr_req *r = &m->sidr_req;
	union ur_sockaddr src, dst;
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
			cma_agent_send(dev, c->peer_gid, c->mad);
		return;
	}
	l = req_listener(dev, r->service_id, r->private_data, &src, &dst);
	if (!l) {
		send_sidr_rep(dev, src_gid, m->hdr.tid, r->request_id,
			      UR_CM_SIDR_NO_SERVICE, r->service_id, 0, 0, NULL,
			      0, NULL);
		return;
	}
	c = cma_id_new(l->chan, l->id.context, l->id.ps, IBV_QPT_UD);
	if (!c)
		return;
	c->sync = false;
	c->listener = l;
	c->dev = dev;
	c->id.verbs = dev->verbs;
	c->id.port_num = 1;
	memcpy(&c->id.route.addr.src_storage, &dst, cma_addr_len(&dst.sa));
	memcpy(&c->id.route.addr.dst_storage, &src, cma_addr_len(&src.sa));
	memcpy(c->dgid, src_gid, 16);
	memcpy(c->peer_gid, src_gid, 16);
	cma_fill_path(c);
	c->state = CMA_REQ_RCVD;
	c->local_comm_id = new_comm_id();
	c->remote_comm_id = r->request_id;
	c->tid = m->hdr.tid;
	memset(&ud, 0, sizeof(ud));
	cma_event_post_ud(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0,
			  r->private_data + UR_CMA_HDR_SIZE,
			  UR_CM_SIDR_REQ_PDATA - UR_CMA_HDR_SIZE, &ud, l);
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
	ud.ah_attr.is_global = 1;
	ud.ah_attr.port_num = 1;
	memcpy(ud.ah_attr.grh.dgid.raw, id->peer_gid, 16);
	ud.ah_attr.grh.sgid_index = 0;
	ud.ah_attr.grh.hop_limit = UR_CM_HOP_LIMIT;
	ud.ah_attr.grh.traffic_class = id->tos;
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
		send_rtu(id);	/* our RTU was lost */
		return;
	}
	if (id->state != CMA_REQ_SENT) {
		dev->stats[CMA_STAT_DROP]++;
		return;
	}
	id->remote_comm_id = r->local_comm_id;
	id->remote_qpn = r->local_qpn;
	id->rq_psn = r->starting_psn;
	/* what the passive side grants bounds what we use */
	if (r->initiator_depth < id->resp_res)
		id->resp_res = r->initiator_depth;
	if (r->responder_resources < id->init_depth)
		id->init_depth = r->responder_resources;
	id->rnr_retry = r->rnr_retry_count;
	id->deadline_ns = 0;
	conn_param_of(&cp, r->responder_resources, r->initiator_depth,
		      r->flow_control, id->retry_count, r->rnr_retry_count,
		      r->srq, r->local_qpn);
	if (!id->id.qp) {
		id->state = CMA_REP_RCVD;
		cma_event_post(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0,
			       r->private_data, UR_CM_REP_PDATA, &cp, NULL);
		return;
	}
	id->state = CMA_ESTABLISHED;
	if (qp_connect(id)) {
		send_rej(dev, id->peer_gid, id->tid, id->local_comm_id,
			 id->remote_comm_id, UR_CM_MSG_REP, UR_CM_REJ_NO_QP,
			 NULL, 0);
		id->state = CMA_CLOSED;
		cma_qp_to_err(id);
		cma_event_post(id, RDMA_CM_EVENT_CONNECT_ERROR, -EINVAL, NULL,
			       0, NULL, NULL);
		return;
	}
	send_rtu(id);
	cma_event_post(id, RDMA_CM_EVENT_ESTABLISHED, 0, r->private_data,
		       UR_CM_REP_PDATA, &cp, NULL);
}

static void handle_dreq(struct cma_dev *dev, const uint8_t src_gid[16],
			struct cma_id *id, const struct ur_cm_msg *m)
{
	const struct ur_cm_dreq *d = &m->dreq;

	if (!id || id->remote_comm_id != d->local_comm_id) {
		/* a connection we no longer know: confirm anyway */
		send_drep(dev, src_gid, m->hdr.tid, d->remote_comm_id,
			  d->local_comm_id);
		return;
	}
	send_drep(dev, id->peer_gid, m->hdr.tid, id->local_comm_id,
		  id->remote_comm_id);
	switch (id->state) {
	case CMA_ESTABLISHED:
	case CMA_REP_SENT:
	case CMA_DREQ_SENT:
		cma_qp_to_err(id);
		id->dreq_rcvd = true;
		disconnected(id);
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

void cma_handle_mad(struct cma_dev *dev, const uint8_t src_gid[16],
		    const uint8_t *mad, size_t len)
{
	struct ur_cm_msg m;
	struct cma_id *id;
	int ret;

	ret = ur_cm_decode(mad, len, &m);
	if (ret == -EOPNOTSUPP) {
		/* LAP, APR: refuse a path change rather than let it wait */
		if (m.hdr.attr_id == UR_CM_ATTR_LAP)
			send_rej(dev, src_gid, m.hdr.tid, 0,
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
		handle_req(dev, src_gid, &m);
		return;
	case UR_CM_ATTR_SIDR_REQ:
		handle_sidr_req(dev, src_gid, &m);
		return;
	case UR_CM_ATTR_SIDR_REP:
		handle_sidr_rep(dev, &m);
		return;
	case UR_CM_ATTR_REP:
		id = find_by_local(dev, m.rep.remote_comm_id);
		if (!id) {
			send_rej(dev, src_gid, m.hdr.tid, 0,
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
			established(id);
		else
			dev->stats[CMA_STAT_DROP]++;
		return;
	case UR_CM_ATTR_MRA:
		id = find_by_local(dev, m.mra.remote_comm_id);
		if (id && (id->state == CMA_REQ_SENT ||
			   id->state == CMA_REP_SENT)) {
			/* the peer is alive but slow: wait, do not resend */
			id->retries_left = 0;
			id->deadline_ns = ur_now_ns() + cm_interval_ns() +
				ur_cm_timeout_us(m.mra.service_timeout) * 1000;
		}
		return;
	case UR_CM_ATTR_REJ:
		id = find_by_local(dev, m.rej.remote_comm_id);
		if (!id || (id->state != CMA_REQ_SENT &&
			    id->state != CMA_REP_RCVD &&
			    id->state != CMA_REP_SENT)) {
			dev->stats[CMA_STAT_DROP]++;
			return;
		}
		id->state = CMA_CLOSED;
		id->deadline_ns = 0;
		cma_qp_to_err(id);
		cma_event_post(id, RDMA_CM_EVENT_REJECTED, m.rej.reason,
			       m.rej.private_data, UR_CM_REJ_PDATA, NULL, NULL);
		return;
	case UR_CM_ATTR_DREQ:
		id = find_by_local(dev, m.dreq.remote_comm_id);
		handle_dreq(dev, src_gid, id, &m);
		return;
	case UR_CM_ATTR_DREP:
		id = find_by_local(dev, m.dreq.remote_comm_id);
		if (id && id->state == CMA_DREQ_SENT &&
		    id->remote_comm_id == m.dreq.local_comm_id)
			disconnected(id);
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
	const union ur_sockaddr *dst =
		(const union ur_sockaddr *)&id->id.route.addr.dst_storage;
	bool found = !cma_rv_lookup(id->id.ps, dst, id->dgid);

	if (!found && now < id->rv_until_ns) {
		id->deadline_ns = now + UR_CM_RV_POLL_NS;
		return;
	}
	id->rv_until_ns = 0;
	id->rv_miss = !found;
	if (!found)
		memcpy(id->dgid, id->dev->gid, 16);
	memcpy(id->peer_gid, id->dgid, 16);
	cma_fill_path(id);
	if (id->id.qp_type != IBV_QPT_UD)	/* a SIDR_REQ names no GID */
		ur_cm_req_set_remote_gid(id->mad, id->dgid);
	cma_agent_send(id->dev, id->peer_gid, id->mad);
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
			send_rej(dev, id->peer_gid, id->tid, id->local_comm_id,
				 id->remote_comm_id,
				 id->state == CMA_REQ_SENT ? UR_CM_MSG_REQ :
							     UR_CM_MSG_REP,
				 UR_CM_REJ_TIMEOUT, NULL, 0);
		id->state = CMA_CLOSED;
		cma_qp_to_err(id);
		cma_event_post(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT, NULL,
			       0, NULL, NULL);
		break;
	case CMA_DREQ_SENT:
		disconnected(id);
		break;
	default:
		break;
	}
}

uint64_t cma_timers(struct cma_dev *dev, uint64_t now)
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
			cma_agent_send(dev, l->peer_gid, l->mad);
			dev->stats[CMA_STAT_RETX]++;
			l->deadline_ns = now + cm_interval_ns();
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
				cma_agent_send(dev, id->peer_gid, id->mad);
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
