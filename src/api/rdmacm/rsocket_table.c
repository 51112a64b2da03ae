/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rsockets' bottom file: the table from a socket's number (its event
 * channel's fd) to its struct rsk, a new socket's defaults, and errno.
 * Calls nothing of the other rsocket files (rsocket_priv.h has their order).
 *
 * A socket is found by its number without a reference count: like a
 * kernel fd, an rsocket closed by one thread while another uses it is the
 * application's error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/rdmacm/rsocket_priv.h"
#include "util/compiler.h"

static pthread_mutex_t tbl_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rsk **tbl;		/* indexed by fd */
static int tbl_len;

int64_t rsk_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int rsk_err(int e)
{
	errno = e;
	return -1;
}

struct rsk *rsk_get(int fd)
{
	struct rsk *rs = NULL;

	pthread_mutex_lock(&tbl_lock);
	if (fd >= 0 && fd < tbl_len)
		rs = tbl[fd];
	pthread_mutex_unlock(&tbl_lock);
	return rs;
}

int rsk_publish(struct rsk *rs)
{
	struct rsk **n;
	int len;

	pthread_mutex_lock(&tbl_lock);
	if (rs->fd >= tbl_len) {
		len = UR_MAX(rs->fd + 1, tbl_len * 2);
		len = UR_MAX(len, 64);
		n = realloc(tbl, sizeof(*n) * (size_t)len);
		if (!n) {
			pthread_mutex_unlock(&tbl_lock);
			return rsk_err(ENOMEM);
		}
		memset(n + tbl_len, 0, sizeof(*n) * (size_t)(len - tbl_len));
		tbl = n;
		tbl_len = len;
	}
	tbl[rs->fd] = rs;
	pthread_mutex_unlock(&tbl_lock);
	return 0;
}

void rsk_unpublish(struct rsk *rs)
{
	pthread_mutex_lock(&tbl_lock);
	if (rs->fd < tbl_len && tbl[rs->fd] == rs)
		tbl[rs->fd] = NULL;
	pthread_mutex_unlock(&tbl_lock);
}

struct rsk *rsk_new_fd(int fd)
{
	struct rsk *rs = calloc(1, sizeof(*rs));

	if (!rs)
		return NULL;
	pthread_mutex_init(&rs->lock, NULL);
	rs->fd = fd;
	rs->sbuf_size = RSK_DEF_BUF;
	rs->rbuf_size = RSK_DEF_BUF;
	rs->sq_size = RSK_DEF_QP;
	rs->rq_size = RSK_DEF_QP;
	rs->sq_inline = RSK_DEF_INLINE;
	return rs;
}

struct rsk *rsk_new(const struct rsk *parent)
{
	struct rdma_event_channel *chan = rdma_create_event_channel();
	struct rsk *rs;

	if (!chan)
		return NULL;
	if (fcntl(chan->fd, F_SETFL, O_NONBLOCK)) {
		rdma_destroy_event_channel(chan);
		return NULL;
	}
	rs = rsk_new_fd(chan->fd);
	if (!rs) {
		rdma_destroy_event_channel(chan);
		return NULL;
	}
	rs->chan = chan;
	if (parent) {
		rs->domain = parent->domain;
		rs->sbuf_size = parent->sbuf_size;
		rs->rbuf_size = parent->rbuf_size;
		rs->sq_size = parent->sq_size;
		rs->rq_size = parent->rq_size;
		rs->sq_inline = parent->sq_inline;
		rs->target_iomap_size = parent->target_iomap_size;
		rs->fs_flags = parent->fs_flags;
		rs->fd_flags = parent->fd_flags;
		rs->so_opts = parent->so_opts;
		rs->tcp_opts = parent->tcp_opts;
		rs->keepalive_time = parent->keepalive_time;
	}
	return rs;
}
