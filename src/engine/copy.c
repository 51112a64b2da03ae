/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * SGE walks: every byte the engine reads from or writes to user memory goes
 * through ur_mem_check() on the key that names it, with dev->obj_lock held
 * for reading by the caller, so a packet never touches memory outside the
 * MR or window its key grants. The bytes themselves are moved with
 * util/memguard.h: memory unmapped (or protected) after registration, or
 * not mapped under an on-demand MR, gives -EFAULT, never a signal.
 */
#include <errno.h>
#include <string.h>

#include "engine/engine_priv.h"
#include "util/memguard.h"

static int sge_host(struct ur_qp *qp, struct ur_pd *pd,
		    const struct ur_sge *s, uint64_t off, uint32_t len,
		    unsigned int access, uintptr_t *host)
{
	struct ur_mem *m = ur_mem_lookup(qp->dev, s->lkey);

	if (!m || m->kind != UR_MEM_MR)
		return -EACCES;
	return ur_mem_check(m, pd, ur_qp_num(qp), s->addr + off, len,
			    access, host) ? -EACCES : 0;
}

int ur_sgl_check(struct ur_qp *qp, const struct ur_sge *sge, uint32_t nsge,
		 unsigned int access)
{
	uintptr_t host;
	uint32_t i;

	for (i = 0; i < nsge; i++) {
		if (!sge[i].length)
			continue;
		if (sge_host(qp, qp->pd, &sge[i], 0, sge[i].length, access,
			     &host))
			return -EACCES;
	}
	return 0;
}

static int sgl_map(struct ur_qp *qp, struct ur_pd *pd,
		   const struct ur_sge *sge, uint32_t nsge, uint32_t off,
		   uint32_t len, unsigned int access, struct iovec *iov,
		   unsigned int max_iov, unsigned int *niov)
{
	unsigned int n = 0;
	uintptr_t host;
	uint32_t i, piece;

	for (i = 0; i < nsge && len; i++) {
		if (off >= sge[i].length) {
			off -= sge[i].length;
			continue;
		}
		piece = UR_MIN(sge[i].length - off, len);
		if (n == max_iov)
			return -EMSGSIZE;
		if (sge_host(qp, pd, &sge[i], off, piece, access, &host))
			return -EACCES;
		iov[n].iov_base = (void *)host;
		iov[n++].iov_len = piece;
		len -= piece;
		off = 0;
	}
	*niov = n;
	return len ? -EMSGSIZE : 0;
}

int ur_sgl_map(struct ur_qp *qp, const struct ur_sge *sge, uint32_t nsge,
	       uint32_t off, uint32_t len, unsigned int access,
	       struct iovec *iov, unsigned int max_iov, unsigned int *niov)
{
	return sgl_map(qp, qp->pd, sge, nsge, off, len, access, iov, max_iov,
		       niov);
}

/* Maps the whole range first, so a bad SGE anywhere writes nothing. */
static int sgl_copy_in(struct ur_qp *qp, struct ur_pd *pd,
		       const struct ur_sge *sge, uint32_t nsge, uint32_t off,
		       const void *src, uint32_t len)
{
	struct iovec iov[UR_MAX_SGE];
	const uint8_t *p = src;
	unsigned int n, i;
	int ret;

	ret = sgl_map(qp, pd, sge, nsge, off, len, IBV_ACCESS_LOCAL_WRITE, iov,
		      UR_ARRAY_SIZE(iov), &n);
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		if (ur_memguard_copy(iov[i].iov_base, p, iov[i].iov_len))
			return -EFAULT;
		p += iov[i].iov_len;
	}
	return 0;
}

int ur_sgl_copy_in(struct ur_qp *qp, const struct ur_sge *sge, uint32_t nsge,
		   uint32_t off, const void *src, uint32_t len)
{
	return sgl_copy_in(qp, qp->pd, sge, nsge, off, src, len);
}

/* Receive WQEs taken from an SRQ belong to the SRQ's PD, not the QP's. */
int ur_recv_copy_in(struct ur_qp *qp, const struct ur_sge *sge, uint32_t nsge,
		    uint32_t off, const void *src, uint32_t len)
{
	return sgl_copy_in(qp, ur_qp_recv_pd(qp), sge, nsge, off, src, len);
}

int ur_rkey_map(struct ur_qp *qp, uint32_t rkey, uint64_t va, uint32_t len,
		unsigned int access, uintptr_t *host)
{
	struct ur_mem *m;

	*host = 0;
	if (!len)
		return 0;	/* C9-88: zero-length skips the key check */
	m = ur_mem_lookup(qp->dev, rkey);
	if (!m)
		return -EACCES;
	return ur_mem_check(m, ur_qp_target_pd(qp), ur_qp_num(qp), va, len,
			    access, host) ?
		       -EACCES : 0;
}
