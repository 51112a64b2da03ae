/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The NIC: link lifecycle, the progress thread, receive bursts, timers and
 * packet batches on the transmit side.
 *
 * One progress thread per device blocks in ppoll() on the link fd (or spins
 * with UROCE_BUSY_POLL=1), takes nic->rx_lock and drains the socket; so a
 * one-sided operation aimed at this process completes while the application
 * never calls the library. poll_cq on an empty CQ runs the same receive
 * path inline (trylock), so a polling application needs no thread wake-up.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "engine/engine_priv.h"
#include "obj/device.h"
#include "util/config.h"
#include "util/log.h"
#include "util/memguard.h"
#include "util/time.h"

/* ------------------------------------------------------------------ */
/* Transmit batches                                                    */
/* ------------------------------------------------------------------ */

void ur_txb_init(struct ur_txb *b, struct ur_nic *nic)
{
	b->nic = nic;
	b->n = 0;
	b->ack_slot = -1;
	b->ack_qp = NULL;
}

static size_t txd_bytes(const struct ur_txd *d)
{
	size_t len = 0;
	unsigned int i;

	for (i = 0; i < d->iovcnt; i++)
		len += d->iov[i].iov_len;
	return len;
}

/*
 * Where a train is cut into datagrams in software (a bridge or tap towards
 * another host), Linux gives segment i of a DF train with ID 0 the IPv4 ID
 * i, and the peer's ICRC check covers that ID (rxe drops the segment
 * otherwise). So segment i carries the ICRC for ID i, and its flow says so
 * (the pcap record shows the header the kernel will write).
 */
static void txb_train_set_ids(struct ur_txb *b, unsigned int first,
			      unsigned int end)
{
	for (unsigned int k = first + 1; k < end; k++) {
		struct ur_txd *d = &b->txd[k];
		const struct iovec *last = &d->iov[d->iovcnt - 1];
		uint8_t *icrc = (uint8_t *)last->iov_base + last->iov_len -
				UR_ICRC_BYTES;
		uint16_t id = (uint16_t)(k - first);

		if (b->pkt[k].flow.family != AF_INET)
			return;
		ur_icrc_store(icrc, ur_icrc_ipv4_id_adjust(ur_icrc_load(icrc),
							   txd_bytes(d), 0, id));
		b->pkt[k].flow.ip_id = id;
	}
}

/*
 * Packets of equal size to the same peer go out as one UDP_SEGMENT train
 * (the last may be shorter), each segment with the ICRC of the IPv4 ID it
 * will carry (txb_train_set_ids()).
 */
static void txb_send_gso(struct ur_txb *b)
{
	struct ur_nic *nic = b->nic;
	unsigned int i = 0, j, k, nt = 0, ng = 0, ntx = 0, sent = 0;
	int rc;

	while (i < b->n) {
		size_t seg = txd_bytes(&b->txd[i]), total = seg, len;
		struct ur_txd *t = &b->gtxd[nt++];

		j = i + 1;
		if (b->txd[i].iovcnt <= UR_GSO_MAX_IOV && seg <= UINT16_MAX) {
			for (; j < b->n; j++) {
				const struct ur_txd *d = &b->txd[j];

				len = txd_bytes(d);
				if (d->iovcnt > UR_GSO_MAX_IOV ||
				    d->tos != b->txd[i].tos ||
				    !ur_sockaddr_same_host(d->dst,
							   b->txd[i].dst) ||
				    len > seg || total + len > UR_GSO_MAX_BYTES)
					break;
				total += len;
				if (len < seg) {
					j++;
					break;	/* a shorter one ends it */
				}
			}
		}
		if (j - i == 1) {
			*t = b->txd[i];
			ntx++;
			i = j;
			continue;
		}
		txb_train_set_ids(b, i, j);
		t->dst = b->txd[i].dst;
		t->tos = b->txd[i].tos;
		t->iov = &b->giov[ng];
		t->iovcnt = 0;
		t->gso_size = (uint16_t)seg;
		for (k = i; k < j; k++) {
			memcpy(&b->giov[ng], b->txd[k].iov,
			       b->txd[k].iovcnt * sizeof(struct iovec));
			ng += b->txd[k].iovcnt;
			t->iovcnt += b->txd[k].iovcnt;
		}
		ntx += j - i;
		i = j;
	}
	rc = ur_link_send(nic->link, b->gtxd, nt);
	for (k = 0; rc > 0 && k < (unsigned int)rc; k++)
		sent += b->gtxd[k].gso_size ?
				(unsigned int)((txd_bytes(&b->gtxd[k]) +
						b->gtxd[k].gso_size - 1) /
					       b->gtxd[k].gso_size) :
				1;
	ur_cnt_stat(&nic->cnt, UR_STAT_TX_PKTS, sent);
	if (sent < ntx)
		ur_cnt_stat(&nic->cnt, UR_STAT_TX_ERRORS, ntx - sent);
}

