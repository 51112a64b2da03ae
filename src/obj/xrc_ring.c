/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An XRC SRQ of a file-backed domain, shared with the domain's other
 * processes on this host: its receive WQEs and the completions other
 * processes produce for it, in one file per SRQ next to the domain's
 * registry (xsrq-<device>-<st_dev>-<st_ino>-<srq_num>, runtime
 * directory). docs/design.md, "XRC domains across processes", says why
 * delivery is done this way; in short:
 *
 * - The owner (the SRQ's creator) posts: each WQE is written whole into
 *   its slot, with every SGE resolved at post time (key, PD, bounds,
 *   LOCAL_WRITE, host address; a WQE that fails is posted marked bad and
 *   completes with IBV_WC_LOC_PROT_ERR, as a NIC reports a bad receive
 *   SGE), then published by a release store of `posted`.
 * - Any member's target QP takes the oldest WQE by advancing `claimed`
 *   (compare and swap: whichever wins owns it). The owner's own target
 *   QPs take from the same ring, so the SRQ stays one queue; they keep
 *   the lkeys and are checked at copy time as for a private SRQ.
 * - Another process places the payload with process_vm_writev into the
 *   owner's pid at the resolved addresses. The pid is proven the owner's
 *   once per attach (a nonce read back through it) and the owner proven
 *   alive before every copy (its open-file-description lock on the file's
 *   first byte, which the kernel drops when it exits), so a reused pid is
 *   never written to.
 * - Deregistration never races a copy: a copier takes a holder slot (its
 *   pid) before it reads `dereg` and the WQE's state; the owner's dereg
 *   makes `dereg` odd, marks the WQEs naming the key bad, waits for the
 *   holders to leave, then makes it even (all sequentially consistent:
 *   either the owner waits for the copy, or the copier sees the mark).
 *   Destroying the SRQ does the same with `gone`.
 * - The copier's completion goes into the file's completion ring (each
 *   WQE yields one, so it never overflows); the owner's poll_cq moves
 *   them into the SRQ's CQ and frees the slots. A CQ with a completion
 *   channel is waited on instead: the owner's waker thread, which the
 *   copier wakes through a futex in the file, moves them (and so fires
 *   the channel's event).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>

#include "obj/xrc_ring.h"
#include "util/log.h"
#include "util/random.h"
#include "util/thread.h"

/* The owners' rings of this process, for dereg and poll_cq. */
/* (read: poll_cq walks it; write: create, destroy, deregistration) */
static pthread_rwlock_t xr_owned_lock = PTHREAD_RWLOCK_INITIALIZER;
static struct ur_xring *xr_owned;

static int xr_lock0(int fd, short type, int cmd)
{
	struct flock fl = {
		.l_type = type,
		.l_whence = SEEK_SET,
		.l_start = 0,
		.l_len = 1,
	};

	return fcntl(fd, cmd, &fl) ? -errno : 0;
}

/* Creates the file, locked, for an SRQ whose number the registry just
 * gave us: a file left under that name by a dead owner is replaced. */
static int xr_create_file(const char *path, size_t len)
{
	struct stat st;
	int fd, tries;

	for (tries = 0; tries < 8; tries++) {
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 && errno == EEXIST) {
			unlink(path);
			continue;
		}
		if (fd < 0)
			return -errno;
		if (xr_lock0(fd, F_WRLCK, F_OFD_SETLK) || ftruncate(fd, len) ||
		    fstat(fd, &st) || !st.st_nlink) {
			close(fd);
			continue;
		}
		return fd;
	}
	return -EAGAIN;
}

/*
 * Moves the other processes' completions into the CQ (and so fires its
 * channel's event), woken by the takers through the futex word.
 */
static void *xr_waker(void *arg)
{
	struct ur_xring *x = arg;
	struct xr_hdr *h = x->h;

	while (!atomic_load(&x->stop)) {
		uint32_t seq = atomic_load(&h->wake_seq);

		ur_xring_drain_ring(x);
		atomic_store(&h->sleeping, 1);
		if (atomic_load(&h->wake_seq) == seq && !atomic_load(&x->stop))
			xr_futex_wait(&h->wake_seq, seq);
		atomic_store(&h->sleeping, 0);
	}
	return NULL;
}

bool ur_xring_has_cq(struct ur_xring *x, struct ur_cq *cq)
{
	uint32_t i;

	if (!x->mem)
		return false;
	for (i = 0; i < XR_MEMBERS; i++)
		if (atomic_load_explicit(&x->mem[i].cq,
					 memory_order_relaxed) == cq)
			return true;
	return false;
}

int ur_xring_waker(struct ur_xring *x)
{
	bool ok;

	if (x->has_waker)
		return 0;
	atomic_init(&x->stop, false);
	ok = !ur_thread_create(&x->waker, xr_waker, x, "uroce-xrc-wake");
	/* a plain SRQ's starts late, its ring listed already */
	__atomic_store_n(&x->has_waker, ok, __ATOMIC_RELEASE);
	return ok ? 0 : -EAGAIN;
}

int ur_xring_lock0(int fd)
{
	return xr_lock0(fd, F_WRLCK, F_OFD_SETLK);
}

static size_t xr_geometry(uint32_t max_wr, uint32_t max_sge,
			  uint32_t *depth, uint32_t *stride)
{
	*depth = 1;
	while (*depth < max_wr + 1)
		*depth <<= 1;
	*stride = (uint32_t)(sizeof(struct xr_slot) +
			     max_sge * sizeof(struct xr_sge));
	return xr_size(*depth, *stride);
}

/*
 * A ring in fd (the owner's, locked), for a queue of max_wr WQEs of
 * max_sge SGEs of pd completing into cq, whose indices *lock guards:
 * mapped, published (magic) and listed for poll_cq and deregistration.
 */
struct ur_xring *ur_xring_new(int fd, uint32_t max_wr, uint32_t max_sge,
			      struct ur_pd *pd, struct ur_cq *cq,
			      pthread_spinlock_t *lock)
{
	struct ur_xring *x;
	uint32_t depth, stride;
	size_t len = xr_geometry(max_wr, max_sge, &depth, &stride);
	void *p;

	if (ftruncate(fd, (off_t)len))
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	x = p == MAP_FAILED ? NULL : calloc(1, sizeof(*x));
	if (!x) {
		if (p != MAP_FAILED)
			munmap(p, len);
		return NULL;
	}
	x->h = p;
	x->len = len;
	x->fd = fd;
	x->dev = ur_ctx_dev(pd->ibpd.context);
	x->pd = pd;
	x->cq = cq;
	x->lock = lock;
	x->max_wr = max_wr;
	x->h->depth = depth;
	x->h->max_sge = max_sge;
	x->h->stride = stride;
	x->h->pid = (int32_t)getpid();
	x->h->pidns = xr_pidns();
	x->h->nonce = ((uint64_t)ur_random_u32() << 32) | ur_random_u32();
	x->h->self = (uintptr_t)&x->h->nonce;
	x->h->pd = pd->ibpd.handle;
	memcpy(x->h->gid, x->dev->gids[0].gid.raw, sizeof(x->h->gid));
	return x;
}

void ur_xring_start(struct ur_xring *x)
{
	/* a CQ with a channel is waited on, not polled: a thread of ours
	 * moves the other processes' completions (and fires the event) */
	if (x->cq && x->cq->ibcq.channel)
		x->h->no_wake = !!ur_xring_waker(x);
	atomic_store_explicit(&x->h->magic, XR_MAGIC, memory_order_release);
	if (x->cq)
		atomic_fetch_add(&x->cq->xrings, 1);
	pthread_rwlock_wrlock(&xr_owned_lock);
	x->next = xr_owned;
	xr_owned = x;
	pthread_rwlock_unlock(&xr_owned_lock);
}

int ur_xring_create(struct ur_srq *srq)
{
	char path[PATH_MAX];
	struct ur_xring *x;
	uint32_t depth, stride;
	int fd;

	xr_path(path, sizeof(path), srq->xrc_host, srq->srq_num);
	fd = xr_create_file(path, xr_geometry(srq->rq.max_wr, srq->rq.max_sge,
					      &depth, &stride));
	if (fd < 0)
		return fd;
	x = ur_xring_new(fd, srq->rq.max_wr, srq->rq.max_sge, srq->pd,
			 srq->xrc_cq, &srq->lock);
	if (!x) {
		unlink(path);
		close(fd);
		return -ENOMEM;
	}
	x->srqn = srq->srq_num;
	x->srq = srq;
	ur_xring_start(x);
	srq->xring = x;
	return 0;
}

/* Waits until no copier is inside (a dead one is cleared). */
static void xr_wait_holders(struct xr_hdr *h)
{
	unsigned int i, tries;
	int32_t pid;

	for (i = 0; i < XR_HOLDERS; i++) {
		for (tries = 0; (pid = atomic_load(&h->holder[i])); tries++) {
			if ((tries % 64 == 63 && kill(pid, 0) && errno == ESRCH) ||
			    tries > XR_WAIT_TRIES) {
				atomic_compare_exchange_strong(&h->holder[i],
							       &pid, 0);
				break;
			}
			sched_yield();
		}
	}
}

void ur_xring_wait_holders(struct ur_xring *x)
{
	xr_wait_holders(x->h);
}

/* Unlisted, its waker stopped, unmapped (the caller made sure no copy is
 * inside and moved what it wanted of the completions). */
void ur_xring_free(struct ur_xring *x)
{
	struct ur_xring **pp;

	pthread_rwlock_wrlock(&xr_owned_lock);
	for (pp = &xr_owned; *pp; pp = &(*pp)->next)
		if (*pp == x) {
			*pp = x->next;
			break;
		}
	pthread_rwlock_unlock(&xr_owned_lock);
	if (x->has_waker) {
		atomic_store(&x->stop, true);
		atomic_fetch_add(&x->h->wake_seq, 1);
		xr_futex_wake(&x->h->wake_seq);
		pthread_join(x->waker, NULL);
	}
	if (x->cq)
		atomic_fetch_sub(&x->cq->xrings, 1);
	xr_unmap(x);		/* and the lock */
}

void ur_xring_destroy(struct ur_srq *srq)
{
	struct ur_xring *x = srq->xring;
	char path[PATH_MAX];

	if (!x)
		return;
	ur_xring_drain_ring(x);
	atomic_store(&x->h->gone, 1);
	xr_wait_holders(x->h);
	if (srq->xrcd) {
		xr_path(path, sizeof(path), srq->xrc_host, srq->srq_num);
		unlink(path);
	}
	srq->xring = NULL;
	ur_xring_free(x);	/* the SRQ is gone */
}

/* Resolves one SGE as the responder would check it (obj_lock held). */
static bool xr_resolve(struct ur_xring *x, struct xr_sge *s)
{
	struct ur_mem *m;
	uintptr_t host = 0;

	if (!s->length)
		return true;
	m = ur_mem_lookup(x->dev, s->lkey);
	if (!m || ur_mem_check(m, x->pd, 0, s->iova, s->length,
			       IBV_ACCESS_LOCAL_WRITE, &host))
		return false;
	s->host = host;
	return true;
}

/*
 * Whether the WQE in slot idx was taken by a process that died before it
 * handed back its completion (srq->lock held, as the drain holds it): its
 * slot would stay taken, and the ring stuck there, for ever. A pid reused
 * since reads as alive: the slot stays taken, nothing is overwritten.
 */
static bool xr_orphan(struct ur_xring *x, uint64_t idx)
{
	struct xr_slot *s = xr_slot(x, idx);
	struct xr_hdr *h = x->h;
	uint64_t t, head = atomic_load(&h->cq_head);

	if (!(atomic_load(&s->state) & XR_REMOTE) || s->taker <= 0 ||
	    !kill(s->taker, 0) || errno != ESRCH)
		return false;
	for (t = atomic_load(&h->cq_tail); t != head; t++) {
		struct xr_cqe *e = xr_cqe(x, t);

		if (atomic_load(&e->seq) == (uint32_t)(t + 1) &&
		    !((e->idx ^ idx) & (h->depth - 1)))
			return false;	/* its completion is there */
	}
	return true;
}

/* Their WQEs complete flushed, as a NIC flushes the WQE a destroyed
 * target QP held. */
static void xr_flush_reaped(struct ur_xring *x, const uint64_t *wr_id,
			    unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		struct ibv_wc wc = {
			.wr_id = wr_id[i],
			.status = IBV_WC_WR_FLUSH_ERR,
			.opcode = IBV_WC_RECV,
		};

		ur_cq_push(x->cq, &wc, false);
	}
}

