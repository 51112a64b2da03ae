/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Event channels. The fd counts the queued events (util/evcount.h): it
 * polls readable exactly while an event waits, rdma_get_cm_event sleeps
 * until one arrives, and an application that sets O_NONBLOCK on it (as
 * rdma-core documents) gets EAGAIN instead. cma.lock guards the queues
 * and their counts.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/rdmacm/rdmacm_priv.h"
#include "util/evcount.h"

struct cma_chan *cma_chan_new(bool internal)
{
	struct cma_chan *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->ch.fd = ur_evcount_open();
	if (c->ch.fd < 0) {
		free(c);
		return NULL;
	}
	ur_list_init(&c->events);
	c->internal = internal;
	return c;
}

void cma_chan_free(struct cma_chan *c)
{
	close(c->ch.fd);
	free(c);
}

struct cma_event *cma_event_post(struct cma_id *id,
				 enum rdma_cm_event_type type, int status,
				 const void *pdata, unsigned int len,
				 const struct rdma_conn_param *conn,
				 struct cma_id *listen)
{
	struct cma_event *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;	/* the id's timers or the peer will retry */
	e->owner = id;
	e->ev.id = &id->id;
	e->ev.listen_id = listen ? &listen->id : NULL;
	e->ev.event = type;
	e->ev.status = status;
	if (conn)
		e->ev.param.conn = *conn;
	if (len > sizeof(e->pdata))
		len = sizeof(e->pdata);
	if (pdata && len) {
		memcpy(e->pdata, pdata, len);
		e->ev.param.conn.private_data = e->pdata;
		e->ev.param.conn.private_data_len = (uint8_t)len;
	} else {
		e->ev.param.conn.private_data = NULL;
		e->ev.param.conn.private_data_len = 0;
	}
	id->events_out++;
	ur_list_add_tail(&id->chan->events, &e->node);
	ur_evcount_add(id->chan->ch.fd);
	return e;
}

void cma_event_post_ud(struct cma_id *id, enum rdma_cm_event_type type,
		       int status, const void *pdata, unsigned int len,
		       const struct rdma_ud_param *ud, struct cma_id *listen)
{
	struct cma_event *e;

	e = cma_event_post(id, type, status, pdata, len, NULL, listen);
	if (!e || !ud)
		return;
	e->ev.param.ud.ah_attr = ud->ah_attr;
	e->ev.param.ud.qp_num = ud->qp_num;
	e->ev.param.ud.qkey = ud->qkey;
}

void cma_chan_drop_events(struct cma_id *id)
{
	struct ur_list *pos, *tmp;

	ur_list_for_each_safe(pos, tmp, &id->chan->events) {
		struct cma_event *e = ur_list_entry(pos, struct cma_event, node);

		if (e->owner != id)
			continue;
		ur_list_del(&e->node);
		ur_evcount_take(id->chan->ch.fd);
		id->events_out--;
		free(e);
	}
}

void cma_event_move(struct cma_id *id, struct cma_chan *to)
{
	struct ur_list *pos, *tmp;

	ur_list_for_each_safe(pos, tmp, &id->chan->events) {
		struct cma_event *e = ur_list_entry(pos, struct cma_event, node);

		if (e->owner != id)
			continue;
		ur_list_del(&e->node);
		ur_evcount_take(id->chan->ch.fd);
		ur_list_add_tail(&to->events, &e->node);
		ur_evcount_add(to->ch.fd);
	}
	id->chan = to;
}

UR_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cma_chan *c;
	int ret;

	pthread_mutex_lock(&cma.lock);
	ret = cma_init();
	pthread_mutex_unlock(&cma.lock);
	if (ret) {
		errno = ret;
		return NULL;
	}
	c = cma_chan_new(false);
	if (!c) {
		errno = errno ? errno : ENOMEM;
		return NULL;
	}
	return &c->ch;
}

/*
 * Programs such as rping destroy the channel while their event thread may
 * be about to call rdma_get_cm_event on it again, or sleeps in it. So a
 * destroyed channel's memory is never freed: such a late call blocks, as
 * it would have had it come a moment earlier (or gets EAGAIN on a
 * non-blocking fd), and never reads freed memory or another channel's
 * events. The last RETIRED_CHANNELS destroyed keep their own fd, silent,
 * for a late poll() on it; an older one has its fd closed and its number
 * pointed at one shared fd that never signals (one blocking, one not, as
 * the channel's was), so that a process that makes channels without end
 * keeps a few dozen bytes per channel but no fd. A channel whose fd a
 * thread is waiting on keeps it until that thread is gone, since the
 * thread read the number before it slept.
 */
#define RETIRED_CHANNELS 16

