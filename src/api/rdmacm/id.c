/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma_cm ids: creation, binding, address and route resolution, listening,
 * options and migration between channels. The id's QP is id_qp.c's.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/rdmacm/rdmacm_priv.h"
#include "util/random.h"

#define EPHEMERAL_LO 32768
#define EPHEMERAL_HI 60999

struct cma_id *cma_id_new(struct cma_chan *chan, void *context,
			  enum rdma_port_space ps, enum ibv_qp_type qpt)
{
	struct cma_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->id.context = context;
	id->id.ps = ps;
	id->id.qp_type = qpt;
	id->id.channel = &chan->ch;
	id->chan = chan;
	id->sync = chan->internal;
	id->state = CMA_IDLE;
	id->ack_timeout = UR_CM_ACK_TIMEOUT;
	ur_list_init(&id->mcs);
	ur_list_add_tail(&cma.ids, &id->node);
	return id;
}

void cma_ud_av(const struct cma_id *id, const uint8_t gid[16],
	       struct ibv_ah_attr *ah)
{
	ah->is_global = 1;
	ah->port_num = 1;
	memcpy(ah->grh.dgid.raw, gid, 16);
	ah->grh.sgid_index = id->sgid;
	ah->grh.hop_limit = UR_DEFAULT_HOP_LIMIT;
	ah->grh.traffic_class = id->tos;
}

/* What the application reads of an address: the IP address, or for an
 * AF_IB id its sockaddr_ib. */
static void show_addr(const struct cma_id *id, const union ur_sockaddr *ip,
		      struct sockaddr_storage *out)
{
	memset(out, 0, sizeof(*out));
	if (id->af_ib)
		cma_addr_to_ib(ip, id->sid_ps, (struct sockaddr_ib *)out);
	else
		memcpy(out, ip, cma_addr_len(&ip->sa));
}

void cma_id_set_addrs(struct cma_id *id, const union ur_sockaddr *src,
		      const union ur_sockaddr *dst)
{
	if (src) {
		id->src = *src;
		show_addr(id, src, &id->id.route.addr.src_storage);
	}
	if (dst) {
		id->dst = *dst;
		show_addr(id, dst, &id->id.route.addr.dst_storage);
	}
}

static bool ps_valid(enum rdma_port_space ps)
{
	return ps == RDMA_PS_TCP || ps == RDMA_PS_UDP || ps == RDMA_PS_IB ||
	       ps == RDMA_PS_IPOIB;
}

UR_EXPORT int rdma_create_id(struct rdma_event_channel *channel,
			     struct rdma_cm_id **id, void *context,
			     enum rdma_port_space ps)
{
	enum ibv_qp_type qpt = (ps == RDMA_PS_UDP || ps == RDMA_PS_IPOIB) ?
				       IBV_QPT_UD : IBV_QPT_RC;
	struct cma_chan *chan;
	struct cma_id *cid;
	int ret;

	if (!id || !ps_valid(ps))
		return cma_err(EINVAL);
	pthread_mutex_lock(&cma.lock);
	ret = cma_init();
	if (ret) {
		pthread_mutex_unlock(&cma.lock);
		return cma_err(ret);
	}
	chan = channel ? to_cma_chan(channel) : cma_chan_new(true);
	if (!chan) {
		pthread_mutex_unlock(&cma.lock);
		return cma_err(ENOMEM);
	}
	cid = cma_id_new(chan, context, ps, qpt);
	if (!cid) {
		if (!channel)
			cma_chan_free(chan);
		pthread_mutex_unlock(&cma.lock);
		return cma_err(ENOMEM);
	}
	pthread_mutex_unlock(&cma.lock);
	*id = &cid->id;
	return 0;
}

static bool port_taken(const struct cma_id *self, enum rdma_port_space ps,
		       const union ur_sockaddr *sa, uint16_t port)
{
	struct ur_list *pos;

	ur_list_for_each(pos, &cma.ids) {
		struct cma_id *o = ur_list_entry(pos, struct cma_id, node);
		const union ur_sockaddr *oa = &o->src;

		if (o == self || !o->bound || cma_id_ps(o) != ps ||
		    cma_addr_port(&oa->sa) != port)
			continue;
		if (cma_addr_is_any(oa) || cma_addr_is_any(sa) ||
		    ur_sockaddr_same_host(oa, sa)) {
			if (self->reuseaddr && o->reuseaddr &&
			    o->state != CMA_LISTEN)
				continue;
			return true;
		}
	}
	return false;
}