int ur_xring_post_locked(struct ur_xring *x, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad, bool resolve)
{
	struct xr_hdr *h = x->h;
	uint64_t reaped[XR_REAP_MAX];
	unsigned int nreaped = 0;
	int err = 0;

	for (; wr; wr = wr->next) {
		uint64_t p = atomic_load_explicit(&h->posted,
						  memory_order_relaxed);
		struct xr_slot *s = xr_slot(x, p);
		uint32_t i, len = 0, state = XR_POSTED;

		if (nreaped < XR_REAP_MAX && xr_orphan(x, p)) {
			reaped[nreaped++] = s->wr_id;
			atomic_store(&s->state, 0);
		}

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > h->max_sge) {
			err = -EINVAL;
			break;
		}
		/* full: as many taken-but-not-completed ones count */
		if (p - atomic_load(&h->claimed) >= x->max_wr ||
		    atomic_load_explicit(&s->state, memory_order_acquire)) {
			err = -ENOMEM;
			break;
		}
		s->wr_id = wr->wr_id;
		s->num_sge = (uint32_t)wr->num_sge;
		for (i = 0; i < s->num_sge; i++) {
			s->sge[i] = (struct xr_sge){
				.iova = wr->sg_list[i].addr,
				.length = wr->sg_list[i].length,
				.lkey = wr->sg_list[i].lkey,
			};
			if (!resolve || !xr_resolve(x, &s->sge[i]))
				state |= XR_BAD;
			len += wr->sg_list[i].length;
		}
		s->length = len;
		atomic_store_explicit(&s->state, state, memory_order_release);
		atomic_store_explicit(&h->posted, p + 1, memory_order_release);
	}
	xr_flush_reaped(x, reaped, nreaped);
	if (err && bad)
		*bad = wr;
	return err;
}

