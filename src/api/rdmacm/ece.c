/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Enhanced Connection Establishment, a vendor (mlx5) negotiation carried
 * by the kernel's CM: exported so that binaries linked against rdma-core
 * 44's librdmacm load, failing with -1 and errno EOPNOTSUPP (docs/features.md,
 * "librdmacm").
 */
#include <errno.h>

#include "api/rdmacm/rdmacm_priv.h"

UR_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	return cma_err(EOPNOTSUPP);
}

UR_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	return cma_err(EOPNOTSUPP);
}
