/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Devices, contexts and queries: ibv_get_device_list and friends,
 * ibv_open_device/ibv_close_device, device/port/GID/P_Key queries, and the
 * context ops for them (query_device_ex, query_port).
 *
 * Return conventions follow the man pages: pointer verbs return NULL and set
 * errno; ibv_query_device/_port return an errno value; ibv_query_gid,
 * ibv_query_pkey and ibv_get_pkey_index return -1 and set errno.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "api/ibverbs/api_priv.h"
#include "api/ibverbs/devtree/devtree.h"
#include "engine/engine.h"
#include "obj/device.h"
#include "obj/obj.h"
#include "util/evcount.h"
#include "util/log.h"

#ifndef UROCE_VERSION
#define UROCE_VERSION "0"
#endif

/* Not declared by verbs.h 44 but exported by libibverbs (PRIVATE_34). */
UR_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
				 unsigned int index, unsigned int *type);

/* ------------------------------------------------------------------ */
/* Device list                                                          */
/* ------------------------------------------------------------------ */

UR_EXPORT struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list;
	struct ur_device *devs;
	unsigned int n;

	devs = ur_device_get_all(&n);
	if (!devs) {
		if (num_devices)
			*num_devices = 0;
		if (!errno)
			errno = ENODEV;
		return NULL;
	}
	list = calloc(n + 1, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	ur_devtree_publish(devs, n);
	for (unsigned int i = 0; i < n; i++)
		list[i] = &devs[i].ibdev;
	if (num_devices)
		*num_devices = (int)n;
	return list;
}

UR_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

UR_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

UR_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	return to_ur_device(device)->node_guid;
}

UR_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	return (int)to_ur_device(device)->index;
}

/* ------------------------------------------------------------------ */
/* Context ops owned here                                               */
/* ------------------------------------------------------------------ */

int ur_op_query_device_ex(struct ibv_context *context,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex full;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	ur_device_query_ex(to_ur_device(context->device), &full);
	snprintf(full.orig_attr.fw_ver, sizeof(full.orig_attr.fw_ver),
		 "uroce %s", UROCE_VERSION);
	memset(attr, 0, attr_size);
	memcpy(attr, &full, UR_MIN(attr_size, sizeof(full)));
	return 0;
}

int ur_op_query_port(struct ibv_context *context, uint8_t port_num,
		     struct ibv_port_attr *port_attr, size_t port_attr_len)
{
	struct ibv_port_attr full;
	int rc;

	rc = ur_device_query_port(to_ur_device(context->device), port_num,
				  &full);
	if (rc)
		return -rc;
	memset(port_attr, 0, port_attr_len);
	memcpy(port_attr, &full, UR_MIN(port_attr_len, sizeof(full)));
	return 0;
}

UR_EXPORT int ibv_query_device(struct ibv_context *context,
			       struct ibv_device_attr *device_attr)
{
	return ur_op_query_device_ex(context, NULL,
				  (struct ibv_device_attr_ex *)device_attr,
				  sizeof(*device_attr));
}

/*
 * The exported ibv_query_port is the path of binaries built before the
 * inline ___ibv_query_port existed; their struct ended with link_layer and
 * one reserved byte, so we fill no more than that.
 */
#undef ibv_query_port
UR_EXPORT int ibv_query_port(struct ibv_context *context, uint8_t port_num,
			     struct _compat_ibv_port_attr *port_attr)
{
	return ur_op_query_port(context, port_num,
			     (struct ibv_port_attr *)port_attr,
			     offsetof(struct ibv_port_attr, flags));
}

int ur_op_compat_query_port(struct ibv_context *context, uint8_t port_num,
			    struct _compat_ibv_port_attr *port_attr)
{
	return ibv_query_port(context, port_num, port_attr);
}

/* ------------------------------------------------------------------ */
/* GID and P_Key                                                        */
/* ------------------------------------------------------------------ */

UR_EXPORT int ibv_query_gid(struct ibv_context *context, uint8_t port_num,
			    int index, union ibv_gid *gid)
{
	struct ibv_gid_entry e;
	int rc;

	if (index < 0) {
		errno = EINVAL;
		return -1;
	}
	rc = ur_device_gid_entry(to_ur_device(context->device), port_num,
				 (unsigned int)index, &e);
	if (rc == -ENODATA) {
		/* an unused slot of the table reads as the zero GID */
		memset(gid, 0, sizeof(*gid));
		return 0;
	}
	if (rc) {
		errno = -rc;
		return -1;
	}
	*gid = e.gid;
	return 0;
}

UR_EXPORT int _ibv_query_gid_ex(struct ibv_context *context,
				uint32_t port_num, uint32_t gid_index,
				struct ibv_gid_entry *entry, uint32_t flags,
				size_t entry_size)
{
	struct ibv_gid_entry e;
	int rc;

	if (flags || entry_size < sizeof(e))
		return EINVAL;
	if (port_num > 0xff)
		return EINVAL;
	rc = ur_device_gid_entry(to_ur_device(context->device), port_num,
				 gid_index, &e);
	if (rc)
		return -rc;
	memset(entry, 0, entry_size);
	memcpy(entry, &e, sizeof(e));
	return 0;
}

