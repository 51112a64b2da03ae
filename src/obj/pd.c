/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Protection domains, thread domains and parent domains.
 *
 * A PD only counts its users: destroying one that an MR, MW, QP, SRQ, AH
 * or parent domain still names is refused with EBUSY.
 *
 * A thread domain is the application's promise that the objects of a
 * parent domain naming it are used by one thread at a time. We accept the
 * promise and keep our locks: the application's threads are not the only
 * ones that take a QP's send lock, the NIC's progress thread does too
 * (docs/features.md, "Thread and parent domains", has the measurement).
 *
 * A parent domain (man ibv_alloc_parent_domain) is an ibv_pd that stands
 * for its PD in every protection check (ur_pd_prot) and may carry
 * pd_context and alloc/free callbacks. QPs, SRQs and CQs created on it get
 * their rings from alloc(pd, pd_context, size, alignment, type) with
 * type UR_RES_TYPE_QP/SRQ/CQ; an alloc answering IBV_ALLOCATOR_USE_DEFAULT
 * means "use your own" (the heap here), NULL fails the creation (ENOMEM).
 * Such buffers are zeroed by us and given back through free() with the
 * same type. The callbacks run in the creating or destroying thread only,
 * never in the NIC's threads (a CQ on a parent domain allocates its whole
 * ring up front instead of growing, see cq.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "obj/obj_priv.h"

#define UR_PD_BUF_ALIGN 64u

uint32_t ur_obj_handle(void)
{
	static atomic_uint next;
	uint32_t h;

	do
		h = atomic_fetch_add(&next, 1) + 1;
	while (!h);
	return h;
}

int ur_pd_alloc(struct ibv_context *ctx, struct ur_pd **out)
{
	struct ur_pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return -ENOMEM;
	pd->ibpd.context = ctx;
	pd->ibpd.handle = ur_obj_handle();
	atomic_init(&pd->usecnt, 0);
	*out = pd;
	return 0;
}

int ur_pd_free(struct ur_pd *pd)
{
	if (atomic_load(&pd->usecnt))
		return -EBUSY;
	if (pd->prot)
		atomic_fetch_sub(&pd->prot->usecnt, 1);
	if (pd->td)
		atomic_fetch_sub(&pd->td->usecnt, 1);
	free(pd);
	return 0;
}

int ur_td_alloc(struct ibv_context *ctx, const struct ibv_td_init_attr *attr,
		struct ur_td **out)
{
	struct ur_td *td;

	if (!attr || attr->comp_mask)
		return -EINVAL;
	td = calloc(1, sizeof(*td));
	if (!td)
		return -ENOMEM;
	td->ibtd.context = ctx;
	atomic_init(&td->usecnt, 0);
	*out = td;
	return 0;
}

int ur_td_free(struct ur_td *td)
{
	if (atomic_load(&td->usecnt))
		return -EBUSY;
	free(td);
	return 0;
}

#define UR_PARENT_DOMAIN_MASK                                                  \
	(IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |                               \
	 IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)

int ur_parent_domain_alloc(struct ibv_context *ctx,
			   const struct ibv_parent_domain_init_attr *attr,
			   struct ur_pd **out)
{
	struct ur_pd *pd, *prot;
	int err;

	if (!attr || !attr->pd || (attr->comp_mask & ~UR_PARENT_DOMAIN_MASK))
		return -EINVAL;
	prot = to_ur_pd(attr->pd);
	if (prot->prot || attr->pd->context != ctx ||
	    (attr->td && attr->td->context != ctx))
		return -EINVAL;
	if ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	    (!attr->alloc || !attr->free))
		return -EINVAL;
	err = ur_pd_alloc(ctx, &pd);
	if (err)
		return err;
	pd->prot = prot;
	atomic_fetch_add(&prot->usecnt, 1);
	if (attr->td) {
		pd->td = to_ur_td(attr->td);
		atomic_fetch_add(&pd->td->usecnt, 1);
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	*out = pd;
	return 0;
}

void *ur_pd_buf_alloc(struct ur_pd *pd, size_t size, uint64_t type,
		      bool *custom)
{
	void *p;

	*custom = false;
	if (pd && pd->alloc) {
		p = pd->alloc(&pd->ibpd, pd->pd_context, size, UR_PD_BUF_ALIGN,
			      type);
		if (p != IBV_ALLOCATOR_USE_DEFAULT) {
			if (p) {
				memset(p, 0, size);
				*custom = true;
			}
			return p;
		}
	}
	return calloc(1, size);
}

void ur_pd_buf_free(struct ur_pd *pd, void *buf, uint64_t type, bool custom)
{
	if (!buf)
		return;
	if (custom)
		pd->free(&pd->ibpd, pd->pd_context, buf, type);
	else
		free(buf);
}