int ur_xring_post(struct ur_srq *srq, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad)
{
	struct ur_device *dev = ur_ctx_dev(srq->ibsrq.context);
	int err;

	pthread_rwlock_rdlock(&dev->obj_lock);
	pthread_spin_lock(&srq->lock);
	err = ur_xring_post_locked(srq->xring, wr, bad, true);
	pthread_spin_unlock(&srq->lock);
	pthread_rwlock_unlock(&dev->obj_lock);
	return err;
}

/* Fires IBV_EVENT_SRQ_LIMIT_REACHED once when the queue drops below an
 * armed limit (the owner's side: local takes and drains). */
static void xr_limit(struct ur_srq *srq)
{
	struct xr_hdr *h = srq->xring->h;
	bool fire = false;

	pthread_spin_lock(&srq->lock);
	fire = ur_srq_limit_crossed(srq, atomic_load(&h->posted) -
						 atomic_load(&h->claimed));
	pthread_spin_unlock(&srq->lock);
	if (fire)
		ur_srq_limit_reached(srq);
}

int ur_xring_take_local(struct ur_srq *srq, struct ur_recv_wqe *out)
{
	if (ur_xring_claim(srq->xring, out, false) < 0)
		return -EAGAIN;
	xr_limit(srq);
	return 0;
}

