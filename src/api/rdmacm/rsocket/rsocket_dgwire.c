/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rsockets' datagram wire (rsocket_dgram.h has the protocol): the UD QP
 * and its slots, the peers a socket knows, UD messages in and out, and the
 * UDP socket that introduces peers to each other. Calls rsocket_wire.c
 * (the CQ's arming and events) and rsocket_table.c.
 *
 * rdma-core reads the UDP sockets in a service thread; here the socket's
 * own calls (send, receive, rpoll, and any sleep, which watches the UDP
 * socket too) read it, so an idle application answers a new peer when it
 * next calls in. The peer resends over UDP meanwhile: nothing is lost that
 * a datagram socket promises.
 *
 * One UD QP per socket, on the device of the first peer's route (rdma-core
 * makes one per local source address); the header it sends names the
 * address the peer's packets came to, per peer.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <endian.h>
#include <rdma/rsocket.h>

#include "api/rdmacm/rsocket/rsocket_dgram.h"
#include "util/addr.h"
#include "util/compiler.h"


static socklen_t addr_len(const struct sockaddr *sa)
{
	return sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
	       sizeof(struct sockaddr_in);
}

static bool same_addr(const union rsd_addr *a, const struct sockaddr *b)
{
	const union rsd_addr *u = (const union rsd_addr *)b;

	if (a->sa.sa_family != b->sa_family)
		return false;
	if (b->sa_family == AF_INET)
		return a->sin.sin_port == u->sin.sin_port &&
		       a->sin.sin_addr.s_addr == u->sin.sin_addr.s_addr;
	return a->sin6.sin6_port == u->sin6.sin6_port &&
	       a->sin6.sin6_scope_id == u->sin6.sin6_scope_id &&
	       !memcmp(&a->sin6.sin6_addr, &u->sin6.sin6_addr, 16);
}

static bool is_any(const union rsd_addr *a)
{
	if (a->sa.sa_family == AF_INET)
		return a->sin.sin_addr.s_addr == htonl(INADDR_ANY);
	return !memcmp(&a->sin6.sin6_addr, &in6addr_any, 16);
}

static void format_hdr(struct rsd_hdr *h, const union rsd_addr *a)
{
	memset(h, 0, sizeof(*h));
	if (a->sa.sa_family == AF_INET) {
		h->version = 4;
		h->length = RSD_HDR4_LEN;
		h->port = a->sin.sin_port;
		h->addr.ipv4 = a->sin.sin_addr.s_addr;
	} else {
		h->version = 6;
		h->length = RSD_HDR6_LEN;
		h->port = a->sin6.sin6_port;
		h->addr.ipv6.flowinfo = a->sin6.sin6_flowinfo;
		memcpy(h->addr.ipv6.addr, &a->sin6.sin6_addr, 16);
	}
}

/*
 * The address a datagram of ours to dst leaves from, as the peer sees it:
 * the UDP socket's, its wildcard replaced by the host's route source. An
 * unbound socket is bound first (to an ephemeral port, as a kernel
 * sendto would), so that the port we name is the one we send from.
 */
static int source_for(struct rsk *rs, const struct sockaddr *dst,
		      union rsd_addr *src)
{
	union rsd_addr any, r;
	socklen_t len = sizeof(*src);
	int s;

	if (getsockname(rs->fd, &src->sa, &len))
		return -1;
	if (!src->sin.sin_port) {	/* same place in sin and sin6 */
		memset(&any, 0, sizeof(any));
		any.sa.sa_family = src->sa.sa_family;
		if (bind(rs->fd, &any.sa, addr_len(&any.sa)))
			return -1;
		len = sizeof(*src);
		if (getsockname(rs->fd, &src->sa, &len))
			return -1;
	}
	if (!is_any(src))
		return 0;
	s = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	len = sizeof(r);
	if (connect(s, dst, addr_len(dst)) || getsockname(s, &r.sa, &len)) {
		close(s);
		return -1;
	}
	close(s);
	r.sin.sin_port = src->sin.sin_port;
	*src = r;
	return 0;
}