/*
 * The port space an AF_IB bind's service ID puts the id in, by the kernel
 * rdma_cm's rules: the masked port-space bits must be those of the id's
 * own port space, or of TCP or UDP for an RDMA_PS_IB id (no mask: the
 * id's). EPROTONOSUPPORT when they name none of them.
 */
static int ib_bind_ps(const struct cma_id *id, const struct sockaddr_ib *sib,
		      uint16_t *ps)
{
	static const uint16_t choices[] = { RDMA_PS_IB, RDMA_PS_TCP,
					    RDMA_PS_UDP };
	uint64_t mask = be64toh(sib->sib_sid_mask) & RDMA_IB_IP_PS_MASK;
	uint64_t sid = be64toh(sib->sib_sid) & mask;
	unsigned int i;

	for (i = 0; i < sizeof(choices) / sizeof(choices[0]); i++) {
		uint16_t p = choices[i];

		if ((p == id->id.ps || id->id.ps == RDMA_PS_IB) &&
		    sid == (((uint64_t)p << 16) & mask)) {
			*ps = p;
			return 0;
		}
	}
	return EPROTONOSUPPORT;
}

/* Binds id to addr (port 0: an ephemeral one). Lock held. */
static int bind_locked(struct cma_id *id, const struct sockaddr *addr)
{
	union ur_sockaddr sa;
	struct cma_dev *dev = NULL;
	uint16_t port, ps = (uint16_t)id->id.ps;
	uint8_t sgid = 0;
	int tries, ret;

	if (!cma_addr_len(addr))
		return EAFNOSUPPORT;
	if (id->state != CMA_IDLE)
		return EINVAL;
	if (addr->sa_family == AF_IB) {
		ret = ib_bind_ps(id, (const struct sockaddr_ib *)addr, &ps);
		if (ret)
			return ret;
	}
	cma_addr_to_ip(addr, &sa);
	if (!cma_addr_is_any(&sa)) {
		dev = cma_dev_by_addr(&sa, &sgid);
		if (!dev && ur_addr_is_loopback(&sa) && cma.ndev) {
			dev = &cma.devs[0];	/* rendezvous (rendezvous.c) */
			sgid = cma_dev_sgid_for(dev, &sa);
		}
		if (!dev)
			return EADDRNOTAVAIL;
	}
	port = cma_addr_port(&sa.sa);
	if (port) {
		if (port_taken(id, ps, &sa, port))
			return EADDRINUSE;
	} else {
		for (tries = 0; tries < 1000; tries++) {
			port = (uint16_t)(EPHEMERAL_LO + ur_random_u32() %
				(EPHEMERAL_HI - EPHEMERAL_LO + 1));
			if (!port_taken(id, ps, &sa, port))
				break;
		}
		if (tries == 1000)
			return EADDRINUSE;
		cma_addr_set_port(&sa.sa, port);
	}
	id->af_ib = addr->sa_family == AF_IB;
	id->sid_ps = ps;
	cma_id_set_addrs(id, &sa, NULL);
	id->bound = true;
	id->state = CMA_BOUND;
	id->sgid = sgid;
	if (dev) {
		id->dev = dev;
		id->id.verbs = dev->verbs;
		id->id.port_num = 1;
		id->id.pd = dev->pd;	/* rdma-core: the device's PD */
	}
	return 0;
}

UR_EXPORT int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	int ret;

	if (!id || !addr)
		return cma_err(EINVAL);
	pthread_mutex_lock(&cma.lock);
	ret = bind_locked(to_cma_id(id), addr);
	pthread_mutex_unlock(&cma.lock);
	return ret ? cma_err(ret) : 0;
}

