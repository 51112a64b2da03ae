/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A shared XRC SRQ (xrc_ring.c says what it is) as the domain's other
 * processes use it: find its file, prove its owner, take WQEs, write
 * into the owner's memory and hand back completions.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <string.h>
#include <sys/uio.h>
#include <stdio.h>

#include "obj/xrc_ring.h"

/* Whether the owner still holds its lock (asked through our own open
 * file description, which conflicts with its); an error reads as dead. */
static bool xr_owner_alive(const struct ur_xring *x)
{
	struct flock fl = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
		.l_start = 0,
		.l_len = 1,
	};

	if (fcntl(x->fd, F_OFD_GETLK, &fl))
		return false;
	return fl.l_type != F_UNLCK;
}

/* Copies the WQE out, then wins it by moving `claimed` past it (a
 * loser's copy is discarded: the slot is rewritten only after its winner
 * is done with it). */
int64_t ur_xring_claim(struct ur_xring *x, struct ur_recv_wqe *out,
			bool remote)
{
	struct xr_hdr *h = x->h;
	uint64_t c = atomic_load(&h->claimed);

	for (;;) {
		struct xr_slot *s;
		uint32_t i;

		if (c >= atomic_load_explicit(&h->posted, memory_order_acquire))
			return -1;
		s = xr_slot(x, c);
		out->wr_id = remote ? c : s->wr_id;
		out->num_sge = s->num_sge < h->max_sge ? s->num_sge :
							 h->max_sge;
		out->length = s->length;
		for (i = 0; i < out->num_sge; i++) {
			out->sge[i].addr = remote ? s->sge[i].host :
						    s->sge[i].iova;
			out->sge[i].length = s->sge[i].length;
			out->sge[i].lkey = remote ? 0 : s->sge[i].lkey;
		}
		if (atomic_compare_exchange_weak(&h->claimed, &c, c + 1))
			break;
	}
	if (remote) {
		xr_slot(x, c)->taker = (int32_t)getpid();
		atomic_fetch_or(&xr_slot(x, c)->state, XR_REMOTE);
	}
	else
		atomic_store_explicit(&xr_slot(x, c)->state, 0,
				      memory_order_release);
	return (int64_t)c;
}

/* Whether pid is the owner: its nonce read back through the pid. */
static int xr_verify(const struct xr_hdr *h)
{
	uint64_t got = 0;
	struct iovec l = { .iov_base = &got, .iov_len = sizeof(got) };
	struct iovec r = { .iov_base = (void *)(uintptr_t)h->self,
			   .iov_len = sizeof(got) };

	if (h->pidns != xr_pidns())
		return -EPERM;
	if (process_vm_readv(h->pid, &l, 1, &r, 1, 0) != (ssize_t)sizeof(got))
		return errno == ESRCH ? -ENODEV : -EPERM;
	return got == h->nonce ? 0 : -ENODEV;
}

static int xr_open(struct ur_xrc_host *host, uint32_t srqn,
		   struct ur_xring **out)
{
	char path[PATH_MAX];
	struct ur_xring *x;
	struct stat st;
	void *p;
	int err;

	xr_path(path, sizeof(path), host, srqn);
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->srqn = srqn;
	x->fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (x->fd < 0 || fstat(x->fd, &st) ||
	    (size_t)st.st_size < xr_hdr_len()) {
		xr_unmap(x);
		return -ENODEV;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 x->fd, 0);
	if (p == MAP_FAILED) {
		xr_unmap(x);
		return -ENOMEM;
	}
	x->h = p;
	x->len = (size_t)st.st_size;
	err = -ENODEV;
	if (atomic_load_explicit(&x->h->magic, memory_order_acquire) ==
		    XR_MAGIC &&
	    x->h->depth && !(x->h->depth & (x->h->depth - 1)) &&
	    x->h->max_sge <= UR_MAX_SGE &&
	    x->h->stride == sizeof(struct xr_slot) +
				    x->h->max_sge * sizeof(struct xr_sge) &&
	    xr_size(x->h->depth, x->h->stride) == x->len &&
	    xr_owner_alive(x))
		err = x->h->no_wake ? -EOPNOTSUPP : xr_verify(x->h);
	if (err) {
		xr_unmap(x);
		return err;
	}
	*out = x;
	return 0;
}

