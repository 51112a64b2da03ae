/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Transmit: packets are assembled into a batch (headers, payload iovecs
 * straight from registered memory, ICRC computed over them incrementally)
 * and leave with one ur_link_send(); with UDP GSO, runs of equal-sized
 * packets to one peer leave as one UDP_SEGMENT train. The lowest engine
 * stage: it calls only link/, wire/ and util/.
 */
#include <errno.h>
#include <string.h>

#include "engine/engine_priv.h"
#include "util/lock_assert.h"
#include "util/memguard.h"
#include "util/trace.h"

void ur_txb_init(struct ur_txb *b, struct ur_nic *nic)
{
	b->nic = nic;
	b->n = 0;
	b->ack_slot = -1;
	b->ack_qp = NULL;
	b->ring_known = false;
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
		if (!d->no_icrc)	/* a ring's train: nobody checks it */
			ur_icrc_store(icrc, ur_icrc_ipv4_id_adjust(
						    ur_icrc_load(icrc),
						    txd_bytes(d), 0, id));
		b->pkt[k].flow.ip_id = id;
	}
}

/* The destination QP in a packet's BTH (its first iovec, txb_fill()). */
static uint32_t txd_dqpn(const struct ur_txd *d)
{
	const uint8_t *bth = d->iov[0].iov_base;

	return (uint32_t)bth[5] << 16 | (uint32_t)bth[6] << 8 | bth[7];
}

/*
 * Packets of equal size to the same peer's QP go out as one UDP_SEGMENT
 * train (the last may be shorter), each segment with the ICRC of the IPv4
 * ID it will carry (txb_train_set_ids()). A train never mixes destination
 * QPs: a UDP_GRO receiver gets it whole, and the kernel steers it by its
 * first datagram to that QP's receive shard (link/steer.c), which would
 * have to forward the rest (a reply batch's ACKs of many QPs).
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
				    d->ttl != b->txd[i].ttl ||
				    d->via != b->txd[i].via ||
				    d->no_icrc != b->txd[i].no_icrc ||
				    txd_dqpn(d) != txd_dqpn(&b->txd[i]) ||
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
		t->ttl = b->txd[i].ttl;
		t->via = b->txd[i].via;
		t->no_icrc = b->txd[i].no_icrc;
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

/* Sends b's packets; b itself stays as it is (its sender empties it). */
static void txb_send(struct ur_txb *b)
{
	struct ur_nic *nic = b->nic;
	unsigned int i;
	int rc;

	for (i = 0; i < b->n; i++)
		ur_trace_bth(UR_TR_TX, b->txd[i].iov[0].iov_base,
			     b->txd[i].iov[0].iov_len);
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
}

static void txb_empty(struct ur_txb *b)
{
	b->n = 0;
	b->ack_slot = -1;
	b->ack_qp = NULL;
}

void ur_txb_flush(struct ur_txb *b)
{
	if (!b->n)
		return;
	txb_send(b);
	txb_empty(b);
}

/* The link address a flow leaves from: its source is one of nic->addrs,
 * and a device has one address unless it was given several. */
static uint8_t txb_via(const struct ur_nic *nic, const struct ur_ip_flow *flow)
{
	unsigned int i;

	for (i = 1; i < nic->n_addrs; i++) {
		const union ur_sockaddr *a = &nic->addrs[i];

		if (a->sa.sa_family != flow->family)
			continue;
		if (flow->family == AF_INET ?
			    a->in.sin_addr.s_addr == flow->src.v4.s_addr :
			    !memcmp(&a->in6.sin6_addr, &flow->src.v6, 16))
			return (uint8_t)i;
	}
	return 0;
}

struct icrc_piece {
	struct ur_icrc *c;
	const struct iovec *iov;
};

static void icrc_piece_update(void *arg)
{
	const struct icrc_piece *p = arg;

	if (p->c) {
		ur_icrc_update(p->c, p->iov->iov_base, p->iov->iov_len);
		return;
	}
	/* no ICRC to compute: still read each page (4 KiB, the smallest),
	 * so that memory the application unmapped fails the WQE here as it
	 * would then */
	for (size_t off = 0; off < p->iov->iov_len; off += 4096)
		(void)*(volatile const uint8_t *)((const uint8_t *)
							  p->iov->iov_base +
						  off);
	(void)*(volatile const uint8_t *)((const uint8_t *)p->iov->iov_base +
					  p->iov->iov_len - 1);
}

