/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The layout of a shared XRC SRQ's file (xrc_ring.c, the owner's side;
 * xrc_ring_take.c, the other processes'), and what both sides read it
 * with.
 */
#ifndef UR_OBJ_XRC_RING_H
#define UR_OBJ_XRC_RING_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "obj/obj_priv.h"

#define XR_MAGIC 0x75587233u	/* "uXr3" */
#define XR_HOLDERS 8u
#define XR_WAIT_TRIES 100000u	/* a copier leaves in microseconds */
#define XR_REAP_MAX 16u		/* dead takers' WQEs flushed per post */
#define XR_MEMBERS 64u		/* a plain SRQ's QPs that copies may name */

#define XR_CQE_SOLICITED 1u	/* a solicited event's SEND */

enum {
	XR_POSTED = 1u,		/* holds a WQE not yet taken */
	XR_REMOTE = 2u,		/* taken by another process: freed at drain */
	XR_BAD = 4u,		/* an SGE does not (or no longer) resolve */
};

struct xr_sge {
	uint64_t iova;
	uint64_t host;
	uint32_t length;
	uint32_t lkey;
};

struct xr_slot {
	_Atomic uint32_t state;
	uint32_t num_sge;
	uint32_t length;
	int32_t taker;			/* XR_REMOTE: the pid that took it */
	uint64_t wr_id;
	struct xr_sge sge[];
};

struct xr_cqe {
	_Atomic uint32_t seq;		/* its position + 1, once written */
	uint32_t status;
	uint32_t opcode;
	uint32_t byte_len;
	uint32_t imm;			/* network order, as ibv_wc's */
	uint32_t wc_flags;
	uint32_t qp_num;
	uint32_t src_qp;
	uint64_t idx;			/* the WQE's claim index */
	uint32_t flags;			/* XR_CQE_* */
	uint32_t pad;
};

struct xr_hdr {
	_Atomic uint32_t magic;		/* stored last */
	uint32_t depth;			/* slots, power of two */
	uint32_t max_sge;
	uint32_t stride;
	int32_t pid;
	uint32_t no_wake;		/* its CQ waits on a channel and no
					 * thread of the owner's drains */
	uint64_t pidns;
	uint64_t nonce;			/* read back through pid */
	uint64_t self;			/* &nonce in the owner */
	uint32_t pd;			/* the SRQ's PD handle: its rkeys' */
	uint8_t gid[16];		/* the owner's device address: its
					 * same-host table (engine/direct.c) */
	_Atomic uint32_t gone;		/* the SRQ is being destroyed */
	_Atomic uint32_t dereg;		/* odd while keys are withdrawn */
	_Atomic int32_t holder[XR_HOLDERS];	/* pids inside a copy */
	uint32_t cq_room;		/* a QP's RQ: its CQ's size (cqe), which
					 * completions waiting here may not
					 * reach (the packets' responder then
					 * finds the overrun); 0: unbounded */
	_Atomic uint32_t wake_seq;	/* futex: completions handed back */
	_Atomic uint32_t sleeping;	/* the owner's waker waits on it */
	uint32_t srq_members;		/* a plain SRQ's: a copy names a QP of
					 * member[] (rq_ring.c) */
	_Atomic uint32_t member[XR_MEMBERS];	/* its QPs open to copies */
	alignas(64) _Atomic uint64_t posted;
	alignas(64) _Atomic uint64_t claimed;
	alignas(64) _Atomic uint64_t cq_head;
	alignas(64) _Atomic uint64_t cq_tail;
};

/* The owner's view of a plain SRQ's QP that same-host SENDs copy into:
 * where its completions go and what holds them back (ur_xring.lock). */
struct xr_member {
	uint32_t qpn;
	struct ur_qp *qp;
	_Atomic(struct ur_cq *) cq;
	const unsigned int *defer;
	atomic_bool overran;
};

struct ur_xring {
	struct xr_hdr *h;
	size_t len;
	int fd;
	uint32_t srqn;
	struct ur_srq *srq;		/* owner: its SRQ, or NULL (a QP's RQ) */
	/* owner: the queue behind it (an XRC SRQ's, or a QP's own RQ that
	 * same-host SENDs take from: rq_ring.c) */
	struct ur_device *dev;
	struct ur_pd *pd;
	struct ur_cq *cq;		/* its completions go there; NULL for a
					 * plain SRQ's: each to its QP's CQ */
	struct xr_member *mem;		/* a plain SRQ's: XR_MEMBERS of them */
	pthread_spinlock_t *lock;	/* srq->lock or qp->rq_lock */
	uint32_t max_wr;
	/* a QP's RQ: the responder's completions waiting for their ACK
	 * (engine), which the ring's may not pass; and whether posts and
	 * takes go through the ring (under *lock) */
	const unsigned int *defer;
	bool active;
	struct ur_qp *qp;		/* a QP's RQ: that QP */
	atomic_bool overran;		/* its CQ overran in a drain */
	struct ur_xring *next;		/* owner: rings; taker: its cache */
	pthread_t waker;		/* owner, CQ with a channel: drains */
	bool has_waker;
	atomic_bool stop;		/* the waker's end */
};

