/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The convenience layer of rdma_cma.h: rdma_getaddrinfo, endpoints
 * (rdma_create_ep/rdma_destroy_ep on synchronous ids), rdma_get_request,
 * and the id's SRQ.
 */
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include <rdma/rdma_verbs.h>

#include "api/rdmacm/rdmacm_priv.h"

static int gai_errno(int e)
{
	switch (e) {
	case EAI_MEMORY:
		return ENOMEM;
	case EAI_FAMILY:
		return EAFNOSUPPORT;
	case EAI_SYSTEM:
		return errno ? errno : EIO;
	default:
		return EADDRNOTAVAIL;
	}
}

static int copy_sockaddr(struct sockaddr **dst, socklen_t *dst_len,
			 const struct sockaddr *src, socklen_t len)
{
	if (!src || !len)
		return 0;
	*dst = malloc(len);
	if (!*dst)
		return -1;
	memcpy(*dst, src, len);
	*dst_len = len;
	return 0;
}

/*
 * No node and no service: the answer is the hints' own addresses, as
 * rdma-core gives it (libfabric's verbs provider resolves a binary
 * destination address this way).
 */
static int addrinfo_from_hints(const struct rdma_addrinfo *hints,
			       struct rdma_addrinfo **res)
{
	struct rdma_addrinfo *r = calloc(1, sizeof(*r));

	if (!r)
		return cma_err(ENOMEM);
	r->ai_flags = hints->ai_flags;
	r->ai_family = hints->ai_family;
	r->ai_qp_type = hints->ai_qp_type;
	r->ai_port_space = hints->ai_port_space;
	if (copy_sockaddr(&r->ai_dst_addr, &r->ai_dst_len, hints->ai_dst_addr,
			  hints->ai_dst_len) ||
	    copy_sockaddr(&r->ai_src_addr, &r->ai_src_len, hints->ai_src_addr,
			  hints->ai_src_len)) {
		rdma_freeaddrinfo(r);
		return cma_err(ENOMEM);
	}
	*res = r;
	return 0;
}

/* Hints asking for AF_IB answers: rdma-core gives them only for numeric
 * hosts (RAI_FAMILY and RAI_NUMERICHOST both); else an IP answer. */
static bool wants_ib(const struct rdma_addrinfo *hints)
{
	const int both = RAI_FAMILY | RAI_NUMERICHOST;

	return hints && hints->ai_family == AF_IB &&
	       (hints->ai_flags & both) == both;
}

/*
 * An AF_IB answer: the address's GID (IPv4-mapped for IPv4, as RoCEv2
 * writes it; the wildcard the zero GID), the default P_Key, and the service
 * ID of port space ps and the port, its mask covering the port space when
 * there is one and the port when there is one (rdma-core's rule). NULL: no
 * memory.
 */
static struct sockaddr *ib_answer(const struct addrinfo *ai, int ps)
{
	struct sockaddr_ib *sib = calloc(1, sizeof(*sib));
	union ur_sockaddr ip;
	uint64_t mask = 0;

	if (!sib)
		return NULL;
	memset(&ip, 0, sizeof(ip));
	memcpy(&ip, ai->ai_addr, ai->ai_addrlen);
	cma_addr_to_ib(&ip, (uint16_t)ps, sib);
	if (ip.sa.sa_family == AF_INET6) {
		sib->sib_flowinfo = ip.in6.sin6_flowinfo;
		sib->sib_scope_id = ip.in6.sin6_scope_id;
	}
	if (ps)
		mask |= RDMA_IB_IP_PS_MASK;
	if (cma_addr_port(&ip.sa))
		mask |= RDMA_IB_IP_PORT_MASK;
	sib->sib_sid_mask = htobe64(mask);
	return (struct sockaddr *)sib;
}

