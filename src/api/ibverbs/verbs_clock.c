/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ibv_query_rt_values_ex (the query_rt_values slot): the device clock.
 * Our completion timestamps (cq_ex, IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
 * are CLOCK_MONOTONIC nanoseconds and hca_core_clock says 1 GHz, so the
 * raw clock is that same counter, reported as mlx5 reports its cycle
 * counter: tv_sec 0, tv_nsec the cycles. Unknown comp_mask bits are
 * ignored and cleared (comp_mask out says what was filled).
 */
#include <errno.h>
#include <time.h>

#include "api/ibverbs/api_priv.h"
#include "util/time.h"

int ur_op_query_rt_values(struct ibv_context *ctx,
			  struct ibv_values_ex *values)
{
	uint32_t filled = 0;

	if (!values)
		return ur_api_ret(-EINVAL);
	if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		values->raw_clock.tv_sec = 0;
		values->raw_clock.tv_nsec = (long)ur_now_ns();
		filled |= IBV_VALUES_MASK_RAW_CLOCK;
	}
	values->comp_mask = filled;
	return 0;
}
