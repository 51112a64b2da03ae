/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Same-host RDMA WRITE and READ by one copy between the two processes
 * (process_vm_writev / process_vm_readv), with no packet, no ACK and no
 * work in the target process; and the payload of a WRITE with immediate,
 * whose immediate then goes as one packet without payload, marked
 * (wire/hdr.h's UR_BTH_RESV6A_PLACED), for the target's responder to
 * check and complete (req.c sends it, resp.c honours it). docs/design.md,
 * "One-sided operations by a single copy", says why it is correct; in
 * short:
 *
 * - The target publishes what its responder would check, in the area at
 *   the end of its same-host ring file (link.h's ur_link_own_area()): its
 *   RC QPs that accept requests (number, PD, access flags, connected
 *   peer) and its MRs that grant remote access (key, PD, access, bounds,
 *   host address). The requester checks a WQE against both exactly as the
 *   responder would check its packet, and copies only when every check
 *   passes; anything else (a bad key, a window, a QP in error, an address
 *   that faults) takes the packet path, whose responder gives the IBA's
 *   answer. So the table is a cache of "certainly allowed": an entry
 *   missing or being rewritten only costs speed.
 * - Ordering: a WQE goes this way only when nothing sent before it is
 *   unacknowledged, so it cannot pass an earlier request on the QP; the
 *   copy is finished when the syscall returns, so nothing later passes it.
 * - Deregistration never races a copy: a requester claims a holder slot of
 *   the MR's entry (its pid) before it checks the entry's sequence number,
 *   and the owner makes the sequence odd before it waits for every holder
 *   slot to empty (both sequentially consistent: one sees the other). A
 *   holder that died is cleared by the owner.
 * - The pid is the owner's: a probe reads a random nonce through
 *   process_vm_readv at the table's address in that pid and compares it to
 *   the mapped one, once per QP and again every UR_DX_REVERIFY_NS, so a
 *   pid reused after the owner died is never written to. A refused probe
 *   (seccomp, Yama, another user) is counted and the QP keeps the packet
 *   path.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "engine/direct_priv.h"
#include "engine/xrc_mem.h"
#include "util/config.h"
#include "util/log.h"
#include "util/lock_assert.h"
#include "util/random.h"
#include "util/time.h"

static uint64_t pid_ns(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) ? 0 : (uint64_t)st.st_ino;
}

void ur_direct_init(struct ur_nic *nic)
{
	const struct ur_config *cfg = ur_config_get();
	struct dx_table *t = ur_link_own_area(nic->link);

	/* the NIC is used by the process that opened it (not a fork) */
	nic->dx_self = (int32_t)getpid();
	if (!t)
		return;
	t->pid = nic->dx_self;
	t->pidns = pid_ns();
	t->nonce = ((uint64_t)ur_random_u32() << 32) | ur_random_u32();
	t->self = (uintptr_t)t;
	atomic_store_explicit(&t->magic, DX_MAGIC, memory_order_release);
	nic->dx_own = t;
	nic->dx_pidns = t->pidns;
	/* a capture or a fault test wants packets */
	nic->dx_on = cfg->direct && !nic->pcap;
}

static void seq_open(_Atomic uint32_t *seq)
{
	atomic_fetch_add(seq, 1);	/* odd; seq_cst: before the waits */
}

static void seq_close(_Atomic uint32_t *seq)
{
	atomic_fetch_add_explicit(seq, 1, memory_order_release);
}

/* A holder that exited is gone even while its parent has not reaped it
 * (a zombie answers kill(pid, 0)); /proc unreadable: alive. */
static bool alive(int32_t pid)
{
	char path[32], buf[256], *p;
	ssize_t n;
	int fd;

	if (kill(pid, 0) && errno != EPERM)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno != ENOENT;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return true;
	buf[n] = 0;
	p = strrchr(buf, ')');	/* the state follows the command's name */
	return !p || (p[1] != ' ' || (p[2] != 'Z' && p[2] != 'X'));
}

/* The owner, seq odd: waits until no requester is inside a copy from the
 * entry; a dead holder's slot is cleared. */
static void mr_drain(struct dx_mr *e)
{
	unsigned int i;
	int32_t h;

	for (i = 0; i < DX_HOLDERS; i++) {
		while ((h = atomic_load(&e->holder[i]))) {
			if (!alive(h)) {
				atomic_compare_exchange_strong(&e->holder[i],
							       &h, 0);
				continue;
			}
			sched_yield();
		}
	}
}

/* ------------------------------------------------------------------ */
/* The owner: publish and withdraw                                     */
/* ------------------------------------------------------------------ */

static struct ur_nic *mr_nic(const struct ur_mr *mr)
{
	return to_ur_context(mr->ibmr.context)->dev->nic;
}

void ur_engine_mr_publish(struct ur_mr *mr)
{
	struct ur_nic *nic = mr_nic(mr);
	const struct ur_mem *m = &mr->mem;
	struct dx_table *t = nic ? nic->dx_own : NULL;
	struct dx_mr *e;
	unsigned int i;

	if (!t || !m->valid || !m->length ||
	    !(m->access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)))
		return;
	pthread_mutex_lock(&nic->dx_lock);
	for (i = 0; i < DX_PROBES; i++) {
		e = &t->mr[(m->key + i) % DX_MRS];
		if (e->key)
			continue;
		seq_open(&e->seq);
		e->key = m->key;
		e->pd = m->pd->ibpd.handle;
		e->access = m->access;
		e->iova = m->iova;
		e->length = m->length;
		e->host_base = m->host_base;
		seq_close(&e->seq);
		break;
	}
	pthread_mutex_unlock(&nic->dx_lock);
}