void ur_txb_flush(struct ur_txb *b)
{
	struct ur_nic *nic = b->nic;
	unsigned int i;
	int rc;

	if (!b->n)
		return;
	if (nic->use_gso && b->n > 1) {
		txb_send_gso(b);
	} else {
		rc = ur_link_send(nic->link, b->txd, b->n);
		if (rc < 0)
			rc = 0;
		ur_cnt_stat(&nic->cnt, UR_STAT_TX_PKTS, (unsigned int)rc);
		if ((unsigned int)rc < b->n)
			ur_cnt_stat(&nic->cnt, UR_STAT_TX_ERRORS, b->n - rc);
	}
	/* after sending: trains have set their segments' IDs and ICRCs */
	if (nic->pcap)
		for (i = 0; i < b->n; i++)
			ur_pcap_write(nic->pcap, &b->pkt[i].flow, b->txd[i].iov,
				      (int)b->txd[i].iovcnt);
	b->n = 0;
	b->ack_slot = -1;
	b->ack_qp = NULL;
}

struct icrc_piece {
	struct ur_icrc *c;
	const struct iovec *iov;
};

static void icrc_piece_update(void *arg)
{
	const struct icrc_piece *p = arg;

	ur_icrc_update(p->c, p->iov->iov_base, p->iov->iov_len);
}

/* 0, -EINVAL (headers), or -EFAULT: the payload, which points into
 * registered memory, faulted while the ICRC read it (util/memguard.h). */
static int txb_fill(struct ur_txb *b, unsigned int slot,
		    const union ur_sockaddr *dst, const struct ur_ip_flow *flow,
		    struct ur_hdr_fields *f, const struct iovec *pay,
		    unsigned int npay, uint32_t paylen)
{
	struct ur_txpkt *p = &b->pkt[slot];
	struct ur_txd *d = &b->txd[slot];
	uint8_t pad = ur_pad_len(paylen);
	struct ur_icrc c;
	unsigned int i, n = 0;
	size_t udp_len;
	int hlen;

	f->pad = pad;
	f->pkey = UR_PKEY_DEFAULT;
	hlen = ur_hdr_build(p->hdr, sizeof(p->hdr), f);
	if (hlen < 0)
		return -EINVAL;
	udp_len = (size_t)hlen + paylen + pad + UR_ICRC_BYTES;
	p->flow = *flow;
	ur_icrc_begin(&c, flow, udp_len);
	ur_icrc_update(&c, p->hdr, (size_t)hlen);
	p->iov[n].iov_base = p->hdr;
	p->iov[n++].iov_len = (size_t)hlen;
	for (i = 0; i < npay && n < UR_TX_PAY_IOV + 1; i++) {
		struct icrc_piece piece = { .c = &c, .iov = &pay[i] };

		if (!pay[i].iov_len)
			continue;
		if (ur_memguard_call(pay[i].iov_base, pay[i].iov_len,
				     icrc_piece_update, &piece))
			return -EFAULT;
		p->iov[n++] = pay[i];
	}
	memset(p->trailer, 0, sizeof(p->trailer));
	if (pad)
		ur_icrc_update(&c, p->trailer, pad);
	ur_icrc_store(p->trailer + pad, ur_icrc_final(&c));
	p->iov[n].iov_base = p->trailer;
	p->iov[n++].iov_len = pad + UR_ICRC_BYTES;
	d->dst = dst;
	d->iov = p->iov;
	d->iovcnt = n;
	d->gso_size = 0;
	d->tos = flow->tos;
	return 0;
}

int ur_txb_add(struct ur_txb *b, const union ur_sockaddr *dst,
	       const struct ur_ip_flow *flow, struct ur_hdr_fields *f,
	       const struct iovec *pay, unsigned int npay, uint32_t paylen)
{
	int rc = txb_fill(b, b->n, dst, flow, f, pay, npay, paylen);

	if (rc)
		return rc;
	b->n++;
	b->ack_slot = -1;
	if (b->n == UR_TX_BATCH)
		ur_txb_flush(b);
	return 0;
}