int ur_xring_attach(struct ur_xrc_host *host, struct ur_xring **cache,
		    uint32_t srqn, struct ur_xring **out)
{
	struct ur_xring **pp, *x;
	int err;

	for (pp = cache; (x = *pp); pp = &x->next) {
		if (x->srqn != srqn)
			continue;
		if (!atomic_load(&x->h->gone) && xr_owner_alive(x)) {
			*out = x;
			return 0;
		}
		*pp = x->next;	/* destroyed: a new one may have the number */
		xr_unmap(x);
		break;
	}
	err = xr_open(host, srqn, &x);
	if (err)
		return err;
	x->next = *cache;
	*cache = x;
	*out = x;
	return 0;
}

void ur_xring_cache_free(struct ur_xring **cache)
{
	struct ur_xring *x;

	while ((x = *cache)) {
		*cache = x->next;
		xr_unmap(x);
	}
}

uint64_t ur_xring_id(const struct ur_xring *x)
{
	return x->h->nonce;
}

void ur_xring_owner(const struct ur_xring *x, int32_t *pid, uint32_t *pd,
		    uint8_t gid[16])
{
	*pid = x->h->pid;
	*pd = x->h->pd;
	memcpy(gid, x->h->gid, 16);
}

int ur_xring_take(struct ur_xring *x, struct ur_recv_wqe *out)
{
	return ur_xring_claim(x, out, true) < 0 ? -EAGAIN : 0;
}

static bool xr_enter(struct xr_hdr *h, unsigned int *slot)
{
	int32_t me = (int32_t)getpid();
	unsigned int i, tries;

	for (tries = 0; tries < XR_WAIT_TRIES; tries++) {
		for (i = 0; i < XR_HOLDERS; i++) {
			int32_t zero = 0;

			if (!atomic_compare_exchange_strong(&h->holder[i],
							    &zero, me))
				continue;
			if (!(atomic_load(&h->dereg) & 1)) {
				*slot = i;
				return true;
			}
			atomic_store(&h->holder[i], 0);
			break;
		}
		sched_yield();
	}
	return false;
}

int ur_xring_copy(struct ur_xring *x, const struct ur_recv_wqe *w,
		  uint32_t off, const void *src, uint32_t len)
{
	struct iovec local = { .iov_base = (void *)src, .iov_len = len };
	struct iovec remote[UR_MAX_SGE];
	struct xr_hdr *h = x->h;
	unsigned int n = 0, i, slot;
	uint32_t left = len;
	ssize_t done;
	int err = 0;

	if ((uint64_t)off + len > w->length)
		return -EMSGSIZE;
	if (!len)
		return 0;
	for (i = 0; i < w->num_sge && left; i++) {
		uint32_t l = w->sge[i].length;

		if (off >= l) {
			off -= l;
			continue;
		}
		remote[n].iov_base = (void *)(uintptr_t)(w->sge[i].addr + off);
		remote[n].iov_len = l - off < left ? l - off : left;
		left -= (uint32_t)remote[n].iov_len;
		off = 0;
		n++;
	}
	if (!xr_enter(h, &slot))
		return -EBUSY;
	if (atomic_load(&h->gone) || !xr_owner_alive(x))
		err = -ENODEV;
	else if (atomic_load(&xr_slot(x, w->wr_id)->state) & XR_BAD)
		err = -EACCES;
	if (!err) {
		done = process_vm_writev(h->pid, &local, 1, remote, n, 0);
		if (done != (ssize_t)len)
			err = done < 0 && errno == ESRCH ? -ENODEV : -EFAULT;
	}
	atomic_store(&h->holder[slot], 0);
	return err;
}


static void xr_complete(struct ur_xring *x, uint64_t idx,
			const struct ibv_wc *wc, bool solicited)
{
	struct xr_hdr *h = x->h;
	uint64_t p = atomic_fetch_add(&h->cq_head, 1);
	struct xr_cqe *e = xr_cqe(x, p);

	e->status = wc->status;
	e->opcode = wc->opcode;
	e->byte_len = wc->byte_len;
	e->imm = wc->imm_data;
	e->wc_flags = wc->wc_flags;
	e->qp_num = wc->qp_num;
	e->src_qp = wc->src_qp;
	e->idx = idx;
	e->flags = solicited ? XR_CQE_SOLICITED : 0;
	atomic_store_explicit(&e->seq, (uint32_t)(p + 1), memory_order_release);
	/* the owner's waker, if it sleeps: it either sees the new count
	 * before it sleeps or is seen sleeping here (both seq_cst) */
	atomic_fetch_add(&h->wake_seq, 1);
	if (atomic_load(&h->sleeping))
		xr_futex_wake(&h->wake_seq);
}

void ur_xring_complete(struct ur_xring *x, uint64_t idx,
		       const struct ibv_wc *wc)
{
	xr_complete(x, idx, wc, false);
}