/* Fills the path record of a resolved route (docs/wire-notes.md §5.5). */
static void fill_path(struct cma_id *id)
{
	struct ibv_sa_path_rec *p = &id->path;

	memset(p, 0, sizeof(*p));
	memcpy(p->sgid.raw, id->dev->gids[id->sgid], 16);
	memcpy(p->dgid.raw, id->dgid, 16);
	p->slid = p->dlid = htobe16(0xFFFF);
	p->reversible = 1;
	p->numb_path = 1;
	p->pkey = htobe16(UR_PKEY_DEFAULT);
	p->hop_limit = UR_DEFAULT_HOP_LIMIT;
	p->traffic_class = id->tos;
	p->mtu_selector = 2;	/* exactly */
	p->mtu = id->dev->mtu;
	p->rate_selector = 2;
	p->rate = IBV_RATE_100_GBPS;
	p->packet_life_time_selector = 2;
	p->packet_life_time = id->ack_timeout > 0 ? id->ack_timeout - 1 : 0;
	id->id.route.path_rec = p;
	id->id.route.num_paths = 1;
	memcpy(id->id.route.addr.addr.ibaddr.sgid.raw, id->dev->gids[id->sgid],
	       16);
	memcpy(id->id.route.addr.addr.ibaddr.dgid.raw, id->dgid, 16);
	id->id.route.addr.addr.ibaddr.pkey = htobe16(UR_PKEY_DEFAULT);
}

/*
 * Where is dst's QP1? An address of one of our devices: that GID. A
 * loopback address: whoever published a listener for it in the rendezvous
 * directory, else our own address (the REQ is then refused by our own
 * agent, as a kernel refuses a port nobody listens on). Anything else is
 * itself a RoCEv2 GID.
 */
int cma_route_dst(struct cma_id *id, const union ur_sockaddr *dst)
{
	const uint8_t *self = id->dev->gids[id->sgid];
	uint8_t k;
	struct cma_dev *own = cma_dev_by_addr(dst, &k);

	id->loop_dst = false;
	id->rv_miss = false;
	if (own) {
		memcpy(id->dgid, own->gids[k], 16);
		return 0;
	}
	if (ur_addr_is_loopback(dst)) {
		id->loop_dst = true;
		if (!cma_rv_lookup(cma_id_ps(id), dst, self, id->dgid))
			return 0;
		id->rv_miss = true;
		memcpy(id->dgid, self, 16);
		return 0;
	}
	if (cma_addr_is_any(dst))
		return EADDRNOTAVAIL;
	ur_sockaddr_to_gid(dst, id->dgid);
	return 0;
}

/* The device an id bound to a wildcard resolves dst on: the one owning
 * dst, else the one the host routes dst from, else the first with an
 * address of dst's IP version (any for IPv6, which carries IPv4 mapped),
 * else the first. */
static struct cma_dev *wildcard_dev(const union ur_sockaddr *dst)
{
	union ur_sockaddr src;
	struct cma_dev *d = cma_dev_by_addr(dst, NULL);
	int i, k;

	if (!d && !ur_addr_is_loopback(dst) && !cma_addr_route_src(dst, &src))
		d = cma_dev_by_addr(&src, NULL);
	for (i = 0; !d && i < cma.ndev; i++)
		for (k = 0; k < cma.devs[i].ngids; k++)
			if (dst->sa.sa_family == AF_INET6 ||
			    ur_gid_is_v4mapped(cma.devs[i].gids[k]))
				d = &cma.devs[i];
	if (!d && cma.ndev)
		d = &cma.devs[0];
	return d;
}

/*
 * An id not bound yet is bound to src, or to the wildcard of dst's family
 * (AF_IB: the zero GID, in the id's port space). Then, as the kernel's
 * rdma_cm wants, the id and dst must be of one family. Lock held.
 */