void ur_txb_add_ack(struct ur_txb *b, const struct ur_qp *qp,
		    struct ur_hdr_fields *f)
{
	const struct ur_qp_xport *xp = qp->xp;

	/* ACKs are cumulative: a newer one replaces the queued one. */
	if (b->ack_slot >= 0 && b->ack_qp == qp &&
	    (unsigned int)b->ack_slot == b->n - 1) {
		txb_fill(b, (unsigned int)b->ack_slot, &qp->av.dest, &xp->flow,
			 f, NULL, 0, 0);
		return;
	}
	if (txb_fill(b, b->n, &qp->av.dest, &xp->flow, f, NULL, 0, 0))
		return;
	b->ack_slot = (int)b->n;
	b->ack_qp = qp;
	b->n++;
	if (b->n == UR_TX_BATCH)
		ur_txb_flush(b);
}

/* ------------------------------------------------------------------ */
/* Timers                                                              */
/* ------------------------------------------------------------------ */

void ur_nic_wake(struct ur_nic *nic)
{
	uint64_t one = 1;
	ssize_t r;

	r = write(nic->wake_fd, &one, sizeof(one));
	(void)r;
}

void ur_timer_arm(struct ur_nic *nic, _Atomic uint64_t *slot, uint64_t when)
{
	uint64_t cur;

	atomic_store_explicit(slot, when, memory_order_relaxed);
	cur = atomic_load_explicit(&nic->next_deadline, memory_order_relaxed);
	while (!cur || when < cur) {
		if (atomic_compare_exchange_weak(&nic->next_deadline, &cur,
						 when)) {
			if (!nic->busy_poll)
				ur_nic_wake(nic);
			break;
		}
	}
}

void ur_timer_disarm(_Atomic uint64_t *slot)
{
	atomic_store_explicit(slot, 0, memory_order_relaxed);
}

static void nic_timer_scan(struct ur_nic *nic)
{
	struct ur_device *dev = nic->dev;
	uint64_t now = ur_now_ns(), next = 0, d;
	struct ur_list *pos;

	pthread_rwlock_rdlock(&dev->obj_lock);
	pthread_mutex_lock(&nic->qp_list_lock);
	atomic_store(&nic->next_deadline, 0);
	ur_list_for_each(pos, &nic->qps) {
		struct ur_qp_xport *xp =
			ur_list_entry(pos, struct ur_qp_xport, node);
		struct ur_qp *qp = xp->qp;
		uint64_t rto = atomic_load(&xp->rto_deadline);
		uint64_t rnr = atomic_load(&xp->rnr_deadline);
		uint64_t kick = atomic_load(&xp->kick_deadline);

		if (qp->state == IBV_QPS_ERR && xp->resp.have_rwqe)
			ur_flush_rq(qp, true);
		if (kick && kick <= now) {
			ur_timer_disarm(&xp->kick_deadline);
			pthread_mutex_lock(&qp->sq_lock);
			ur_req_run(qp);
			pthread_mutex_unlock(&qp->sq_lock);
		}
		if ((rto && rto <= now) || (rnr && rnr <= now)) {
			pthread_mutex_lock(&qp->sq_lock);
			ur_comp_timer(qp, now);
			pthread_mutex_unlock(&qp->sq_lock);
			rto = atomic_load(&xp->rto_deadline);
			rnr = atomic_load(&xp->rnr_deadline);
		}
		kick = atomic_load(&xp->kick_deadline);
		d = rto && (!rnr || rto < rnr) ? rto : rnr;
		if (kick && (!d || kick < d))
			d = kick;
		if (d && (!next || d < next))
			next = d;
	}
	pthread_mutex_unlock(&nic->qp_list_lock);
	pthread_rwlock_unlock(&dev->obj_lock);
	/* Timers armed meanwhile lowered next_deadline themselves. */
	if (next) {
		uint64_t cur = atomic_load(&nic->next_deadline);

		while (!cur || next < cur)
			if (atomic_compare_exchange_weak(&nic->next_deadline,
							 &cur, next))
				break;
	}
}