static int gid_index(struct rsd *dg)
{
	struct ibv_port_attr pa;
	union ibv_gid g;
	int i;

	if (ibv_query_port(dg->id->verbs, dg->id->port_num, &pa))
		return -1;
	for (i = 0; i < pa.gid_tbl_len; i++)
		if (!ibv_query_gid(dg->id->verbs, dg->id->port_num, i, &g) &&
		    !memcmp(&g, &dg->sgid, sizeof(g)))
			return i;
	return -1;
}

/* The id of our QP: on src's device (else the one dst routes by), with
 * the GID that device sends to dst from. */
static int bind_id(struct rsk *rs, const union rsd_addr *src,
		   const struct sockaddr *dst)
{
	struct rsd *dg = rs->dg;
	struct ibv_port_attr pa;
	union rsd_addr s = *src;

	if (rdma_create_id(NULL, &dg->id, rs, RDMA_PS_UDP))
		return -1;
	s.sin.sin_port = 0;
	if (rdma_bind_addr(dg->id, &s.sa)) {
		memset(&s, 0, sizeof(s));
		s.sa.sa_family = src->sa.sa_family;
		if (rdma_bind_addr(dg->id, &s.sa))
			return -1;
	}
	if (rdma_resolve_addr(dg->id, NULL, (struct sockaddr *)dst,
			      UR_CM_RESOLVE_MS))
		return -1;
	memcpy(&dg->sgid, &dg->id->route.addr.addr.ibaddr.sgid,
	       sizeof(dg->sgid));
	dg->sgid_index = gid_index(dg);
	if (dg->sgid_index < 0 ||
	    ibv_query_port(dg->id->verbs, dg->id->port_num, &pa))
		return rsk_err(ENODEV);
	dg->max_msg = UR_MIN((uint32_t)RSD_MSG_MAX,
			     128u << (unsigned int)pa.active_mtu);
	return 0;
}

static void size_queues(struct rsk *rs)
{
	struct ibv_device_attr da;
	uint32_t max = RSK_QP_MAX;

	if (!ibv_query_device(rs->dg->id->verbs, &da) &&
	    (uint32_t)da.max_qp_wr < max)
		max = (uint32_t)da.max_qp_wr;
	/* as rdma-core: one RSK_SNDLOWAT slot per queue entry */
	max = UR_MAX(max, 2u);
	rs->sq_size = (uint16_t)UR_MAX(2u, UR_MIN(UR_MIN((uint32_t)rs->sq_size,
			max), rs->sbuf_size / RSD_MSG_MAX));
	rs->rq_size = (uint16_t)UR_MAX(2u, UR_MIN(UR_MIN((uint32_t)rs->rq_size,
			max), rs->rbuf_size / RSD_MSG_MAX));
}

static int post_recv(struct rsk *rs, int slot)
{
	struct rsd *dg = rs->dg;
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sg[2];

	/* the GRH of every receive goes to one scratch area after the slots */
	sg[0].addr = (uintptr_t)dg->rbuf + (size_t)rs->rq_size * RSD_MSG_MAX;
	sg[0].length = RSD_GRH;
	sg[0].lkey = dg->rmr->lkey;
	sg[1].addr = (uintptr_t)dg->rbuf + (size_t)slot * RSD_MSG_MAX;
	sg[1].length = RSD_MSG_MAX;
	sg[1].lkey = dg->rmr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = RSK_WR_RECV | (uint64_t)slot;
	wr.sg_list = sg;
	wr.num_sge = 2;
	return ibv_post_recv(dg->id->qp, &wr, &bad);
}

