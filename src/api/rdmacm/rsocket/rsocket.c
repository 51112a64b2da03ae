/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rsockets (rdma/rsocket.h): rsocket, rshutdown, rclose, options and
 * rfcntl. rsocket_conn.c sets connections up, rsocket_io.c moves the data,
 * rsocket_iomap.c is riomap and riowrite, rsocket_poll.c is rpoll and
 * rselect (rsocket_priv.h has the files' order); a SOCK_DGRAM socket is
 * handed to rsocket_dgram.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <rdma/rsocket.h>

#include "api/rdmacm/rsocket/rsocket_dgram.h"
#include "api/rdmacm/rsocket/rsocket_priv.h"
#include "util/compiler.h"


UR_EXPORT int rsocket(int domain, int type, int protocol)
{
	int kind = type & ~(SOCK_CLOEXEC | SOCK_NONBLOCK);
	struct rsk *rs;

	if (domain != AF_INET && domain != AF_INET6)
		return rsk_err(EAFNOSUPPORT);
	if (kind == SOCK_DGRAM) {
		/* No type flags, as rdma-core: librspreload hands glibc's
		 * resolver sockets (SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC)
		 * to rsocket and keeps a kernel socket only when refused; a
		 * datagram rsocket cannot talk to a DNS server. */
		if (type != SOCK_DGRAM || (protocol && protocol != IPPROTO_UDP))
			return rsk_err(ENOTSUP);
		return rsd_socket(domain);
	}
	if (kind != SOCK_STREAM || (protocol && protocol != IPPROTO_TCP))
		return rsk_err(ENOTSUP);	/* rdma-core's errno here */
	rs = rsk_new(NULL);
	if (!rs)
		return -1;
	rs->domain = domain;
	rs->fs_flags = (type & SOCK_NONBLOCK) ? O_NONBLOCK : 0;
	rs->fd_flags = (type & SOCK_CLOEXEC) ? FD_CLOEXEC : 0;
	if (rdma_create_id(rs->chan, &rs->id, rs, RDMA_PS_TCP)) {
		rsk_destroy(rs);
		return -1;
	}
	rs->id->route.addr.src_addr.sa_family = (sa_family_t)domain;
	if (rsk_publish(rs)) {
		rsk_destroy(rs);
		return -1;
	}
	return rs->fd;
}

/* Sends the shutdown message that how leaves; waits for sends. Lock held. */
static int shutdown_locked(struct rsk *rs, int how)
{
	uint32_t ctrl;

	if (rs->state != RSK_CONNECTED)
		return 0;
	if (how == SHUT_RDWR) {
		rs->readable = rs->writable = false;
		ctrl = RSK_CTRL_DISCONNECT;
	} else if (how == SHUT_WR) {
		rs->writable = false;
		ctrl = rs->readable ? RSK_CTRL_SHUTDOWN : RSK_CTRL_DISCONNECT;
	} else {
		rs->readable = false;
		if (rs->writable)
			return 0;
		ctrl = RSK_CTRL_DISCONNECT;
	}
	/* control slots free up as earlier control messages complete */
	if (rsk_process(rs, false, rsk_ctrl_avail_or_closed))
		return -1;
	if (rs->state == RSK_CONNECTED && rsk_post_ctrl(rs, ctrl))
		return -1;
	return rsk_process(rs, false, rsk_sends_done);
}

UR_EXPORT int rshutdown(int socket, int how)
{
	struct rsk *rs = rsk_get(socket);
	int ret;

	if (!rs)
		return rsk_err(EBADF);
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return rsk_err(EINVAL);
	if (rs->dg)
		return rsd_shutdown(rs, how);
	pthread_mutex_lock(&rs->lock);
	if (rs->state != RSK_CONNECTED && rs->state != RSK_DISCONNECTED) {
		pthread_mutex_unlock(&rs->lock);
		return rsk_err(ENOTCONN);
	}
	ret = shutdown_locked(rs, how);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

/*
 * Requests never raccept'ed: rejected and their ids destroyed, and their
 * events taken off the channel, which is destroyed next with what it holds.
 */
static void refuse_pending(struct rsk *rs)
{
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;

	while (!rdma_get_cm_event(rs->chan, &ev)) {
		id = ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ? ev->id : NULL;
		rdma_ack_cm_event(ev);
		if (id) {
			rdma_reject(id, NULL, 0);
			rdma_destroy_id(id);
		}
	}
}

UR_EXPORT int rclose(int socket)
{
	struct rsk *rs = rsk_get(socket);

	if (!rs)
		return rsk_err(EBADF);
	if (rs->dg) {
		rsk_unpublish(rs);	/* before its number may be reused */
		rsd_close(rs);
		return 0;
	}
	rsk_keepalive_forget(rs);
	pthread_mutex_lock(&rs->lock);
	if (rs->state == RSK_LISTENING)
		refuse_pending(rs);
	shutdown_locked(rs, SHUT_RDWR);
	pthread_mutex_unlock(&rs->lock);
	rsk_unpublish(rs);
	if (rs->id && rs->id->qp)
		rdma_disconnect(rs->id);	/* the CM's DREQ; errors: gone */
	rsk_destroy(rs);
	return 0;
}

static void set_flag(uint64_t *opts, int optname, bool on)
{
	if (optname < 0 || optname >= 64)
		return;
	if (on)
		*opts |= 1ULL << optname;
	else
		*opts &= ~(1ULL << optname);
}

static bool flag(uint64_t opts, int optname)
{
	return optname >= 0 && optname < 64 && (opts & (1ULL << optname));
}

static int setsockopt_locked(struct rsk *rs, int level, int optname,
			     const void *optval, socklen_t optlen)
{
	int v;
	bool before = rs->state < RSK_RESOLVING_ADDR ||
		      rs->state == RSK_LISTENING;

	if (!optval || optlen < sizeof(int))
		return rsk_err(EINVAL);
	memcpy(&v, optval, sizeof(v));
	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_REUSEADDR:
			if (rs->state == RSK_INIT &&
			    rdma_set_option(rs->id, RDMA_OPTION_ID,
					    RDMA_OPTION_ID_REUSEADDR, &v,
					    sizeof(v)))
				return -1;
			set_flag(&rs->so_opts, optname, v);
			return 0;
		case SO_RCVBUF:
			/* doubled, as Linux does: the halves are offered */
			if (!rs->rbuf && v > 0)
				rs->rbuf_size = UR_MAX((uint32_t)v << 1,
						       2u * RSK_SNDLOWAT);
			return 0;
		case SO_SNDBUF:
			if (!rs->sbuf && v > 0)
				rs->sbuf_size = UR_MAX((uint32_t)v << 1,
						       2u * RSK_SNDLOWAT);
			return 0;
		case SO_LINGER:
			if (optlen < sizeof(struct linger))
				return rsk_err(EINVAL);
			/* stored inverted: a zero so_opts bit means "on" */
			set_flag(&rs->so_opts, optname,
				 !((const struct linger *)optval)->l_onoff);
			return 0;
		case SO_KEEPALIVE:
			set_flag(&rs->so_opts, optname, v);
			return rsk_keepalive_update(rs);
		case SO_OOBINLINE:
			set_flag(&rs->so_opts, optname, v);
			return 0;
		}
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_NODELAY:
			set_flag(&rs->tcp_opts, optname, v);
			return 0;
		case TCP_KEEPIDLE:
			if (v <= 0)
				return rsk_err(EINVAL);
			rs->keepalive_time = v;
			return rsk_keepalive_update(rs);
		case TCP_KEEPCNT:
		case TCP_KEEPINTVL:
		case TCP_MAXSEG:
		case TCP_CONGESTION:
			return 0;
		}
		break;
	case IPPROTO_IP:
		if (optname == IP_TOS) {
			if (rdma_set_option(rs->id, RDMA_OPTION_ID,
					    RDMA_OPTION_ID_TOS, &v, sizeof(v)))
				return -1;
			rs->tos = v;
			return 0;
		}
		break;
	case IPPROTO_IPV6:
		if (optname == IPV6_V6ONLY) {
			if (rdma_set_option(rs->id, RDMA_OPTION_ID,
					    RDMA_OPTION_ID_AFONLY, &v,
					    sizeof(v)))
				return -1;
			set_flag(&rs->ipv6_opts, optname, v);
			return 0;
		}
		break;
	case SOL_RDMA:
		if (!before)
			return rsk_err(EINVAL);
		if (v < 0)
			return rsk_err(EINVAL);
		if (rsk_set_qp_opt(rs, optname, v))
			return 0;
		switch (optname) {
		case RDMA_IOMAPSIZE:
			/* rounded to what the connect data can say */
			rs->target_iomap_size = (uint16_t)rsk_iomap_unscale(
				rsk_iomap_scale(UR_MIN(v, 0x7F00)));
			return 0;
		}
		break;
	}
	return rsk_err(ENOTSUP);
}