unsigned int ur_xring_drain(struct ur_srq *srq)
{
	return ur_xring_drain_ring(srq->xring);
}

/* A plain SRQ's member QP qpn (*x->lock held), or NULL. */
static struct xr_member *xr_member(struct ur_xring *x, uint32_t qpn)
{
	uint32_t i;

	for (i = 0; i < XR_MEMBERS; i++)
		if (x->mem[i].qpn == qpn && x->mem[i].qp)
			return &x->mem[i];
	return NULL;
}

/*
 * Moves the handed-back completions into their CQs in the ring's order.
 * A QP whose responder holds older completions until their ACK left
 * (defer) stops the drain at its first one, unless force (all) or it is
 * qpn (a QP that leaves): its responder drains again after it pushed
 * them.
 */
static unsigned int xr_drain(struct ur_xring *x, bool force, uint32_t qpn)
{
	struct xr_hdr *h = x->h;
	unsigned int n = 0;
	uint64_t t;

	/* nothing handed back: poll_cq asks at every call */
	if (atomic_load_explicit(&h->cq_head, memory_order_acquire) ==
	    atomic_load_explicit(&h->cq_tail, memory_order_relaxed))
		return 0;
	/* a QP's own RQ: completions the responder holds until their ACK
	 * left are older, and it drains this after pushing them */
	if (!force && x->defer && __atomic_load_n(x->defer, __ATOMIC_SEQ_CST))
		return 0;
	pthread_spin_lock(x->lock);
	t = atomic_load_explicit(&h->cq_tail, memory_order_relaxed);
	for (;; t++, n++) {
		struct xr_cqe *e = xr_cqe(x, t);
		struct xr_member *m = NULL;
		struct ur_cq *cq = x->cq;
		struct xr_slot *s;
		struct ibv_wc wc;

		if (atomic_load_explicit(&e->seq, memory_order_acquire) !=
		    (uint32_t)(t + 1))
			break;
		if (x->mem) {
			/* a copy names an open member (ur_xring_send), and
			 * a member leaves only once its own are drained */
			m = xr_member(x, e->qp_num);
			if (m && !force && e->qp_num != qpn && m->defer &&
			    __atomic_load_n(m->defer, __ATOMIC_SEQ_CST))
				break;
			cq = m ? atomic_load(&m->cq) : NULL;
		}
		s = xr_slot(x, e->idx);
		memset(&wc, 0, sizeof(wc));
		wc.wr_id = s->wr_id;
		wc.status = e->status;
		wc.opcode = e->opcode;
		wc.byte_len = e->byte_len;
		wc.imm_data = e->imm;
		wc.wc_flags = e->wc_flags;
		wc.qp_num = e->qp_num;
		wc.src_qp = e->src_qp;
		atomic_store_explicit(&s->state, 0, memory_order_release);
		/* an overrun is the CQ's to report (IBV_EVENT_CQ_ERR), and
		 * a QP's RQ's fails the QP (class G: engine/direct_send.c) */
		if (cq && ur_cq_push(cq, &wc, e->flags & XR_CQE_SOLICITED)) {
			if (m) {
				atomic_store(&m->overran, true);
				/* poll_cq looks at the members after it */
				atomic_store(&x->overran, true);
			} else if (x->qp)
				atomic_store(&x->overran, true);
		}
	}
	atomic_store_explicit(&h->cq_tail, t, memory_order_release);
	pthread_spin_unlock(x->lock);
	if (n && x->srq)
		xr_limit(x->srq);
	return n;
}