/* The answer's address: a copy of getaddrinfo's, or its AF_IB form. */
static struct sockaddr *answer_addr(const struct addrinfo *ai,
				    const struct rdma_addrinfo *hints, int ps,
				    socklen_t *len)
{
	struct sockaddr *sa;

	if (wants_ib(hints)) {
		*len = sizeof(struct sockaddr_ib);
		return ib_answer(ai, ps);
	}
	sa = calloc(1, sizeof(struct sockaddr_storage));
	if (sa)
		memcpy(sa, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	return sa;
}

UR_EXPORT int rdma_getaddrinfo(const char *node, const char *service,
			       const struct rdma_addrinfo *hints,
			       struct rdma_addrinfo **res)
{
	struct addrinfo h = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	struct rdma_addrinfo *r;
	struct sockaddr *sa;
	socklen_t len;
	int e;

	if (!res || (!node && !service && !hints))
		return cma_err(EINVAL);
	if (hints) {
		if (!node && !service)
			return addrinfo_from_hints(hints, res);
		/* AF_IB: any IP address, which the answer then turns into a
		 * GID */
		h.ai_family = hints->ai_family == AF_IB ? AF_UNSPEC :
							  hints->ai_family;
		if (hints->ai_flags & RAI_PASSIVE)
			h.ai_flags |= AI_PASSIVE;
		if (hints->ai_flags & RAI_NUMERICHOST)
			h.ai_flags |= AI_NUMERICHOST;
		if (hints->ai_qp_type == IBV_QPT_UD ||
		    hints->ai_port_space == RDMA_PS_UDP)
			h.ai_socktype = SOCK_DGRAM;
	}
	e = getaddrinfo(node, service, &h, &ai);
	if (e)
		return cma_err(gai_errno(e));
	r = calloc(1, sizeof(*r));
	if (!r) {
		freeaddrinfo(ai);
		return cma_err(ENOMEM);
	}
	r->ai_family = wants_ib(hints) ? AF_IB : ai->ai_family;
	r->ai_flags = hints ? hints->ai_flags : 0;
	r->ai_qp_type = hints && hints->ai_qp_type ? hints->ai_qp_type :
						      IBV_QPT_RC;
	r->ai_port_space = hints && hints->ai_port_space ?
				   hints->ai_port_space :
				   (r->ai_qp_type == IBV_QPT_UD ? RDMA_PS_UDP :
								  RDMA_PS_TCP);
	sa = answer_addr(ai, hints, r->ai_port_space, &len);
	if (!sa) {
		free(r);
		freeaddrinfo(ai);
		return cma_err(ENOMEM);
	}
	if (r->ai_flags & RAI_PASSIVE) {
		r->ai_src_addr = sa;
		r->ai_src_len = len;
	} else {
		r->ai_dst_addr = sa;
		r->ai_dst_len = len;
		if (hints && hints->ai_src_addr && hints->ai_src_len) {
			r->ai_src_addr = malloc(hints->ai_src_len);
			if (r->ai_src_addr) {
				memcpy(r->ai_src_addr, hints->ai_src_addr,
				       hints->ai_src_len);
				r->ai_src_len = hints->ai_src_len;
			}
		}
	}
	freeaddrinfo(ai);
	*res = r;
	return 0;
}

UR_EXPORT void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;

		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}

UR_EXPORT int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res,
			     struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct rdma_cm_id *cid;
	struct cma_id *c;
	int ret;

	if (!id || !res)
		return cma_err(EINVAL);
	ret = rdma_create_id(NULL, &cid, NULL,
			     (enum rdma_port_space)res->ai_port_space);
	if (ret)
		return ret;
	c = to_cma_id(cid);
	cid->qp_type = (enum ibv_qp_type)res->ai_qp_type;
	if (qp_init_attr)	/* the endpoint's QP is of the address's type */
		qp_init_attr->qp_type = cid->qp_type;
	if (res->ai_flags & RAI_PASSIVE) {
		ret = rdma_bind_addr(cid, res->ai_src_addr);
		if (ret)
			goto err;
		if (qp_init_attr) {
			pthread_mutex_lock(&cma.lock);
			c->qp_init = *qp_init_attr;
			c->has_qp_init = true;
			c->ep_pd = pd;
			pthread_mutex_unlock(&cma.lock);
		}
		*id = cid;
		return 0;
	}
	ret = rdma_resolve_addr(cid, res->ai_src_addr, res->ai_dst_addr,
				UR_CM_RESOLVE_MS);
	if (!ret)
		ret = rdma_resolve_route(cid, UR_CM_RESOLVE_MS);
	if (!ret && qp_init_attr)
		ret = rdma_create_qp(cid, pd, qp_init_attr);
	if (ret)
		goto err;
	*id = cid;
	return 0;
err:
	ret = errno;
	rdma_destroy_id(cid);
	return cma_err(ret);
}

UR_EXPORT void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	if (id->qp)
		rdma_destroy_qp(id);
	if (id->srq)
		rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