static bool nic_timer_due(struct ur_nic *nic)
{
	uint64_t d = atomic_load_explicit(&nic->next_deadline,
					  memory_order_relaxed);

	return d && d <= ur_now_ns();
}

/* ------------------------------------------------------------------ */
/* Receive bursts                                                      */
/* ------------------------------------------------------------------ */

/* rx_lock held. Returns datagrams handled. */
static int nic_rx_burst(struct ur_nic *nic)
{
	int n, i, total = 0;

	do {
		n = ur_link_recv(nic->link, nic->rxd, UR_RX_BATCH);
		if (n <= 0)
			break;
		ur_cnt_stat(&nic->cnt, UR_STAT_RX_PKTS, (unsigned int)n);
		pthread_rwlock_rdlock(&nic->dev->obj_lock);
		for (i = 0; i < n; i++)
			ur_rx_datagram(nic, &nic->rxd[i]);
		ur_txb_flush(&nic->txb);
		pthread_rwlock_unlock(&nic->dev->obj_lock);
		total += n;
		/* A full batch may leave datagrams pending inside the link
		 * (GRO trains) that the fd no longer announces: go on. */
	} while (n == UR_RX_BATCH);
	return total;
}

/*
 * An application spinning on poll_cq runs the receive path itself; one
 * that polls once and then blocks for an event (ibv_get_cq_event) needs the
 * progress thread. Only a streak of close polls counts as spinning.
 */
static void app_poll_note(struct ur_nic *nic)
{
	uint64_t now = ur_now_ns();
	uint64_t prev = atomic_exchange_explicit(&nic->prev_poll, now,
						 memory_order_relaxed);
	unsigned int streak;

	if (now - prev > UR_APP_POLL_GAP_NS) {
		atomic_store_explicit(&nic->poll_streak, 0,
				      memory_order_relaxed);
		return;
	}
	streak = atomic_fetch_add_explicit(&nic->poll_streak, 1,
					   memory_order_relaxed);
	if (streak >= UR_APP_POLL_SPIN)
		atomic_store_explicit(&nic->last_app_poll, now,
				      memory_order_relaxed);
}

int ur_engine_poll(struct ur_device *dev)
{
	struct ur_nic *nic = dev->nic;
	int n;

	if (!nic)
		return 0;
	app_poll_note(nic);
	if (pthread_mutex_trylock(&nic->rx_lock))
		return 0;
	n = nic_rx_burst(nic);
	if (nic_timer_due(nic))
		nic_timer_scan(nic);
	pthread_mutex_unlock(&nic->rx_lock);
	return n;
}

static void nic_wait(struct ur_nic *nic)
{
	struct pollfd pfd[2] = {
		{ .fd = ur_link_fd(nic->link), .events = POLLIN },
		{ .fd = nic->wake_fd, .events = POLLIN },
	};
	uint64_t d = atomic_load(&nic->next_deadline), now = ur_now_ns(), v;
	uint64_t last = atomic_load_explicit(&nic->last_app_poll,
					     memory_order_relaxed);
	struct timespec ts, *tsp = NULL;
	struct pollfd *p = pfd;
	nfds_t np = 2;
	ssize_t r;

	/*
	 * While the application polls its CQs it runs the receive path
	 * itself; waking up for every datagram as well would only steal its
	 * core. Check back when it may have stopped.
	 */
	if (last && now - last < nic->quiet_ns) {
		uint64_t until = last + nic->quiet_ns;

		if (!d || until < d)
			d = until;
		p = &pfd[1];
		np = 1;
	}
	if (d) {
		d = d > now ? d - now : 0;
		ts.tv_sec = (time_t)(d / 1000000000ull);
		ts.tv_nsec = (long)(d % 1000000000ull);
		tsp = &ts;
	}
	if (ppoll(p, np, tsp, NULL) > 0 && (pfd[1].revents & POLLIN)) {
		r = read(nic->wake_fd, &v, sizeof(v));
		(void)r;
	}
}

/*
 * The progress thread is our interrupt handler: when an application spins
 * on memory waiting for an RDMA WRITE (ib_write_lat), the thread that must
 * deliver it competes with that spinner for the core, and the scheduler
 * may let it wait a whole tick (ms). Where allowed (CAP_SYS_NICE, e.g. root
 * in a container), a low real-time priority makes the wake-up preempt the
 * spinner at once; it blocks in ppoll() between bursts, so it never hogs a
 * core (and RT throttling bounds it anyway). Unprivileged: a no-op.
 * Opt-in with UROCE_RT_PRIO=<1..99> (measurements on the shared 2-core
 * box were inconclusive); busy polling never uses it.
 */