static int create_queues(struct rsk *rs)
{
	struct rsd *dg = rs->dg;
	size_t rlen;
	int i, ret;

	size_queues(rs);
	if (rsk_create_qp(rs, dg->id, IBV_QPT_UD, 1, 2))
		return -1;

	rlen = (size_t)rs->rq_size * RSD_MSG_MAX + RSD_GRH;
	dg->sbuf = calloc(rs->sq_size, RSD_MSG_MAX);
	dg->rbuf = calloc(1, rlen);
	dg->sfree = calloc(rs->sq_size, sizeof(*dg->sfree));
	dg->ring = calloc(rs->rq_size + 1u, sizeof(*dg->ring));
	if (!dg->sbuf || !dg->rbuf || !dg->sfree || !dg->ring)
		return rsk_err(ENOMEM);
	dg->smr = ibv_reg_mr(dg->id->pd, dg->sbuf,
			     (size_t)rs->sq_size * RSD_MSG_MAX,
			     IBV_ACCESS_LOCAL_WRITE);
	dg->rmr = ibv_reg_mr(dg->id->pd, dg->rbuf, rlen,
			     IBV_ACCESS_LOCAL_WRITE);
	if (!dg->smr || !dg->rmr)
		return -1;
	for (i = 0; i < rs->sq_size; i++)
		dg->sfree[i] = (uint16_t)i;
	dg->nsfree = rs->sq_size;
	for (i = 0; i < rs->rq_size; i++) {
		ret = post_recv(rs, i);
		if (ret)
			return rsk_err(ret);
	}
	return 0;
}

static int create_qp(struct rsk *rs, const union rsd_addr *src,
		     const struct sockaddr *dst)
{
	if (bind_id(rs, src, dst) || create_queues(rs)) {
		rsd_free(rs);
		return -1;
	}
	return 0;
}

int rsd_dest_get(struct rsk *rs, const struct sockaddr *addr, socklen_t len)
{
	struct rsd *dg = rs->dg;
	struct rsd_dest *d;
	union rsd_addr src;
	int i;

	/* the UDP socket's family only (an IPv6 socket sees IPv4 peers as
	 * mapped addresses), as its sendto would say */
	if (!addr)
		return rsk_err(EDESTADDRREQ);
	if (addr->sa_family != rs->domain || len < addr_len(addr))
		return rsk_err(addr->sa_family != rs->domain ? EAFNOSUPPORT :
			       EINVAL);
	for (i = 0; i < dg->ndests; i++)
		if (same_addr(&dg->dests[i].addr, addr))
			return i;
	if (dg->ndests == UR_RSD_MAX_DESTS)
		return rsk_err(ENOBUFS);
	if (source_for(rs, addr, &src))
		return -1;
	if (!dg->id && create_qp(rs, &src, addr))
		return -1;
	if (dg->ndests == dg->cap) {
		int cap = dg->cap ? dg->cap * 2 : 4;

		d = realloc(dg->dests, sizeof(*d) * (size_t)cap);
		if (!d)
			return rsk_err(ENOMEM);
		dg->dests = d;
		dg->cap = cap;
	}
	d = &dg->dests[dg->ndests];
	memset(d, 0, sizeof(*d));
	memcpy(&d->addr, addr, addr_len(addr));
	format_hdr(&d->hdr, &src);
	return dg->ndests++;
}

/* The GID a peer's QP is at: what its UDP header says, else where its
 * datagram came from (rdma-core's senders put their UDP address there). */
static void peer_gid(const struct rsd_udp_hdr *h, const union rsd_addr *from,
		     uint8_t gid[16])
{
	if (h->version == 4 && h->addr.ipv4)
		ur_gid_from_ipv4(&h->addr.ipv4, gid);
	else if (h->version == 6 && !ur_gid_is_zero(h->addr.ipv6))
		memcpy(gid, h->addr.ipv6, 16);
	else if (from->sa.sa_family == AF_INET)
		ur_gid_from_ipv4(&from->sin.sin_addr, gid);
	else
		memcpy(gid, &from->sin6.sin6_addr, 16);
}

