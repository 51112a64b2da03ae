/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * NIC lifecycle, progress thread, receive dispatch and timers.
 * (Temporary minimal version: every entry point exists and links.)
 */
#include <errno.h>

#include "engine/engine.h"

int ur_nic_get(struct ur_device *dev)
{
	return 0;
}

void ur_nic_put(struct ur_device *dev)
{
}

int ur_engine_qp_init(struct ur_qp *qp)
{
	return 0;
}

void ur_engine_qp_fini(struct ur_qp *qp)
{
}

void ur_engine_qp_modified(struct ur_qp *qp, enum ibv_qp_state old_state,
			   int attr_mask)
{
}

void ur_engine_sq_kick(struct ur_qp *qp)
{
}

void ur_engine_rq_kick(struct ur_qp *qp)
{
}

int ur_engine_poll(struct ur_device *dev)
{
	return 0;
}

void ur_engine_dump_counters(struct ur_device *dev, FILE *out)
{
}