unsigned int ur_xring_drain_ring(struct ur_xring *x)
{
	return xr_drain(x, false, 0);
}

unsigned int ur_xring_drain_all(struct ur_xring *x)
{
	return xr_drain(x, true, 0);
}

unsigned int ur_xring_drain_qp(struct ur_xring *x, uint32_t qpn)
{
	return xr_drain(x, false, qpn);
}

void ur_xring_drain_cq(struct ur_cq *cq)
{
	struct ur_xring *x;

	pthread_rwlock_rdlock(&xr_owned_lock);
	for (x = xr_owned; x; x = x->next)
		if (x->cq == cq || ur_xring_has_cq(x, cq))
			ur_xring_drain_ring(x);
	pthread_rwlock_unlock(&xr_owned_lock);
}

/* A member of x whose completions overran cq, or NULL (x->overran was
 * set: it is set again while other members' wait). */
static struct ur_qp *xr_member_overran(struct ur_xring *x, struct ur_cq *cq)
{
	struct ur_qp *qp = NULL;
	bool more = false;
	uint32_t i;

	/* members leave under the lock */
	pthread_spin_lock(x->lock);
	for (i = 0; i < XR_MEMBERS; i++) {
		struct xr_member *m = &x->mem[i];

		if (!m->qp || !atomic_load(&m->overran))
			continue;
		if (!qp && atomic_load(&m->cq) == cq) {
			atomic_store(&m->overran, false);
			qp = m->qp;
		} else {
			more = true;
		}
	}
	pthread_spin_unlock(x->lock);
	if (more)
		atomic_store(&x->overran, true);
	return qp;
}

struct ur_qp *ur_xring_overran(struct ur_cq *cq)
{
	struct ur_qp *qp = NULL;
	struct ur_xring *x;

	pthread_rwlock_rdlock(&xr_owned_lock);
	for (x = xr_owned; x && !qp; x = x->next) {
		if (x->cq == cq && x->qp && atomic_exchange(&x->overran, false))
			qp = x->qp;
		if (x->mem && !qp && atomic_exchange(&x->overran, false))
			qp = xr_member_overran(x, cq);
	}
	pthread_rwlock_unlock(&xr_owned_lock);
	return qp;
}

void ur_xring_mr_gone(struct ur_device *dev, uint32_t lkey)
{
	struct ur_xring *x;

	/* as a writer: one deregistration at a time keeps `dereg` odd for
	 * the whole of each */
	pthread_rwlock_wrlock(&xr_owned_lock);
	for (x = xr_owned; x; x = x->next) {
		struct xr_hdr *h = x->h;
		uint32_t i, j;

		if (x->dev != dev)
			continue;
		atomic_fetch_add(&h->dereg, 1);		/* odd */
		for (i = 0; i < h->depth; i++) {
			struct xr_slot *s = xr_slot(x, i);

			if (!atomic_load(&s->state))
				continue;
			for (j = 0; j < s->num_sge && j < h->max_sge; j++)
				if (s->sge[j].lkey == lkey && s->sge[j].length)
					atomic_fetch_or(&s->state, XR_BAD);
		}
		xr_wait_holders(h);
		atomic_fetch_add(&h->dereg, 1);		/* even */
	}
	pthread_rwlock_unlock(&xr_owned_lock);
}