static void set_ah(struct rsk *rs, struct rsd_dest *d,
		   const struct rsd_udp_hdr *h, const union rsd_addr *from)
{
	struct rsd *dg = rs->dg;
	struct ibv_ah_attr a;
	struct ibv_ah *ah;

	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.port_num = dg->id->port_num ? dg->id->port_num : 1;
	a.grh.sgid_index = (uint8_t)dg->sgid_index;
	a.grh.hop_limit = UR_DEFAULT_HOP_LIMIT;
	a.grh.traffic_class = (uint8_t)rs->tos;
	peer_gid(h, from, a.grh.dgid.raw);
	ah = ibv_create_ah(dg->id->pd, &a);
	if (!ah)
		return;
	if (d->ah)
		ibv_destroy_ah(d->ah);
	d->ah = ah;
	d->qpn = be32toh(h->qpn) & 0xFFFFFF;
}

static bool ring_full(struct rsd *dg, int size)
{
	return (dg->tail + 1) % size == dg->head;
}

static void ring_push(struct rsk *rs, uint8_t *buf, uint32_t len, int slot)
{
	struct rsd *dg = rs->dg;

	dg->ring[dg->tail] = (struct rsd_msg){ .buf = buf, .len = len,
					       .slot = slot };
	dg->tail = (dg->tail + 1) % (rs->rq_size + 1);
}

/* UDP-borne data, queued as if it had come through the QP */
static void queue_copy(struct rsk *rs, const union rsd_addr *from,
		       const uint8_t *data, size_t len)
{
	struct rsd_hdr h;
	uint8_t *buf;

	if (ring_full(rs->dg, rs->rq_size + 1))
		return;		/* as a full receive queue: dropped */
	format_hdr(&h, from);
	buf = malloc(h.length + len);
	if (!buf)
		return;
	memcpy(buf, &h, h.length);
	memcpy(buf + h.length, data, len);
	ring_push(rs, buf, (uint32_t)(h.length + len), -1);
}

static bool valid_udp_hdr(const struct rsd_udp_hdr *h, size_t n,
			  const union rsd_addr *from)
{
	if (n < RSD_UDP4_LEN || be32toh(h->tag) != RSD_UDP_TAG)
		return false;
	if (h->version == 4 && from->sa.sa_family == AF_INET)
		return h->length == RSD_UDP4_LEN;
	if (h->version == 6 && from->sa.sa_family == AF_INET6)
		return h->length == RSD_UDP6_LEN && n >= RSD_UDP6_LEN;
	return false;
}

/* A datagram on the UDP socket: a peer naming its QP, perhaps with data. */
static void handle_udp(struct rsk *rs, const uint8_t *buf, size_t n,
		       const union rsd_addr *from, socklen_t flen)
{
	struct rsd_udp_hdr h;
	struct rsd_dest *d;
	int i;

	memset(&h, 0, sizeof(h));
	memcpy(&h, buf, UR_MIN(n, sizeof(h)));
	if (!valid_udp_hdr(&h, n, from))
		return;
	i = rsd_dest_get(rs, &from->sa, flen);
	if (i < 0)
		return;
	d = &rs->dg->dests[i];
	if (h.op == RSK_OP_DATA)	/* tell it our QP */
		rsd_send_udp(rs, d, RSK_OP_CTRL, NULL, 0, MSG_DONTWAIT);
	if (!d->ah || d->qpn != (be32toh(h.qpn) & 0xFFFFFF))
		set_ah(rs, d, &h, from);
	if (h.op == RSK_OP_DATA)
		queue_copy(rs, from, buf + h.length, n - h.length);
}