static void nic_thread_priority(struct ur_nic *nic)
{
	const char *v = getenv("UROCE_RT_PRIO");
	struct sched_param sp = { .sched_priority = v ? atoi(v) : 0 };

	if (nic->busy_poll || sp.sched_priority <= 0)
		return;
	if (pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp))
		ur_dbg("engine: no real-time priority for the progress thread");
}

static void *nic_thread(void *arg)
{
	struct ur_nic *nic = arg;
	uint64_t spin_until = 0;
	int n;

	nic_thread_priority(nic);

	while (!atomic_load(&nic->stop)) {
		/*
		 * After traffic, keep looking for a short while before
		 * sleeping: in a stream the next datagram is microseconds
		 * away and a sleep/wake-up costs more than that.
		 */
		if (!nic->busy_poll && ur_now_ns() >= spin_until)
			nic_wait(nic);
		pthread_mutex_lock(&nic->rx_lock);
		n = nic_rx_burst(nic);
		if (nic_timer_due(nic))
			nic_timer_scan(nic);
		pthread_mutex_unlock(&nic->rx_lock);
		if (n > 0 && nic->spin_ns)
			spin_until = ur_now_ns() + nic->spin_ns;
		if (!n && (nic->busy_poll || spin_until))
			sched_yield();
	}
	return NULL;
}

/* ------------------------------------------------------------------ */
/* Lifecycle                                                           */
/* ------------------------------------------------------------------ */

static bool env_true(const char *name)
{
	const char *v = getenv(name);

	return v && *v && strcmp(v, "0");
}

static void nic_open_pcap(struct ur_nic *nic)
{
	const char *path = getenv("UROCE_PCAP"), *pp;
	char buf[4200], name[4096];
	int rc;

	if (!path || !*path)
		return;
	/* "%p" in the path becomes the pid (several processes, one spec) */
	pp = strstr(path, "%p");
	if (pp) {
		snprintf(name, sizeof(name), "%.*s%d%s", (int)(pp - path),
			 path, (int)getpid(), pp + 2);
		path = name;
	}
	if (nic->dev->index) {
		snprintf(buf, sizeof(buf), "%s.%u", path, nic->dev->index);
		path = buf;
	}
	rc = ur_pcap_open(&nic->pcap, path, UR_LINKTYPE_ETHERNET);
	if (rc) {
		ur_warn("engine: cannot open pcap %s: %d", path, rc);
		nic->pcap = NULL;
	}
}

static int nic_open_link(struct ur_nic *nic)
{
	struct ur_device *dev = nic->dev;
	struct ur_link_config cfg;
	int rc, tries;

	for (tries = 0; tries < 8; tries++) {
		memset(&cfg, 0, sizeof(cfg));
		cfg.bind = dev->gids[0].addr;
		if (cfg.bind.sa.sa_family == AF_INET)
			cfg.bind.in.sin_port = htons(UR_ROCEV2_PORT);
		else
			cfg.bind.in6.sin6_port = htons(UR_ROCEV2_PORT);
		cfg.use_gso = nic->use_gso;
		cfg.use_gro = 1;
		cfg.fault = ur_config_get()->fault;
		rc = ur_link_open(&cfg, &nic->link);
		if (rc != -EADDRINUSE)
			break;
		if (ur_device_reroll_auto_addr(dev))
			break;
	}
	if (rc)
		return rc;
	nic->addr = cfg.bind;
	return 0;
}

static void nic_free(struct ur_nic *nic)
{
	if (nic->link)
		ur_link_close(nic->link);
	if (nic->wake_fd >= 0)
		close(nic->wake_fd);
	ur_pcap_close(nic->pcap);
	pthread_mutex_destroy(&nic->rx_lock);
	pthread_mutex_destroy(&nic->qp_list_lock);
	free(nic);
}