UR_EXPORT int rsetsockopt(int socket, int level, int optname,
			  const void *optval, socklen_t optlen)
{
	struct rsk *rs = rsk_get(socket);
	int ret;

	if (!rs)
		return rsk_err(EBADF);
	if (rs->dg)
		return rsd_setsockopt(rs, level, optname, optval, optlen);
	pthread_mutex_lock(&rs->lock);
	ret = setsockopt_locked(rs, level, optname, optval, optlen);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

/* The path MTU of a connected socket, else 2048 (rdma-core's answer). */
static int path_mtu(const struct rsk *rs)
{
	return rs->id && rs->id->route.path_rec ?
	       128 << rs->id->route.path_rec->mtu : 2048;
}

/*
 * TCP_MAXSEG: the path MTU, as rdma-core answers, but never more than a
 * datagram rsocket of the socket's family carries. Programs size their
 * UDP datagrams from their TCP connection's MSS (iperf3 -u does), and
 * under librspreload that UDP socket is a datagram rsocket: a UD message
 * of RSD_MSG_MAX with its header, which rdma-core's rsockets share, so
 * larger datagrams could not reach them.
 */
static int max_seg(const struct rsk *rs)
{
	int dg = RSD_MSG_MAX -
		 (rs->domain == AF_INET6 ? RSD_HDR6_LEN : RSD_HDR4_LEN);

	return UR_MIN(path_mtu(rs), dg);
}

static uint8_t tcp_state(const struct rsk *rs)
{
	switch (rs->state) {
	case RSK_LISTENING:
		return TCP_LISTEN;
	case RSK_RESOLVING_ADDR:
	case RSK_RESOLVING_ROUTE:
	case RSK_CONNECTING:
		return TCP_SYN_SENT;
	case RSK_ACCEPTING:
		return TCP_SYN_RECV;
	case RSK_CONNECTED:
		if (!rs->writable)
			return rs->readable ? TCP_FIN_WAIT2 : TCP_CLOSING;
		return rs->readable ? TCP_ESTABLISHED : TCP_CLOSE_WAIT;
	case RSK_DISCONNECTED:
		return TCP_CLOSE_WAIT;
	default:
		return TCP_CLOSE;
	}
}

/*
 * TCP_INFO: what an rsocket knows in TCP's terms (state, segment size,
 * path MTU, buffer), zeros for the rest: round trips, windows and
 * retransmissions are the RC QP's, out of sight here. Linux copies
 * min(*optlen, its size) and says how much; so do we. Programs that read
 * it every interval (iperf3) got ENOTSUP, and printed what the
 * uninitialised struct held.
 */
static int tcp_info_locked(const struct rsk *rs, void *optval,
			   socklen_t *optlen)
{
	struct tcp_info ti;
	socklen_t n = UR_MIN(*optlen, (socklen_t)sizeof(ti));

	memset(&ti, 0, sizeof(ti));
	ti.tcpi_state = tcp_state(rs);
	ti.tcpi_snd_mss = ti.tcpi_rcv_mss = ti.tcpi_advmss =
		(uint32_t)max_seg(rs);
	ti.tcpi_pmtu = (uint32_t)path_mtu(rs);
	ti.tcpi_rcv_space = rs->rbuf_size >> 1;
	memcpy(optval, &ti, n);
	*optlen = n;
	return 0;
}

static int getsockopt_locked(struct rsk *rs, int level, int optname,
			     void *optval, socklen_t *optlen)
{
	int v;

	switch (level) {
	case SOL_SOCKET:
		switch (optname) {
		case SO_ERROR:
			if (rs->state > RSK_BOUND && rs->state < RSK_CONNECTED)
				rsk_connect_wait(rs, true);
			v = rs->err;
			rs->err = 0;
			goto out;
		case SO_TYPE:
			v = SOCK_STREAM;
			goto out;
		case SO_RCVBUF:
			v = (int)(rs->rbuf_size >> 1);
			goto out;
		case SO_SNDBUF:
			v = (int)(rs->sbuf_size >> 1);
			goto out;
		case SO_LINGER:
			if (*optlen < sizeof(struct linger))
				return rsk_err(EINVAL);
			((struct linger *)optval)->l_onoff =
				!flag(rs->so_opts, optname);
			((struct linger *)optval)->l_linger = 0;
			*optlen = sizeof(struct linger);
			return 0;
		case SO_REUSEADDR:
		case SO_KEEPALIVE:
		case SO_OOBINLINE:
			v = flag(rs->so_opts, optname);
			goto out;
		}
		break;
	case IPPROTO_TCP:
		switch (optname) {
		case TCP_NODELAY:
			v = flag(rs->tcp_opts, optname);
			goto out;
		case TCP_KEEPIDLE:
			v = rs->keepalive_time ? rs->keepalive_time : 7200;
			goto out;
		case TCP_MAXSEG:
			v = max_seg(rs);
			goto out;
		case TCP_INFO:
			return tcp_info_locked(rs, optval, optlen);
		}
		break;
	case IPPROTO_IP:
		if (optname == IP_TOS) {
			v = rs->tos;
			goto out;
		}
		break;
	case IPPROTO_IPV6:
		if (optname == IPV6_V6ONLY) {
			v = flag(rs->ipv6_opts, optname);
			goto out;
		}
		break;
	case SOL_RDMA:
		switch (optname) {
		case RDMA_SQSIZE:
			v = rs->sq_size;
			goto out;
		case RDMA_RQSIZE:
			v = rs->rq_size;
			goto out;
		case RDMA_INLINE:
			v = rs->sq_inline;
			goto out;
		case RDMA_IOMAPSIZE:
			v = rs->target_iomap_size;
			goto out;
		}
		break;
	}
	return rsk_err(ENOTSUP);
out:
	if (*optlen < sizeof(int))
		return rsk_err(EINVAL);
	memcpy(optval, &v, sizeof(v));
	*optlen = sizeof(int);
	return 0;
}

UR_EXPORT int rgetsockopt(int socket, int level, int optname, void *optval,
			  socklen_t *optlen)
{
	struct rsk *rs = rsk_get(socket);
	int ret;

	if (!rs)
		return rsk_err(EBADF);
	if (!optval || !optlen)
		return rsk_err(EFAULT);
	if (rs->dg)
		return rsd_getsockopt(rs, level, optname, optval, optlen);
	pthread_mutex_lock(&rs->lock);
	ret = getsockopt_locked(rs, level, optname, optval, optlen);
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

UR_EXPORT int rfcntl(int socket, int cmd, ...)
{
	struct rsk *rs = rsk_get(socket);
	va_list ap;
	int arg, ret = 0;

	if (!rs)
		return rsk_err(EBADF);
	va_start(ap, cmd);
	pthread_mutex_lock(&rs->lock);
	switch (cmd) {
	case F_GETFL:
		ret = rs->fs_flags;
		break;
	case F_SETFL:
		arg = va_arg(ap, int);
		rs->fs_flags = arg & O_NONBLOCK;
		break;
	case F_GETFD:
		ret = rs->fd_flags;
		break;
	case F_SETFD:
		arg = va_arg(ap, int);
		rs->fd_flags = arg & FD_CLOEXEC;
		break;
	default:
		ret = rsk_err(ENOSYS);
		break;
	}
	pthread_mutex_unlock(&rs->lock);
	va_end(ap);
	return ret;
}