/*
 * A QP's RQ ring of another process (rq_ring.c), for the requester of a
 * same-host SEND (engine/direct_send.c): opened through the owner's fd,
 * which only a process allowed to write the owner's memory may open, and
 * taken for the owner's only if it carries the identity its table names.
 */
int ur_xring_open_fd(int32_t pid, int32_t fd, uint64_t id,
		     struct ur_xring **out)
{
	char path[64];
	struct ur_xring *x;
	struct stat st;
	void *p;
	int err = -ENODEV;

	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, (int)fd);
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (x->fd < 0 || fstat(x->fd, &st) || !S_ISREG(st.st_mode) ||
	    (size_t)st.st_size < xr_hdr_len()) {
		err = x->fd < 0 && errno == EACCES ? -EPERM : -ENODEV;
		xr_unmap(x);
		return err;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 x->fd, 0);
	if (p == MAP_FAILED) {
		xr_unmap(x);
		return -ENOMEM;
	}
	x->h = p;
	x->len = (size_t)st.st_size;
	if (atomic_load_explicit(&x->h->magic, memory_order_acquire) ==
		    XR_MAGIC &&
	    x->h->nonce == id && x->h->pid == pid &&
	    x->h->pidns == xr_pidns() && !x->h->no_wake &&
	    x->h->depth && !(x->h->depth & (x->h->depth - 1)) &&
	    x->h->max_sge <= UR_MAX_SGE &&
	    x->h->stride == sizeof(struct xr_slot) +
				    x->h->max_sge * sizeof(struct xr_sge) &&
	    xr_size(x->h->depth, x->h->stride) == x->len)
		err = 0;
	if (err) {
		xr_unmap(x);
		return err;
	}
	*out = x;
	return 0;
}

void ur_xring_close(struct ur_xring *x)
{
	xr_unmap(x);
}

/* A holder slot, at once or not at all (a deregistration in progress,
 * or the slots full, sends the message as packets). */
static bool xr_enter_once(struct xr_hdr *h, int32_t me, unsigned int *slot)
{
	unsigned int i;

	for (i = 0; i < XR_HOLDERS; i++) {
		int32_t zero = 0;

		if (!atomic_compare_exchange_strong(&h->holder[i], &zero, me))
			continue;
		if (atomic_load(&h->dereg) & 1) {
			atomic_store(&h->holder[i], 0);
			return false;
		}
		*slot = i;
		return true;
	}
	return false;
}

/* Whether a plain SRQ's ring has qpn open to copies (read inside a
 * holder slot: its leave waits for us, or we see it gone). */
static bool xr_open_member(struct xr_hdr *h, uint32_t qpn)
{
	uint32_t i;

	for (i = 0; i < XR_MEMBERS; i++)
		if (atomic_load(&h->member[i]) == qpn)
			return true;
	return false;
}

/* The remote pieces of claim index c for a message of len bytes
 * appended at r[*nr] (room: max): 0, -EAGAIN (none posted), -EINVAL (it
 * did not resolve or is too short), -ENOSPC (no room). */
static int xr_send_slot(struct ur_xring *x, uint64_t c, uint32_t len,
			struct iovec *r, unsigned int *nr, unsigned int max)
{
	struct xr_hdr *h = x->h;
	struct xr_slot *s;
	unsigned int i, n = *nr;
	uint32_t st, left = len;

	if (c >= atomic_load_explicit(&h->posted, memory_order_acquire))
		return -EAGAIN;
	s = xr_slot(x, c);
	st = atomic_load_explicit(&s->state, memory_order_acquire);
	/* a WQE that did not resolve, or too short: the responder takes
	 * it and answers as the IBA says */
	if (!(st & XR_POSTED) || (st & XR_BAD) || s->length < len)
		return -EINVAL;
	for (i = 0; i < s->num_sge && i < h->max_sge && left; i++) {
		uint32_t l = s->sge[i].length < left ? s->sge[i].length : left;

		if (!l)
			continue;
		if (n == max)
			return -ENOSPC;
		r[n].iov_base = (void *)(uintptr_t)s->sge[i].host;
		r[n++].iov_len = l;
		left -= l;
	}
	if (left)
		return -EINVAL;
	*nr = n;
	return 0;
}

/* Gives back claims [c+from, c+to) nobody took past: true if they are
 * the oldest again. */