static int nic_create(struct ur_device *dev, struct ur_nic **out)
{
	struct ur_nic *nic;
	int rc;

	nic = calloc(1, sizeof(*nic));
	if (!nic)
		return -ENOMEM;
	nic->dev = dev;
	nic->wake_fd = -1;
	pthread_mutex_init(&nic->rx_lock, NULL);
	pthread_mutex_init(&nic->qp_list_lock, NULL);
	ur_list_init(&nic->qps);
	ur_txb_init(&nic->txb, nic);
	nic->busy_poll = env_true("UROCE_BUSY_POLL");
	nic->spin_ns = getenv("UROCE_SPIN_US") ?
		strtoull(getenv("UROCE_SPIN_US"), NULL, 0) * 1000 :
		UR_RX_SPIN_NS;
	nic->quiet_ns = getenv("UROCE_QUIET_US") ?
		strtoull(getenv("UROCE_QUIET_US"), NULL, 0) * 1000 :
		UR_APP_POLL_QUIET_NS;
	nic->use_gso = !getenv("UROCE_GSO") || env_true("UROCE_GSO");
	nic->hardened = env_true("UROCE_HARDENED");
	nic->lazy_doorbell = !getenv("UROCE_LAZY_DOORBELL") ||
			     env_true("UROCE_LAZY_DOORBELL");
	/* before any packet can reach application memory */
	rc = ur_memguard_init();
	if (rc)
		ur_warn("engine: no fault-safe copies: %s", strerror(-rc));
	nic->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (nic->wake_fd < 0) {
		rc = -errno;
		goto err;
	}
	rc = nic_open_link(nic);
	if (rc)
		goto err;
	nic_open_pcap(nic);
	rc = -pthread_create(&nic->thread, NULL, nic_thread, nic);
	if (rc)
		goto err;
	nic->thread_started = true;
	*out = nic;
	return 0;
err:
	nic_free(nic);
	return rc;
}

/* UROCE_STATS, once per NIC: a device still open at exit is written by the
 * exit handler, and a library destructor that closes it afterwards (e.g.
 * librdmacm's agent) must not write the same counters again. */
static void nic_dump_stats_env(struct ur_nic *nic)
{
	const char *v = getenv("UROCE_STATS");
	FILE *f;

	if (!v || !*v || !strcmp(v, "0") || nic->stats_written)
		return;
	nic->stats_written = true;
	if (!strcmp(v, "1")) {
		ur_engine_dump_counters(nic->dev, stderr);
		return;
	}
	f = fopen(v, "a");
	if (!f)
		return;
	ur_engine_dump_counters(nic->dev, f);
	fclose(f);
}

int ur_nic_get(struct ur_device *dev)
{
	struct ur_nic *nic = NULL;
	int rc;

	/* dev->lock and open_count belong to the caller (open_device). */
	if (dev->nic)
		return 0;
	rc = nic_create(dev, &nic);
	if (rc)
		return rc;
	dev->nic = nic;
	return 0;
}

void ur_engine_write_stats(struct ur_device *dev)
{
	if (dev->nic)
		nic_dump_stats_env(dev->nic);
}

void ur_nic_put(struct ur_device *dev)
{
	struct ur_nic *nic = dev->nic;

	if (!nic || dev->open_count > 0)
		return;
	atomic_store(&nic->stop, true);
	ur_nic_wake(nic);
	if (nic->thread_started)
		pthread_join(nic->thread, NULL);
	nic_dump_stats_env(nic);
	dev->nic = NULL;
	nic_free(nic);
}

/* ------------------------------------------------------------------ */
/* QP attach                                                           */
/* ------------------------------------------------------------------ */

int ur_engine_qp_init(struct ur_qp *qp)
{
	struct ur_nic *nic = qp->dev->nic;
	struct ur_qp_xport *xp;

	if (!nic)
		return -ENODEV;
	xp = calloc(1, sizeof(*xp));
	if (!xp)
		return -ENOMEM;
	xp->qp = qp;
	xp->nic = nic;
	xp->mtu = ur_mtu_bytes(qp->dev->active_mtu);
	ur_txb_init(&xp->txb, nic);
	pthread_mutex_lock(&nic->qp_list_lock);
	ur_list_add_tail(&nic->qps, &xp->node);
	pthread_mutex_unlock(&nic->qp_list_lock);
	qp->xp = xp;
	return 0;
}

void ur_engine_qp_fini(struct ur_qp *qp)
{
	struct ur_qp_xport *xp = qp->xp;

	if (!xp)
		return;
	pthread_mutex_lock(&xp->nic->qp_list_lock);
	ur_list_del(&xp->node);
	pthread_mutex_unlock(&xp->nic->qp_list_lock);
	qp->xp = NULL;
	free(xp);
}