static int resolve_bind(struct cma_id *cid, const struct sockaddr *src,
			const struct sockaddr *dst)
{
	union ur_sockaddr any;
	int ret = 0;

	if (cid->state == CMA_IDLE) {
		memset(&any, 0, sizeof(any));
		any.sa.sa_family = dst->sa_family;
		if (dst->sa_family == AF_IB)
			((struct sockaddr_ib *)&any)->sib_pkey =
				((const struct sockaddr_ib *)dst)->sib_pkey;
		ret = bind_locked(cid, src && cma_addr_len(src) ? src :
								 &any.sa);
	} else if (cid->state != CMA_BOUND) {
		ret = EINVAL;
	}
	if (!ret && cid->af_ib != (dst->sa_family == AF_IB))
		ret = EINVAL;
	/* and an IP id resolves only destinations of its own family (an
	 * IPv4-mapped IPv6 one too is IPv6), as the kernel's */
	if (!ret && !cid->af_ib && cid->src.sa.sa_family != dst->sa_family)
		ret = EINVAL;
	/* an AF_IB destination's service ID names the port space the REQ
	 * goes to */
	if (!ret && dst->sa_family == AF_IB &&
	    cma_addr_ib_ps_given((const struct sockaddr_ib *)dst))
		cid->sid_ps =
			cma_addr_ib_ps((const struct sockaddr_ib *)dst);
	return ret;
}

UR_EXPORT int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src,
				struct sockaddr *dst, int timeout_ms)
{
	struct cma_id *cid;
	union ur_sockaddr d;
	int ret = 0;

	if (!id || !dst || !cma_addr_len(dst))
		return cma_err(EINVAL);
	cid = to_cma_id(id);
	cma_addr_to_ip(dst, &d);
	pthread_mutex_lock(&cma.lock);
	ret = resolve_bind(cid, src, dst);
	if (ret)
		goto out;
	if (!cid->dev) {
		/* bound to a wildcard: the device owning dst, else the one
		 * the host routes dst from, else the first */
		cid->dev = wildcard_dev(&d);
		if (!cid->dev) {
			ret = ENODEV;
			goto out;
		}
		id->verbs = cid->dev->verbs;
		id->pd = cid->dev->pd;
		id->port_num = 1;
	}
	/* an unspecified source becomes one of the device's addresses */
	if (cma_addr_is_any(&cid->src)) {
		uint16_t port = cma_addr_port(&cid->src.sa);
		union ur_sockaddr s;

		cid->src_any = true;
		cid->sgid = cma_dev_sgid_for(cid->dev, &d);
		cma_addr_src_for(cid->dev->gids[cid->sgid], port, &d, &s);
		cma_id_set_addrs(cid, &s, NULL);
	}
	cma_id_set_addrs(cid, NULL, &d);
	ret = cma_route_dst(cid, &d);
	if (ret) {
		cma_event_post(cid, RDMA_CM_EVENT_ADDR_ERROR, -ret, NULL, 0,
			       NULL, NULL);
		ret = 0;
	} else {
		cid->state = CMA_ADDR_RESOLVED;
		memcpy(id->route.addr.addr.ibaddr.sgid.raw,
		       cid->dev->gids[cid->sgid], 16);
		memcpy(id->route.addr.addr.ibaddr.dgid.raw, cid->dgid, 16);
		id->route.addr.addr.ibaddr.pkey = htobe16(UR_PKEY_DEFAULT);
		cma_event_post(cid, RDMA_CM_EVENT_ADDR_RESOLVED, 0, NULL, 0,
			       NULL, NULL);
	}
out:
	pthread_mutex_unlock(&cma.lock);
	(void)timeout_ms;	/* resolution is immediate */
	if (ret)
		return cma_err(ret);
	return cid->sync ? cma_sync_wait(cid, RDMA_CM_EVENT_ADDR_RESOLVED) : 0;
}

UR_EXPORT int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	struct cma_id *cid;

	if (!id)
		return cma_err(EINVAL);
	cid = to_cma_id(id);
	pthread_mutex_lock(&cma.lock);
	if (cid->state != CMA_ADDR_RESOLVED && cid->state != CMA_ROUTE_RESOLVED) {
		pthread_mutex_unlock(&cma.lock);
		return cma_err(EINVAL);
	}
	fill_path(cid);
	cid->state = CMA_ROUTE_RESOLVED;
	cma_event_post(cid, RDMA_CM_EVENT_ROUTE_RESOLVED, 0, NULL, 0, NULL,
		       NULL);
	pthread_mutex_unlock(&cma.lock);
	(void)timeout_ms;
	return cid->sync ? cma_sync_wait(cid, RDMA_CM_EVENT_ROUTE_RESOLVED) : 0;
}

/* The passive side gets its route from the REQ (conn.c). */
void cma_fill_path(struct cma_id *id)
{
	fill_path(id);
}