static void read_udp(struct rsk *rs)
{
	uint8_t buf[RSD_UDP6_LEN + RSD_MSG_MAX];
	union rsd_addr from;
	socklen_t flen;
	ssize_t n;
	int i;

	for (i = 0; i < UR_RSD_UDP_READS; i++) {
		flen = sizeof(from);
		n = recvfrom(rs->fd, buf, sizeof(buf), MSG_DONTWAIT, &from.sa,
			     &flen);
		if (n < 0)
			break;
		handle_udp(rs, buf, (size_t)n, &from, flen);
	}
}

static bool valid_ud(struct rsk *rs, int slot, uint32_t byte_len)
{
	const struct rsd_hdr *h = (const struct rsd_hdr *)
		(rs->dg->rbuf + (size_t)slot * RSD_MSG_MAX);

	if (byte_len < RSD_GRH + RSD_HDR4_LEN)
		return false;
	if (!((h->version == 4 && h->length == RSD_HDR4_LEN) ||
	      (h->version == 6 && h->length == RSD_HDR6_LEN)))
		return false;
	return byte_len - RSD_GRH >= h->length;
}

static void poll_cq(struct rsk *rs)
{
	struct rsd *dg = rs->dg;
	struct ibv_wc wc[16];
	int n, i, slot;

	while ((n = ibv_poll_cq(rs->cq, UR_ARRAY_SIZE(wc), wc)) > 0) {
		for (i = 0; i < n; i++) {
			slot = (int)(wc[i].wr_id & 0xFFFF);
			if (!(wc[i].wr_id & RSK_WR_RECV)) {
				dg->sfree[dg->nsfree++] = (uint16_t)slot;
				continue;
			}
			if (wc[i].status == IBV_WC_SUCCESS &&
			    valid_ud(rs, slot, wc[i].byte_len) &&
			    !ring_full(dg, rs->rq_size + 1))
				ring_push(rs, dg->rbuf + (size_t)slot * RSD_MSG_MAX,
					  wc[i].byte_len - RSD_GRH, slot);
			else if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
				post_recv(rs, slot);
		}
	}
}

int rsd_poll(struct rsk *rs)
{
	if (rs->cq)
		poll_cq(rs);
	read_udp(rs);
	return 0;
}

bool rsd_have_rdata(struct rsk *rs)
{
	return rs->dg->ring && rs->dg->head != rs->dg->tail;
}

bool rsd_can_send(struct rsk *rs)
{
	return !rs->dg->id || rs->dg->nsfree > 0;
}

bool rsd_sends_done(struct rsk *rs)
{
	return !rs->dg->id || rs->dg->nsfree == rs->sq_size;
}

/* Copies the iovecs' len bytes to dst. */
static void flatten(uint8_t *dst, const struct iovec *iov, int iovcnt,
		    size_t len)
{
	size_t n;
	int i;

	for (i = 0; i < iovcnt && len; i++) {
		n = UR_MIN(len, iov[i].iov_len);
		memcpy(dst, iov[i].iov_base, n);
		dst += n;
		len -= n;
	}
}

int rsd_send_ud(struct rsk *rs, struct rsd_dest *d, const struct iovec *iov,
		int iovcnt, size_t len)
{
	struct rsd *dg = rs->dg;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	uint16_t slot = dg->sfree[--dg->nsfree];
	uint8_t *msg = dg->sbuf + (size_t)slot * RSD_MSG_MAX;
	int ret;

	memcpy(msg, &d->hdr, d->hdr.length);
	flatten(msg + d->hdr.length, iov, iovcnt, len);
	sge.addr = (uintptr_t)msg;
	sge.length = (uint32_t)(d->hdr.length + len);
	sge.lkey = dg->smr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = sge.length <= rs->sq_inline ? IBV_SEND_INLINE : 0;
	wr.wr.ud.ah = d->ah;
	wr.wr.ud.remote_qpn = d->qpn;
	wr.wr.ud.remote_qkey = RDMA_UDP_QKEY;
	ret = ibv_post_send(dg->id->qp, &wr, &bad);
	if (ret) {
		dg->sfree[dg->nsfree++] = slot;
		return rsk_err(ret);
	}
	return 0;
}