void ur_engine_mr_withdraw(struct ur_mr *mr)
{
	struct ur_nic *nic = mr_nic(mr);
	struct dx_table *t = nic ? nic->dx_own : NULL;
	struct dx_mr *e;
	unsigned int i;

	if (!t)
		return;
	pthread_mutex_lock(&nic->dx_lock);
	for (i = 0; i < DX_PROBES; i++) {
		e = &t->mr[(mr->mem.key + i) % DX_MRS];
		if (e->key != mr->mem.key)
			continue;
		seq_open(&e->seq);
		e->key = 0;
		mr_drain(e);
		seq_close(&e->seq);
		break;
	}
	pthread_mutex_unlock(&nic->dx_lock);
}

/* What the responder checks of the QP itself (resp.c): an RC QP that
 * accepts requests, from its connected peer. */
static bool qp_serves(const struct ur_qp *qp)
{
	return qp->type == IBV_QPT_RC &&
	       (qp->state == IBV_QPS_RTR || qp->state == IBV_QPS_RTS ||
		qp->state == IBV_QPS_SQD);
}

/* Writes (serve) or clears the QP's entry. */
static void qp_publish(struct ur_qp *qp, bool serve)
{
	struct ur_nic *nic = qp->xp ? qp->xp->nic : NULL;
	struct dx_table *t = nic ? nic->dx_own : NULL;
	uint32_t qpn = ur_qp_num(qp);
	struct dx_qp *e, *hole = NULL;
	unsigned int i;

	if (!t || qp->type != IBV_QPT_RC)
		return;
	pthread_mutex_lock(&nic->dx_lock);
	for (i = 0; i < DX_PROBES; i++) {
		e = &t->qp[(qpn + i) % DX_QPS];
		if (e->qpn == qpn)
			break;
		if (!e->qpn && !hole)
			hole = e;
		e = NULL;
	}
	if (!e && serve)
		e = hole;
	if (e) {
		seq_open(&e->seq);
		if (serve) {
			e->qpn = qpn;
			e->pd = ur_qp_target_pd(qp)->ibpd.handle;
			e->access = qp->attr.qp_access_flags;
			e->dest_qpn = qp->attr.dest_qp_num;
			e->reads = qp->attr.max_dest_rd_atomic > 0;
			ur_sockaddr_to_gid(&qp->av.dest, e->peer);
			if (!ur_rq_ring_ident(qp, &e->rq_fd, &e->rq_id))
				e->rq_id = 0;
		} else {
			e->qpn = 0;
		}
		seq_close(&e->seq);
	}
	pthread_mutex_unlock(&nic->dx_lock);
}

/* Opens the QP's RQ ring when its peer is a ring peer (direct_send.c
 * copies SENDs into it). */
static void rq_share(struct ur_qp *qp)
{
	struct ur_nic *nic = qp->xp ? qp->xp->nic : NULL;
	int32_t fd;
	uint64_t id;

	/* faults are about packets: the requester copies nothing then */
	if (!nic || !nic->dx_on || !nic->dx_own ||
	    (qp->srq && !nic->srq_copy) ||
	    qp->type != IBV_QPT_RC || ur_rq_ring_ident(qp, &fd, &id) ||
	    ur_link_faulty(nic->link) ||
	    !ur_link_is_ring(nic->link, &qp->av.dest))
		return;
	/* failing, the RQ stays private: its SENDs come as packets */
	(void)ur_rq_ring_open(qp, &qp->xp->resp.held);
}

