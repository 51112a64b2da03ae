/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rsockets' progress: the CM events of a socket's own channel (address,
 * route, connect, accept, disconnect), and the loop that runs the CM and
 * the CQ until a condition holds or the socket may not wait; the names of
 * the ends. Calls rsocket_wire.c and rsocket_table.c.
 *
 * The active side resolves the address and route, creates its QP and
 * buffers, and puts its struct rsk_conn_data in the REQ; the passive side
 * (rsocket_conn.c's raccept) answers with its own in the REP.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <rdma/rsocket.h>

#include "api/rdmacm/rsocket/rsocket_priv.h"
#include "util/compiler.h"

void rsk_conn_failed(struct rsk *rs, int err)
{
	rs->state = RSK_CONNECT_ERROR;
	rs->err = err;
	rs->readable = rs->writable = false;
}

/* The errno rdma-core gives for a failed set-up event. */
static int event_errno(const struct rdma_cm_event *ev)
{
	if (ev->event == RDMA_CM_EVENT_REJECTED)
		return ECONNREFUSED;
	if (ev->status < 0)
		return -ev->status;
	if (ev->event == RDMA_CM_EVENT_UNREACHABLE)
		return ETIMEDOUT;
	return ev->status ? ev->status : ECONNRESET;
}

static int start_connect(struct rsk *rs)
{
	struct rdma_conn_param p;
	struct rsk_conn_data c;

	if (rsk_create_ep(rs))
		return -1;
	rsk_format_conn(rs, &c);
	memset(&p, 0, sizeof(p));
	p.private_data = &c;
	p.private_data_len = sizeof(c);
	p.flow_control = 1;
	p.retry_count = 7;
	p.rnr_retry_count = 7;
	return rdma_connect(rs->id, &p);
}

static void on_event(struct rsk *rs, const struct rdma_cm_event *ev)
{
	struct rsk_conn_data c;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rs->state != RSK_RESOLVING_ADDR)
			break;
		rs->state = RSK_RESOLVING_ROUTE;
		if (rdma_resolve_route(rs->id, UR_CM_RESOLVE_MS))
			rsk_conn_failed(rs, errno);
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		if (rs->state != RSK_RESOLVING_ROUTE)
			break;
		rs->state = RSK_CONNECTING;
		if (start_connect(rs))
			rsk_conn_failed(rs, errno);
		break;
	case RDMA_CM_EVENT_ESTABLISHED:
		if (rs->state == RSK_ACCEPTING) {
			rs->state = RSK_CONNECTED;
			rs->readable = rs->writable = true;
			break;
		}
		if (rs->state != RSK_CONNECTING)
			break;
		if (ev->param.conn.private_data_len < sizeof(c)) {
			rsk_conn_failed(rs, EPROTO);
			break;
		}
		memcpy(&c, ev->param.conn.private_data, sizeof(c));
		if (c.version != RSK_CONN_VERSION) {
			rsk_conn_failed(rs, ENOTSUP);
			break;
		}
		rsk_save_conn(rs, &c);
		rs->state = RSK_CONNECTED;
		rs->readable = rs->writable = true;
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
	case RDMA_CM_EVENT_REJECTED:
	case RDMA_CM_EVENT_CONNECT_ERROR:
		if (rs->state < RSK_CONNECTED)
			rsk_conn_failed(rs, event_errno(ev));
		break;
	case RDMA_CM_EVENT_DISCONNECTED:
	case RDMA_CM_EVENT_DEVICE_REMOVAL:
		if (rs->state < RSK_CONNECTED) {
			rsk_conn_failed(rs, ECONNRESET);
		} else if (rs->state == RSK_CONNECTED) {
			/* what arrived before stays readable */
			rs->state = RSK_DISCONNECTED;
			rs->readable = rs->writable = false;
		}
		break;
	default:
		break;
	}
}

int rsk_cm_progress(struct rsk *rs)
{
	struct rdma_cm_event *ev;

	if (rs->state == RSK_LISTENING)
		return 0;	/* its events are connection requests: raccept */
	while (!rdma_get_cm_event(rs->chan, &ev)) {
		on_event(rs, ev);
		rdma_ack_cm_event(ev);
	}
	return 0;
}

int rsk_connect_wait(struct rsk *rs, bool nonblock)
{
	for (;;) {
		rsk_cm_progress(rs);
		if (rs->state == RSK_CONNECT_ERROR)
			return rsk_err(rs->err);
		if (rs->state >= RSK_CONNECTED)
			return 0;
		if (rs->state < RSK_RESOLVING_ADDR)
			return rsk_err(ENOTCONN);
		if (nonblock)
			return rsk_err(EINPROGRESS);
		if (rsk_wait(rs, -1))
			return -1;
	}
}

int rsk_process(struct rsk *rs, bool nonblock, bool (*test)(struct rsk *))
{
	for (;;) {
		rsk_cm_progress(rs);
		if (rsk_poll_cq(rs))
			return -1;
		if (test(rs))
			return 0;
		if (nonblock)
			return rsk_err(EWOULDBLOCK);
		if (rsk_arm(rs))
			continue;	/* what came before the arm is polled */
		if (rsk_wait(rs, -1))
			return -1;
	}
}

static bool can_send_or_closed(struct rsk *rs)
{
	return rsk_can_send(rs) || !rs->writable;
}

int rsk_wait_send(struct rsk *rs, int flags)
{
	if (rsk_can_send(rs))
		return 0;
	if (rsk_process(rs, rsk_nonblocking(rs, flags), can_send_or_closed))
		return -1;
	if (!rs->writable || rs->state != RSK_CONNECTED)
		return rsk_err(rs->state == RSK_ERROR ? rs->err : ECONNRESET);
	return 0;
}

static int copy_addr(struct sockaddr *dst, socklen_t *len,
		     const struct sockaddr *src)
{
	socklen_t n;

	/* a NULL address with *len 0 asks the size (librspreload does) */
	if (!len || (*len && !dst))
		return rsk_err(EFAULT);
	n = src->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
	    sizeof(struct sockaddr_in);
	if (*len)
		memcpy(dst, src, UR_MIN(*len, n));
	*len = n;
	return 0;
}

UR_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *len)
{
	struct rsk *rs = rsk_get(socket);

	if (!rs)
		return rsk_err(EBADF);
	if (rs->dg)
		return rsd_name(rs, true, addr, len);
	if (rs->state < RSK_ACCEPTING || rs->state == RSK_CONNECT_ERROR)
		return rsk_err(ENOTCONN);
	return copy_addr(addr, len, rdma_get_peer_addr(rs->id));
}

UR_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *len)
{
	struct rsk *rs = rsk_get(socket);

	if (!rs)
		return rsk_err(EBADF);
	if (rs->dg)
		return rsd_name(rs, false, addr, len);
	return copy_addr(addr, len, rdma_get_local_addr(rs->id));
}
