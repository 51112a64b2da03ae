/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Process-wide state: the devices librdmacm opened (each once, as
 * rdma-core does, so every id of a device shares one ibv_context), their
 * CM agents (started with the CM state machine as their handler), and
 * which device owns an address.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/rdmacm/cm_priv.h"
#include "util/config.h"
#include "util/log.h"
#include "util/time.h"

struct cma_global cma = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.ids = UR_LIST_INIT(cma.ids),
	.lingering = UR_LIST_INIT(cma.lingering),
	.cond = PTHREAD_COND_INITIALIZER,
};

static int dev_open(struct cma_dev *d, struct ibv_device *ibdev)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	int ret, i;

	d->wake_fd = -1;
	d->verbs = ibv_open_device(ibdev);
	if (!d->verbs)
		return errno ? errno : ENODEV;
	if (ibv_query_device(d->verbs, &da) || ibv_query_port(d->verbs, 1, &pa) ||
	    ibv_query_gid(d->verbs, 1, 0, &gid)) {
		ret = errno ? errno : EIO;
		goto err;
	}
	memcpy(d->gids[0], gid.raw, 16);
	d->ngids = pa.gid_tbl_len < UR_CM_MAX_GIDS ? pa.gid_tbl_len :
						    UR_CM_MAX_GIDS;
	if (d->ngids < 1)
		d->ngids = 1;
	/* an entry that cannot be read stays zero: no address of ours */
	for (i = 1; i < d->ngids; i++)
		if (!ibv_query_gid(d->verbs, 1, i, &gid))
			memcpy(d->gids[i], gid.raw, 16);
	d->guid = be64toh(da.node_guid);
	d->mtu = pa.active_mtu;
	d->max_rd_atom = (uint8_t)(da.max_qp_rd_atom < da.max_qp_init_rd_atom ?
					   da.max_qp_rd_atom :
					   da.max_qp_init_rd_atom);
	d->pd = ibv_alloc_pd(d->verbs);
	if (!d->pd) {
		ret = errno ? errno : ENOMEM;
		goto err;
	}
	ret = cma_agent_start(d, &cma_cm_handlers);
	if (ret)
		goto err;
	return 0;
err:
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	ibv_close_device(d->verbs);
	d->verbs = NULL;
	return ret;
}

/* Opens every device once. Lock held. */
int cma_init(void)
{
	struct ibv_device **list;
	int i, n = 0, ret = 0;

	if (cma.inited)
		return cma.init_err;
	ur_config_quiet();	/* libibverbs reports bad values */
	(void)ur_config_get();	/* this library's UROCE_LOG */
	list = ibv_get_device_list(&n);
	if (!list || n <= 0) {
		/* ENODEV as rdma-core's librdmacm answers; the cause is
		 * logged, since the caller's errno cannot carry it */
		if (list)
			ibv_free_device_list(list);
		else
			ur_warn("rdmacm: ibv_get_device_list: %s",
				strerror(errno));
		return ENODEV;	/* not cached: a device may appear later */
	}
	cma.devs = calloc((size_t)n, sizeof(*cma.devs));
	if (!cma.devs) {
		ibv_free_device_list(list);
		return ENOMEM;
	}
	for (i = 0; i < n; i++) {
		ret = dev_open(&cma.devs[cma.ndev], list[i]);
		if (ret) {
			ur_err("rdmacm: %s: %s", ibv_get_device_name(list[i]),
			       strerror(ret));
			continue;
		}
		cma.ndev++;
	}
	ibv_free_device_list(list);
	cma.inited = true;
	__atomic_store_n(&cma.owner, getpid(), __ATOMIC_RELEASE);
	cma.init_err = cma.ndev ? 0 : (ret ? ret : ENODEV);
	return cma.init_err;
}

/* UROCE_STATS=1 (stderr) or a path (appended), as the engine's counters. */
static void dump_stats(void)
{
	static const char *const names[] = {
		"cm_mads_rx", "cm_mads_tx", "cm_retransmits", "cm_mads_dropped",
	};
	const struct ur_config *cfg = ur_config_get();
	FILE *f;
	int i, k;

	if (cfg->stats == UR_STATS_OFF || !cma.ndev)
		return;
	f = cfg->stats_path ? fopen(cfg->stats_path, "a") : stderr;
	if (!f)
		return;
	for (i = 0; i < cma.ndev; i++) {
		fprintf(f, "# %s rdmacm counters\n",
			ibv_get_device_name(cma.devs[i].verbs->device));
		for (k = 0; k < 4; k++)
			fprintf(f, "%s %llu\n", names[k],
				(unsigned long long)cma.devs[i].stats[k]);
	}
	if (f != stderr)
		fclose(f);
}