/*
 * Whether a packet to dst carries its ICRC: not when it goes through a
 * same-host ring (the link says so; its answer is kept per batch while
 * the link's generation stands), unless a pcap records it.
 */
static bool txb_wants_icrc(struct ur_txb *b, const union ur_sockaddr *dst)
{
	struct ur_link *link = b->nic->link;
	uint32_t gen;

	if (b->nic->pcap || !ur_addr_is_loopback(dst))
		return true;
	gen = ur_link_ring_gen(link);
	if (!b->ring_known || b->ring_gen != gen ||
	    !ur_sockaddr_same_host(&b->ring_dst, dst) ||
	    (dst->sa.sa_family == AF_INET ?
		     b->ring_dst.in.sin_port != dst->in.sin_port :
		     b->ring_dst.in6.sin6_port != dst->in6.sin6_port)) {
		b->ring_ok = ur_link_is_ring(link, dst);
		b->ring_dst = *dst;
		b->ring_gen = gen;
		b->ring_known = true;
	}
	return !b->ring_ok;
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
	bool icrc = txb_wants_icrc(b, dst);
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
	p->flow.tos = ur_ecn_tos(b->nic, flow->tos);	/* ecn.c */
	if (icrc) {
		ur_icrc_begin(&c, flow, udp_len);
		ur_icrc_update(&c, p->hdr, (size_t)hlen);
	}
	p->iov[n].iov_base = p->hdr;
	p->iov[n++].iov_len = (size_t)hlen;
	for (i = 0; i < npay && n < UR_TX_PAY_IOV + 1; i++) {
		struct icrc_piece piece = { .c = icrc ? &c : NULL,
					    .iov = &pay[i] };

		if (!pay[i].iov_len)
			continue;
		if (ur_memguard_call(pay[i].iov_base, pay[i].iov_len,
				     icrc_piece_update, &piece))
			return -EFAULT;
		p->iov[n++] = pay[i];
	}
	memset(p->trailer, 0, sizeof(p->trailer));
	if (icrc && pad)
		ur_icrc_update(&c, p->trailer, pad);
	if (icrc)
		ur_icrc_store(p->trailer + pad, ur_icrc_final(&c));
	p->iov[n].iov_base = p->trailer;
	p->iov[n++].iov_len = pad + UR_ICRC_BYTES;
	p->dst = *dst;
	d->dst = &p->dst;
	d->iov = p->iov;
	d->iovcnt = n;
	d->gso_size = 0;
	d->no_icrc = !icrc;
	d->tos = p->flow.tos;
	d->ttl = flow->ttl;
	d->via = txb_via(b->nic, flow);
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
	ur_qcnt_tx(qp->xp->qcnt.rx, 0);	/* rx owner: the responder's ACK */
	b->ack_slot = (int)b->n;
	b->ack_qp = qp;
	b->n++;
	if (b->n == UR_TX_BATCH)
		ur_txb_flush(b);
}


/*
 * The requester's batches. Under sq_lock the requester fills b[fill];
 * the thread that releases sq_lock after a send step takes the older
 * batch (ur_txq_take: b[!fill], or b[fill] switched over when that one
 * is empty), drops sq_lock, sends it, and comes back under sq_lock for
 * whatever was built meanwhile (send.c, ur_send_unlock()). While it is
 * away (sending), b[!fill] is its own: no sq_lock holder reads or writes
 * it, and others only fill b[fill] and leave it for that sender. So one
 * sender at a time, batches in the order they were filled, and a thread
 * that holds sq_lock waits for a send only when both batches are full.
 */
int ur_txq_init(struct ur_txq *q, struct ur_nic *nic)
{
	ur_txb_init(&q->b[0], nic);
	ur_txb_init(&q->b[1], nic);
	q->fill = 0;
	q->sending = q->stalled = q->drain_held = q->arm_owed = false;
	return -pthread_mutex_init(&q->lock, NULL);
}

void ur_txq_fini(struct ur_txq *q)
{
	pthread_mutex_destroy(&q->lock);
}

bool ur_txq_room(struct ur_txq *q)
{
	if (q->b[q->fill].n < UR_TX_BATCH)
		return true;
	if (q->sending || q->b[!q->fill].n)
		return false;
	q->fill = !q->fill;	/* the full one is the next to leave */
	return true;
}

