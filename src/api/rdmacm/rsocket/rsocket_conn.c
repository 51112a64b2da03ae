/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rsockets' connection set-up: rbind, rlisten, raccept and rconnect.
 * Everything is driven by the socket's own event channel (rsocket_cm.c),
 * so a non-blocking rconnect returns EINPROGRESS and finishes in rpoll,
 * rsend, rrecv or SO_ERROR.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <rdma/rsocket.h>

#include "api/rdmacm/rsocket/rsocket_priv.h"
#include "util/compiler.h"

UR_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t len)
{
	struct rsk *rs = rsk_get(socket);
	int ret;

	if (!rs)
		return rsk_err(EBADF);
	if (!addr || len < sizeof(struct sockaddr_in))
		return rsk_err(EINVAL);
	if (rs->dg)
		return rsd_bind(rs, addr, len);
	pthread_mutex_lock(&rs->lock);
	if (rs->state != RSK_INIT) {
		pthread_mutex_unlock(&rs->lock);
		return rsk_err(EINVAL);
	}
	ret = rdma_bind_addr(rs->id, (struct sockaddr *)addr);
	if (!ret)
		rs->state = RSK_BOUND;
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

UR_EXPORT int rlisten(int socket, int backlog)
{
	struct rsk *rs = rsk_get(socket);
	int ret = 0;

	if (!rs)
		return rsk_err(EBADF);
	if (rs->dg)
		return rsk_err(EOPNOTSUPP);	/* as a UDP socket */
	pthread_mutex_lock(&rs->lock);
	if (rs->state == RSK_INIT || rs->state == RSK_BOUND) {
		ret = rdma_listen(rs->id, backlog);
		if (!ret)
			rs->state = RSK_LISTENING;
	} else if (rs->state != RSK_LISTENING) {
		ret = rsk_err(EINVAL);
	}
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

/* A new socket for a connection request; the event is acked here. */
static int accept_request(struct rsk *l, struct rdma_cm_event *ev)
{
	struct rdma_conn_param p = ev->param.conn;
	struct rdma_cm_id *id = ev->id;
	struct rsk_conn_data creq, cresp;
	struct rsk *rs;
	bool ok = p.private_data_len >= sizeof(creq);

	if (ok)
		memcpy(&creq, p.private_data, sizeof(creq));
	rdma_ack_cm_event(ev);
	if (!ok || creq.version != RSK_CONN_VERSION)
		goto reject;
	rs = rsk_new(l);
	if (!rs)
		goto reject;
	if (rdma_migrate_id(id, rs->chan)) {
		rsk_destroy(rs);
		goto reject;
	}
	rs->id = id;
	id->context = rs;
	if (rsk_create_ep(rs))
		goto fail;
	rsk_save_conn(rs, &creq);
	rsk_format_conn(rs, &cresp);
	p.private_data = &cresp;
	p.private_data_len = sizeof(cresp);
	if (rdma_accept(id, &p))
		goto fail;
	/*
	 * Our QP is in RTS and receives, but sends wait for the RTU (the
	 * ESTABLISHED event), as with rdma-core's synchronous accept: the
	 * active QP reaches RTR only with the REP, which may be lost and
	 * resent after a CM timeout longer than all our RC retries.
	 */
	rs->state = RSK_ACCEPTING;
	/* SO_KEEPALIVE came from the listener */
	if (rsk_keepalive_update(rs) || rsk_publish(rs))
		goto fail;
	return rs->fd;

fail:
	rdma_reject(id, NULL, 0);
	rsk_keepalive_forget(rs);
	rsk_destroy(rs);	/* the id with it */
	return -1;
reject:
	rdma_reject(id, NULL, 0);
	rdma_destroy_id(id);
	return -1;
}

UR_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *len)
{
	struct rsk *l = rsk_get(socket);
	struct rdma_cm_event *ev;
	int fd;

	if (!l)
		return rsk_err(EBADF);
	if (l->dg)
		return rsk_err(EOPNOTSUPP);
	pthread_mutex_lock(&l->lock);
	if (l->state != RSK_LISTENING) {
		pthread_mutex_unlock(&l->lock);
		return rsk_err(EINVAL);
	}
	for (;;) {
		if (rdma_get_cm_event(l->chan, &ev)) {
			if (errno != EAGAIN || (l->fs_flags & O_NONBLOCK)) {
				pthread_mutex_unlock(&l->lock);
				return -1;
			}
			rsk_wait(l, -1);
			continue;
		}
		if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
			rdma_ack_cm_event(ev);
			continue;
		}
		fd = accept_request(l, ev);
		if (fd >= 0)
			break;
	}
	pthread_mutex_unlock(&l->lock);
	if (addr && len)
		rgetpeername(fd, addr, len);
	return fd;
}

UR_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t len)
{
	struct rsk *rs = rsk_get(socket);
	int ret;

	if (!rs)
		return rsk_err(EBADF);
	if (rs->dg)
		return addr ? rsd_connect(rs, addr, len) : rsk_err(EINVAL);
	if (!addr || len < sizeof(struct sockaddr_in))
		return rsk_err(EINVAL);
	pthread_mutex_lock(&rs->lock);
	switch (rs->state) {
	case RSK_INIT:
	case RSK_BOUND:
		rs->state = RSK_RESOLVING_ADDR;
		rs->err = 0;
		if (rdma_resolve_addr(rs->id, NULL, (struct sockaddr *)addr,
				      UR_CM_RESOLVE_MS)) {
			rsk_conn_failed(rs, errno);
			ret = rsk_err(rs->err);
			break;
		}
		ret = rsk_connect_wait(rs, rs->fs_flags & O_NONBLOCK);
		break;
	case RSK_RESOLVING_ADDR:
	case RSK_RESOLVING_ROUTE:
	case RSK_CONNECTING:
		ret = rsk_connect_wait(rs, rs->fs_flags & O_NONBLOCK);
		if (ret && errno == EINPROGRESS)
			errno = EALREADY;
		break;
	case RSK_LISTENING:
		ret = rsk_err(EINVAL);
		break;
	case RSK_CONNECT_ERROR:
		ret = rsk_err(ECONNREFUSED);
		break;
	default:
		ret = rsk_err(EISCONN);
		break;
	}
	pthread_mutex_unlock(&rs->lock);
	return ret;
}