__attribute__((destructor(UR_CM_DTOR_DEVICES))) static void cma_fini(void)
{
	uint64_t until = ur_now_ns() + UR_CM_LINGER_MAX_NS;
	int i;

	if (!cma_owned())
		return;	/* never opened, or a forked child's copy */
	/* let the last DREQs be answered (struct cma_linger) */
	pthread_mutex_lock(&cma.lock);
	while (!ur_list_empty(&cma.lingering) && ur_now_ns() < until) {
		pthread_mutex_unlock(&cma.lock);
		usleep(10000);
		pthread_mutex_lock(&cma.lock);
	}
	for (i = 0; i < cma.ndev; i++)
		cma.devs[i].stop = true;
	pthread_mutex_unlock(&cma.lock);
	dump_stats();
	for (i = 0; i < cma.ndev; i++) {
		cma_agent_stop(&cma.devs[i]);
		if (cma.devs[i].xrcd)
			ibv_close_xrcd(cma.devs[i].xrcd);
		ibv_dealloc_pd(cma.devs[i].pd);
		ibv_close_device(cma.devs[i].verbs);
	}
	free(cma.devs);
	cma.devs = NULL;
	cma.ndev = 0;
}

struct cma_dev *cma_dev_by_verbs(struct ibv_context *verbs)
{
	int i;

	for (i = 0; i < cma.ndev; i++)
		if (cma.devs[i].verbs == verbs)
			return &cma.devs[i];
	return NULL;
}

struct ibv_xrcd *cma_dev_xrcd(struct cma_dev *d)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = -1,
		.oflags = O_CREAT,
	};

	if (!d->xrcd)
		d->xrcd = ibv_open_xrcd(d->verbs, &a);
	return d->xrcd;
}

int cma_dev_gid_index(const struct cma_dev *d, const uint8_t gid[16])
{
	int i;

	if (ur_gid_is_zero(gid))
		return -1;
	for (i = 0; i < d->ngids; i++)
		if (!memcmp(d->gids[i], gid, 16))
			return i;
	return -1;
}

struct cma_dev *cma_dev_by_addr(const union ur_sockaddr *sa, uint8_t *index)
{
	uint8_t g[16];
	int i, k;

	if (sa->sa.sa_family != AF_INET && sa->sa.sa_family != AF_INET6)
		return NULL;
	/* as a GID, so that ::ffff:a.b.c.d names a.b.c.d's device too */
	ur_sockaddr_to_gid(sa, g);
	for (i = 0; i < cma.ndev; i++) {
		k = cma_dev_gid_index(&cma.devs[i], g);
		if (k >= 0) {
			if (index)
				*index = (uint8_t)k;
			return &cma.devs[i];
		}
	}
	return NULL;
}

/*
 * Which of d's addresses an id bound to a wildcard speaks to dst from,
 * as the kernel picks a source: dst itself when it is one of ours; else
 * the address the host routes dst from, if it is one of ours (two
 * interfaces); else the first of dst's IP version, loopback for a
 * loopback dst if there is one; else GID 0 (cma_addr_src_for then gives
 * the header an address of dst's version).
 */
uint8_t cma_dev_sgid_for(const struct cma_dev *d, const union ur_sockaddr *dst)
{
	bool v4 = dst->sa.sa_family == AF_INET ||
		  IN6_IS_ADDR_V4MAPPED(&dst->in6.sin6_addr);
	bool lo = ur_addr_is_loopback(dst);
	union ur_sockaddr src;
	uint8_t g[16];
	int i, k, fam = -1;

	ur_sockaddr_to_gid(dst, g);
	k = cma_dev_gid_index(d, g);
	if (k >= 0)
		return (uint8_t)k;
	if (!lo && !cma_addr_route_src(dst, &src)) {
		ur_sockaddr_to_gid(&src, g);
		k = cma_dev_gid_index(d, g);
		if (k >= 0)
			return (uint8_t)k;
	}
	for (i = 0; i < d->ngids; i++) {
		union ur_sockaddr a;

		if (ur_gid_is_zero(d->gids[i]) ||
		    ur_gid_is_v4mapped(d->gids[i]) != v4)
			continue;
		ur_gid_to_sockaddr(d->gids[i], 0, &a);
		if (ur_addr_is_loopback(&a) == lo)
			return (uint8_t)i;
		if (fam < 0)
			fam = i;
	}
	return fam >= 0 ? (uint8_t)fam : 0;
}

UR_EXPORT struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context **list;
	int i, ret;

	pthread_mutex_lock(&cma.lock);
	ret = cma_init();
	if (ret) {
		pthread_mutex_unlock(&cma.lock);
		if (num_devices)
			*num_devices = 0;
		errno = ret;
		return NULL;
	}
	list = calloc((size_t)cma.ndev + 1, sizeof(*list));
	if (list)
		for (i = 0; i < cma.ndev; i++)
			list[i] = cma.devs[i].verbs;
	if (num_devices)
		*num_devices = list ? cma.ndev : 0;
	pthread_mutex_unlock(&cma.lock);
	if (!list)
		errno = ENOMEM;
	return list;
}

UR_EXPORT void rdma_free_devices(struct ibv_context **list)
{
	free(list);
}

UR_EXPORT const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const names[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};

	if ((unsigned int)event < sizeof(names) / sizeof(names[0]))
		return names[event];
	return "UNKNOWN EVENT";
}
