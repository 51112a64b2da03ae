/* SPDX-License-Identifier: BSD-2-Clause */
#include <arpa/inet.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "to_util.h"

struct ibv_context *ut_ctx_new(void)
{
	struct ur_device *dev = calloc(1, sizeof(*dev));
	struct ur_context *uctx = calloc(1, sizeof(*uctx));
	struct ur_gid_entry *g;

	if (!dev || !uctx)
		abort();
	pthread_mutex_init(&dev->lock, NULL);
	pthread_rwlock_init(&dev->obj_lock, NULL);
	ur_u32_map_init(&dev->mem_keys);
	ur_u32_map_init(&dev->qpns);
	ur_key_space_init(&dev->keys);
	ur_u32_map_init(&dev->srqns);
	g = &dev->gids[0];
	g->addr.in.sin_family = AF_INET;
	inet_pton(AF_INET, "127.0.0.1", &g->addr.in.sin_addr);
	ur_sockaddr_to_gid(&g->addr, g->gid.raw);
	g->valid = true;
	g = &dev->gids[1];
	g->addr.in6.sin6_family = AF_INET6;
	inet_pton(AF_INET6, "::1", &g->addr.in6.sin6_addr);
	ur_sockaddr_to_gid(&g->addr, g->gid.raw);
	g->valid = true;
	dev->num_gids = 2;
	dev->active_mtu = IBV_MTU_1024;

	uctx->dev = dev;
	pthread_mutex_init(&uctx->async_lock, NULL);
	ur_list_init(&uctx->async_events);
	uctx->async_efd = eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
	if (uctx->async_efd < 0)
		abort();
	uctx->vctx.context.device = &dev->ibdev;
	uctx->vctx.context.async_fd = uctx->async_efd;
	uctx->vctx.context.num_comp_vectors = 1;
	uctx->vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
	uctx->vctx.sz = sizeof(uctx->vctx);
	return &uctx->vctx.context;
}

struct ur_device *ut_dev(struct ibv_context *ctx)
{
	return to_ur_context(ctx)->dev;
}

void ut_ctx_free(struct ibv_context *ctx)
{
	struct ur_context *uctx = to_ur_context(ctx);
	struct ur_device *dev = uctx->dev;

	ur_async_events_drain(uctx);
	close(uctx->async_efd);
	pthread_mutex_destroy(&uctx->async_lock);
	ur_u32_map_fini(&dev->mem_keys);
	ur_u32_map_fini(&dev->qpns);
	ur_key_space_fini(&dev->keys);
	ur_u32_map_fini(&dev->srqns);
	pthread_rwlock_destroy(&dev->obj_lock);
	pthread_mutex_destroy(&dev->lock);
	free(uctx);
	free(dev);
}

struct ur_pd *ut_pd(struct ibv_context *ctx)
{
	struct ur_pd *pd = NULL;

	if (ur_pd_alloc(ctx, &pd))
		abort();
	return pd;
}

struct ur_qp *ut_qp_new(struct ur_pd *pd, enum ibv_qp_type type,
			uint32_t qpn)
{
	struct ur_qp *qp = calloc(1, sizeof(*qp));

	if (!qp)
		abort();
	qp->dev = ur_ctx_dev(pd->ibpd.context);
	qp->pd = pd;
	qp->type = type;
	qp->ibqp_ex.qp_base.qp_num = qpn;
	qp->ibqp_ex.qp_base.context = pd->ibpd.context;
	qp->ibqp_ex.qp_base.pd = &pd->ibpd;
	return qp;
}

int ut_fd_readable(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

int ut_async_pending(struct ibv_context *ctx)
{
	struct ur_context *uctx = to_ur_context(ctx);
	struct ur_list *pos;
	int n = 0;

	pthread_mutex_lock(&uctx->async_lock);
	ur_list_for_each(pos, &uctx->async_events)
		n++;
	pthread_mutex_unlock(&uctx->async_lock);
	return n;
}
