/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one private interface uroce's libibverbs offers its librdmacm
 * (symbol version UROCE_PRIVATE_1, not part of rdma-core's ABI): turn a
 * freshly created UD QP into the device's QP1, which receives the CM MADs
 * addressed to QPN 1 and sends with the GSI Q_Key.
 */
#ifndef UR_API_UROCE_GSI_H
#define UR_API_UROCE_GSI_H

#include <infiniband/verbs.h>

/* qp: UD, in RESET, of a uroce device with no QP1 yet. 0 or an errno. */
int uroce_gsi_claim(struct ibv_qp *qp);

#endif /* UR_API_UROCE_GSI_H */
