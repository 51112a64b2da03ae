/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rsockets' data calls: rsend/rrecv with their vector and msghdr forms
 * (a SOCK_DGRAM socket's go to rsocket_dgram.c).
 * A send is cut in writes of 2 KiB doubling to 64 KiB, each no larger than
 * the free send buffer and the peer's offered half; a receive copies out of
 * our buffer in order and grants credits as it frees it (rsocket_wire.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <byteswap.h>
#include <endian.h>
#include <rdma/rsocket.h>

#include "api/rdmacm/rsocket/rsocket_priv.h"
#include "util/compiler.h"

static bool rdata_or_closed(struct rsk *rs)
{
	return rsk_have_rdata(rs) || !rs->readable;
}

/* Readies a socket for data: finishes a connect in progress. */
static int ready(struct rsk *rs)
{
	int ret;

	if (rs->state < RSK_CONNECTED &&
	    rs->state >= RSK_RESOLVING_ADDR) {
		ret = rsk_connect_wait(rs, rs->fs_flags & O_NONBLOCK);
		if (ret && errno == EINPROGRESS)
			errno = EAGAIN;
		return ret;
	}
	if (rs->state == RSK_INIT || rs->state == RSK_BOUND ||
	    rs->state == RSK_LISTENING || rs->state == RSK_CONNECT_ERROR)
		return rsk_err(ENOTCONN);
	return 0;
}

static ssize_t sendv_locked(struct rsk *rs, const struct iovec *iov,
			    int iovcnt, int flags)
{
	const struct iovec *cur = iov;
	size_t len = 0, left, off = 0, xfer;
	uint32_t olen = RSK_FIRST_XFER, dst_len;
	struct ibv_sge sg[2];
	uint64_t addr;
	uint32_t rkey;
	int i, n, ret = 0;
	struct rsk_sge *t;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	for (left = len; left; left -= xfer) {
		ret = rsk_wait_send(rs, flags);
		if (ret)
			break;
		t = &rs->tsge[rs->target_sge];
		dst_len = t->length;
		xfer = rsk_next_xfer(&olen, left);
		xfer = UR_MIN(xfer, (size_t)rs->sbuf_avail);
		xfer = UR_MIN(xfer, (size_t)dst_len);
		n = rsk_stage(rs, &cur, &off, xfer, sg);

		/* move our view of the target before the peer may reuse it */
		addr = t->addr;
		rkey = t->key;
		t->addr = addr + xfer;
		t->length = dst_len - (uint32_t)xfer;
		if (!t->length && ++rs->target_sge == RSK_SGL_SIZE)
			rs->target_sge = 0;
		rs->sseq_no++;
		ret = rsk_post_write(rs, sg, n, RSK_MSG(RSK_OP_DATA, xfer),
				     xfer <= rs->sq_inline ? IBV_SEND_INLINE : 0,
				     addr, rkey, true);
		if (ret) {
			rs->state = RSK_ERROR;
			rs->err = ret;
			ret = rsk_err(ret);
			break;
		}
	}
	return (ret && left == len) ? ret : (ssize_t)(len - left);
}

static ssize_t recvv_locked(struct rsk *rs, const struct iovec *iov,
			    int iovcnt, int flags)
{
	const struct iovec *cur = iov;
	size_t len = 0, left, off = 0, n, want;
	uint32_t head, roff, used;
	int i, ret = 0;
	bool peek = flags & MSG_PEEK;

	for (i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	left = len;
	do {
		if (!rsk_have_rdata(rs)) {
			ret = rsk_process(rs, rsk_nonblocking(rs, flags), rdata_or_closed);
			if (ret)
				break;
		}
		head = (uint32_t)rs->rmsg_head;
		roff = rs->rbuf_off;
		used = 0;	/* of the head message, when only peeking */
		while (left && head != (uint32_t)rs->rmsg_tail &&
		       cur - iov < iovcnt) {
			if (roff >= rs->rbuf_size)
				roff = 0;
			want = UR_MIN(left, (size_t)(rs->rmsg[head] - used));
			want = UR_MIN(want, (size_t)(rs->rbuf_size - roff));
			n = UR_MIN(want, cur->iov_len - off);
			memcpy((uint8_t *)cur->iov_base + off, rs->rbuf + roff, n);
			off += n;
			if (off == cur->iov_len) {
				cur++;
				off = 0;
			}
			roff += (uint32_t)n;
			left -= n;
			if (peek) {
				used += (uint32_t)n;
			} else {
				rs->rbuf_avail += (uint32_t)n;
				rs->rmsg[head] -= (uint32_t)n;
			}
			if (rs->rmsg[head] == used) {
				if (!peek)
					rs->rseq_no++;
				used = 0;
				if (++head == (uint32_t)rs->rq_size + 1)
					head = 0;
			}
		}
		if (!peek) {
			rs->rmsg_head = (int)head;
			rs->rbuf_off = roff;
		}
	} while (!peek && left && (flags & MSG_WAITALL) && rs->readable);
	if (!peek)
		rsk_update_credits(rs);
	return (ret && left == len) ? ret : (ssize_t)(len - left);
}

/*
 * to: rsendto's address. A stream ignores it, as Linux's TCP does (POSIX
 * allows either): rdma-core's EISCONN stopped programs that name their
 * peer on every send.
 */
static ssize_t do_sendv(int fd, const struct iovec *iov, int iovcnt,
			int flags, const struct sockaddr *to, socklen_t tolen)
{
	struct rsk *rs = rsk_get(fd);
	ssize_t ret;

	if (!rs)
		return rsk_err(EBADF);
	if (iovcnt < 0 || (iovcnt && !iov))
		return rsk_err(EINVAL);
	if (rs->dg)
		return rsd_sendv(rs, iov, iovcnt, flags, to, tolen);
	pthread_mutex_lock(&rs->lock);
	ret = ready(rs);
	if (!ret) {
		if (!rs->writable)
			ret = rsk_err(EPIPE);
		else
			ret = rsk_send_iomaps(rs, flags);
		if (!ret)
			ret = sendv_locked(rs, iov, iovcnt, flags);
	}
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

/* from: where the data came from (a stream: its peer); *mflags: MSG_TRUNC */
static ssize_t do_recvv(int fd, const struct iovec *iov, int iovcnt,
			int flags, struct sockaddr *from, socklen_t *fromlen,
			int *mflags)
{
	struct rsk *rs = rsk_get(fd);
	ssize_t ret;

	if (!rs)
		return rsk_err(EBADF);
	if (iovcnt < 0 || (iovcnt && !iov))
		return rsk_err(EINVAL);
	if (rs->dg)
		return rsd_recvv(rs, iov, iovcnt, flags, from, fromlen, mflags);
	pthread_mutex_lock(&rs->lock);
	ret = ready(rs);
	if (!ret)
		ret = recvv_locked(rs, iov, iovcnt, flags);
	pthread_mutex_unlock(&rs->lock);
	if (ret >= 0 && from && fromlen)
		rgetpeername(fd, from, fromlen);
	return ret;
}

UR_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	struct iovec v = { .iov_base = (void *)buf, .iov_len = len };

	return do_sendv(socket, &v, 1, flags, NULL, 0);
}

UR_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			  const struct sockaddr *dest_addr, socklen_t addrlen)
{
	struct iovec v = { .iov_base = (void *)buf, .iov_len = len };

	return do_sendv(socket, &v, 1, flags, dest_addr, addrlen);
}

UR_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	if (!msg)
		return rsk_err(EINVAL);
	if (msg->msg_control && msg->msg_controllen)
		return rsk_err(ENOTSUP);
	return do_sendv(socket, msg->msg_iov, (int)msg->msg_iovlen, flags,
			msg->msg_name, msg->msg_namelen);
}

UR_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	return rsend(socket, buf, count, 0);
}

UR_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	return do_sendv(socket, iov, iovcnt, 0, NULL, 0);
}

UR_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	struct iovec v = { .iov_base = buf, .iov_len = len };

	return do_recvv(socket, &v, 1, flags, NULL, NULL, NULL);
}

UR_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			    struct sockaddr *src_addr, socklen_t *addrlen)
{
	struct iovec v = { .iov_base = buf, .iov_len = len };

	return do_recvv(socket, &v, 1, flags, src_addr, addrlen, NULL);
}

UR_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	socklen_t *namelen;

	if (!msg)
		return rsk_err(EINVAL);
	msg->msg_controllen = 0;
	msg->msg_flags = 0;
	namelen = msg->msg_name ? &msg->msg_namelen : NULL;
	return do_recvv(socket, msg->msg_iov, (int)msg->msg_iovlen, flags,
			msg->msg_name, namelen, &msg->msg_flags);
}

UR_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	return rrecv(socket, buf, count, 0);
}

UR_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	return do_recvv(socket, iov, iovcnt, 0, NULL, NULL, NULL);
}
