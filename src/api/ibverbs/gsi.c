/* SPDX-License-Identifier: BSD-2-Clause */
/* uroce_gsi_claim(): see uroce_gsi.h. */
#include "api/ibverbs/uroce_gsi.h"
#include "obj/obj_priv.h"
#include "util/compiler.h"

UR_EXPORT int uroce_gsi_claim(struct ibv_qp *qp)
{
	if (!qp)
		return EINVAL;
	return -ur_qp_claim_gsi(to_ur_qp(qp));
}