bool ur_txq_stalled(struct ur_txq *q)
{
	if (ur_txq_room(q))
		return false;
	q->stalled = true;
	return true;
}

/* Both batches full: the older leaves before the requester goes on. */
static void txq_make_room(struct ur_txq *q)
{
	struct ur_txb *o = &q->b[!q->fill];

	/* the batch in flight: its sender emptied it before unlocking */
	pthread_mutex_lock(&q->lock);
	if (!q->sending && o->n) {	/* a batch nobody sends yet */
		txb_send(o);
		txb_empty(o);
	}
	pthread_mutex_unlock(&q->lock);
	q->fill = !q->fill;
}

/*
 * Whether the WQE of a packet must wait for it to leave before it
 * completes (ur_txq_holds()): a UD or UC packet (they complete when
 * sent), and an RC one sent before (below psn_max, which moves at the
 * end of a run): the ACK of its first copy may complete the WQE while it
 * is still to leave. A new RC packet is acknowledged only once the
 * kernel took it.
 */
static bool txq_hold(const struct ur_txq *q, const struct ur_hdr_fields *f)
{
	const struct ur_qp_xport *xp = container_of(q, struct ur_qp_xport,
						    txq);

	return !ur_qp_reliable(xp->qp) ||
	       ur_psn_before(f->psn, xp->req.psn_max);
}

int ur_txq_add(struct ur_txq *q, uint32_t idx, const union ur_sockaddr *dst,
	       const struct ur_ip_flow *flow, struct ur_hdr_fields *f,
	       const struct iovec *pay, unsigned int npay, uint32_t paylen)
{
	bool hold = txq_hold(q, f);
	unsigned int i;
	struct ur_txb *b;
	int rc;

	if (!ur_txq_room(q))
		txq_make_room(q);
	i = q->fill;
	b = &q->b[i];
	rc = txb_fill(b, b->n, dst, flow, f, pay, npay, paylen);
	if (rc)
		return rc;
	if (!b->n)
		q->held[i] = false;
	/* the requester goes forward through the SQ, a resend back */
	if (hold && (!q->held[i] || idx - q->lo[i] > UINT32_MAX / 2)) {
		q->lo[i] = idx;
		q->held[i] = true;
	}
	b->n++;
	return 0;
}

bool ur_txq_holds(const struct ur_txq *q, uint32_t idx)
{
	unsigned int i;

	for (i = 0; i < 2; i++) {
		/* the batch in flight counts until its sender is back */
		bool pending = (i != q->fill && q->sending) || q->b[i].n;

		if (pending && q->held[i] && q->lo[i] == idx)
			return true;
	}
	return false;
}

void ur_txq_flush_all(struct ur_txq *q)
{
	struct ur_txb *o = &q->b[!q->fill], *b = &q->b[q->fill];

	/* the batch in flight left before its sender unlocked; what its
	 * sender comes back for is then gone already */
	pthread_mutex_lock(&q->lock);
	if (o->n) {
		txb_send(o);
		txb_empty(o);
	}
	if (b->n) {
		txb_send(b);
		txb_empty(b);
	}
	pthread_mutex_unlock(&q->lock);
}

bool ur_txq_pending(const struct ur_txq *q)
{
	return q->sending || q->b[0].n || q->b[1].n;
}

struct ur_txb *ur_txq_take(struct ur_txq *q)
{
	if (q->sending)
		return NULL;
	if (!q->b[!q->fill].n) {
		if (!q->b[q->fill].n)
			return NULL;
		q->fill = !q->fill;
	}
	q->sending = true;
	pthread_mutex_lock(&q->lock);	/* free: nobody sends */
	return &q->b[!q->fill];
}

void ur_txq_send(struct ur_txq *q, struct ur_txb *b)
{
	UR_ASSERT_HELD(&q->lock);
	txb_send(b);
	txb_empty(b);
	pthread_mutex_unlock(&q->lock);
}

void ur_txq_back(struct ur_txq *q)
{
	q->sending = false;
}

void ur_txq_discard(struct ur_txq *q)
{
	pthread_mutex_lock(&q->lock);
	txb_empty(&q->b[0]);
	txb_empty(&q->b[1]);
	pthread_mutex_unlock(&q->lock);
	q->stalled = q->drain_held = q->arm_owed = false;
}
