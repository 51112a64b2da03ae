/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Protection domains. A PD only counts its users: destroying one that an
 * MR, MW, QP, SRQ or AH still names is refused with EBUSY.
 */
#include <errno.h>
#include <stdlib.h>

#include "obj/obj_priv.h"

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
	free(pd);
	return 0;
}