UR_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *context,
				       struct ibv_gid_entry *entries,
				       size_t max_entries, uint32_t flags,
				       size_t entry_size)
{
	struct ur_device *dev = to_ur_device(context->device);
	size_t n = 0;

	if (flags || entry_size < sizeof(*entries))
		return -EINVAL;
	for (unsigned int port = 1; port <= UR_NUM_PORTS; port++) {
		for (unsigned int i = 0; i < UR_MAX_GID; i++) {
			struct ibv_gid_entry e;

			if (ur_device_gid_entry(dev, port, i, &e))
				continue;
			if (n == max_entries)
				return -EINVAL;
			memset((char *)entries + n * entry_size, 0, entry_size);
			memcpy((char *)entries + n * entry_size, &e, sizeof(e));
			n++;
		}
	}
	return (ssize_t)n;
}

/* enum ibv_gid_type_sysfs of rdma-core: 0 = IB/RoCE v1, 1 = RoCE v2. */
UR_EXPORT int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
				 unsigned int index, unsigned int *type)
{
	struct ibv_gid_entry e;
	int rc;

	rc = ur_device_gid_entry(to_ur_device(context->device), port_num,
				 index, &e);
	if (rc) {
		errno = -rc;
		return -1;
	}
	*type = 1;
	return 0;
}

UR_EXPORT int ibv_query_pkey(struct ibv_context *context, uint8_t port_num,
			     int index, __be16 *pkey)
{
	if (port_num != 1 || index < 0 || index >= UR_PKEY_TBL_LEN) {
		errno = EINVAL;
		return -1;
	}
	*pkey = htobe16(UR_PKEY_DEFAULT);
	return 0;
}

UR_EXPORT int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num,
				 __be16 pkey)
{
	__be16 p;

	for (int i = 0; i < UR_PKEY_TBL_LEN; i++) {
		if (ibv_query_pkey(context, port_num, i, &p))
			return -1;
		if (p == pkey)
			return i;
	}
	errno = ENOENT;
	return -1;
}

/* ------------------------------------------------------------------ */
/* Open / close                                                         */
/* ------------------------------------------------------------------ */

UR_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct ur_device *dev = to_ur_device(device);
	struct ibv_context *ctx;
	struct ur_context *uctx;
	int rc;

	uctx = calloc(1, sizeof(*uctx));
	if (!uctx) {
		errno = ENOMEM;
		return NULL;
	}
	uctx->dev = dev;
	uctx->async_efd = -1;
	pthread_mutex_init(&uctx->async_lock, NULL);
	ur_list_init(&uctx->async_events);
	ctx = &uctx->vctx.context;
	ctx->device = device;
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->num_comp_vectors = 1;
	ctx->cmd_fd = -1;
	pthread_mutex_init(&ctx->mutex, NULL);
	uctx->vctx.sz = sizeof(struct verbs_context);

	uctx->async_efd = ur_evcount_open();
	ctx->async_fd = uctx->async_efd;
	ctx->cmd_fd = eventfd(0, EFD_CLOEXEC);
	if (uctx->async_efd < 0 || ctx->cmd_fd < 0) {
		rc = errno;
		goto err;
	}

	ur_api_install_ops(&uctx->vctx);

	pthread_mutex_lock(&dev->lock);
	rc = -ur_nic_get(dev);
	if (!rc)
		dev->open_count++;
	pthread_mutex_unlock(&dev->lock);
	if (rc) {
		ur_err("%s: cannot start the NIC: %s", device->name,
		       strerror(rc));
		goto err;
	}
	ur_devtree_device_opened(dev);
	return ctx;
err:
	if (uctx->async_efd >= 0)
		close(uctx->async_efd);
	if (ctx->cmd_fd >= 0)
		close(ctx->cmd_fd);
	pthread_mutex_destroy(&ctx->mutex);
	pthread_mutex_destroy(&uctx->async_lock);
	free(uctx);
	errno = rc;
	return NULL;
}

UR_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct ur_context *uctx = to_ur_context(context);
	struct ur_device *dev = uctx->dev;

	pthread_mutex_lock(&dev->lock);
	dev->open_count--;
	ur_nic_put(dev);
	pthread_mutex_unlock(&dev->lock);

	pthread_mutex_lock(&uctx->async_lock);
	while (!ur_list_empty(&uctx->async_events)) {
		struct ur_async_event *ev =
			ur_list_first(&uctx->async_events,
				      struct ur_async_event, node);

		ur_list_del(&ev->node);
		free(ev);
	}
	pthread_mutex_unlock(&uctx->async_lock);

	close(uctx->async_efd);
	close(context->cmd_fd);
	pthread_mutex_destroy(&context->mutex);
	pthread_mutex_destroy(&uctx->async_lock);
	free(uctx);
	return 0;
}