void ur_dx_send_fini(struct ur_qp *qp)
{
	struct ur_dx_info *d = &qp->xp->dx;

	if (d->rq)
		ur_xring_close(d->rq);
	d->rq = NULL;
}

void ur_direct_qp_update(struct ur_qp *qp)
{
	bool serve = qp_serves(qp);

	if (serve)
		rq_share(qp);
	qp_publish(qp, serve);
	if (!serve)
		ur_rq_ring_close(qp);	/* after no peer can find it */
}

void ur_direct_qp_gone(struct ur_qp *qp)
{
	qp_publish(qp, false);
	ur_rq_ring_free(qp);
	ur_dx_send_fini(qp);
}

/* ------------------------------------------------------------------ */
/* The requester                                                       */
/* ------------------------------------------------------------------ */

/* A stable copy of the target QP's entry, or false. */
bool ur_dx_qp_find(struct dx_table *t, uint32_t qpn, struct dx_qp *out)
{
	unsigned int i;
	uint32_t s;

	for (i = 0; i < DX_PROBES; i++) {
		struct dx_qp *e = &t->qp[(qpn + i) % DX_QPS];

		s = atomic_load_explicit(&e->seq, memory_order_acquire);
		if (s & 1)
			return false;
		memcpy(out, e, sizeof(*out));
		/* an RMW, not a load: its release half keeps the copy before
		 * it (a fence would do, but ThreadSanitizer has none) */
		if (atomic_fetch_add_explicit(&e->seq, 0,
					      memory_order_acq_rel) != s)
			return false;
		if (out->qpn == qpn)
			return true;
	}
	return false;
}

struct dx_hold {
	struct dx_mr *e;
	unsigned int slot;
	struct dx_mr mr;		/* stable copy */
};

/* Claims a holder slot of rkey's entry and copies it; false: no entry,
 * no free slot, or the owner is rewriting it. */
static bool mr_hold(struct dx_table *t, uint32_t rkey, int32_t me,
		    struct dx_hold *h)
{
	unsigned int i, k;
	uint32_t s;

	for (i = 0; i < DX_PROBES; i++) {
		struct dx_mr *e = &t->mr[(rkey + i) % DX_MRS];

		if (e->key != rkey)
			continue;
		s = atomic_load_explicit(&e->seq, memory_order_acquire);
		if (s & 1)
			return false;
		for (k = 0; k < DX_HOLDERS; k++) {
			int32_t none = 0;

			/* seq_cst: before the second read of seq, which
			 * pairs with the owner's seq_open and drain */
			if (atomic_compare_exchange_strong(&e->holder[k],
							   &none, me))
				break;
		}
		if (k == DX_HOLDERS)
			return false;
		memcpy(&h->mr, e, offsetof(struct dx_mr, holder));
		/* seq_cst RMW: after the claim, and the copy before it */
		if (atomic_fetch_add(&e->seq, 0) != s || h->mr.key != rkey) {
			atomic_store_explicit(&e->holder[k], 0,
					      memory_order_release);
			return false;
		}
		h->e = e;
		h->slot = k;
		return true;
	}
	return false;
}

static void mr_release(struct dx_hold *h)
{
	atomic_store_explicit(&h->e->holder[h->slot], 0, memory_order_release);
}

/* The target's host address of [va, va+len) under the held entry, as the
 * responder's ur_mem_check() finds it; false if not granted. */
static bool mr_grants(const struct dx_mr *m, uint32_t pd, unsigned int need,
		      uint64_t va, uint64_t len, uint64_t *host)
{
	if (m->pd != pd || (m->access & need) != need)
		return false;
	if (va < m->iova || len > m->length || va - m->iova > m->length - len)
		return false;
	*host = m->host_base + (va - m->iova);
	return true;
}

