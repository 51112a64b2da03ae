/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rpoll and rselect over rsockets and ordinary fds together. An rsocket is
 * ready by its protocol state (data queued, credits and buffer to send,
 * a connect finished or failed), which only our library can tell; to
 * sleep, rpoll arms each rsocket's CQ and waits in poll() on its CQ
 * channel fd and its CM event channel fd, next to the ordinary fds.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>
#include <sys/select.h>
#include <rdma/rsocket.h>

#include "api/rdmacm/rsocket/rsocket_priv.h"
#include "util/compiler.h"

#define RSK_POLL_WAKE_MS 500	/* re-check at least this often */

static short rsk_revents(struct rsk *rs, short events)
{
	short rev = 0;
	struct pollfd p;

	pthread_mutex_lock(&rs->lock);
	if (rs->dg) {
		rev = rsd_revents(rs, events);
		goto out;
	}
	if (rs->state == RSK_LISTENING) {
		p = (struct pollfd){ .fd = rs->chan->fd, .events = POLLIN };
		if (poll(&p, 1, 0) > 0)
			rev = events & POLLIN;
		goto out;
	}
	if (rs->state >= RSK_RESOLVING_ADDR && rs->state < RSK_CONNECTED)
		rsk_connect_wait(rs, true);
	switch (rs->state) {
	case RSK_CONNECT_ERROR:
		rev = (short)((events & (POLLIN | POLLOUT)) | POLLERR);
		break;
	case RSK_CONNECTED:
	case RSK_DISCONNECTED:
	case RSK_ERROR:
		rsk_cm_progress(rs);
		rsk_poll_cq(rs);
		if ((events & POLLIN) && (rsk_have_rdata(rs) || !rs->readable))
			rev |= POLLIN;
		if ((events & POLLOUT) && rsk_can_send(rs))
			rev |= POLLOUT;
		/* as TCP: the hang-up shows once what came before is read
		 * (a reader polling for its last bytes is not told to stop) */
		if (rs->state == RSK_DISCONNECTED && !rsk_have_rdata(rs))
			rev |= POLLHUP;
		else if (rs->state == RSK_ERROR)
			rev |= POLLERR;
		break;
	default:
		break;
	}
out:
	pthread_mutex_unlock(&rs->lock);
	return rev;
}

static int check(struct pollfd *fds, nfds_t nfds)
{
	struct rsk *rs;
	nfds_t i;
	int cnt = 0;

	for (i = 0; i < nfds; i++) {
		fds[i].revents = 0;
		if (fds[i].fd < 0)
			continue;
		rs = rsk_get(fds[i].fd);
		if (rs)
			fds[i].revents = rsk_revents(rs, fds[i].events);
		else if (poll(&fds[i], 1, 0) < 0)
			return -1;
		if (fds[i].revents)
			cnt++;
	}
	return cnt;
}

/* Arms every rsocket's CQ; true if one was not armed (look again first). */
static bool arm_all(struct pollfd *fds, nfds_t nfds)
{
	struct rsk *rs;
	bool armed = false;
	nfds_t i;

	for (i = 0; i < nfds; i++) {
		rs = fds[i].fd >= 0 ? rsk_get(fds[i].fd) : NULL;
		if (!rs)
			continue;
		pthread_mutex_lock(&rs->lock);
		armed |= rsk_arm(rs);
		pthread_mutex_unlock(&rs->lock);
	}
	return armed;
}

/* What to sleep on: two fds per rsocket, the fd itself otherwise. */
static nfds_t fill(struct pollfd *w, const struct pollfd *fds, nfds_t nfds)
{
	struct rsk *rs;
	nfds_t i, n = 0;

	for (i = 0; i < nfds; i++) {
		rs = fds[i].fd >= 0 ? rsk_get(fds[i].fd) : NULL;
		if (!rs) {
			w[n++] = (struct pollfd){ .fd = fds[i].fd,
						  .events = fds[i].events };
			continue;
		}
		/* the CM channel, or a datagram socket's UDP socket */
		w[n++] = (struct pollfd){ .fd = rs->chan ? rs->chan->fd : rs->fd,
					  .events = POLLIN };
		pthread_mutex_lock(&rs->lock);
		w[n++] = (struct pollfd){ .fd = rs->cch ? rs->cch->fd : -1,
					  .events = POLLIN };
		pthread_mutex_unlock(&rs->lock);
	}
	return n;
}

static void take_cq_events(const struct pollfd *fds, nfds_t nfds)
{
	struct rsk *rs;
	nfds_t i;

	for (i = 0; i < nfds; i++) {
		rs = fds[i].fd >= 0 ? rsk_get(fds[i].fd) : NULL;
		if (!rs)
			continue;
		pthread_mutex_lock(&rs->lock);
		rsk_cq_event(rs);
		pthread_mutex_unlock(&rs->lock);
	}
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

UR_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	int64_t end = timeout > 0 ? now_ms() + timeout : 0;
	struct pollfd *w;
	int ret, ms;

	if (nfds && !fds)
		return rsk_err(EFAULT);
	w = calloc(nfds * 2 + 1, sizeof(*w));
	if (!w)
		return rsk_err(ENOMEM);
	for (;;) {
		ret = check(fds, nfds);
		if (ret || !timeout)
			break;
		if (arm_all(fds, nfds))
			continue;
		ms = RSK_POLL_WAKE_MS;
		if (timeout > 0) {
			if (now_ms() >= end)
				break;
			ms = (int)UR_MIN((int64_t)ms, end - now_ms());
		}
		ret = poll(w, fill(w, fds, nfds), ms);
		if (ret < 0)
			break;
		take_cq_events(fds, nfds);
	}
	free(w);
	return ret;
}

UR_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds,
		      fd_set *exceptfds, struct timeval *timeout)
{
	struct pollfd *p;
	int fd, n = 0, i, ret, cnt = 0, ms = -1;

	if (nfds < 0 || nfds > FD_SETSIZE)
		return rsk_err(EINVAL);
	p = calloc((size_t)nfds + 1, sizeof(*p));
	if (!p)
		return rsk_err(ENOMEM);
	for (fd = 0; fd < nfds; fd++) {
		short ev = 0;

		if (readfds && FD_ISSET(fd, readfds))
			ev |= POLLIN;
		if (writefds && FD_ISSET(fd, writefds))
			ev |= POLLOUT;
		if (exceptfds && FD_ISSET(fd, exceptfds))
			ev |= POLLPRI;
		if (ev)
			p[n++] = (struct pollfd){ .fd = fd, .events = ev };
	}
	if (timeout)
		ms = (int)(timeout->tv_sec * 1000 + timeout->tv_usec / 1000);
	ret = rpoll(p, (nfds_t)n, ms);
	if (ret < 0) {
		free(p);
		return ret;
	}
	if (readfds)
		FD_ZERO(readfds);
	if (writefds)
		FD_ZERO(writefds);
	if (exceptfds)
		FD_ZERO(exceptfds);
	for (i = 0; i < n; i++) {
		fd = p[i].fd;
		if ((p[i].events & POLLIN) &&
		    (p[i].revents & (POLLIN | POLLHUP | POLLERR))) {
			FD_SET(fd, readfds);
			cnt++;
		}
		if ((p[i].events & POLLOUT) &&
		    (p[i].revents & (POLLOUT | POLLERR))) {
			FD_SET(fd, writefds);
			cnt++;
		}
		if ((p[i].events & POLLPRI) && (p[i].revents & POLLPRI)) {
			FD_SET(fd, exceptfds);
			cnt++;
		}
	}
	free(p);
	return cnt;
}
