/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The device tree's live files: ports/1/hw_counters (the engine's counters
 * and rxe's names for them), ports/1/counters (the IBA port counters) and
 * <root>/<pid>/qp/<dev> (each QP's state, PSNs and counters), rewritten
 * by one thread every UR_DEVTREE_REFRESH_MS while a device is open, each
 * file only when its value changed. A round whose counters are all unchanged stops at
 * comparing their text with the last round's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/ibverbs/devtree/devtree_priv.h"
#include "engine/engine.h"
#include "obj/device.h"
#include "util/thread.h"

/* What a device's counter files last said, to rewrite only changes. */
struct counter_cache {
	char *qps;		/* the last qp/<dev> text written */
	char *dump;		/* the engine's counters text of the last round */
	unsigned int n;
	char name[UR_DEVTREE_MAX_COUNTERS][48];
	uint64_t val[UR_DEVTREE_MAX_COUNTERS];
};

static struct counter_cache *caches;	/* one per devtree.devs[] */
static unsigned int ncaches;
static pthread_t refresher;
static bool refresher_running;
static bool refresher_stopping;
static pthread_cond_t refresher_cond;	/* on CLOCK_MONOTONIC: cond_init() */
static __thread bool on_refresher;	/* this thread is the refresher */

/* rxe's hw_counters names for the engine counters that mean the same. */
static const char *const rxe_alias[][2] = {
	{ "tx_pkts", "sent_pkts" },
	{ "rx_pkts", "rcvd_pkts" },
	{ "duplicate_requests", "duplicate_request" },
	{ "seq_nak_sent", "out_of_seq_request" },
	{ "seq_nak_rcvd", "rcvd_seq_err" },
	{ "rnr_nak_sent", "send_rnr_err" },
	{ "rnr_nak_rcvd", "rcvd_rnr_err" },
	{ "tx_errors", "send_err" },
};

/* The IBA port counters (counters/) from the link's: data in 4-byte words. */
static const struct {
	const char *from, *to;
	unsigned int div;
} port_counter[] = {
	{ "link_tx_pkts", "port_xmit_packets", 1 },
	{ "link_rx_pkts", "port_rcv_packets", 1 },
	{ "link_tx_bytes", "port_xmit_data", 4 },
	{ "link_rx_bytes", "port_rcv_data", 4 },
	{ "link_tx_errors", "port_xmit_discards", 1 },
};

static void cache_put(struct counter_cache *c, const char *dir,
		      const char *name, uint64_t val)
{
	unsigned int i;

	for (i = 0; i < c->n; i++)
		if (!strcmp(c->name[i], name))
			break;
	if (i == c->n) {
		if (c->n == UR_DEVTREE_MAX_COUNTERS ||
		    strlen(name) >= sizeof(c->name[0]))
			return;
		strcpy(c->name[c->n++], name);
	} else if (c->val[i] == val) {
		return;
	}
	c->val[i] = val;
	tree_put(dir, name, "%" PRIu64, val);
}

static const char *qp_type_str(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC: return "RC";
	case IBV_QPT_UC: return "UC";
	case IBV_QPT_UD: return "UD";
	/* as `rdma resource show qp` names them */
	case IBV_QPT_XRC_SEND: return "XRC_INI";
	case IBV_QPT_XRC_RECV: return "XRC_TGT";
	default: return "?";
	}
}

