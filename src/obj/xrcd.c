/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * XRC domains and XRC SRQs: the object layer of XRC.
 *
 * The kernel shares an XRC domain between processes through a file: every
 * ibv_open_xrcd on the same inode of a device yields the same domain.
 * Within the process, XRCDs opened on one file (st_dev, st_ino) of one
 * device, from any of its contexts, are one struct ur_xrc_domain; across
 * the host's processes, the domain's registry (xrc_host.c) answers
 * whether the domain exists (O_CREAT, O_EXCL) and keeps XRC SRQ numbers
 * unique among its members. The objects themselves stay in the process
 * that created them (its NIC is its own). fd -1 opens a private domain.
 *
 * An XRC SRQ is a basic SRQ with an XRCD, a CQ for its completions and a
 * 24-bit srq_num, unique per device and within a file-backed domain on
 * the host, that XRC_SEND QPs of a peer address in their XRCETH. XRC_RECV
 * QPs are the domain's too: ibv_open_qp finds them by number within it
 * (here) and they live while any handle does.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "obj/obj_priv.h"
#include "util/log.h"
#include "util/random.h"

#define UR_SRQN_TRIES 64

struct ur_xrc_domain {
	struct ur_list node;		/* in domains (file-backed only) */
	struct ur_device *dev;
	dev_t st_dev;
	ino_t st_ino;
	bool file;			/* opened on a file, not fd -1 */
	struct ur_xrc_host *host;	/* its host registry; NULL if private
					 * or the registry was unusable */
	struct ur_xring *rings;		/* other processes' SRQs met (the rx
					 * owner's, xrc_ring.c) */
	int refcnt;			/* XRCDs naming it (domains_lock) */
};

static pthread_mutex_t domains_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ur_list domains = UR_LIST_INIT(domains);

static struct ur_xrc_domain *domain_find(struct ur_device *dev,
					 const struct stat *st)
{
	struct ur_list *pos;

	ur_list_for_each(pos, &domains) {
		struct ur_xrc_domain *d =
			ur_list_entry(pos, struct ur_xrc_domain, node);

		if (d->dev == dev && d->st_dev == st->st_dev &&
		    d->st_ino == st->st_ino)
			return d;
	}
	return NULL;
}

/*
 * A domain this process has not opened yet: the host registry says
 * whether it exists; without one (the runtime directory unusable) the
 * process's own view answers, as if it were alone on the host.
 */
static int domain_new(struct ur_device *dev, const struct stat *st,
		      int oflags, struct ur_xrc_domain **out)
{
	struct ur_xrc_domain *d;
	int err;

	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->dev = dev;
	d->file = st != NULL;
	if (d->file) {
		err = ur_xrc_host_join(dev->index, st->st_dev, st->st_ino,
				       oflags, &d->host);
		if (err == -EINVAL || err == -EAGAIN) {
			free(d);
			return err;
		}
		if (err && !(oflags & O_CREAT)) {
			free(d);
			return -EAGAIN;	/* none that this process knows */
		}
		if (err)
			ur_warn("XRC domain: host registry unusable (%s): this process's domain is its own",
				strerror(-err));
		d->st_dev = st->st_dev;
		d->st_ino = st->st_ino;
		ur_list_add_tail(&domains, &d->node);
	}
	*out = d;
	return 0;
}

int ur_xrcd_open(struct ibv_context *ctx, const struct ibv_xrcd_init_attr *a,
		 struct ur_xrcd **out)
{
	const uint32_t need = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	struct ur_device *dev = ur_ctx_dev(ctx);
	struct ur_xrc_domain *d = NULL;
	struct ur_xrcd *x;
	struct stat st;
	int err = 0;

	if (!a || (a->comp_mask & need) != need || (a->comp_mask & ~need) ||
	    (a->oflags & ~(O_CREAT | O_EXCL)))
		return -EINVAL;
	if (a->fd != -1 && fstat(a->fd, &st))
		return -EBADF;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	pthread_mutex_lock(&domains_lock);
	if (a->fd != -1)
		d = domain_find(dev, &st);
	if (d && (a->oflags & O_EXCL))
		err = -EINVAL;
	else if (!d)
		err = domain_new(dev, a->fd != -1 ? &st : NULL, a->oflags, &d);
	if (!err)
		d->refcnt++;
	pthread_mutex_unlock(&domains_lock);
	if (err) {
		free(x);
		return err;
	}
	x->ibxrcd.context = ctx;
	x->dom = d;
	atomic_init(&x->usecnt, 0);
	*out = x;
	return 0;
}

int ur_xrcd_close(struct ur_xrcd *xrcd)
{
	struct ur_xrc_domain *d = xrcd->dom;

	if (atomic_load(&xrcd->usecnt))
		return -EBUSY;
	pthread_mutex_lock(&domains_lock);
	if (!--d->refcnt) {
		if (d->file)
			ur_list_del(&d->node);
		ur_xring_cache_free(&d->rings);
		ur_xrc_host_leave(d->host);
		free(d);
	}
	pthread_mutex_unlock(&domains_lock);
	free(xrcd);
	return 0;
}

