/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Exported so that every binary linked against rdma-core 44's librdmacm
 * loads, but not implemented yet (README, "What works"): multicast and
 * ECE (rsockets are in rsocket*.c). Each fails with -1 and errno ENOSYS
 * (EOPNOTSUPP where rdma-core itself would say the device cannot).
 */
#include <errno.h>

#include "api/rdmacm/rdmacm_priv.h"

UR_EXPORT int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr,
				  void *context)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int rdma_join_multicast_ex(struct rdma_cm_id *id,
				     struct rdma_cm_join_mc_attr_ex *attr,
				     void *context)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int rdma_leave_multicast(struct rdma_cm_id *id,
				   struct sockaddr *addr)
{
	return cma_err(ENOSYS);
}

UR_EXPORT int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	return cma_err(EOPNOTSUPP);
}

UR_EXPORT int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	return cma_err(EOPNOTSUPP);
}
