/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CM's outgoing messages and the state changes both directions share
 * (cm_priv.h): building and sending REQ/REP/RTU/REJ/DREQ/DREP/SIDR_REP,
 * arming retransmission, moving the id's QP to RTS, delivering ESTABLISHED
 * and DISCONNECTED. Everything here runs with cma.lock held.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/rdmacm/cm_priv.h"
#include "util/log.h"
#include "util/random.h"
#include "util/time.h"

uint64_t cma_interval_ns(void)
{
	return ur_iba_timeout_ns(UR_CM_RESPONSE_TIMEOUT);
}

/*
 * Our QP is in ERR once we disconnect, so the peer's QP retries whatever
 * we had not ACKed and fails with RETRY_EXC after retry_count + 1 ACK
 * timeouts unless our DREQ reaches it first and flushes it. So a DREQ is
 * resent at the connection's ACK timeout when that is shorter than the
 * CM's period (67 ms at rdma_cm's default, against 1.07 s), and one lost
 * DREQ no longer costs the peer its completions. A duplicate DREQ only
 * gets another DREP.
 */
uint64_t cma_dreq_interval_ns(const struct cma_id *id)
{
	uint64_t cm = cma_interval_ns();
	uint64_t ack = ur_iba_timeout_ns(id->ack_timeout);

	return id->ack_timeout && ack < cm ? ack : cm;
}

uint32_t cma_new_comm_id(void)
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

uint64_t cma_new_tid(void)
{
	return (uint64_t)ur_random_u32() << 32 | ur_random_u32();
}

/* Encodes msg and sends it to the peer; with retransmit, arms the timer. */
int cma_send_msg(struct cma_id *id, struct ur_cm_msg *msg, bool retransmit)
{
	int ret = ur_cm_encode(msg, id->mad);

	if (ret)
		return -ret;
	ret = cma_agent_send(id->dev, id->sgid, id->peer_gid, id->mad);
	if (ret)
		ur_dbg("rdmacm: send %s: %s", ur_cm_attr_str(msg->hdr.attr_id),
		       strerror(ret));
	if (retransmit) {
		id->retries_left = UR_CM_MAX_RETRIES;
		id->interval_ns = cma_interval_ns();
		id->deadline_ns = ur_now_ns() + id->interval_ns;
		cma_agent_kick(id->dev);
	} else {
		id->deadline_ns = 0;
	}
	return 0;	/* a lost first try is what retransmission is for */
}

/* A message that belongs to no id (REJ to a stray REQ, DREP, ...). */
void cma_send_stateless(struct cma_dev *dev, uint8_t sgid,
			const uint8_t gid[16], struct ur_cm_msg *msg)
{
	uint8_t buf[UR_MAD_SIZE];

	if (!ur_cm_encode(msg, buf))
		cma_agent_send(dev, sgid, gid, buf);
}

void cma_send_rej(struct cma_dev *dev, uint8_t sgid, const uint8_t gid[16],
		  uint64_t tid, uint32_t local, uint32_t remote, uint8_t kind,
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
	cma_send_stateless(dev, sgid, gid, &m);
}

void cma_send_drep(struct cma_dev *dev, uint8_t sgid, const uint8_t gid[16],
		   uint64_t tid, uint32_t local, uint32_t remote)
{
	struct ur_cm_msg m;

	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_DREP, tid);
	m.dreq.local_comm_id = local;
	m.dreq.remote_comm_id = remote;
	cma_send_stateless(dev, sgid, gid, &m);
}

void cma_send_rtu(struct cma_id *id)
{
	struct ur_cm_msg m;

	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_RTU, id->tid);
	m.rtu.local_comm_id = id->local_comm_id;
	m.rtu.remote_comm_id = id->remote_comm_id;
	cma_send_msg(id, &m, false);
}

