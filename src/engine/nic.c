/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The NIC's lifecycle: the first open of a device creates it (link socket,
 * wake eventfd and timerfd, pcap, timers, progress thread), the last close stops it and
 * writes UROCE_STATS. The stages it starts live in tx.c, timer.c,
 * progress.c and recv.c.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "engine/engine_priv.h"
#include "obj/device.h"
#include "obj/limits.h"
#include "util/config.h"
#include "util/log.h"
#include "util/memguard.h"
#include "util/thread.h"


static void nic_open_pcap(struct ur_nic *nic)
{
	const char *path = ur_config_get()->pcap, *pp;
	char buf[4200], name[4096];
	int rc;

	if (!path)
		return;
	/* "%p" in the path becomes the pid (several processes, one spec) */
	pp = strstr(path, "%p");
	if (pp) {
		snprintf(name, sizeof(name), "%.*s%d%s", (int)(pp - path),
			 path, (int)getpid(), pp + 2);
		path = name;
	}
	if (nic->dev->index) {
		snprintf(buf, sizeof(buf), "%s.%u", path, nic->dev->index);
		path = buf;
	}
	rc = ur_pcap_open(&nic->pcap, path, UR_LINKTYPE_ETHERNET);
	if (rc) {
		ur_warn("engine: cannot open pcap %s: %d", path, rc);
		nic->pcap = NULL;
	}
}

_Static_assert(UR_MAX_GID <= UR_LINK_MAX_ADDRS,
	       "the link binds every GID's address");

/*
 * Every GID's address is bound (a peer may reach any of them); nic->addrs[i]
 * is what GID i's packets leave from and what their ICRC covers: its own
 * address, or address 0's when it could not be bound (the link sends it
 * from there too).
 */
static void nic_load_addrs(struct ur_nic *nic)
{
	unsigned int i;

	nic->n_addrs = UR_MIN(nic->dev->num_gids, (unsigned int)UR_LINK_MAX_ADDRS);
	for (i = 0; i < nic->n_addrs; i++)
		if (ur_link_local_addr(nic->link, i, &nic->addrs[i]))
			nic->addrs[i] = nic->addrs[0];
}

/* UROCE_RX_SHARDS, or as many shards as the process may run on cores
 * (at most UR_RX_SHARDS_DEFAULT_MAX). */
static unsigned int nic_want_shards(void)
{
	unsigned int n = ur_config_get()->rx_shards;
	cpu_set_t set;

	if (n)
		return UR_MIN(n, (unsigned int)UR_MAX_RX_SHARDS);
	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	n = (unsigned int)CPU_COUNT(&set);
	return UR_MAX(1u, UR_MIN(n, (unsigned int)UR_RX_SHARDS_DEFAULT_MAX));
}

/*
 * The receive shards, once the link said how many queues it steers: as
 * many unless UROCE_RX_SHARDS asked for more (the rest are fed by
 * forwarding, recv.c: what the unit tests' one-queue link runs).
 */
static int nic_open_shards(struct ur_nic *nic, unsigned int want)
{
	unsigned int n;

	nic->n_linkq = ur_link_rx_queues(nic->link);
	nic->rx_ring = ur_link_own_area(nic->link) != NULL;
	n = ur_config_get()->rx_shards ? want : UR_MIN(want, nic->n_linkq);
	return ur_rx_shards_init(nic, UR_MAX(n, 1u));
}

static int nic_open_link(struct ur_nic *nic)
{
	struct ur_device *dev = nic->dev;
	unsigned int i, shards = nic_want_shards();
	struct ur_link_config cfg;
	int rc, tries;

	for (tries = 0; tries < 8; tries++) {
		memset(&cfg, 0, sizeof(cfg));
		cfg.bind = dev->gids[0].addr;
		for (i = 1; i < dev->num_gids && i < UR_LINK_MAX_ADDRS; i++)
			cfg.more[i - 1] = dev->gids[i].addr;
		cfg.n_more = i - 1;
		if (cfg.bind.sa.sa_family == AF_INET)
			cfg.bind.in.sin_port = htons(UR_ROCEV2_PORT);
		else
			cfg.bind.in6.sin6_port = htons(UR_ROCEV2_PORT);
		cfg.use_gso = nic->use_gso;
		cfg.use_gro = 1;
		cfg.fault = ur_config_get()->fault;
		cfg.same_host = ur_config_get()->same_host;
		cfg.seal = ur_icrc_seal;	/* for ring packets sent
						 * without one (link.h) */
		cfg.tos = ur_ecn_tos(nic, 0);	/* most packets' class */
		cfg.rx_queues = shards;
		rc = ur_link_open(&cfg, &nic->link);
		if (rc != -EADDRINUSE)
			break;
		if (ur_device_reroll_auto_addr(dev))
			break;
	}
	if (rc)
		return rc;
	nic_load_addrs(nic);
	return nic_open_shards(nic, shards);
}