ssize_t rsd_send_udp(struct rsk *rs, struct rsd_dest *d, uint8_t op,
		     const struct iovec *iov, int iovcnt, int flags)
{
	uint8_t buf[RSD_UDP6_LEN + RSD_MSG_MAX];
	struct rsd_udp_hdr h;
	size_t len = 0;
	ssize_t n;
	int i;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	if (len > RSD_MSG_MAX)
		return rsk_err(EMSGSIZE);
	memset(&h, 0, sizeof(h));
	h.tag = htobe32(RSD_UDP_TAG);
	h.op = op;
	h.qpn = htobe32(rs->dg->id->qp->qp_num & 0xFFFFFF);
	if (d->addr.sa.sa_family == AF_INET) {
		h.version = 4;
		h.length = RSD_UDP4_LEN;
		/* our QP's IPv4 address, if its GID has one */
		if (ur_gid_is_v4mapped(rs->dg->sgid.raw))
			memcpy(&h.addr.ipv4, rs->dg->sgid.raw + 12, 4);
	} else {
		h.version = 6;
		h.length = RSD_UDP6_LEN;
		memcpy(h.addr.ipv6, rs->dg->sgid.raw, 16);
	}
	memcpy(buf, &h, h.length);
	flatten(buf + h.length, iov, iovcnt, len);
	n = sendto(rs->fd, buf, h.length + len, flags, &d->addr.sa,
		   addr_len(&d->addr.sa));
	return n < 0 ? -1 : n - h.length;
}

void rsd_repost(struct rsk *rs, struct rsd_msg *m)
{
	if (m->slot < 0)
		free(m->buf);
	else
		post_recv(rs, m->slot);
}

int rsd_wait(struct rsk *rs, int ms)
{
	struct pollfd p[2];
	int n = 0, ret;

	p[n++] = (struct pollfd){ .fd = rs->fd, .events = POLLIN };
	if (rs->cch)
		p[n++] = (struct pollfd){ .fd = rs->cch->fd, .events = POLLIN };
	if (ms < 0 || ms > UR_RSK_WAKE_MS)
		ms = UR_RSK_WAKE_MS;
	pthread_mutex_unlock(&rs->lock);
	ret = poll(p, (nfds_t)n, ms);
	pthread_mutex_lock(&rs->lock);
	if (ret < 0 && errno != EINTR)
		return -1;
	rsk_cq_event(rs);
	return 0;
}

void rsd_free(struct rsk *rs)
{
	struct rsd *dg = rs->dg;
	int i;

	for (i = 0; i < dg->ndests; i++)
		if (dg->dests[i].ah)
			ibv_destroy_ah(dg->dests[i].ah);
	free(dg->dests);
	dg->dests = NULL;
	dg->ndests = dg->cap = 0;
	dg->conn = -1;
	while (dg->ring && dg->head != dg->tail) {
		if (dg->ring[dg->head].slot < 0)
			free(dg->ring[dg->head].buf);
		dg->head = (dg->head + 1) % (rs->rq_size + 1);
	}
	if (dg->id && dg->id->qp)
		rdma_destroy_qp(dg->id);
	if (dg->smr)
		ibv_dereg_mr(dg->smr);
	if (dg->rmr)
		ibv_dereg_mr(dg->rmr);
	if (rs->cq) {
		ibv_ack_cq_events(rs->cq, rs->unacked);
		ibv_destroy_cq(rs->cq);
	}
	if (rs->cch)
		ibv_destroy_comp_channel(rs->cch);
	if (dg->id)
		rdma_destroy_id(dg->id);
	free(dg->sbuf);
	free(dg->rbuf);
	free(dg->sfree);
	free(dg->ring);
	memset(dg, 0, sizeof(*dg));
	dg->conn = -1;
	rs->cq = NULL;
	rs->cch = NULL;
	rs->unacked = 0;
	rs->cq_armed = false;
}
