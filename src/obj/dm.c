/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device memory. A NIC's on-chip memory (mlx5's MEMIC) is what
 * ibv_alloc_dm hands out; a software NIC has none, so a DM here is an
 * allocation the library owns: the application cannot address it (only
 * ibv_memcpy_to_dm/ibv_memcpy_from_dm reach it), the engine reaches it
 * through zero-based MRs from ibv_reg_dm_mr like any other MR, so it is
 * the source or target of every operation an MR can be. What the user
 * gets is the verbs semantics (programs written for DM run unchanged,
 * e.g. ibv_rc_pingpong -j), memory that no munmap or fork of the
 * application can take from under an in-flight operation, and nothing
 * faster: the copies are plain memcpy.
 *
 * Rules (rdma-core and mlx5): length 1..max_dm_size (EINVAL otherwise);
 * log_align_req up to a page (the buffer is aligned to 2^log_align_req,
 * at least 64 bytes); comp_mask must be 0; a copy whose offset or length
 * is not a multiple of 4 is EINVAL (mlx5's MEMIC is accessed in 4-byte
 * words, and pyverbs checks that rule); one outside the DM is EFAULT; ibv_reg_dm_mr needs IBV_ACCESS_ZERO_BASED and a range inside
 * the DM (EINVAL); ibv_free_dm while an MR covers it is EBUSY.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "obj/obj_priv.h"

#define UR_DM_MAX_LOG_ALIGN 12u
#define UR_DM_MIN_ALIGN 64u

#define UR_DM_COPY_ALIGN 4u

static bool dm_range_ok(const struct ur_dm *dm, uint64_t off, uint64_t len)
{
	return off <= dm->length && len <= dm->length - off;
}

static int dm_copy_check(const struct ur_dm *dm, uint64_t off, uint64_t len)
{
	if ((off | len) % UR_DM_COPY_ALIGN)
		return -EINVAL;
	return dm_range_ok(dm, off, len) ? 0 : -EFAULT;
}

int ur_dm_alloc(struct ibv_context *ctx, const struct ibv_alloc_dm_attr *attr,
		struct ur_dm **out)
{
	size_t align, bytes;
	struct ur_dm *dm;

	if (!attr || attr->comp_mask || !attr->length ||
	    attr->length > UR_MAX_DM_SIZE ||
	    attr->log_align_req > UR_DM_MAX_LOG_ALIGN)
		return -EINVAL;
	align = (size_t)1 << attr->log_align_req;
	if (align < UR_DM_MIN_ALIGN)
		align = UR_DM_MIN_ALIGN;
	bytes = (attr->length + align - 1) & ~(align - 1);
	dm = calloc(1, sizeof(*dm));
	if (!dm)
		return -ENOMEM;
	dm->buf = aligned_alloc(align, bytes);
	if (!dm->buf) {
		free(dm);
		return -ENOMEM;
	}
	/* device memory starts undefined; zeroed, nothing old leaks out */
	memset(dm->buf, 0, bytes);
	dm->length = attr->length;
	atomic_init(&dm->usecnt, 0);
	dm->ibdm.context = ctx;
	dm->ibdm.comp_mask = IBV_DM_MASK_HANDLE;
	dm->ibdm.handle = ur_obj_handle();
	*out = dm;
	return 0;
}

int ur_dm_free(struct ur_dm *dm)
{
	if (atomic_load(&dm->usecnt))
		return -EBUSY;
	free(dm->buf);
	free(dm);
	return 0;
}

int ur_dm_copy_to(struct ur_dm *dm, uint64_t off, const void *src, size_t len)
{
	int err = dm_copy_check(dm, off, len);

	if (err)
		return err;
	memcpy(dm->buf + off, src, len);
	return 0;
}

int ur_dm_copy_from(void *dst, struct ur_dm *dm, uint64_t off, size_t len)
{
	int err = dm_copy_check(dm, off, len);

	if (err)
		return err;
	memcpy(dst, dm->buf + off, len);
	return 0;
}

int ur_dm_reg_mr(struct ur_pd *pd, struct ur_dm *dm, uint64_t off,
		 size_t len, unsigned int access, struct ur_mr **out)
{
	struct ur_mr *mr = NULL;
	int err;

	if (!(access & IBV_ACCESS_ZERO_BASED) || !dm_range_ok(dm, off, len))
		return -EINVAL;
	if (dm->ibdm.context != pd->ibpd.context)
		return -EINVAL;
	err = ur_mr_reg(pd, dm->buf + off, len, 0, access, &mr);
	if (err)
		return err;
	mr->dm = dm;
	mr->ibmr.addr = NULL;	/* the DM has no address the user could use */
	atomic_fetch_add(&dm->usecnt, 1);
	*out = mr;
	return 0;
}