static void nic_free(struct ur_nic *nic)
{
	ur_mcast_fini(nic);
	if (nic->link)
		ur_link_close(nic->link);
	if (nic->wake_fd >= 0)
		close(nic->wake_fd);
	if (nic->timer_fd >= 0)
		close(nic->timer_fd);
	ur_pcap_close(nic->pcap);
	ur_rx_shards_fini(nic);
	pthread_mutex_destroy(&nic->deadline_lock);
	pthread_mutex_destroy(&nic->qp_list_lock);
	pthread_mutex_destroy(&nic->dx_lock);
	ur_timers_fini(&nic->timers);
	free(nic);
}

static int nic_create(struct ur_device *dev, struct ur_nic **out)
{
	const struct ur_config *cfg = ur_config_get();
	struct ur_nic *nic;
	int rc;

	nic = calloc(1, sizeof(*nic));
	if (!nic)
		return -ENOMEM;
	nic->dev = dev;
	nic->wake_fd = -1;
	nic->timer_fd = -1;
	pthread_mutex_init(&nic->deadline_lock, NULL);
	pthread_mutex_init(&nic->qp_list_lock, NULL);
	pthread_mutex_init(&nic->dx_lock, NULL);
	ur_timers_init(&nic->timers);
	ur_list_init(&nic->qps);
	nic->busy_poll = cfg->busy_poll;
	nic->poll_yield = cfg->poll_yield;
	nic->wait_yield = cfg->wait_yield;
	nic->srq_copy = cfg->srq_copy;
	nic->spin_ns = cfg->spin_ns;
	if (nic->spin_ns == UR_CONFIG_DEFAULT)
		nic->spin_ns = nic->busy_poll ? UR_BUSY_SPIN_NS : UR_RX_SPIN_NS;
	nic->quiet_ns = cfg->quiet_ns;
	if (nic->quiet_ns == UR_CONFIG_DEFAULT)
		nic->quiet_ns = UR_APP_POLL_QUIET_NS;
	nic->use_gso = cfg->gso;
	nic->ecn = cfg->ecn;
	nic->hardened = cfg->hardened;
	nic->lazy_doorbell = cfg->lazy_doorbell;
	nic->pace = cfg->pace;
	/* before any packet can reach application memory */
	rc = ur_memguard_init();
	if (rc)
		ur_warn("engine: no fault-safe copies: %s", strerror(-rc));
	nic->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (nic->wake_fd < 0) {
		rc = -errno;
		goto err;
	}
	/* CLOCK_MONOTONIC: the clock of ur_now_ns(), hence of deadlines */
	nic->timer_fd = timerfd_create(CLOCK_MONOTONIC,
				       TFD_NONBLOCK | TFD_CLOEXEC);
	if (nic->timer_fd < 0) {
		rc = -errno;
		goto err;
	}
	rc = nic_open_link(nic);
	if (rc)
		goto err;
	nic_open_pcap(nic);
	ur_direct_init(nic);
	rc = -ur_thread_create(&nic->thread, ur_progress_thread, nic,
			       "uroce-progress");
	if (rc)
		goto err;
	nic->thread_started = true;
	*out = nic;
	return 0;
err:
	nic_free(nic);
	return rc;
}

/* UROCE_STATS, once per NIC: a device still open at exit is written by the
 * exit handler, and a library destructor that closes it afterwards (e.g.
 * librdmacm's agent) must not write the same counters again. */
static void nic_dump_stats_env(struct ur_nic *nic)
{
	const struct ur_config *cfg = ur_config_get();
	FILE *f;

	if (cfg->stats == UR_STATS_OFF || nic->stats_written)
		return;
	nic->stats_written = true;
	if (!cfg->stats_path) {
		ur_engine_dump_counters(nic->dev, stderr);
		return;
	}
	f = fopen(cfg->stats_path, "a");
	if (!f)
		return;
	ur_engine_dump_counters(nic->dev, f);
	fclose(f);
}

int ur_nic_get(struct ur_device *dev)
{
	struct ur_nic *nic = NULL;
	int rc;

	/* dev->lock and open_count belong to the caller (open_device). */
	if (dev->nic)
		return 0;
	rc = nic_create(dev, &nic);
	if (rc)
		return rc;
	dev->nic = nic;
	return 0;
}

void ur_engine_write_stats(struct ur_device *dev)
{
	if (dev->nic)
		nic_dump_stats_env(dev->nic);
}

void ur_nic_put(struct ur_device *dev)
{
	struct ur_nic *nic = dev->nic;

	if (!nic || dev->open_count > 0)
		return;
	atomic_store(&nic->stop, true);
	ur_nic_wake(nic);
	if (nic->thread_started)
		pthread_join(nic->thread, NULL);
	nic_dump_stats_env(nic);
	dev->nic = NULL;
	nic_free(nic);
}

