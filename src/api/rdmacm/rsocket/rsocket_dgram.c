/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rsockets' SOCK_DGRAM calls (rsocket_dgram.h has the protocol): the
 * exported calls of rsocket.c, rsocket_conn.c, rsocket_io.c,
 * rsocket_cm.c and rsocket_poll.c hand a datagram socket to these.
 * Calls rsocket_dgwire.c, rsocket_wire.c and rsocket_table.c.
 *
 * The UDP socket holds what the kernel can (bound address, connected
 * peer, SOL_SOCKET and IP options): rbind and rconnect are its bind and
 * connect, rgetsockname its getsockname, options go to it first.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/rsocket.h>

#include "api/rdmacm/rsocket/rsocket_dgram.h"
#include "util/compiler.h"

int rsd_socket(int domain)
{
	int udp = socket(domain, SOCK_DGRAM, 0);
	struct rsk *rs;

	if (udp < 0)
		return -1;
	udp = rsk_number_above_open(udp);
	rs = rsk_new_fd(udp);
	if (rs)
		rs->dg = calloc(1, sizeof(*rs->dg));
	if (!rs || !rs->dg || rsk_publish(rs)) {
		if (rs)
			free(rs->dg);
		free(rs);
		close(udp);
		return rsk_err(ENOMEM);
	}
	rs->dg->conn = -1;
	rs->readable = rs->writable = true;
	rs->domain = domain;
	return rs->fd;
}