static bool xr_unclaim(struct ur_xring *x, uint64_t c, unsigned int from,
		       unsigned int to)
{
	uint64_t want = c + to;
	unsigned int i;

	for (i = from; i < to; i++) {
		xr_slot(x, c + i)->taker = 0;
		atomic_fetch_and(&xr_slot(x, c + i)->state, ~XR_REMOTE);
	}
	if (atomic_compare_exchange_strong(&x->h->claimed, &want, c + from))
		return true;
	for (i = from; i < to; i++) {
		xr_slot(x, c + i)->taker = (int32_t)getpid();
		atomic_fetch_or(&xr_slot(x, c + i)->state, XR_REMOTE);
	}
	return false;
}

int ur_xring_send(struct ur_xring *x, int32_t me, struct ur_xsend *m,
		  unsigned int n, unsigned int *copied)
{
	struct iovec local[UR_XSEND_IOV], remote[UR_XSEND_IOV];
	struct xr_hdr *h = x->h;
	unsigned int slot, k = 0, i, nl = 0, nr = 0;
	uint64_t c, want = 0;
	ssize_t done, got;
	int err = 0, why = 0;

	*copied = 0;
	if (!xr_enter_once(h, me, &slot))
		return -EBUSY;
	if (atomic_load(&h->gone) ||
	    (h->srq_members && !xr_open_member(h, m[0].wc.qp_num))) {
		err = -ENODEV;
		goto out;
	}
	c = atomic_load(&h->claimed);
	for (;;) {
		/* completions not moved into the CQ yet, which they would
		 * overrun: the responder of the packets finds that */
		uint64_t waiting = atomic_load(&h->cq_head) -
				   atomic_load(&h->cq_tail);

		/* the oldest WQEs, as many as fit the call */
		why = 0;
		for (k = nr = nl = 0; k < n; k++) {
			unsigned int r0 = nr;

			if (h->cq_room && waiting + k >= h->cq_room) {
				why = -EAGAIN;
				break;
			}
			if (nl + m[k].nlocal > UR_XSEND_IOV) {
				why = -ENOSPC;
				break;
			}
			why = xr_send_slot(x, c + k, m[k].len, remote, &nr,
					   UR_XSEND_IOV);
			if (why) {
				nr = r0;
				break;
			}
			memcpy(local + nl, m[k].local,
			       m[k].nlocal * sizeof(*local));
			nl += m[k].nlocal;
		}
		if (!k) {
			err = why;
			goto out;
		}
		/* the loser's reading is dropped: a slot is written again
		 * only once its winner is done with it */
		if (atomic_compare_exchange_strong(&h->claimed, &c, c + k))
			break;
	}
	for (i = 0; i < k; i++) {
		struct xr_slot *s = xr_slot(x, c + i);

		s->taker = me;
		atomic_fetch_or(&s->state, XR_REMOTE);
		want += m[i].len;
	}
	done = want ? process_vm_writev(h->pid, local, nl, remote, nr, 0) : 0;
	if (done < 0 && errno == EFAULT)
		done = 0;
	if (done < 0 && errno == ESRCH) {
		err = -ENODEV;	/* the owner died: nobody to complete to */
		goto out;
	}
	if (done < 0)
		done = 0;
	got = done;
	/* the kernel stops at a fault: the messages before it landed whole;
	 * the one it stopped in and those behind it go back, untaken, for
	 * the packets, whose responder answers the fault as the IBA says
	 * (its QP to ERR, NAK) */
	for (i = 0; i < k && (uint64_t)done >= m[i].len; i++)
		done -= m[i].len;
	if (i < k && xr_unclaim(x, c, i, k)) {
		for (k = i, i = 0; i < k; i++) {
			struct ibv_wc wc = m[i].wc;

			wc.byte_len = m[i].len;
			xr_complete(x, c + i, &wc, m[i].solicited);
		}
		*copied = k;
		err = -EIO;
		goto out;
	}
	/* taken again meanwhile (an SRQ's): the one it stopped in fails, and
	 * those behind it are flushed, as the NAK would move the target QP
	 * to ERR */
	done = got;
	for (i = 0; i < k; i++) {
		struct ibv_wc wc = m[i].wc;

		wc.byte_len = m[i].len;
		if (!err && (uint64_t)done >= m[i].len) {
			done -= m[i].len;
			(*copied)++;
		} else if (!err) {
			err = -EFAULT;
			wc.status = IBV_WC_LOC_PROT_ERR;
		} else {
			wc.status = IBV_WC_WR_FLUSH_ERR;
		}
		xr_complete(x, c + i, &wc, m[i].solicited);
	}
out:
	atomic_store(&h->holder[slot], 0);
	return err ? err : why;
}
