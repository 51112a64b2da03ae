/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Async events: ibv_get_async_event (0 or -1 with errno set) and
 * ibv_ack_async_event; obj/async.c queues them.
 */
#include <errno.h>

#include "api/ibverbs/api_priv.h"
#include "obj/obj_priv.h"
#include "util/compiler.h"

UR_EXPORT int ibv_get_async_event(struct ibv_context *context,
				  struct ibv_async_event *event)
{
	int err = ur_async_event_get(to_ur_context(context), event);

	if (err) {
		errno = -err;
		return -1;
	}
	return 0;
}

UR_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	ur_async_event_ack(event);
}