static const char *qp_state_str(enum ibv_qp_state st)
{
	static const char *const names[] = {
		[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT",
		[IBV_QPS_RTR] = "RTR", [IBV_QPS_RTS] = "RTS",
		[IBV_QPS_SQD] = "SQD", [IBV_QPS_SQE] = "SQE",
		[IBV_QPS_ERR] = "ERR",
	};

	return (unsigned int)st < UR_ARRAY_SIZE(names) && names[st] ?
		       names[st] : "?";
}

static const char *peer_str(const union ur_sockaddr *sa,
			    char buf[INET6_ADDRSTRLEN])
{
	const void *ip = sa->sa.sa_family == AF_INET6 ?
				 (const void *)&sa->in6.sin6_addr :
				 (const void *)&sa->in.sin_addr;

	if (!inet_ntop(sa->sa.sa_family, ip, buf, INET6_ADDRSTRLEN))
		strcpy(buf, "?");
	return buf;
}

/*
 * <root>/<pid>/qp/<dev>: one line per QP, as `rdma resource show qp`
 * prints them (the state and attributes modify_qp last set), then the
 * engine's live PSNs and the QP's counters. Rewritten only when it
 * changed. Caller holds devtree.lock; dev's NIC runs.
 */
static void refresh_qps(struct ur_device *dev, char **last)
{
	char dir[PATH_MAX], peer[INET6_ADDRSTRLEN], *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return;
	pthread_rwlock_rdlock(&dev->obj_lock);
	for (uint32_t i = 0; i < dev->qpns.cap; i++) {
		uint32_t k = dev->qpns.keys[i];
		struct ur_qp *qp = dev->qpns.vals[i];

		if (!k || k == UR_U32_TOMB || !qp)
			continue;
		pthread_mutex_lock(&qp->sq_lock);
		fprintf(f, "lqpn %u type %s state %s", k, qp_type_str(qp->type),
			qp_state_str(qp->state));
		if (qp->type != IBV_QPT_UD && qp->state >= IBV_QPS_RTR &&
		    qp->state != IBV_QPS_ERR)
			fprintf(f,
				" rqpn %u peer %s rq-psn %u sq-psn %u path-mtu %u",
				qp->attr.dest_qp_num, peer_str(&qp->av.dest, peer),
				qp->attr.rq_psn, qp->attr.sq_psn,
				qp->path_mtu_bytes);
		ur_engine_dump_qp(qp, f);
		fputc('\n', f);
		pthread_mutex_unlock(&qp->sq_lock);
	}
	pthread_rwlock_unlock(&dev->obj_lock);
	if (fclose(f) || !text)
		return;
	if (!*last || strcmp(*last, text)) {
		tree_pathf(dir, sizeof(dir), "%s/qp", devtree.dir);
		if (!tree_mkdirs(dir) &&
		    !tree_put_buf(dir, dev->ibdev.name, text, len)) {
			free(*last);
			*last = text;
			return;
		}
	}
	free(text);
}

/* Rewrites the counter files of dev that changed (dev's NIC must run). */
static void refresh_counters(struct ur_device *dev, struct counter_cache *c)
{
	char hw[PATH_MAX], pc[PATH_MAX], line[128];
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	pthread_mutex_lock(&dev->lock);
	if (!dev->nic) {
		pthread_mutex_unlock(&dev->lock);
		return;
	}
	f = open_memstream(&text, &len);
	if (f) {
		ur_engine_dump_counters(dev, f);
		fclose(f);
	}
	pthread_mutex_unlock(&dev->lock);
	refresh_qps(dev, &c->qps);
	if (!f || !text)
		return;
	if (c->dump && !strcmp(c->dump, text)) {
		/* nothing moved: the usual round while idle */
		free(text);
		return;
	}

	tree_ibdev_dir(dev, hw, sizeof(hw));
	tree_pathf(pc, sizeof(pc), "%s/ports/1/counters", hw);
	strncat(hw, "/ports/1/hw_counters", sizeof(hw) - strlen(hw) - 1);
	if (!c->n && (tree_mkdirs(hw) || tree_mkdirs(pc))) {
		free(text);
		return;
	}
	f = fmemopen(text, len, "r");
	while (f && fgets(line, sizeof(line), f)) {
		char name[64];
		uint64_t v;

		if (line[0] == '#' ||
		    sscanf(line, "%63s %" SCNu64, name, &v) != 2)
			continue;
		cache_put(c, hw, name, v);
		for (size_t i = 0; i < UR_ARRAY_SIZE(rxe_alias); i++)
			if (!strcmp(name, rxe_alias[i][0]))
				cache_put(c, hw, rxe_alias[i][1], v);
		for (size_t i = 0; i < UR_ARRAY_SIZE(port_counter); i++)
			if (!strcmp(name, port_counter[i].from))
				cache_put(c, pc, port_counter[i].to,
					  v / port_counter[i].div);
	}
	if (f)
		fclose(f);
	free(c->dump);
	c->dump = text;		/* what the files say now */
}

static bool any_open(void)
{
	bool open = false;

	for (unsigned int i = 0; i < devtree.ndev && !open; i++) {
		pthread_mutex_lock(&devtree.devs[i].lock);
		open = devtree.devs[i].nic != NULL;
		pthread_mutex_unlock(&devtree.devs[i].lock);
	}
	return open;
}

static void *refresher_main(void *arg)
{
	struct timespec ts;

	on_refresher = true;
	pthread_mutex_lock(&devtree.lock);
	while (!refresher_stopping) {
		for (unsigned int i = 0; i < devtree.ndev; i++)
			refresh_device(i);
		if (!any_open()) {
			/* the next open starts a new one; nobody joins us */
			pthread_detach(pthread_self());
			refresher_running = false;
			break;
		}
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += UR_DEVTREE_REFRESH_MS * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&refresher_cond, &devtree.lock, &ts);
	}
	pthread_mutex_unlock(&devtree.lock);
	return NULL;
}

