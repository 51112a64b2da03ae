/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rsockets' zero-copy extension: riomap exposes a buffer of ours at an
 * offset; the entry (struct rsk_iomap) goes into the peer's target iomap by
 * an RDMA WRITE WITH IMMEDIATE (RSK_OP_IOMAP_SGL, the entry's index) before
 * our next send; riowrite then writes into the peer's mapped buffer with
 * plain RDMA WRITEs, which the peer does not see: the application says by
 * its own means (riostream: a marker byte) that the data is there.
 *
 * Each side sizes the target iomap it offers (RDMA_IOMAPSIZE) and says so in
 * the connect data as an 8-bit scale: up to 128 exactly, above it in steps
 * of 256.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <byteswap.h>
#include <sys/mman.h>
#include <rdma/rsocket.h>

#include "api/rdmacm/rsocket/rsocket_priv.h"
#include "util/compiler.h"

int rsk_send_iomaps(struct rsk *rs, int flags)
{
	const struct iovec *cur;
	struct rsk_iomap e;
	struct iovec v = { .iov_base = &e, .iov_len = sizeof(e) };
	struct ibv_sge sg[2];
	struct rsk_map *m;
	size_t off;
	uint32_t i;
	int n, ret;

	if (!rs->maps_pending)
		return 0;
	for (i = 0; i < rs->remote_iomap.length; i++) {
		m = &rs->maps[i];
		if (!m->mr || m->sent)
			continue;
		if (rsk_wait_send(rs, flags))
			return -1;
		/* in the peer's byte order: it reads the entry as it is */
		e.offset = m->offset;
		e.sge.addr = (uintptr_t)m->mr->addr;
		e.sge.key = m->mr->rkey;
		e.sge.length = (uint32_t)m->mr->length;
		if (rs->swap) {
			e.offset = bswap_64(e.offset);
			e.sge.addr = bswap_64(e.sge.addr);
			e.sge.key = bswap_32(e.sge.key);
			e.sge.length = bswap_32(e.sge.length);
		}
		cur = &v;
		off = 0;
		n = rsk_stage(rs, &cur, &off, sizeof(e), sg);
		rs->sseq_no++;
		ret = rsk_post_write(rs, sg, n, RSK_MSG(RSK_OP_IOMAP_SGL, i),
				     0, rs->remote_iomap.addr +
				     (uint64_t)i * sizeof(struct rsk_iomap),
				     rs->remote_iomap.key, true);
		if (ret) {
			rs->state = RSK_ERROR;
			rs->err = ret;
			return rsk_err(ret);
		}
		m->sent = true;
	}
	rs->maps_pending = false;
	return 0;
}

UR_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags,
		       off_t offset)
{
	struct rsk *rs = rsk_get(socket);
	struct rsk_map *m = NULL;
	uint32_t i;

	if (!rs)
		return rsk_err(EBADF);
	if (prot != PROT_WRITE || !buf || !len || len > UINT32_MAX)
		return rsk_err(EINVAL);	/* only buffers the peer writes */
	pthread_mutex_lock(&rs->lock);
	if (!rs->id || !rs->id->qp || !rs->rbuf) {
		pthread_mutex_unlock(&rs->lock);
		return rsk_err(EINVAL);	/* not connected yet */
	}
	if (!rs->maps && rs->remote_iomap.length)
		rs->maps = calloc(rs->remote_iomap.length, sizeof(*rs->maps));
	for (i = 0; rs->maps && i < rs->remote_iomap.length; i++) {
		if (!rs->maps[i].mr) {
			m = &rs->maps[i];
			break;
		}
	}
	if (!m) {
		pthread_mutex_unlock(&rs->lock);
		return rsk_err(ENOMEM);	/* rdma-core's errno: no entry */
	}
	m->mr = ibv_reg_mr(rs->id->pd, buf, len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!m->mr) {
		pthread_mutex_unlock(&rs->lock);
		return -1;
	}
	if (offset == -1)
		offset = (off_t)(uintptr_t)buf;
	m->offset = (uint64_t)offset;
	m->sent = false;
	rs->maps_pending = true;
	pthread_mutex_unlock(&rs->lock);
	return offset;
}

UR_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	struct rsk *rs = rsk_get(socket);
	uint32_t i;
	int ret = -1;

	if (!rs)
		return rsk_err(EBADF);
	pthread_mutex_lock(&rs->lock);
	errno = EINVAL;
	for (i = 0; rs->maps && i < rs->remote_iomap.length; i++) {
		struct rsk_map *m = &rs->maps[i];

		if (m->mr && m->mr->addr == buf && m->mr->length == len) {
			ibv_dereg_mr(m->mr);
			m->mr = NULL;
			ret = 0;
			break;
		}
	}
	pthread_mutex_unlock(&rs->lock);
	return ret;
}

/* The peer's entry holding offset, as its message brought it. */
static bool find_iomap(struct rsk *rs, uint64_t offset, struct rsk_iomap *out)
{
	uint16_t i;

	for (i = 0; i < rs->target_iomap_size; i++) {
		*out = rs->tiomap[i];
		if (out->sge.length && offset >= out->offset &&
		    offset - out->offset < out->sge.length)
			return true;
	}
	return false;
}

static ssize_t iowrite_locked(struct rsk *rs, const void *buf, size_t count,
			      uint64_t offset, int flags)
{
	struct iovec v = { .iov_base = (void *)buf, .iov_len = count };
	const struct iovec *cur = &v;
	uint32_t olen = RSK_FIRST_XFER;
	size_t left, off = 0, xfer;
	struct ibv_sge sg[2];
	struct rsk_iomap e;
	int n, ret = 0;

	ret = rsk_send_iomaps(rs, flags);
	for (left = count; !ret && left; left -= xfer, offset += xfer) {
		if (!find_iomap(rs, offset, &e)) {
			/* not mapped (yet): the peer's riomap may be on its
			 * way, so the caller may try again */
			if (left == count)
				ret = rsk_err(EAGAIN);
			break;
		}
		ret = rsk_wait_send(rs, flags);
		if (ret)
			break;
		xfer = rsk_next_xfer(&olen, left);
		xfer = UR_MIN(xfer, (size_t)rs->sbuf_avail);
		xfer = UR_MIN(xfer, (size_t)(e.offset + e.sge.length - offset));
		n = rsk_stage(rs, &cur, &off, xfer, sg);
		ret = rsk_post_write(rs, sg, n, RSK_MSG(RSK_OP_WRITE, xfer),
				     xfer <= rs->sq_inline ? IBV_SEND_INLINE : 0,
				     e.sge.addr + (offset - e.offset),
				     e.sge.key, false);
		if (ret) {
			rs->state = RSK_ERROR;
			rs->err = ret;
			ret = rsk_err(ret);
		}
	}
	return (ret && left == count) ? ret : (ssize_t)(count - left);
}

UR_EXPORT size_t riowrite(int socket, const void *buf, size_t count,
			  off_t offset, int flags)
{
	struct rsk *rs = rsk_get(socket);
	ssize_t ret;

	if (!rs)
		return (size_t)rsk_err(EBADF);
	if (!buf && count)
		return (size_t)rsk_err(EINVAL);
	pthread_mutex_lock(&rs->lock);
	if (rs->state != RSK_CONNECTED || !rs->writable)
		ret = rsk_err(rs->state == RSK_CONNECTED ? EPIPE : ENOTCONN);
	else
		ret = iowrite_locked(rs, buf, count, (uint64_t)offset, flags);
	pthread_mutex_unlock(&rs->lock);
	return (size_t)ret;
}
