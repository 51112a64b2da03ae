/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rsockets' bottom file: a new socket's number (its event channel's fd,
 * or a datagram socket's UDP socket), the table from that number to its
 * struct rsk, a new socket's defaults, and errno.
 * Calls nothing of the other rsocket files (rsocket_priv.h has their order).
 *
 * A socket is found by its number without a reference count: like a
 * kernel fd, an rsocket closed by one thread while another uses it is the
 * application's error.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api/rdmacm/rsocket/rsocket_priv.h"
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

/* The highest fd this process has open, or -1 if /proc cannot say. */
static int highest_open_fd(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int top = -1, fd;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		fd = atoi(e->d_name);	/* "." and ".." give 0 */
		if (fd != dirfd(d) && fd > top)
			top = fd;
	}
	closedir(d);
	return top;
}

/*
 * librspreload hands the application a placeholder fd, opened just before
 * it calls rsocket() or raccept(), and maps rpoll's answer back to the
 * application's fds by scanning fd numbers upward for the first one
 * whose rsocket number matches (an fd it does not track stands for
 * itself). That finds the placeholder only if the rsocket's number is
 * above it. The kernel hands out the lowest free fd, so it is, unless
 * another thread closed a lower fd in between, and our own threads open
 * and close files all the time (the device tree). iperf3 -u then waited
 * in select for ever on a datagram reported under a different fd. The
 * number is therefore moved above every fd open now; if that fails it
 * stays as it is.
 */
int rsk_number_above_open(int fd)
{
	int top = highest_open_fd(), flags, n;

	flags = top > fd ? fcntl(fd, F_GETFD) : -1;
	if (flags < 0)
		return fd;
	n = fcntl(fd, F_DUPFD, top + 1);
	if (n < 0)
		return fd;
	if (fcntl(n, F_SETFD, flags)) {
		close(n);
		return fd;
	}
	close(fd);
	return n;
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
	chan->fd = rsk_number_above_open(chan->fd);
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