/* The refresher's deadlines are CLOCK_MONOTONIC times, so its condition
 * variable must wait on that clock (the default, CLOCK_REALTIME, takes
 * them as long past: the refresher never slept). */
static void cond_init(void)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(&refresher_cond, &a);
	pthread_condattr_destroy(&a);
}

bool refresher_stop(void)
{
	pthread_t t = refresher;
	struct timespec dl;

	if (!refresher_running)
		return true;
	refresher_stopping = true;
	pthread_cond_signal(&refresher_cond);
	pthread_mutex_unlock(&devtree.lock);
	/* a round takes microseconds; one that does not end is stuck
	 * (a signal handler of the application's that never returns) */
	devtree_deadline(&dl);
	if (pthread_timedjoin_np(t, NULL, &dl)) {
		pthread_mutex_lock(&devtree.lock);
		return false;
	}
	pthread_mutex_lock(&devtree.lock);
	refresher_running = false;
	refresher_stopping = false;
	return true;
}

void devtree_deadline(struct timespec *dl)
{
	clock_gettime(CLOCK_REALTIME, dl);
	dl->tv_sec += UR_DEVTREE_EXIT_WAIT_MS / 1000;
	dl->tv_nsec += (UR_DEVTREE_EXIT_WAIT_MS % 1000) * 1000000L;
	if (dl->tv_nsec >= 1000000000L) {
		dl->tv_sec++;
		dl->tv_nsec -= 1000000000L;
	}
}

bool refresher_is_self(void)
{
	return on_refresher;
}

void refresher_init(void)
{
	cond_init();
	refresher_running = false;
	refresher_stopping = false;
}

void refresher_start(void)
{
	if (refresher_running)
		return;
	refresher_stopping = false;
	/* named for top -H, and for the tests */
	refresher_running = !ur_thread_create(&refresher, refresher_main, NULL,
					      "uroce-devtree");
}

int refresh_reset(unsigned int ndev)
{
	for (unsigned int i = 0; i < ncaches; i++) {
		free(caches[i].qps);
		free(caches[i].dump);
	}
	free(caches);
	caches = calloc(ndev, sizeof(*caches));
	ncaches = caches ? ndev : 0;
	return caches ? 0 : -ENOMEM;
}

void refresh_device(unsigned int i)
{
	if (i < ncaches)
		refresh_counters(&devtree.devs[i], &caches[i]);
}