/* Is the ring's owner at pid the process that wrote the table we map? */
static int owner_verify(struct dx_table *t, int32_t pid)
{
	uint64_t nonce = 0;
	struct iovec l = { &nonce, sizeof(nonce) };
	struct iovec r = { (void *)(uintptr_t)(t->self +
					       offsetof(struct dx_table,
							nonce)),
			   sizeof(nonce) };

	if (process_vm_readv(pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof(nonce))
		return -errno;
	return nonce == t->nonce ? 0 : -ESRCH;
}

/* The peer behind the QP's destination, checked; NULL (nothing held) when
 * there is none to copy to, or it may not be used. */
struct dx_table *ur_dx_peer_get(struct ur_qp *qp, int32_t *pid)
{
	struct ur_qp_xport *xp = qp->xp;
	struct ur_nic *nic = xp->nic;
	struct dx_table *t;
	uint64_t now;
	int rc;

	t = ur_link_peer_area_get(nic->link, &qp->av.dest, pid);
	if (!t)
		return NULL;
	if (atomic_load_explicit(&t->magic, memory_order_acquire) !=
		    DX_MAGIC ||
	    t->pid != *pid || t->pidns != nic->dx_pidns)
		goto no;
	now = ur_now_ns();
	if (xp->dx.verified && now - xp->dx.verified < UR_DX_REVERIFY_NS)
		return t;
	rc = owner_verify(t, *pid);
	if (rc == -EPERM || rc == -ENOSYS) {
		/* the kernel refuses cross-memory calls to this peer */
		xp->dx.refused = true;
		ur_cnt_stat(&nic->cnt, UR_STAT_DIRECT_REFUSED, 1);
		ur_info("engine: QP %u: same-host copies refused (%s); "
			"packets instead", ur_qp_num(qp), strerror(-rc));
	}
	if (rc)
		goto no;
	xp->dx.verified = now;
	return t;
no:
	ur_link_peer_area_put(nic->link);
	return NULL;
}

/*
 * Another process's XRC SRQ lends its owner's rkeys to a request that this
 * process's target QP handles (xrc_mem.c): the same table, the same
 * holder protocol, for one copy by the responder. The pid is proven as a
 * requester's QP proves it: again once UR_DX_REVERIFY_NS passed since
 * the caller's last proof of that pid (*proof).
 */
int ur_direct_xhold(struct ur_nic *nic, const union ur_sockaddr *addr,
		    int32_t pid, uint32_t pd, uint32_t rkey, unsigned int need,
		    uint64_t va, uint64_t len, struct ur_dx_proof *proof,
		    struct ur_dx_xhold *h, uint64_t *host)
{
	uint64_t now = ur_now_ns();
	struct dx_table *t;
	struct dx_hold d;
	int32_t owner;
	int rc;

	UR_ASSERT_HELD(&nic->shard[0].lock);	/* XRC targets' */
	t = ur_link_peer_area_get(nic->link, addr, &owner);
	if (!t)
		return -EACCES;
	rc = -EACCES;
	if (owner != pid ||
	    atomic_load_explicit(&t->magic, memory_order_acquire) !=
		    DX_MAGIC ||
	    t->pid != pid || t->pidns != nic->dx_pidns)
		goto no;
	if (proof->pid != pid || now - proof->ns >= UR_DX_REVERIFY_NS) {
		proof->pid = 0;
		rc = owner_verify(t, pid);
		if (rc) {
			rc = rc == -EPERM || rc == -ENOSYS ? -EPERM : -EACCES;
			goto no;
		}
		proof->pid = pid;
		proof->ns = now;
	}
	rc = -EACCES;
	if (!mr_hold(t, rkey, nic->dx_self, &d))
		goto no;
	if (!mr_grants(&d.mr, pd, need, va, len, host)) {
		mr_release(&d);
		goto no;
	}
	h->entry = d.e;
	h->slot = d.slot;
	return 0;	/* the area stays mapped until the release */
no:
	ur_link_peer_area_put(nic->link);
	return rc;
}

void ur_direct_xrelease(struct ur_nic *nic, struct ur_dx_xhold *h)
{
	struct dx_hold d = { .e = h->entry, .slot = h->slot };

	mr_release(&d);
	ur_link_peer_area_put(nic->link);
}

/*
 * A batch: pieces of WQEs (their local iovecs and the target ranges), all
 * WRITEs or one READ chunk, moved by one system call. Each MR entry a
 * piece names is held once for the whole batch.
 */
struct dx_batch {
	struct ur_qp *qp;
	struct dx_table *t;
	const struct dx_qp *tq;
	bool write;
	unsigned int nl, nr, nh;
	struct ur_mem *lmem;		/* lkey's, looked up once */
	uint32_t lkey;
	struct iovec liov[UR_DX_BATCH_IOV];
	struct iovec riov[UR_DX_BATCH];
	struct dx_hold hold[UR_DX_BATCH];
};

static void batch_release(struct dx_batch *b)
{
	while (b->nh)
		mr_release(&b->hold[--b->nh]);
}

/* The batch's hold on rkey's entry, taken now if it has none. */
static struct dx_hold *batch_hold(struct dx_batch *b, uint32_t rkey)
{
	unsigned int i;

	for (i = 0; i < b->nh; i++)
		if (b->hold[i].mr.key == rkey)
			return &b->hold[i];
	if (!mr_hold(b->t, rkey, b->qp->xp->nic->dx_self, &b->hold[b->nh]))
		return NULL;
	return &b->hold[b->nh++];
}

/*
 * [off, off+len) of a WQE of one SGE as one local iovec, checked as
 * ur_sgl_map() checks it (an MR of the QP's PD granting the access over
 * the range), its key looked up once per batch: a post list names the
 * same MR again and again, and obj_lock (held) keeps the MR while the
 * batch lasts.
 */
static int batch_local(struct dx_batch *b, const struct ur_sge *s,
		       uint32_t off, uint32_t len, struct iovec *l)
{
	uintptr_t host;

	if (off > s->length || len > s->length - off)
		return -EMSGSIZE;
	if (!b->lmem || b->lkey != s->lkey) {
		struct ur_mem *m = ur_mem_lookup(b->qp->dev, s->lkey);

		if (!m || m->kind != UR_MEM_MR)
			return -EACCES;
		b->lmem = m;
		b->lkey = s->lkey;
	}
	if (ur_mem_check(b->lmem, b->qp->pd, ur_qp_num(b->qp), s->addr + off,
			 len, b->write ? 0 : IBV_ACCESS_LOCAL_WRITE, &host))
		return -EACCES;
	l->iov_base = (void *)host;
	l->iov_len = len;
	return 0;
}

/* Adds [off, off+len) of wqe: 0; -ENOSPC when the batch has no room for
 * it (nothing added); another -errno when it cannot be copied. */
static int batch_add(struct dx_batch *b, struct ur_send_wqe *wqe,
		     uint32_t off, uint32_t len)
{
	unsigned int need = b->write ? IBV_ACCESS_REMOTE_WRITE :
				       IBV_ACCESS_REMOTE_READ;
	struct iovec *l = b->liov + b->nl;
	unsigned int room = UR_DX_BATCH_IOV - b->nl, n = 1;
	struct dx_hold *h;
	uint64_t host;
	int rc;

	if (b->nr == UR_DX_BATCH || !room)
		return -ENOSPC;
	if (wqe->send_flags & IBV_SEND_INLINE) {
		l->iov_base = wqe->inline_data + off;
		l->iov_len = len;
	} else if (wqe->num_sge == 1) {
		rc = batch_local(b, &wqe->sge[0], off, len, l);
		if (rc)
			return rc;
	} else {
		rc = ur_sgl_map(b->qp, wqe->sge, wqe->num_sge, off, len,
				b->write ? 0 : IBV_ACCESS_LOCAL_WRITE, l,
				room, &n);
		if (rc)
			return rc == -EMSGSIZE && b->nr ? -ENOSPC : rc;
	}
	h = batch_hold(b, wqe->rdma.rkey);
	if (!h)
		return -EAGAIN;
	if (!mr_grants(&h->mr, b->tq->pd, need, wqe->rdma.remote_addr + off,
		       len, &host))
		return -EACCES;
	b->riov[b->nr].iov_base = (void *)(uintptr_t)host;
	b->riov[b->nr++].iov_len = len;
	b->nl += n;
	return 0;
}

/* Bytes the batch moved (in order), or -errno. */
static ssize_t batch_copy(struct dx_batch *b, int32_t pid)
{
	ssize_t done;

	done = b->write ? process_vm_writev(pid, b->liov, b->nl, b->riov,
					    b->nr, 0) :
			  process_vm_readv(pid, b->liov, b->nl, b->riov,
					   b->nr, 0);
	batch_release(b);
	return done < 0 ? -errno : done;
}

/* One WQE larger than a batch, by chunks each under its own hold: true
 * when all of it was moved. */
static bool copy_large(struct dx_batch *b, struct ur_send_wqe *wqe,
		       int32_t pid, int *err)
{
	uint32_t off, len;
	ssize_t done;

	for (off = 0; off < wqe->length; off += len) {
		len = UR_MIN(wqe->length - off, UR_DX_CHUNK);
		b->nl = b->nr = 0;
		*err = batch_add(b, wqe, off, len);
		if (*err) {
			batch_release(b);
			return false;
		}
		done = batch_copy(b, pid);
		if (done != (ssize_t)len) {
			*err = done < 0 ? (int)done : -EFAULT;
			return false;
		}
	}
	return true;
}

/* The first n WQEs (small WRITEs, or one READ) in one call: how many
 * were moved whole. */
static unsigned int copy_batch(struct dx_batch *b, struct ur_send_wqe **w,
			       unsigned int n, int32_t pid, int *err)
{
	uint64_t want = 0;
	unsigned int i, k;
	ssize_t done;

	for (i = 0; i < n; i++) {
		*err = batch_add(b, w[i], 0, w[i]->length);
		if (*err)
			break;
		want += w[i]->length;
	}
	if (!i) {
		batch_release(b);
		return 0;
	}
	*err = 0;
	done = batch_copy(b, pid);
	if (done < 0) {
		*err = (int)done;
		return 0;
	}
	if ((uint64_t)done != want)
		*err = -EFAULT;	/* stopped at a fault: what follows is not
				 * written either */
	for (k = 0; k < i && (uint64_t)done >= w[k]->length; k++)
		done -= w[k]->length;
	return k;
}

unsigned int ur_direct_run(struct ur_qp *qp, struct ur_send_wqe **w,
			   unsigned int n)
{
	struct ur_qp_xport *xp = qp->xp;
	struct ur_nic *nic = xp->nic;
	bool write = w[0]->opcode == IBV_WR_RDMA_WRITE ||
		     w[0]->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
	struct dx_batch b;
	struct dx_qp tq;
	uint8_t me[16];
	unsigned int k, i;
	uint64_t bytes = 0;
	int32_t pid;
	int err = 0;

	UR_ASSERT_HELD(&qp->sq_lock);
	if (!nic->dx_on || xp->dx.refused || qp->type != IBV_QPT_RC ||
	    (!write && w[0]->opcode != IBV_WR_RDMA_READ) || !w[0]->length ||
	    ur_link_faulty(nic->link))
		return 0;
	if (!ur_dx_idle(xp))	/* direct_priv.h says why */
		return 0;
	b.t = ur_dx_peer_get(qp, &pid);
	if (!b.t)
		return 0;
	ur_sockaddr_to_gid(&qp->av.src, me);
	if (!ur_dx_qp_find(b.t, qp->attr.dest_qp_num, &tq) ||
	    tq.dest_qpn != ur_qp_num(qp) || memcmp(tq.peer, me, 16) ||
	    !(tq.access & (write ? IBV_ACCESS_REMOTE_WRITE :
				   IBV_ACCESS_REMOTE_READ)) ||
	    (!write && !tq.reads)) {
		ur_link_peer_area_put(nic->link);
		return 0;
	}
	b.qp = qp;
	b.tq = &tq;
	b.write = write;
	b.nl = b.nr = b.nh = 0;
	b.lmem = NULL;
	if (w[0]->length > UR_DX_BATCH_BYTES || !write)
		k = copy_large(&b, w[0], pid, &err) ? 1 : 0;
	else
		k = copy_batch(&b, w, n, pid, &err);
	ur_link_peer_area_put(nic->link);
	if (err && err != -ENOSPC) {
		/* the packet path does the first WQE not moved again whole,
		 * and answers as the IBA says (a WRITE or READ is idempotent
		 * until it completes) */
		ur_cnt_stat(&nic->cnt, UR_STAT_DIRECT_FALLBACKS, 1);
		if (err == -EPERM)
			xp->dx.refused = true;
	}
	for (i = 0; i < k; i++) {
		bytes += w[i]->length;
		if (w[i]->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
			ur_cnt_stat(&nic->cnt, UR_STAT_DIRECT_WRITE_IMMS, 1);
	}
	if (k) {
		ur_cnt_stat(&nic->cnt, write ? UR_STAT_DIRECT_WRITES :
					       UR_STAT_DIRECT_READS, k);
		ur_cnt_stat(&nic->cnt, UR_STAT_DIRECT_BYTES, bytes);
		if (write)
			ur_qcnt_tx(xp->qcnt.req, (uint32_t)bytes);
	}
	return k;
}