static struct cma_chan *retired[RETIRED_CHANNELS];	/* cma.lock */
static unsigned int retired_next;
static struct ur_list buried = { &buried, &buried };	/* fd shared */
static struct ur_list sleeping = { &sleeping, &sleeping }; /* fd kept */
static int silent_fd[2] = { -1, -1 };	/* blocking, O_NONBLOCK */

/* The shared silent fd of a channel whose fd had these flags; -1 if
 * none can be opened (the channel then keeps its own). cma.lock. */
static int silent_fd_for(int fl)
{
	int nb = fl >= 0 && (fl & O_NONBLOCK);

	if (silent_fd[nb] < 0) {
		int fd = ur_evcount_open();

		if (fd >= 0 && nb && fcntl(fd, F_SETFL, O_NONBLOCK)) {
			close(fd);
			fd = -1;
		}
		silent_fd[nb] = fd;
	}
	return silent_fd[nb];
}

/* A destroyed channel out of the retired ring. cma.lock. */
static void chan_bury(struct cma_chan *c)
{
	int fd;

	if (c->waiters) {
		ur_list_add_tail(&sleeping, &c->retired);
		return;
	}
	fd = silent_fd_for(fcntl(c->ch.fd, F_GETFL));
	if (fd < 0) {
		ur_list_add_tail(&sleeping, &c->retired);
		return;
	}
	close(c->ch.fd);
	c->ch.fd = fd;
	ur_list_add_tail(&buried, &c->retired);
}

UR_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct ur_list *pos, *tmp;
	struct cma_chan *old;

	if (!channel)
		return;
	pthread_mutex_lock(&cma.lock);
	/* those a sleeper kept from being buried: is it gone now? */
	ur_list_for_each_safe(pos, tmp, &sleeping) {
		struct cma_chan *c = ur_list_entry(pos, struct cma_chan,
						   retired);

		if (!c->waiters) {
			ur_list_del(&c->retired);
			chan_bury(c);
		}
	}
	old = retired[retired_next];
	retired[retired_next] = to_cma_chan(channel);
	retired_next = (retired_next + 1) % RETIRED_CHANNELS;
	if (old)
		chan_bury(old);
	pthread_mutex_unlock(&cma.lock);
}

UR_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel,
				struct rdma_cm_event **event)
{
	struct cma_chan *c;
	struct cma_event *e;
	int ret, fd;

	if (!channel || !event)
		return cma_err(EINVAL);
	c = to_cma_chan(channel);
	pthread_mutex_lock(&cma.lock);
	while (ur_list_empty(&c->events)) {
		fd = c->ch.fd;
		c->waiters++;
		pthread_mutex_unlock(&cma.lock);
		ret = ur_evcount_wait(fd);
		pthread_mutex_lock(&cma.lock);
		c->waiters--;
		if (ret && ret != -EINTR) {
			pthread_mutex_unlock(&cma.lock);
			return cma_err(-ret);	/* EAGAIN on a non-blocking fd */
		}
	}
	e = ur_list_first(&c->events, struct cma_event, node);
	ur_list_del(&e->node);
	ur_evcount_take(c->ch.fd);
	pthread_mutex_unlock(&cma.lock);
	*event = &e->ev;
	return 0;
}

UR_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cma_event *e;

	if (!event)
		return cma_err(EINVAL);
	e = container_of(event, struct cma_event, ev);
	pthread_mutex_lock(&cma.lock);
	e->owner->events_out--;
	/* a CONNECT_REQUEST also pins its listener until acked */
	if (e->owner->destroying || e->owner->events_out == 0)
		pthread_cond_broadcast(&cma.cond);
	pthread_mutex_unlock(&cma.lock);
	free(e);
	return 0;
}

int cma_sync_wait_event(struct cma_id *id, enum rdma_cm_event_type want,
			struct rdma_cm_event **out)
{
	struct rdma_cm_event *ev;
	int status;

	if (id->id.event) {
		rdma_ack_cm_event(id->id.event);
		id->id.event = NULL;
	}
	if (rdma_get_cm_event(&id->chan->ch, &ev))
		return -1;
	id->id.event = ev;
	if (out)
		*out = ev;
	status = ev->status;
	if (ev->event == want && !status)
		return 0;
	switch (ev->event) {
	case RDMA_CM_EVENT_REJECTED:
		return cma_err(ECONNREFUSED);
	case RDMA_CM_EVENT_UNREACHABLE:
		return cma_err(status ? -status : ETIMEDOUT);
	default:
		return cma_err(status < 0 ? -status : (status ? status : EIO));
	}
}

int cma_sync_wait(struct cma_id *id, enum rdma_cm_event_type want)
{
	return cma_sync_wait_event(id, want, NULL);
}
