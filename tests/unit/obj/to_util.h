/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A device and context built by hand for the obj/ tests: no NIC, no
 * engine. GID 0 is 127.0.0.1 (IPv4-mapped), GID 1 is ::1.
 */
#ifndef UR_TEST_OBJ_TO_UTIL_H
#define UR_TEST_OBJ_TO_UTIL_H

#include "obj/obj_priv.h"

struct ibv_context *ut_ctx_new(void);
void ut_ctx_free(struct ibv_context *ctx);
struct ur_device *ut_dev(struct ibv_context *ctx);
struct ur_pd *ut_pd(struct ibv_context *ctx);
/* A fake RC (or type) QP of pd with number qpn, enough for MW binds. */
struct ur_qp *ut_qp_new(struct ur_pd *pd, enum ibv_qp_type type,
			uint32_t qpn);
/* Number of async events waiting (0 if none); does not consume. */
int ut_async_pending(struct ibv_context *ctx);
/* Is fd readable right now? */
int ut_fd_readable(int fd);

#endif
