/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fault injection between the link facade (link.c) and the socket backend
 * (udp.c), for tests. It calls only the backend's interface (udp.h).
 *
 * Configured at ur_link_open() (ur_link_config.fault: the engine passes
 * UROCE_FAULT from util/config), or later with ur_link_set_fault()
 * (fault_spec.c parses it):
 *
 *   UROCE_FAULT="seed=42,drop=0.05,dup=0.01,reorder=0.02,corrupt=0.001,
 *                delay_us=200,delay=0.1,dir=both"
 *
 * Comma-separated key=value pairs, any order, all optional:
 *   seed=N       PRNG seed (decimal or 0x hex), default 1. Same seed, same
 *                traffic order => same decisions (splitmix64, not a CSPRNG).
 *   drop=P       probability (0..1) a datagram is silently dropped.
 *   dup=P        probability it is sent/delivered twice.
 *   reorder=P    probability it is held back and released right after the
 *                next datagram in the same direction (or after 10 ms if no
 *                other datagram comes).
 *   corrupt=P    probability one random bit of its payload is flipped.
 *   delay_us=N   hold time for delayed datagrams (microseconds).
 *   delay=P      probability a datagram is delayed by delay_us; defaults to
 *                1 (every datagram) when delay_us is given.
 *   dir=tx|rx|both   where faults apply (default tx: with every node using
 *                the same spec, each datagram meets the faults once).
 *   ce=P         probability a received ECN-capable datagram (ECT(0) or
 *                ECT(1) in its IP header) arrives marked Congestion
 *                Experienced, as an ECN-marking switch queue on the path
 *                would mark it (a Not-ECT one is left alone, as such a
 *                queue would drop it instead). Applied on receive
 *                whatever dir says: only the receiver sees the IP header,
 *                and the sender's GSO trains stay whole. This kernel has
 *                no marking qdisc (red, codel, fq_codel, pie), so this is
 *                how tests make the responder send CNPs (engine/ecn.c).
 * An empty spec, "off" or "0" disables injection. An unknown key or a bad
 * value fails ur_link_open() with -EINVAL and an error log line.
 *
 * Per datagram (a GSO train counts as its datagrams) the stage draws a
 * fixed number of random values, so the decisions depend only on the seed
 * and the datagram order. Precedence:
 * drop; else corrupt, then dup (the copy goes out at once), then reorder,
 * else delay. Held datagrams are released by later ur_link_send()/recv()
 * calls; with a spec at open, ur_link_fd() is an epoll fd over
 * the socket and a release timerfd, so a caller sleeping in poll() on it
 * wakes up when one is due and lets it out with ur_link_recv().
 *
 * This is the slow path: with injection on, everything runs under one
 * mutex and datagrams are copied (and a train's datagrams leave one by
 * one). Except under drops alone (the loss benchmarks): a send descriptor
 * none of whose datagrams is dropped leaves as the engine built it, a GSO
 * train as one train, in one batch with its neighbours, and the survivors
 * of a train with a drop leave as trains of consecutive datagrams, so that
 * a lossy run measures the engine's recovery and not this stage (which
 * cost a loss-free run more than half its bandwidth, and a lossy one a
 * tenth or more). A train's datagram that leaves alone or in a shorter
 * train gets another IPv4 ID than the one its ICRC was computed for
 * (udp.c, engine/tx.c): uroce's receive path solves for the ID, a peer
 * that checks the ICRC against the real header (rxe, a NIC) drops it, so
 * losses towards those are made on the path instead (the rxe suite drops
 * on its bridge).
 *
 * A datagram built for a same-host ring without its ICRC (ur_txd.no_icrc)
 * is sealed (udp.h's ur_udp_seal_tx/_rx, the engine's ICRC) wherever this
 * stage copies it on send, and before it corrupts one on receive, so that
 * corruption is detected and counted as on the wire.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "link/fault.h"
#include "link/fault_spec.h"
#include "link/params.h"
#include "util/log.h"
#include "util/time.h"