UR_EXPORT int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	struct cma_id *cid;
	int ret = 0;

	if (!id)
		return cma_err(EINVAL);
	cid = to_cma_id(id);
	pthread_mutex_lock(&cma.lock);
	if (cid->state == CMA_IDLE) {
		union ur_sockaddr any;

		memset(&any, 0, sizeof(any));
		any.in.sin_family = AF_INET;
		ret = bind_locked(cid, &any.sa);
	}
	if (!ret && cid->state != CMA_BOUND && cid->state != CMA_LISTEN)
		ret = EINVAL;
	if (!ret && cid->state == CMA_BOUND) {
		ret = cma_rv_publish(cid);
		if (!ret)
			cid->state = CMA_LISTEN;
	}
	if (!ret)
		cid->backlog = backlog > 0 ? backlog : 1024;
	pthread_mutex_unlock(&cma.lock);
	return ret ? cma_err(ret) : 0;
}

UR_EXPORT int rdma_set_option(struct rdma_cm_id *id, int level, int optname,
			      void *optval, size_t optlen)
{
	struct cma_id *cid;
	int ret = 0;

	if (!id || !optval)
		return cma_err(EINVAL);
	cid = to_cma_id(id);
	pthread_mutex_lock(&cma.lock);
	if (level == RDMA_OPTION_ID) {
		switch (optname) {
		case RDMA_OPTION_ID_TOS:
			if (optlen != sizeof(uint8_t))
				ret = EINVAL;
			else
				cid->tos = *(uint8_t *)optval;
			break;
		case RDMA_OPTION_ID_REUSEADDR:
			if (optlen != sizeof(int))
				ret = EINVAL;
			else if (cid->state != CMA_IDLE)
				ret = EINVAL;
			else
				cid->reuseaddr = *(int *)optval != 0;
			break;
		case RDMA_OPTION_ID_AFONLY:
			if (optlen != sizeof(int))
				ret = EINVAL;
			else
				cid->afonly = *(int *)optval != 0;
			break;
		case RDMA_OPTION_ID_ACK_TIMEOUT:
			if (optlen != sizeof(uint8_t) ||
			    *(uint8_t *)optval > 31)
				ret = EINVAL;
			else
				cid->ack_timeout = *(uint8_t *)optval;
			break;
		default:
			ret = ENOSYS;
		}
	} else if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH) {
		/* a path of our own making is the only one there is */
		if (optlen < sizeof(struct ibv_path_data) ||
		    cid->state != CMA_ADDR_RESOLVED)
			ret = EINVAL;
		else {
			fill_path(cid);
			cid->state = CMA_ROUTE_RESOLVED;
		}
	} else {
		ret = ENOSYS;
	}
	pthread_mutex_unlock(&cma.lock);
	return ret ? cma_err(ret) : 0;
}

UR_EXPORT __be16 rdma_get_src_port(struct rdma_cm_id *id)
{
	return htons(cma_addr_port(&to_cma_id(id)->src.sa));
}

UR_EXPORT __be16 rdma_get_dst_port(struct rdma_cm_id *id)
{
	return htons(cma_addr_port(&to_cma_id(id)->dst.sa));
}

UR_EXPORT int rdma_migrate_id(struct rdma_cm_id *id,
			      struct rdma_event_channel *channel)
{
	struct cma_id *cid;
	struct cma_chan *to, *old;
	struct rdma_cm_event *held = NULL;
	bool was_sync;

	if (!id)
		return cma_err(EINVAL);
	cid = to_cma_id(id);
	to = channel ? to_cma_chan(channel) : cma_chan_new(true);
	if (!to)
		return cma_err(ENOMEM);
	pthread_mutex_lock(&cma.lock);
	old = cid->chan;
	was_sync = cid->sync;
	if (was_sync) {	/* rdma-core acks the event a sync id still holds */
		held = id->event;
		id->event = NULL;
	}
	cma_event_move(cid, to);
	id->channel = &to->ch;
	cid->sync = to->internal;
	pthread_mutex_unlock(&cma.lock);
	if (held)
		rdma_ack_cm_event(held);
	if (was_sync && old != to)
		cma_chan_free(old);
	return 0;
}