void cma_send_dreq(struct cma_id *id, bool retransmit)
{
	struct ur_cm_msg m;

	memset(&m, 0, sizeof(m));
	/* one TID per connection, as the kernel's CM does */
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_DREQ, id->tid);
	m.dreq.local_comm_id = id->local_comm_id;
	m.dreq.remote_comm_id = id->remote_comm_id;
	m.dreq.remote_qpn = id->remote_qpn;
	cma_send_msg(id, &m, retransmit);
	if (retransmit) {
		id->interval_ns = cma_dreq_interval_ns(id);
		id->deadline_ns = ur_now_ns() + id->interval_ns;
	}
}

void cma_conn_param_of(struct rdma_conn_param *c, uint8_t resp_res,
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
int cma_qp_connect(struct cma_id *id)
{
	int ret = cma_modify_qp(id, IBV_QPS_INIT);

	if (!ret)
		ret = cma_modify_qp(id, IBV_QPS_RTR);
	if (!ret)
		ret = cma_modify_qp(id, IBV_QPS_RTS);
	return ret;
}

/* Sends a REQ or SIDR_REQ, or holds it for a loopback listener. */
int cma_send_req(struct cma_id *cid, struct ur_cm_msg *m)
{
	int ret;

	if (cid->loop_dst && cid->rv_miss) {
		/*
		 * Nobody has published this loopback address and port yet.
		 * A server that is about to listen (perftest listens again
		 * for its test connection right after its handshake) gets
		 * the time a kernel would spend resolving the address: the
		 * REQ waits while the directory is read again (run_timers);
		 * after UR_CM_RV_WAIT_NS it goes to our own device, which
		 * refuses it (REJ 8) as a host without a listener does.
		 */
		ret = -ur_cm_encode(m, cid->mad);
		if (ret)
			return ret;
		cid->rv_until_ns = ur_now_ns() + UR_CM_RV_WAIT_NS;
		cid->retries_left = UR_CM_MAX_RETRIES;
		cid->interval_ns = cma_interval_ns();
		cid->deadline_ns = ur_now_ns() + UR_CM_RV_POLL_NS;
		cma_agent_kick(cid->dev);
		return 0;
	}
	return cma_send_msg(cid, m, true);
}

void cma_send_sidr_rep(struct cma_dev *dev, uint8_t sgid,
		       const uint8_t gid[16], uint64_t tid, uint32_t request_id,
		       uint8_t status, uint64_t sid, uint32_t qpn, uint32_t qkey,
		       const void *pdata, unsigned int len, uint8_t *keep)
{
	struct ur_cm_msg m;
	uint8_t buf[UR_MAD_SIZE];

	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_SIDR_REP, tid);
	m.sidr_rep.request_id = request_id;
	m.sidr_rep.status = status;
	m.sidr_rep.qpn = qpn & UR_QPN_MASK;
	m.sidr_rep.service_id = sid;
	m.sidr_rep.qkey = qkey;
	if (pdata && len)
		memcpy(m.sidr_rep.private_data, pdata,
		       len > UR_CM_SIDR_REP_PDATA ? UR_CM_SIDR_REP_PDATA : len);
	if (ur_cm_encode(&m, buf))
		return;
	if (keep)	/* answered again when the SIDR_REQ comes again */
		memcpy(keep, buf, UR_MAD_SIZE);
	cma_agent_send(dev, sgid, gid, buf);
}

uint64_t cma_id_service_id(const struct cma_id *id)
{
	return ur_cm_service_id(cma_id_ps(id), cma_addr_port(&id->src.sa));
}

void cma_established(struct cma_id *id)
{
	struct rdma_conn_param c;

	id->state = CMA_ESTABLISHED;
	id->deadline_ns = 0;
	cma_conn_param_of(&c, id->resp_res, id->init_depth, false, id->retry_count,
		      id->rnr_retry, id->srq, id->remote_qpn);
	cma_event_post(id, RDMA_CM_EVENT_ESTABLISHED, 0, NULL, 0, &c, NULL);
}

void cma_disconnected(struct cma_id *id)
{
	id->state = CMA_TIMEWAIT;
	id->deadline_ns = 0;
	cma_event_post(id, RDMA_CM_EVENT_DISCONNECTED, 0, NULL, 0, NULL, NULL);
}