int rsd_bind(struct rsk *rs, const struct sockaddr *addr, socklen_t len)
{
	int ret;

	pthread_mutex_lock(&rs->lock);
	ret = bind(rs->fd, addr, len);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

int rsd_connect(struct rsk *rs, const struct sockaddr *addr, socklen_t len)
{
	int ret;

	pthread_mutex_lock(&rs->lock);
	ret = connect(rs->fd, addr, len);
	if (!ret && addr->sa_family == AF_UNSPEC) {
		rs->dg->conn = -1;	/* dissolved, as a UDP socket's */
	} else if (!ret) {
		ret = rsd_dest_get(rs, addr, len);
		if (ret >= 0) {
			rs->dg->conn = ret;
			ret = 0;
		}
	}
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

/* Runs the CQ and the UDP socket until test() holds (EWOULDBLOCK if
 * nonblock). Lock held. */
static int process(struct rsk *rs, bool nonblock, bool (*test)(struct rsk *))
{
	for (;;) {
		rsd_poll(rs);
		if (test(rs))
			return 0;
		if (nonblock)
			return rsk_err(EWOULDBLOCK);
		if (rsk_arm(rs))
			continue;	/* what came before the arm is polled */
		if (rsd_wait(rs, -1))
			return -1;
	}
}

static size_t iov_len(const struct iovec *iov, int iovcnt)
{
	size_t len = 0;
	int i;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	return len;
}

static ssize_t sendv_locked(struct rsk *rs, const struct iovec *iov,
			    int iovcnt, int flags, const struct sockaddr *to,
			    socklen_t tolen)
{
	bool nonblock = rsk_nonblocking(rs, flags);
	size_t len = iov_len(iov, iovcnt);
	struct rsd_dest *d;
	int di = rs->dg->conn;

	if (!rs->writable)
		return rsk_err(EPIPE);
	if (to) {
		di = rsd_dest_get(rs, to, tolen);
		if (di < 0)
			return -1;
	} else if (di < 0) {
		return rsk_err(EDESTADDRREQ);
	}
	if (rs->dg->dests[di].hdr.length + len > rs->dg->max_msg)
		return rsk_err(EMSGSIZE);
	rsd_poll(rs);		/* a peer's QP may have been named since */
	d = &rs->dg->dests[di];
	if (!d->ah)
		return rsd_send_udp(rs, d, RSK_OP_DATA, iov, iovcnt,
				    nonblock ? MSG_DONTWAIT : 0);
	if (!rsd_can_send(rs) && process(rs, nonblock, rsd_can_send))
		return -1;
	d = &rs->dg->dests[di];	/* process() may have added peers */
	if (rsd_send_ud(rs, d, iov, iovcnt, len))
		return -1;
	return (ssize_t)len;
}

ssize_t rsd_sendv(struct rsk *rs, const struct iovec *iov, int iovcnt,
		  int flags, const struct sockaddr *to, socklen_t tolen)
{
	ssize_t ret;

	pthread_mutex_lock(&rs->lock);
	ret = sendv_locked(rs, iov, iovcnt, flags, to, tolen);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

/* The sender's address, from the header before a datagram. */
static void set_from(const struct rsd_hdr *h, struct sockaddr *from,
		     socklen_t *fromlen)
{
	union rsd_addr a;
	socklen_t n;

	memset(&a, 0, sizeof(a));
	if (h->version == 4) {
		a.sin.sin_family = AF_INET;
		a.sin.sin_port = h->port;
		a.sin.sin_addr.s_addr = h->addr.ipv4;
		n = sizeof(a.sin);
	} else {
		a.sin6.sin6_family = AF_INET6;
		a.sin6.sin6_port = h->port;
		a.sin6.sin6_flowinfo = h->addr.ipv6.flowinfo;
		memcpy(&a.sin6.sin6_addr, h->addr.ipv6.addr, 16);
		n = sizeof(a.sin6);
	}
	memcpy(from, &a, UR_MIN(*fromlen, n));
	*fromlen = n;
}

/* Copies up to len bytes of src into the iovecs; how many. */
static size_t scatter(const struct iovec *iov, int iovcnt, const uint8_t *src,
		      size_t len)
{
	size_t done = 0, n;
	int i;

	for (i = 0; i < iovcnt && done < len; i++) {
		n = UR_MIN(len - done, iov[i].iov_len);
		memcpy(iov[i].iov_base, src + done, n);
		done += n;
	}
	return done;
}

static ssize_t recvv_locked(struct rsk *rs, const struct iovec *iov,
			    int iovcnt, int flags, struct sockaddr *from,
			    socklen_t *fromlen, int *mflags)
{
	struct rsd *dg = rs->dg;
	const struct rsd_hdr *h;
	struct rsd_msg *m;
	size_t dlen, got;

	if (!rs->readable)
		return 0;
	if (!rsd_have_rdata(rs) &&
	    process(rs, rsk_nonblocking(rs, flags), rsd_have_rdata))
		return -1;
	m = &dg->ring[dg->head];
	h = (const struct rsd_hdr *)m->buf;
	dlen = m->len - h->length;
	got = scatter(iov, iovcnt, m->buf + h->length, dlen);
	if (from && fromlen)
		set_from(h, from, fromlen);
	if (got < dlen && mflags)
		*mflags |= MSG_TRUNC;
	if (!(flags & MSG_PEEK)) {
		rsd_repost(rs, m);
		dg->head = (dg->head + 1) % (rs->rq_size + 1);
	}
	return (ssize_t)((flags & MSG_TRUNC) ? dlen : got);
}

ssize_t rsd_recvv(struct rsk *rs, const struct iovec *iov, int iovcnt,
		  int flags, struct sockaddr *from, socklen_t *fromlen,
		  int *mflags)
{
	ssize_t ret;

	pthread_mutex_lock(&rs->lock);
	ret = recvv_locked(rs, iov, iovcnt, flags, from, fromlen, mflags);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

short rsd_revents(struct rsk *rs, short events)
{
	short rev = 0;

	rsd_poll(rs);
	if ((events & POLLIN) && (rsd_have_rdata(rs) || !rs->readable))
		rev |= POLLIN;
	if ((events & POLLOUT) && rsd_can_send(rs))
		rev |= POLLOUT;
	return rev;
}

int rsd_shutdown(struct rsk *rs, int how)
{
	pthread_mutex_lock(&rs->lock);
	if (how == SHUT_RD || how == SHUT_RDWR)
		rs->readable = false;
	if (how == SHUT_WR || how == SHUT_RDWR)
		rs->writable = false;
	pthread_mutex_unlock(&rs->lock);
	return 0;
}

void rsd_close(struct rsk *rs)
{
	int i;

	pthread_mutex_lock(&rs->lock);
	/* UD sends complete without the peer; a bounded wait all the same */
	for (i = 0; i < 10 && !rsd_sends_done(rs); i++) {
		rsd_poll(rs);
		if (!rsk_arm(rs))
			rsd_wait(rs, 100);
	}
	rsd_free(rs);
	pthread_mutex_unlock(&rs->lock);
	close(rs->fd);
	free(rs->dg);
	rs->dg = NULL;
	rsk_destroy(rs);
}

int rsd_name(struct rsk *rs, bool peer, struct sockaddr *addr,
	     socklen_t *len)
{
	if (!len || (*len && !addr))
		return rsk_err(EFAULT);
	return peer ? getpeername(rs->fd, addr, len) :
		      getsockname(rs->fd, addr, len);
}

/* Our sizes, rounded to whole slots; before the QP exists only. */
static int set_size(struct rsk *rs, int optname, int v)
{
	if (rs->dg->id || v <= 0)
		return rsk_err(EINVAL);
	switch (optname) {
	case SO_RCVBUF:
		rs->rbuf_size = UR_MAX((uint32_t)v << 1, 2u * RSD_MSG_MAX);
		return 0;
	case SO_SNDBUF:
		rs->sbuf_size = UR_MAX((uint32_t)v << 1, 2u * RSD_MSG_MAX);
		return 0;
	}
	return rsk_set_qp_opt(rs, optname, v) ? 0 : rsk_err(ENOTSUP);
}

int rsd_setsockopt(struct rsk *rs, int level, int optname,
		   const void *optval, socklen_t optlen)
{
	int v, ret = 0;

	if (!optval || optlen < sizeof(int))
		return rsk_err(EINVAL);
	memcpy(&v, optval, sizeof(v));
	pthread_mutex_lock(&rs->lock);
	if (level != SOL_RDMA)
		ret = setsockopt(rs->fd, level, optname, optval, optlen);
	if (!ret && level == SOL_SOCKET &&
	    (optname == SO_RCVBUF || optname == SO_SNDBUF) && !rs->dg->id)
		ret = set_size(rs, optname, v);
	else if (!ret && level == IPPROTO_IP && optname == IP_TOS)
		rs->tos = v;	/* the traffic class of AHs made from now */
	else if (!ret && level == IPPROTO_IPV6 && optname == IPV6_TCLASS)
		rs->tos = v;
	else if (level == SOL_RDMA)
		ret = optname == RDMA_IOMAPSIZE ? rsk_err(ENOTSUP) :
		      set_size(rs, optname, v);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

int rsd_getsockopt(struct rsk *rs, int level, int optname, void *optval,
		   socklen_t *optlen)
{
	int v;

	if (level != SOL_RDMA)
		return getsockopt(rs->fd, level, optname, optval, optlen);
	pthread_mutex_lock(&rs->lock);
	switch (optname) {
	case RDMA_SQSIZE:
		v = rs->sq_size;
		break;
	case RDMA_RQSIZE:
		v = rs->rq_size;
		break;
	case RDMA_INLINE:
		v = rs->sq_inline;
		break;
	default:
		pthread_mutex_unlock(&rs->lock);
		return rsk_err(ENOTSUP);
	}
	pthread_mutex_unlock(&rs->lock);
	if (*optlen < sizeof(int))
		return rsk_err(EINVAL);
	memcpy(optval, &v, sizeof(v));
	*optlen = sizeof(int);
	return 0;
}