struct fi_pkt {
	struct fi_pkt *next;
	uint64_t due;			/* release at this ur_now_ns() */
	bool after_next;		/* reorder: also release after the next */
	union ur_sockaddr src, dst;
	uint8_t tos, ttl;
	uint8_t via;			/* tx: the local address it leaves from */
	bool no_icrc;			/* rx: ur_rxd.no_icrc */
	uint32_t len;
	uint8_t data[];
};

struct ur_fault {
	struct ur_udp *udp;		/* the backend: not owned */
	int tm_fd;			/* release timerfd or -1 */
	bool tm_armed;			/* tm_fd set to a release time */
	int ep_fd;			/* epoll(socket, tm_fd) or -1 */
	pthread_mutex_t lock;
	struct fi_cfg cfg;
	uint64_t rng;
	struct fi_pkt *txq, *rxq;	/* held, oldest first */
	struct fi_pkt *rx_out;		/* handed out last recv; freed next */
	uint8_t *scratch;		/* one flattened tx datagram */
	struct ur_rxd raw[UR_FAULT_RAW_BATCH];
	_Atomic uint64_t dropped, duplicated, reordered, corrupted, delayed,
		ce_marked;
};

/* splitmix64 */
static uint64_t fi_next(struct ur_fault *f)
{
	uint64_t z = (f->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double fi_unit(struct ur_fault *f)
{
	return (double)(fi_next(f) >> 11) * (1.0 / 9007199254740992.0);
}

struct fi_action {
	bool drop, dup, reorder, corrupt, delay;
	uint64_t bit;
};

/* Always draws six values so decisions depend only on datagram order. */
static void fi_decide(struct ur_fault *f, struct fi_action *a)
{
	const struct fi_cfg *c = &f->cfg;
	double r_drop = fi_unit(f), r_dup = fi_unit(f);
	double r_reorder = fi_unit(f), r_corrupt = fi_unit(f);
	double r_delay = fi_unit(f);

	a->bit = fi_next(f);
	a->drop = r_drop < c->drop;
	a->dup = !a->drop && r_dup < c->dup;
	a->corrupt = !a->drop && r_corrupt < c->corrupt;
	a->reorder = !a->drop && r_reorder < c->reorder;
	a->delay = !a->drop && !a->reorder && r_delay < c->delay;
}

static void fi_flip(uint8_t *p, uint32_t len, uint64_t bit)
{
	if (len)
		p[(bit >> 3) % len] ^= (uint8_t)(1u << (bit & 7));
}

static struct fi_pkt *fi_pkt_new(const void *data, uint32_t len)
{
	struct fi_pkt *p = malloc(sizeof(*p) + len);

	if (!p)
		return NULL;
	memset(p, 0, sizeof(*p));
	memcpy(p->data, data, len);
	p->len = len;
	return p;
}

static void fi_append(struct fi_pkt **q, struct fi_pkt *p)
{
	while (*q)
		q = &(*q)->next;
	p->next = NULL;
	*q = p;
}

static void fi_free_list(struct fi_pkt **q)
{
	struct fi_pkt *p;

	while ((p = *q)) {
		*q = p->next;
		free(p);
	}
}

/* The epoll fd over the socket and the release timer (ur_fault_fd()). */
static int fi_pollable(struct ur_fault *f)
{
	struct epoll_event ev = { .events = EPOLLIN };

	f->tm_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	f->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (f->tm_fd < 0 || f->ep_fd < 0)
		return -errno;
	ev.data.fd = ur_udp_set_fd(f->udp);
	if (epoll_ctl(f->ep_fd, EPOLL_CTL_ADD, ev.data.fd, &ev))
		return -errno;
	ev.data.fd = f->tm_fd;
	if (epoll_ctl(f->ep_fd, EPOLL_CTL_ADD, f->tm_fd, &ev))
		return -errno;
	return 0;
}

int ur_fault_create(struct ur_udp *udp, bool pollable, struct ur_fault **out)
{
	struct ur_fault *f = calloc(1, sizeof(*f));
	int rc;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	f->udp = udp;
	f->tm_fd = -1;
	f->ep_fd = -1;
	pthread_mutex_init(&f->lock, NULL);
	f->cfg.seed = 1;
	f->cfg.dir = FI_DIR_TX;
	f->rng = 1;
	f->scratch = malloc(UR_FAULT_SCRATCH);
	rc = f->scratch ? 0 : -ENOMEM;
	if (!rc && pollable)
		rc = fi_pollable(f);
	if (rc) {
		ur_fault_destroy(f);
		return rc;
	}
	*out = f;
	return 0;
}

void ur_fault_destroy(struct ur_fault *f)
{
	fi_free_list(&f->txq);
	fi_free_list(&f->rxq);
	fi_free_list(&f->rx_out);
	pthread_mutex_destroy(&f->lock);
	if (f->tm_fd >= 0)
		close(f->tm_fd);
	if (f->ep_fd >= 0)
		close(f->ep_fd);
	free(f->scratch);
	free(f);
}

int ur_fault_fd(const struct ur_fault *f)
{
	return f->ep_fd;
}

/* lock held: sends every held tx datagram that is due (all if force). */
static void fi_tx_release(struct ur_fault *f, bool force,
			  bool after_next)
{
	uint64_t now = ur_now_ns();
	struct fi_pkt **q = &f->txq, *p;

	while ((p = *q)) {
		if (force || p->due <= now || (after_next && p->after_next)) {
			*q = p->next;
			ur_udp_sendto(f->udp, p->via, &p->dst, p->tos,
				      p->data, p->len);
			free(p);
		} else {
			q = &p->next;
		}
	}
}

/* lock held: the earliest release time of anything held, 0 if none. */
static uint64_t fi_next_due(const struct ur_fault *f)
{
	uint64_t next = UINT64_MAX;
	const struct fi_pkt *p;

	for (p = f->txq; p; p = p->next)
		next = UR_MIN(next, p->due);
	for (p = f->rxq; p; p = p->next)
		next = UR_MIN(next, p->due);
	return next == UINT64_MAX ? 0 : UR_MAX(next, 1);
}

/* Re-arms the release timer (when ur_fault_fd() is an epoll fd watching
 * it, so a sleeping engine wakes up to call ur_link_recv()), then drops
 * the lock. Setting a timerfd also clears its pending expirations. */
static void fi_unlock(struct ur_fault *f)
{
	struct itimerspec its;
	uint64_t due;

	due = fi_next_due(f);
	/* nothing held and the timer already clear (the usual case under
	 * drops alone): no system call per send */
	if (f->tm_fd >= 0 && (due || f->tm_armed)) {
		f->tm_armed = due != 0;
		memset(&its, 0, sizeof(its));
		its.it_value.tv_sec = (time_t)(due / 1000000000ull);
		its.it_value.tv_nsec = (long)(due % 1000000000ull);
		timerfd_settime(f->tm_fd, TFD_TIMER_ABSTIME, &its, NULL);
	}
	pthread_mutex_unlock(&f->lock);
}

int ur_fault_configure(struct ur_fault *f, const char *spec)
{
	struct fi_cfg c;
	int rc = ur_fault_spec_parse(spec, &c);

	if (rc)
		return rc;
	pthread_mutex_lock(&f->lock);
	fi_tx_release(f, true, false);
	fi_free_list(&f->rxq);
	f->cfg = c;
	f->rng = c.seed;
	fi_unlock(f);
	if (ur_fault_spec_active(&c))
		ur_info("link: fault injection: seed=%" PRIu64
			" drop=%g dup=%g reorder=%g corrupt=%g delay=%g "
			"delay_us=%u ce=%g dir=%s", c.seed, c.drop, c.dup,
			c.reorder, c.corrupt, c.delay, c.delay_us, c.ce,
			c.dir == FI_DIR_TX ? "tx" :
			c.dir == FI_DIR_RX ? "rx" : "both");
	return ur_fault_spec_active(&c) ? 1 : 0;
}

/* lock held: one flat tx datagram through the fault decisions. */
static int fi_tx_one(struct ur_fault *f, const struct ur_txd *d, uint8_t *buf,
		     uint32_t len)
{
	const union ur_sockaddr *dst = d->dst;
	uint8_t via = d->via;
	struct fi_action a;
	struct fi_pkt *p;
	int rc;

	fi_decide(f, &a);
	if (a.drop) {
		f->dropped++;
		return 0;
	}
	if (a.corrupt) {
		fi_flip(buf, len, a.bit);
		f->corrupted++;
	}
	if (a.dup) {
		ur_udp_sendto(f->udp, via, dst, d->tos, buf, len);
		f->duplicated++;
	}
	if (a.reorder || a.delay) {
		p = fi_pkt_new(buf, len);
		if (!p)
			return -ENOMEM;
		p->dst = *dst;
		p->via = via;
		p->tos = d->tos;
		if (a.reorder) {
			p->after_next = true;
			p->due = ur_now_ns() + UR_FAULT_REORDER_MAX_NS;
			f->reordered++;
		} else {
			p->due = ur_now_ns() + (uint64_t)f->cfg.delay_us * 1000;
			f->delayed++;
		}
		fi_append(&f->txq, p);
		return 0;
	}
	rc = ur_udp_sendto(f->udp, via, dst, d->tos, buf, len);
	fi_tx_release(f, false, true);
	return rc;
}

/* Drops are the only fault configured and nothing is held back: a
 * datagram either leaves as the engine built it or not at all. */
static bool fi_drop_only(const struct ur_fault *f)
{
	const struct fi_cfg *c = &f->cfg;

	return !c->dup && !c->reorder && !c->corrupt && !c->delay && !f->txq;
}

/* lock held: sends scratch[from, to) of d's train as one train (or one
 * datagram) with d's addresses and IP fields. */
static int fi_tx_span(struct ur_fault *f, const struct ur_txd *d,
		      size_t from, size_t to)
{
	struct iovec iov = { f->scratch + from, to - from };
	struct ur_txd part = *d;
	int rc;

	if (from == to)
		return 0;
	part.iov = &iov;
	part.iovcnt = 1;
	part.gso_size = to - from > d->gso_size ? d->gso_size : 0;
	rc = ur_udp_send(f->udp, &part, 1);
	return rc < 0 ? rc : 0;
}

/* lock held, drops only: the survivors of d's train leave as trains of
 * consecutive datagrams, as a network that dropped after the sender's
 * segmentation delivers them (see the top of this file). */
static int fi_tx_survivors(struct ur_fault *f, const struct ur_txd *d,
			   size_t total)
{
	size_t seg = d->gso_size, off, run = 0;
	struct fi_action a;
	int rc = 0;

	for (off = 0; off < total; off += seg) {
		fi_decide(f, &a);
		if (!a.drop)
			continue;
		f->dropped++;
		rc = rc ?: fi_tx_span(f, d, run, off);
		run = UR_MIN(off + seg, total);
	}
	return rc ?: fi_tx_span(f, d, run, total);
}

/* lock held: flattens descriptor d and feeds its datagram(s) through. */
static int fi_tx_desc(struct ur_fault *f,
		      const struct ur_txd *d)
{
	size_t total = 0, off, seg;
	unsigned int i;
	int rc = 0, r;

	for (i = 0; i < d->iovcnt; i++) {
		if (total + d->iov[i].iov_len > UR_FAULT_SCRATCH)
			return -EMSGSIZE;
		memcpy(f->scratch + total, d->iov[i].iov_base,
		       d->iov[i].iov_len);
		total += d->iov[i].iov_len;
	}
	if (d->gso_size && fi_drop_only(f))
		return fi_tx_survivors(f, d, total);
	seg = d->gso_size ? d->gso_size : total;
	if (!seg)
		return fi_tx_one(f, d, f->scratch, 0);
	for (off = 0; off < total; off += seg) {
		uint32_t len = (uint32_t)UR_MIN(seg, total - off);

		/* each leaves alone as a plain datagram (IPv4 ID 0), which
		 * must carry its ICRC, the more so to be corrupted */
		if (d->no_icrc)
			ur_udp_seal_tx(f->udp, d->via, d->dst,
				       f->scratch + off, len);
		r = fi_tx_one(f, d, f->scratch + off, len);
		rc = rc ?: r;
	}
	return rc;
}

/* Datagrams in descriptor d: a GSO train is cut every gso_size bytes. */
static size_t fi_txd_dgrams(const struct ur_txd *d)
{
	size_t total = 0;
	unsigned int i;

	for (i = 0; i < d->iovcnt; i++)
		total += d->iov[i].iov_len;
	if (!d->gso_size)
		return 1;
	return (total + d->gso_size - 1) / d->gso_size;	/* as fi_tx_desc() */
}

/*
 * lock held, drops only: true when none of d's datagrams is dropped, so d
 * may leave whole, a GSO train as one train in one batch with its
 * neighbours (cutting every train into single sends cost a loss-free run
 * more than half its bandwidth: the 1 % loss benchmark measured the stage,
 * not the engine). Otherwise the random state is put back, so that
 * fi_tx_desc() draws the same decisions again and sends the survivors.
 */
static bool fi_tx_whole(struct ur_fault *f, const struct ur_txd *d)
{
	uint64_t rng0 = f->rng;
	size_t k = fi_txd_dgrams(d);
	struct fi_action a;

	while (k--) {
		fi_decide(f, &a);
		if (a.drop) {
			f->rng = rng0;
			return false;
		}
	}
	return true;
}

/* Sends d[from, to) through the backend as they are. */
static unsigned int fi_tx_run(struct ur_fault *f, const struct ur_txd *d,
			      unsigned int from, unsigned int to, int *err)
{
	int rc;

	if (from == to)
		return 0;
	rc = ur_udp_send(f->udp, d + from, to - from);
	if (rc < 0) {
		*err = rc;
		return 0;
	}
	return (unsigned int)rc;
}

int ur_fault_send(struct ur_fault *f, const struct ur_txd *d, unsigned int n)
{
	unsigned int i, run = 0, sent = 0;
	int rc, err = -EIO;

	pthread_mutex_lock(&f->lock);
	if (!(f->cfg.dir & FI_DIR_TX)) {
		fi_tx_release(f, false, false);
		fi_unlock(f);
		return ur_udp_send(f->udp, d, n);
	}
	for (i = 0; i < n; i++) {
		if (fi_drop_only(f) && fi_tx_whole(f, &d[i]))
			continue;	/* joins the run that leaves as is */
		sent += fi_tx_run(f, d, run, i, &err);
		run = i + 1;
		rc = fi_tx_desc(f, &d[i]);
		if (rc)
			err = rc;
		else
			sent++;
	}
	sent += fi_tx_run(f, d, run, n, &err);
	fi_tx_release(f, false, false);
	fi_unlock(f);
	return sent ? (int)sent : err;
}

static void fi_rxd_from_pkt(struct ur_rxd *x, struct fi_pkt *p)
{
	x->data = p->data;
	x->len = p->len;
	x->src = p->src;
	x->dst = p->dst;
	x->tos = p->tos;
	x->ttl = p->ttl;
	x->ring = false;	/* held: no same-host marks honoured */
	x->no_icrc = p->no_icrc;
}

static struct fi_pkt *fi_pkt_from_rxd(const struct ur_rxd *x)
{
	struct fi_pkt *p = fi_pkt_new(x->data, x->len);

	if (!p)
		return NULL;
	p->src = x->src;
	p->dst = x->dst;
	p->tos = x->tos;
	p->ttl = x->ttl;
	p->no_icrc = x->no_icrc;
	return p;
}

/* lock held: moves due rx holds (and reorder holds if after_next) into the
 * output; the rest of them stay queued with due = now when out of room. */
static unsigned int fi_rx_release(struct ur_fault *f, struct ur_rxd *d,
				  unsigned int out, unsigned int max,
				  bool after_next)
{
	uint64_t now = ur_now_ns();
	struct fi_pkt **q = &f->rxq, *p;

	while ((p = *q)) {
		if (p->due > now && !(after_next && p->after_next)) {
			q = &p->next;
			continue;
		}
		if (out == max) {
			p->due = 0;	/* next call */
			q = &p->next;
			continue;
		}
		*q = p->next;
		fi_rxd_from_pkt(&d[out++], p);
		p->next = f->rx_out;
		f->rx_out = p;
	}
	return out;
}

/* lock held: queue a copy to be handed out at due. */
static void fi_rx_hold(struct ur_fault *f, const struct ur_rxd *x,
		       uint64_t due, bool after_next)
{
	struct fi_pkt *p = fi_pkt_from_rxd(x);

	if (!p) {
		f->dropped++;
		return;
	}
	p->due = due;
	p->after_next = after_next;
	fi_append(&f->rxq, p);
}

/*
 * lock held: marks CE on a ce fraction of the ECN-capable datagrams of
 * d[0, n). One draw per datagram, and only when ce is set, so that the
 * other faults' decisions for a seed stay as they were without it.
 */
static void fi_rx_ce(struct ur_fault *f, struct ur_rxd *d, int n)
{
	int i;

	if (!(f->cfg.ce > 0))
		return;
	for (i = 0; i < n; i++) {
		if (fi_unit(f) >= f->cfg.ce || !(d[i].tos & UR_IP_ECN_MASK))
			continue;
		d[i].tos |= UR_IP_ECN_CE;
		f->ce_marked++;
	}
}

int ur_fault_recv(struct ur_fault *f, struct ur_rxd *d, unsigned int max)
{
	struct fi_action a;
	unsigned int out, i;
	int n;

	pthread_mutex_lock(&f->lock);
	fi_free_list(&f->rx_out);
	fi_tx_release(f, false, false);
	if (!(f->cfg.dir & FI_DIR_RX)) {
		out = fi_rx_release(f, d, 0, max, true);
		if (!out) {
			n = ur_udp_recv(f->udp, d, max);
			fi_rx_ce(f, d, n);
			fi_unlock(f);
			return n;
		}
		fi_unlock(f);
		return (int)out;
	}
	out = fi_rx_release(f, d, 0, max, false);
	n = out < max ? ur_udp_recv(f->udp, f->raw,
					 UR_MIN(max - out, UR_FAULT_RAW_BATCH)) : 0;
	if (n < 0 && !out) {
		fi_unlock(f);
		return n;
	}
	fi_rx_ce(f, f->raw, n);
	for (i = 0; i < (unsigned int)UR_MAX(n, 0); i++) {
		struct ur_rxd *x = &f->raw[i];

		fi_decide(f, &a);
		if (a.drop) {
			f->dropped++;
			continue;
		}
		if (a.corrupt) {
			/* a ring datagram sent with no ICRC gets its right
			 * one first, so that its receiver checks it and finds
			 * the flipped bit; without a seal function, one it
			 * cannot match (no check, no drop otherwise) */
			if (x->no_icrc && !ur_udp_seal_rx(f->udp, x))
				x->no_icrc = false;
			fi_flip(x->data, x->len, a.bit);
			f->corrupted++;
		}
		if (a.dup) {
			f->duplicated++;
			fi_rx_hold(f, x, 0, false);
		}
		if (a.reorder) {
			f->reordered++;
			fi_rx_hold(f, x, ur_now_ns() + UR_FAULT_REORDER_MAX_NS, true);
			continue;
		}
		if (a.delay) {
			f->delayed++;
			fi_rx_hold(f, x, ur_now_ns() +
				   (uint64_t)f->cfg.delay_us * 1000, false);
			continue;
		}
		if (out < max)
			d[out++] = *x;
		else
			fi_rx_hold(f, x, 0, false);
		out = fi_rx_release(f, d, out, max, true);
	}
	fi_unlock(f);
	return (int)out;
}

void ur_fault_stats(const struct ur_fault *f, struct ur_link_stats *st)
{
	struct ur_fault *m = (struct ur_fault *)f;

	st->fi_dropped = atomic_load(&m->dropped);
	st->fi_duplicated = atomic_load(&m->duplicated);
	st->fi_reordered = atomic_load(&m->reordered);
	st->fi_corrupted = atomic_load(&m->corrupted);
	st->fi_delayed = atomic_load(&m->delayed);
	st->fi_ce_marked = atomic_load(&m->ce_marked);
}
