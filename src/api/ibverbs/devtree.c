/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The per-process device tree (devtree.h) and the sysfs calls of
 * libibverbs that read it: ibv_get_sysfs_path, ibv_read_sysfs_file,
 * ibv_read_ibdev_sysfs_file.
 *
 * Layout, as Linux shows an rxe device (values in the kernel's formats):
 *   sys/class/infiniband_verbs/abi_version
 *   sys/class/infiniband_verbs/<dev_name>/{ibdev,abi_version,dev}
 *   sys/class/infiniband/<dev>/{node_type,node_guid,sys_image_guid,fw_ver,
 *       node_desc,hw_rev}
 *   sys/class/infiniband/<dev>/device/{numa_node,local_cpus,net/<ifname>}
 *       (net/<ifname> links to /sys/class/net/<ifname>)
 *   sys/class/infiniband/<dev>/ports/1/{state,phys_state,link_layer,rate,
 *       lid,sm_lid,lid_mask_count,sm_sl,cap_mask,gids/N,pkeys/N,
 *       gid_attrs/types/N,gid_attrs/ndevs/N,hw_counters/<name>,counters/<name>}
 *
 * Every file is replaced by rename(), so a reader sees the old or the new
 * value, never a partial one.
 */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>

#include "api/ibverbs/api_priv.h"
#include "api/ibverbs/devtree.h"
#include "engine/engine.h"
#include "obj/device.h"
#include "util/compiler.h"
#include "util/log.h"
#include "util/rundir.h"

UR_EXPORT const char *ibv_get_sysfs_path(void);
UR_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file,
				  char *buf, size_t size);
UR_EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
					struct ibv_device *dev,
					const char *fnfmt, ...);

#define MAX_COUNTERS 96
#define UR_PROVIDER_ABI 2	/* a uverbs device's own ABI: rxe's */

/* What a device's counter files last said, to rewrite only changes. */
struct counter_cache {
	char *qps;		/* the last qp/<dev> text written */
	unsigned int n;
	char name[MAX_COUNTERS][48];
	uint64_t val[MAX_COUNTERS];
};

static pthread_mutex_t tree_lock = PTHREAD_MUTEX_INITIALIZER;
static pid_t tree_pid;			/* the process the tree belongs to */
static char tree_dir[PATH_MAX];		/* <root>/<pid> */
static char sys_dir[PATH_MAX];		/* <root>/<pid>/sys */
static struct ur_device *tree_devs;
static unsigned int tree_ndev;
static struct counter_cache *caches;
static bool hooks_installed;

static pthread_t refresher;
static bool refresher_running;
static bool refresher_stop;
static pthread_cond_t refresher_cond = PTHREAD_COND_INITIALIZER;

/* ------------------------------------------------------------------ */
/* Files                                                                */
/* ------------------------------------------------------------------ */