static inline size_t xr_hdr_len(void)
{
	return (sizeof(struct xr_hdr) + 63) & ~(size_t)63;
}

static inline size_t xr_size(uint32_t depth, uint32_t stride)
{
	return xr_hdr_len() + (size_t)depth * stride +
	       (size_t)depth * sizeof(struct xr_cqe);
}

static inline struct xr_slot *xr_slot(const struct ur_xring *x, uint64_t idx)
{
	return (struct xr_slot *)((uint8_t *)x->h + xr_hdr_len() +
				  (size_t)(idx & (x->h->depth - 1)) *
					  x->h->stride);
}

static inline struct xr_cqe *xr_cqe(const struct ur_xring *x, uint64_t pos)
{
	struct xr_cqe *q = (struct xr_cqe *)((uint8_t *)x->h + xr_hdr_len() +
					     (size_t)x->h->depth *
						     x->h->stride);

	return &q[pos & (x->h->depth - 1)];
}

static inline uint64_t xr_pidns(void)
{
	struct stat st;

	return stat("/proc/self/ns/pid", &st) ? 0 : (uint64_t)st.st_ino;
}

static inline void xr_path(char *buf, size_t len, struct ur_xrc_host *host,
		    uint32_t srqn)
{
	snprintf(buf, len, "%s-%x", ur_xrc_host_ring_prefix(host), srqn);
}

static inline void xr_unmap(struct ur_xring *x)
{
	if (x->h)
		munmap(x->h, x->len);
	if (x->fd >= 0)
		close(x->fd);
	free(x->mem);
	free(x);
}

/* The futex the owner's waker sleeps on (a shared mapping: not private). */
static inline void xr_futex_wait(_Atomic uint32_t *w, uint32_t val)
{
	struct timespec ts = { .tv_sec = 1 };

	syscall(SYS_futex, w, FUTEX_WAIT, val, &ts, NULL, 0);
}

static inline void xr_futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE, 1, NULL, NULL, 0);
}

/* The owner's side, whatever the queue (xrc_ring.c). */
struct ur_xring *ur_xring_new(int fd, uint32_t max_wr, uint32_t max_sge,
			      struct ur_pd *pd, struct ur_cq *cq,
			      pthread_spinlock_t *lock);
/* Publishes x (and starts its waker) once its owner has filled in the
 * rest: before, no other thread may see it. */
void ur_xring_start(struct ur_xring *x);
void ur_xring_free(struct ur_xring *x);
/* Posts wr into x (*x->lock held; resolve: obj_lock read held, else the
 * WQEs are posted bad, for the owner's responder alone). */
int ur_xring_post_locked(struct ur_xring *x, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad, bool resolve);
/* Moves the completions other processes handed back into x->cq; _all
 * even while x->defer says the responder holds older ones. */
unsigned int ur_xring_drain_ring(struct ur_xring *x);
unsigned int ur_xring_drain_all(struct ur_xring *x);
/* The same, but a plain SRQ's member qpn's never wait (it leaves). */
unsigned int ur_xring_drain_qp(struct ur_xring *x, uint32_t qpn);
/* Whether a plain SRQ's ring has a member completing into cq. */
bool ur_xring_has_cq(struct ur_xring *x, struct ur_cq *cq);
/* Starts x's waker (a CQ with a channel) if it has none: 0 or -errno. */
int ur_xring_waker(struct ur_xring *x);
/* Waits until no other process is inside a copy into x. */
void ur_xring_wait_holders(struct ur_xring *x);
int ur_xring_lock0(int fd);

/* Claims the oldest WQE into out (xrc_ring_take.c): its claim index, or
 * -1 when the ring is empty. remote: host addresses, for another process;
 * else the lkeys, for the owner's own target QPs. */
int64_t ur_xring_claim(struct ur_xring *x, struct ur_recv_wqe *out,
		       bool remote);

#endif