UR_EXPORT int rdma_get_request(struct rdma_cm_id *listen,
			       struct rdma_cm_id **id)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *nid;
	struct cma_id *l;
	struct ibv_qp_init_attr qa;
	struct ibv_pd *pd;
	bool has_qp;
	int ret;

	if (!listen || !id)
		return cma_err(EINVAL);
	l = to_cma_id(listen);
	if (!l->sync)
		return cma_err(EINVAL);
	ret = cma_sync_wait_event(l, RDMA_CM_EVENT_CONNECT_REQUEST, &ev);
	if (ret)
		return ret;
	/* the event now belongs to the new id: acked when it moves on */
	listen->event = NULL;
	nid = ev->id;
	ret = rdma_migrate_id(nid, NULL);
	if (ret) {
		ret = errno;
		rdma_ack_cm_event(ev);
		rdma_destroy_id(nid);
		return cma_err(ret);
	}
	nid->event = ev;
	pthread_mutex_lock(&cma.lock);
	has_qp = l->has_qp_init;
	qa = l->qp_init;
	pd = l->ep_pd;
	pthread_mutex_unlock(&cma.lock);
	if (has_qp) {
		ret = rdma_create_qp(nid, pd, &qa);
		if (ret) {
			ret = errno;
			rdma_reject(nid, NULL, 0);
			rdma_destroy_id(nid);
			return cma_err(ret);
		}
	}
	*id = nid;
	return 0;
}

/*
 * An XRC SRQ (an XRC_RECV id's, where its target QP's receives land)
 * gets the device's XRC domain and, unless given one, a CQ of its own as
 * the id's recv_cq, as rdma-core does: rdma_get_recv_comp() waits there.
 */
UR_EXPORT int rdma_create_srq_ex(struct rdma_cm_id *id,
				 struct ibv_srq_init_attr_ex *attr)
{
	struct cma_id *cid;
	bool made_cq = false;
	int ret;

	if (!id || !attr || !id->verbs || id->srq ||
	    !(attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE))
		return cma_err(EINVAL);
	cid = to_cma_id(id);
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = id->pd ? id->pd : cid->dev->pd;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_PD;
	}
	if (attr->srq_type == IBV_SRQT_XRC) {
		uint32_t mask = attr->comp_mask;

		if (!(mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd) {
			pthread_mutex_lock(&cma.lock);
			attr->xrcd = cma_dev_xrcd(cid->dev);
			pthread_mutex_unlock(&cma.lock);
			if (!attr->xrcd)
				return -1;
		}
		if ((!(mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq) &&
		    !id->recv_cq) {
			ret = cma_create_recv_cq(id, (int)attr->attr.max_wr);
			if (ret) {
				cma_destroy_cqs(id);
				return cma_err(ret);
			}
			made_cq = true;
		}
		if (!(mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->cq)
			attr->cq = id->recv_cq;
		attr->comp_mask |= IBV_SRQ_INIT_ATTR_XRCD |
				   IBV_SRQ_INIT_ATTR_CQ;
	}
	id->srq = ibv_create_srq_ex(id->verbs, attr);
	if (!id->srq) {
		ret = errno ? errno : ENOMEM;
		if (made_cq)
			cma_destroy_cqs(id);
		return cma_err(ret);
	}
	if (!id->pd)
		id->pd = attr->pd;
	return 0;
}

UR_EXPORT int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd,
			      struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ax;
	int ret;

	if (!id || !attr)
		return cma_err(EINVAL);
	memset(&ax, 0, sizeof(ax));
	ax.srq_context = attr->srq_context;
	ax.attr = attr->attr;
	ax.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | (pd ? IBV_SRQ_INIT_ATTR_PD : 0);
	ax.srq_type = id->qp_type == IBV_QPT_XRC_RECV ? IBV_SRQT_XRC :
							IBV_SRQT_BASIC;
	ax.pd = pd;
	ret = rdma_create_srq_ex(id, &ax);
	if (!ret)
		attr->attr = ax.attr;
	return ret;
}

UR_EXPORT void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (id && id->srq) {
		ibv_destroy_srq(id->srq);
		id->srq = NULL;
		/* an XRC target's receive CQ was made for its SRQ */
		if (id->qp_type == IBV_QPT_XRC_RECV && !id->qp)
			cma_destroy_cqs(id);
	}
}