static int mkdirs(const char *path)
{
	char p[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, path, len + 1);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0755) && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(p, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/* dir/name := buf[0..len), atomically. */
static int put_buf(const char *dir, const char *name, const char *buf,
		   size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	ssize_t w;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
		    (int)sizeof(path) ||
	    snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name) >=
		    (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	w = write(fd, buf, len);
	close(fd);
	if (w != (ssize_t)len || rename(tmp, path)) {
		unlink(tmp);
		return -EIO;
	}
	return 0;
}

/* dir/name := the formatted text plus a newline, atomically. */
static int UR_PRINTF(3, 4) put(const char *dir, const char *name,
			       const char *fmt, ...)
{
	char text[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(text) - 1)
		return -EINVAL;
	text[n++] = '\n';
	return put_buf(dir, name, text, (size_t)n);
}

static void UR_PRINTF(3, 4) pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------ */
/* Values in the kernel's formats                                       */
/* ------------------------------------------------------------------ */

static void fmt_guid(char *out, size_t len, uint64_t be_guid)
{
	uint64_t g = be64toh(be_guid);

	snprintf(out, len, "%04x:%04x:%04x:%04x", (unsigned int)(g >> 48),
		 (unsigned int)(g >> 32) & 0xffff,
		 (unsigned int)(g >> 16) & 0xffff, (unsigned int)g & 0xffff);
}

static void fmt_gid(char *out, size_t len, const uint8_t raw[16])
{
	int n = 0;

	for (int i = 0; i < 16 && n >= 0 && (size_t)n < len; i += 2)
		n += snprintf(out + n, len - (size_t)n, "%s%02x%02x",
			      i ? ":" : "", raw[i], raw[i + 1]);
}

/* "100 Gb/sec (4X EDR)": IB speed (x 2.5 Gb/s units of 0.1) and width. */
static void fmt_rate(char *out, size_t len, const struct ibv_port_attr *pa)
{
	static const struct {
		uint8_t speed;
		unsigned int tenths;
		const char *name;
	} speeds[] = {
		{ 1, 25, " SDR" }, { 2, 50, " DDR" }, { 4, 100, " QDR" },
		{ 8, 103, " FDR10" }, { 16, 140, " FDR" }, { 32, 250, " EDR" },
		{ 64, 500, " HDR" }, { 128, 1000, " NDR" },
	};
	static const uint8_t widths[][2] = {
		{ 1, 1 }, { 2, 4 }, { 4, 8 }, { 8, 12 }, { 16, 2 },
	};
	unsigned int tenths = 25, width = 1, rate;
	const char *name = " SDR";

	for (size_t i = 0; i < UR_ARRAY_SIZE(speeds); i++)
		if (speeds[i].speed == pa->active_speed) {
			tenths = speeds[i].tenths;
			name = speeds[i].name;
		}
	for (size_t i = 0; i < UR_ARRAY_SIZE(widths); i++)
		if (widths[i][0] == pa->active_width)
			width = widths[i][1];
	rate = tenths * width;
	snprintf(out, len, "%u%s Gb/sec (%uX%s)", rate / 10,
		 rate % 10 ? ".5" : "", width, name);
}

static const char *port_state_str(enum ibv_port_state s)
{
	switch (s) {
	case IBV_PORT_DOWN: return "1: DOWN";
	case IBV_PORT_INIT: return "2: INIT";
	case IBV_PORT_ARMED: return "3: ARMED";
	case IBV_PORT_ACTIVE: return "4: ACTIVE";
	case IBV_PORT_ACTIVE_DEFER: return "5: ACTIVE_DEFER";
	default: return "0: NOP";
	}
}

/* The CPUs this process may run on, as the kernel prints a cpumask:
 * 32-bit hex words, most significant first, separated by commas. */
static void fmt_local_cpus(char *out, size_t len)
{
	cpu_set_t set;
	int ncpu = (int)sysconf(_SC_NPROCESSORS_CONF);
	int words, n = 0;

	if (ncpu < 1)
		ncpu = 1;
	if (ncpu > CPU_SETSIZE)
		ncpu = CPU_SETSIZE;
	if (sched_getaffinity(0, sizeof(set), &set)) {
		CPU_ZERO(&set);
		for (int i = 0; i < ncpu; i++)
			CPU_SET(i, &set);
	}
	words = (ncpu + 31) / 32;
	out[0] = 0;
	for (int w = words - 1; w >= 0 && (size_t)n < len; w--) {
		uint32_t m = 0;

		for (int b = 0; b < 32; b++)
			if (CPU_ISSET(w * 32 + b, &set))
				m |= 1u << b;
		n += snprintf(out + n, len - (size_t)n, "%s%08x",
			      w == words - 1 ? "" : ",", m);
	}
}

/* ------------------------------------------------------------------ */
/* Writing a device                                                     */
/* ------------------------------------------------------------------ */

static void ibdev_dir(const struct ur_device *dev, char *buf, size_t len)
{
	pathf(buf, len, "%s/class/infiniband/%s", sys_dir, dev->ibdev.name);
}

static int write_port(struct ur_device *dev)
{
	char port[PATH_MAX], d[PATH_MAX], v[64];
	struct ibv_port_attr pa;
	int rc;

	ibdev_dir(dev, port, sizeof(port));
	strncat(port, "/ports/1", sizeof(port) - strlen(port) - 1);
	rc = ur_device_query_port(dev, 1, &pa);
	if (rc)
		return rc;
	rc = mkdirs(port);
	put(port, "state", "%s", port_state_str(pa.state));
	put(port, "phys_state", "%s",
	    pa.phys_state == 5 ? "5: LinkUp" : "3: Disabled");
	put(port, "link_layer", "%s",
	    pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" :
						       "InfiniBand");
	fmt_rate(v, sizeof(v), &pa);
	put(port, "rate", "%s", v);
	put(port, "lid", "0x%x", pa.lid);
	put(port, "sm_lid", "0x%x", pa.sm_lid);
	put(port, "lid_mask_count", "%u", pa.lmc);
	put(port, "sm_sl", "%u", pa.sm_sl);
	put(port, "cap_mask", "0x%08x", pa.port_cap_flags);

	/* filled by refresh_counters() while the device is open */
	pathf(d, sizeof(d), "%s/hw_counters", port);
	rc = rc ? rc : mkdirs(d);
	pathf(d, sizeof(d), "%s/counters", port);
	rc = rc ? rc : mkdirs(d);
	pathf(d, sizeof(d), "%s/pkeys", port);
	rc = rc ? rc : mkdirs(d);
	for (int i = 0; i < UR_PKEY_TBL_LEN; i++) {
		char name[16];

		snprintf(name, sizeof(name), "%d", i);
		put(d, name, "0x%04x", UR_PKEY_DEFAULT);
	}

	pathf(d, sizeof(d), "%s/gids", port);
	rc = rc ? rc : mkdirs(d);
	pathf(d, sizeof(d), "%s/gid_attrs/types", port);
	rc = rc ? rc : mkdirs(d);
	pathf(d, sizeof(d), "%s/gid_attrs/ndevs", port);
	rc = rc ? rc : mkdirs(d);
	for (unsigned int i = 0; i < UR_MAX_GID && !rc; i++) {
		struct ibv_gid_entry e;
		char name[16], gid[48], ifname[IF_NAMESIZE];
		unsigned int ifindex;
		bool valid = !ur_device_gid_entry(dev, 1, i, &e);

		snprintf(name, sizeof(name), "%u", i);
		if (!valid)
			memset(&e, 0, sizeof(e));
		fmt_gid(gid, sizeof(gid), e.gid.raw);
		pathf(d, sizeof(d), "%s/gids", port);
		put(d, name, "%s", gid);
		/* the kernel refuses to read these for an unused entry */
		pathf(d, sizeof(d), "%s/gid_attrs/types", port);
		if (valid)
			put(d, name, "RoCE v2");
		ifindex = valid ? ur_device_gid_ifindex(dev, i) : 0;
		pathf(d, sizeof(d), "%s/gid_attrs/ndevs", port);
		if (ifindex && if_indextoname(ifindex, ifname))
			put(d, name, "%s", ifname);
	}
	return rc;
}

static int write_device(struct ur_device *dev)
{
	char d[PATH_MAX], sub[PATH_MAX], v[128], host[64];
	struct ibv_device_attr attr;
	int rc;

	ibdev_dir(dev, d, sizeof(d));
	rc = mkdirs(d);
	if (rc)
		return rc;
	ur_device_query(dev, &attr);
	put(d, "node_type", "1: CA");
	fmt_guid(v, sizeof(v), dev->node_guid);
	put(d, "node_guid", "%s", v);
	fmt_guid(v, sizeof(v), attr.sys_image_guid);
	put(d, "sys_image_guid", "%s", v);
	put(d, "fw_ver", "uroce %s", UROCE_VERSION);
	if (gethostname(host, sizeof(host)))
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = 0;
	put(d, "node_desc", "%s %s", host, dev->ibdev.name);
	put(d, "hw_rev", "0x%x", attr.hw_ver);

	pathf(sub, sizeof(sub), "%s/device", d);
	rc = mkdirs(sub);
	put(sub, "numa_node", "-1");
	fmt_local_cpus(v, sizeof(v));
	put(sub, "local_cpus", "%s", v);
	pathf(sub, sizeof(sub), "%s/device/net", d);
	rc = rc ? rc : mkdirs(sub);
	for (unsigned int i = 0; i < UR_MAX_GID && !rc; i++) {
		char ifname[IF_NAMESIZE], link[PATH_MAX], target[PATH_MAX];
		unsigned int ifindex;

		if (!dev->gids[i].valid)
			continue;
		ifindex = ur_device_gid_ifindex(dev, i);
		if (!ifindex || !if_indextoname(ifindex, ifname))
			continue;
		pathf(link, sizeof(link), "%s/%s", sub, ifname);
		pathf(target, sizeof(target), "/sys/class/net/%s", ifname);
		if (symlink(target, link) && errno != EEXIST)
			rc = -errno;
	}
	rc = rc ? rc : write_port(dev);

	pathf(sub, sizeof(sub), "%s/class/infiniband_verbs/%s", sys_dir,
	      dev->ibdev.dev_name);
	rc = rc ? rc : mkdirs(sub);
	put(sub, "ibdev", "%s", dev->ibdev.name);
	put(sub, "abi_version", "%d", UR_PROVIDER_ABI);
	put(sub, "dev", "231:%u", 192 + dev->index);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Counters                                                             */
/* ------------------------------------------------------------------ */

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
		if (c->n == MAX_COUNTERS || strlen(name) >= sizeof(c->name[0]))
			return;
		strcpy(c->name[c->n++], name);
	} else if (c->val[i] == val) {
		return;
	}
	c->val[i] = val;
	put(dir, name, "%" PRIu64, val);
}