bool ur_xrcd_same_domain(const struct ur_xrcd *a, const struct ur_xrcd *b)
{
	return a->dom == b->dom;
}

int ur_srq_create_xrc(struct ur_pd *pd, struct ur_xrcd *xrcd, struct ur_cq *cq,
		      void *srq_context, struct ibv_srq_attr *attr,
		      struct ur_srq **out)
{
	struct ur_device *dev = ur_ctx_dev(pd->ibpd.context);
	struct ur_xrc_host *host = xrcd ? xrcd->dom->host : NULL;
	struct ur_srq *srq;
	uint32_t n = 0, slot = 0;
	int err, i;

	if (!xrcd || !cq || xrcd->ibxrcd.context != pd->ibpd.context ||
	    cq->ibcq.context != pd->ibpd.context)
		return -EINVAL;
	err = ur_srq_create(pd, srq_context, attr, &srq);
	if (err)
		return err;
	srq->xrcd = xrcd;
	srq->xrc_cq = cq;
	srq->xrc_host_slot = -1;
	err = -ENOMEM;
	for (i = 0; i < UR_SRQN_TRIES; i++) {
		n = ur_random_u32() & UR_QPN_MASK;
		if (!n)
			continue;
		/* the host's claim first: no file I/O under obj_lock */
		if (host) {
			err = ur_xrc_host_srq_claim(host, n, &slot);
			if (err == -EEXIST)
				continue;
			if (err)
				break;
		}
		pthread_rwlock_wrlock(&dev->obj_lock);
		err = -EEXIST;
		if (!ur_u32_map_contains(&dev->srqns, n))
			err = ur_u32_map_insert(&dev->srqns, n, srq);
		if (!err)
			srq->srq_num = n;
		pthread_rwlock_unlock(&dev->obj_lock);
		if (host && err)
			ur_xrc_host_srq_release(host, slot);
		else if (host) {
			srq->xrc_host_slot = slot;
			srq->xrc_host = host;
		}
		if (err != -EEXIST)
			break;
	}
	if (err == -EEXIST)
		err = -ENOMEM;	/* no free number found: as the kernel's idr */
	if (err) {
		srq->xrcd = NULL;
		ur_srq_destroy(srq);
		return err;
	}
	/* its WQEs where the domain's other processes take them too;
	 * without the file it stays this process's alone */
	if (host) {
		err = ur_xring_create(srq);
		if (err)
			ur_warn("XRC SRQ %#x: not shared with the domain's other processes (%s)",
				srq->srq_num, strerror(-err));
	}
	atomic_fetch_add(&xrcd->usecnt, 1);
	atomic_fetch_add(&cq->usecnt, 1);
	*out = srq;
	return 0;
}

bool ur_xrcd_srq_on_host(const struct ur_xrcd *xrcd, uint32_t srqn)
{
	return xrcd->dom->host && ur_xrc_host_srq_exists(xrcd->dom->host, srqn);
}

int ur_xrcd_ring(const struct ur_xrcd *xrcd, uint32_t srqn,
		 struct ur_xring **out)
{
	struct ur_xrc_domain *d = xrcd->dom;

	if (!d->host)
		return -ENODEV;
	return ur_xring_attach(d->host, &d->rings, srqn, out);
}

struct ur_srq *ur_srq_lookup_xrc(struct ur_device *dev, uint32_t srqn)
{
	return ur_u32_map_find(&dev->srqns, srqn);
}

int ur_xrc_qp_open(struct ur_xrcd *xrcd, uint32_t qpn, struct ur_qp **out)
{
	struct ur_device *dev = ur_ctx_dev(xrcd->ibxrcd.context);
	struct ur_qp *qp;
	int err = -EINVAL;

	pthread_rwlock_wrlock(&dev->obj_lock);
	qp = ur_qp_lookup(dev, qpn);
	if (qp && qp->type == IBV_QPT_XRC_RECV &&
	    ur_xrcd_same_domain(qp->xrcd, xrcd)) {
		qp->xrc_opens++;
		*out = qp;
		err = 0;
	}
	pthread_rwlock_unlock(&dev->obj_lock);
	return err;
}

bool ur_xrc_qp_release(struct ur_qp *qp, bool opened)
{
	struct ur_device *dev = qp->dev;
	bool last;

	pthread_rwlock_wrlock(&dev->obj_lock);
	if (opened)
		qp->xrc_opens--;
	else
		qp->xrc_orphan = true;
	last = qp->xrc_orphan && !qp->xrc_opens;
	/* unpublished under the same lock: no ibv_open_qp finds it now */
	if (last && ur_u32_map_find(&dev->qpns, qp->ibqp_ex.qp_base.qp_num) == qp)
		ur_u32_map_remove(&dev->qpns, qp->ibqp_ex.qp_base.qp_num);
	pthread_rwlock_unlock(&dev->obj_lock);
	return last;
}