static const char *qp_type_str(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC: return "RC";
	case IBV_QPT_UC: return "UC";
	case IBV_QPT_UD: return "UD";
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

/*
 * <root>/<pid>/qp/<dev>: one line per QP, as `rdma resource show qp`
 * prints them (the state and attributes modify_qp last set). Rewritten
 * only when it changed. Caller holds tree_lock; dev's NIC runs.
 */
static void refresh_qps(struct ur_device *dev, char **last)
{
	char dir[PATH_MAX], *text = NULL;
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
			fprintf(f, " rqpn %u rq-psn %u sq-psn %u path-mtu %u",
				qp->attr.dest_qp_num, qp->attr.rq_psn,
				qp->attr.sq_psn, qp->path_mtu_bytes);
		fputc('\n', f);
		pthread_mutex_unlock(&qp->sq_lock);
	}
	pthread_rwlock_unlock(&dev->obj_lock);
	if (fclose(f) || !text)
		return;
	if (!*last || strcmp(*last, text)) {
		pathf(dir, sizeof(dir), "%s/qp", tree_dir);
		if (!mkdirs(dir) &&
		    !put_buf(dir, dev->ibdev.name, text, len)) {
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

	ibdev_dir(dev, hw, sizeof(hw));
	pathf(pc, sizeof(pc), "%s/ports/1/counters", hw);
	strncat(hw, "/ports/1/hw_counters", sizeof(hw) - strlen(hw) - 1);
	if (!c->n && (mkdirs(hw) || mkdirs(pc))) {
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
	free(text);
}

static bool any_open(void)
{
	bool open = false;

	for (unsigned int i = 0; i < tree_ndev && !open; i++) {
		pthread_mutex_lock(&tree_devs[i].lock);
		open = tree_devs[i].nic != NULL;
		pthread_mutex_unlock(&tree_devs[i].lock);
	}
	return open;
}

static void *refresher_main(void *arg)
{
	struct timespec ts;

	pthread_mutex_lock(&tree_lock);
	while (!refresher_stop) {
		for (unsigned int i = 0; i < tree_ndev; i++)
			refresh_counters(&tree_devs[i], &caches[i]);
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
		pthread_cond_timedwait(&refresher_cond, &tree_lock, &ts);
	}
	pthread_mutex_unlock(&tree_lock);
	return NULL;
}

/* Caller holds tree_lock. */
static void refresher_join(void)
{
	pthread_t t = refresher;

	if (!refresher_running)
		return;
	refresher_stop = true;
	pthread_cond_signal(&refresher_cond);
	pthread_mutex_unlock(&tree_lock);
	pthread_join(t, NULL);
	pthread_mutex_lock(&tree_lock);
	refresher_running = false;
	refresher_stop = false;
}

/* ------------------------------------------------------------------ */
/* Life cycle                                                           */
/* ------------------------------------------------------------------ */

/* UROCE_STATS for a device still open at exit (no ibv_close_device). */
static void stats_at_exit(struct ur_device *dev)
{
	pthread_mutex_lock(&dev->lock);
	ur_engine_write_stats(dev);
	pthread_mutex_unlock(&dev->lock);
}

static void at_exit(void)
{
	pthread_mutex_lock(&tree_lock);
	refresher_join();
	/* a forked child that never listed devices has its parent's copies */
	if (tree_pid == getpid()) {
		for (unsigned int i = 0; i < tree_ndev; i++)
			stats_at_exit(&tree_devs[i]);
		if (tree_dir[0])
			ur_rundir_rm_tree(tree_dir);
	}
	tree_pid = 0;
	pthread_mutex_unlock(&tree_lock);
}

/*
 * fork() waits until the refresher is between two rounds (holding no
 * device lock the child would inherit locked); the child has no refresher
 * and publishes its own tree.
 */
static void at_fork_prepare(void)
{
	pthread_mutex_lock(&tree_lock);
}

static void at_fork_parent(void)
{
	pthread_mutex_unlock(&tree_lock);
}

static void at_fork_child(void)
{
	pthread_mutex_init(&tree_lock, NULL);
	pthread_cond_init(&refresher_cond, NULL);
	refresher_running = false;
	refresher_stop = false;
	tree_pid = 0;
	tree_dir[0] = 0;
}

/* Removes <root>/<pid> of every process that is gone. */
static void remove_stale(const char *root)
{
	DIR *d = opendir(root);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char *end, path[PATH_MAX];
		long pid = strtol(e->d_name, &end, 10);

		if (*end || pid <= 0 || e->d_name[0] == '0')
			continue;
		if (pid == getpid()) {
			/* a tree from an earlier process with our pid; the
			 * rest of the directory may already be librdmacm's */
			pathf(path, sizeof(path), "%s/%s/sys", root, e->d_name);
			ur_rundir_rm_tree(path);
			continue;
		}
		if (!kill((pid_t)pid, 0) || errno != ESRCH)
			continue;
		pathf(path, sizeof(path), "%s/%s", root, e->d_name);
		ur_rundir_rm_tree(path);
	}
	if (d)
		closedir(d);
}

static void set_fake_paths(struct ur_device *devs, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++) {
		snprintf(devs[i].ibdev.ibdev_path,
			 sizeof(devs[i].ibdev.ibdev_path),
			 UR_DEV_FAKE_SYSFS "/class/infiniband/%s",
			 devs[i].ibdev.name);
		snprintf(devs[i].ibdev.dev_path,
			 sizeof(devs[i].ibdev.dev_path),
			 UR_DEV_FAKE_SYSFS "/class/infiniband_verbs/%s",
			 devs[i].ibdev.dev_name);
	}
}

void ur_devtree_publish(struct ur_device *devs, unsigned int n)
{
	char root[PATH_MAX];
	int rc;

	pthread_mutex_lock(&tree_lock);
	if (tree_pid == getpid() || !n) {
		pthread_mutex_unlock(&tree_lock);
		return;
	}
	if (!hooks_installed) {
		atexit(at_exit);
		pthread_atfork(at_fork_prepare, at_fork_parent,
			       at_fork_child);
		hooks_installed = true;
	}
	tree_pid = getpid();
	tree_dir[0] = 0;	/* never a parent's, should this one fail */
	tree_devs = devs;
	tree_ndev = n;
	for (unsigned int i = 0; caches && i < tree_ndev; i++)
		free(caches[i].qps);
	free(caches);
	caches = calloc(n, sizeof(*caches));
	rc = caches ? ur_rundir_root(root, sizeof(root)) : -ENOMEM;
	if (!rc) {
		remove_stale(root);
		pathf(tree_dir, sizeof(tree_dir), "%s/%d", root, (int)tree_pid);
		pathf(sys_dir, sizeof(sys_dir), "%s/sys", tree_dir);
		rc = mkdirs(sys_dir);
	}
	if (!rc) {
		char d[PATH_MAX];

		pathf(d, sizeof(d), "%s/class/infiniband_verbs", sys_dir);
		rc = mkdirs(d);
		put(d, "abi_version", "%d", IB_USER_VERBS_ABI_VERSION);
	}
	for (unsigned int i = 0; i < n && !rc; i++) {
		rc = write_device(&devs[i]);
		ibdev_dir(&devs[i], devs[i].ibdev.ibdev_path,
			  sizeof(devs[i].ibdev.ibdev_path));
		pathf(devs[i].ibdev.dev_path, sizeof(devs[i].ibdev.dev_path),
		      "%s/class/infiniband_verbs/%s", sys_dir,
		      devs[i].ibdev.dev_name);
	}
	if (rc) {
		ur_warn("no device tree (%s): sysfs readers will not see "
			"the devices", strerror(-rc));
		if (tree_dir[0])
			ur_rundir_rm_tree(tree_dir);
		strcpy(sys_dir, UR_DEV_FAKE_SYSFS);
		tree_dir[0] = 0;
		set_fake_paths(devs, n);
	}
	pthread_mutex_unlock(&tree_lock);
}

void ur_devtree_device_opened(struct ur_device *dev)
{
	unsigned int i;

	pthread_mutex_lock(&tree_lock);
	i = (unsigned int)(dev - tree_devs);
	if (tree_pid != getpid() || !tree_dir[0] || i >= tree_ndev) {
		pthread_mutex_unlock(&tree_lock);
		return;
	}
	write_port(dev);
	refresh_counters(dev, &caches[i]);
	if (!refresher_running) {
		refresher_stop = false;
		refresher_running =
			!pthread_create(&refresher, NULL, refresher_main, NULL);
	}
	pthread_mutex_unlock(&tree_lock);
}

const char *ur_devtree_sysfs_path(void)
{
	unsigned int n;
	struct ur_device *devs = ur_device_get_all(&n);

	if (devs)
		ur_devtree_publish(devs, n);
	return sys_dir[0] ? sys_dir : UR_DEV_FAKE_SYSFS;
}

/* ------------------------------------------------------------------ */
/* The sysfs calls of libibverbs                                        */
/* ------------------------------------------------------------------ */

UR_EXPORT const char *ibv_get_sysfs_path(void)
{
	return ur_devtree_sysfs_path();
}

/* Reads path into buf; a trailing newline is dropped. Bytes or -1/errno. */
static int read_text(const char *path, char *buf, size_t size)
{
	ssize_t len;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size);
	close(fd);
	if (len < 0)
		return -1;
	if (len > 0 && buf[len - 1] == '\n')
		buf[--len] = 0;
	else if ((size_t)len < size)
		buf[len] = 0;
	return (int)len;
}

UR_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file,
				  char *buf, size_t size)
{
	char path[PATH_MAX];

	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >=
	    (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return read_text(path, buf, size);
}

UR_EXPORT int ibv_read_ibdev_sysfs_file(char *buf, size_t size,
					struct ibv_device *dev,
					const char *fnfmt, ...)
{
	char rel[PATH_MAX];
	va_list ap;
	int n;

	va_start(ap, fnfmt);
	n = vsnprintf(rel, sizeof(rel), fnfmt, ap);
	va_end(ap);
	if (n < 0 || n >= (int)sizeof(rel)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return ibv_read_sysfs_file(dev->ibdev_path, rel, buf, size);
}
