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
 * This file writes the tree and follows the process (exit, fork, a dead
 * process's tree); devtree_refresh.c keeps the counters current and
 * devtree_files.c writes the files (devtree_priv.h).
 */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>

#include "api/ibverbs/api_priv.h"
#include "api/ibverbs/devtree/devtree_priv.h"
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

#define UR_PROVIDER_ABI 2	/* a uverbs device's own ABI: rxe's */

struct devtree_state devtree = { .lock = PTHREAD_MUTEX_INITIALIZER };
static bool hooks_installed;

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

static int write_port(struct ur_device *dev)
{
	char port[PATH_MAX], d[PATH_MAX], v[64];
	struct ibv_port_attr pa;
	int rc;

	tree_ibdev_dir(dev, port, sizeof(port));
	strncat(port, "/ports/1", sizeof(port) - strlen(port) - 1);
	rc = ur_device_query_port(dev, 1, &pa);
	if (rc)
		return rc;
	rc = tree_mkdirs(port);
	tree_put(port, "state", "%s", port_state_str(pa.state));
	tree_put(port, "phys_state", "%s",
	    pa.phys_state == 5 ? "5: LinkUp" : "3: Disabled");
	tree_put(port, "link_layer", "%s",
	    pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" :
						       "InfiniBand");
	fmt_rate(v, sizeof(v), &pa);
	tree_put(port, "rate", "%s", v);
	tree_put(port, "lid", "0x%x", pa.lid);
	tree_put(port, "sm_lid", "0x%x", pa.sm_lid);
	tree_put(port, "lid_mask_count", "%u", pa.lmc);
	tree_put(port, "sm_sl", "%u", pa.sm_sl);
	tree_put(port, "cap_mask", "0x%08x", pa.port_cap_flags);

	/* filled by refresh_counters() while the device is open */
	tree_pathf(d, sizeof(d), "%s/hw_counters", port);
	rc = rc ? rc : tree_mkdirs(d);
	tree_pathf(d, sizeof(d), "%s/counters", port);
	rc = rc ? rc : tree_mkdirs(d);
	tree_pathf(d, sizeof(d), "%s/pkeys", port);
	rc = rc ? rc : tree_mkdirs(d);
	for (int i = 0; i < UR_PKEY_TBL_LEN; i++) {
		char name[16];

		snprintf(name, sizeof(name), "%d", i);
		tree_put(d, name, "0x%04x", UR_PKEY_DEFAULT);
	}

	tree_pathf(d, sizeof(d), "%s/gids", port);
	rc = rc ? rc : tree_mkdirs(d);
	tree_pathf(d, sizeof(d), "%s/gid_attrs/types", port);
	rc = rc ? rc : tree_mkdirs(d);
	tree_pathf(d, sizeof(d), "%s/gid_attrs/ndevs", port);
	rc = rc ? rc : tree_mkdirs(d);
	for (unsigned int i = 0; i < UR_MAX_GID && !rc; i++) {
		struct ibv_gid_entry e;
		char name[16], gid[48], ifname[IF_NAMESIZE];
		unsigned int ifindex;
		bool valid = !ur_device_gid_entry(dev, 1, i, &e);

		snprintf(name, sizeof(name), "%u", i);
		if (!valid)
			memset(&e, 0, sizeof(e));
		fmt_gid(gid, sizeof(gid), e.gid.raw);
		tree_pathf(d, sizeof(d), "%s/gids", port);
		tree_put(d, name, "%s", gid);
		/* the kernel refuses to read these for an unused entry */
		tree_pathf(d, sizeof(d), "%s/gid_attrs/types", port);
		if (valid)
			tree_put(d, name, "RoCE v2");
		ifindex = valid ? ur_device_gid_ifindex(dev, i) : 0;
		tree_pathf(d, sizeof(d), "%s/gid_attrs/ndevs", port);
		if (ifindex && if_indextoname(ifindex, ifname))
			tree_put(d, name, "%s", ifname);
	}
	return rc;
}

static int write_device(struct ur_device *dev)
{
	char d[PATH_MAX], sub[PATH_MAX], v[128], host[64];
	struct ibv_device_attr attr;
	int rc;

	tree_ibdev_dir(dev, d, sizeof(d));
	rc = tree_mkdirs(d);
	if (rc)
		return rc;
	ur_device_query(dev, &attr);
	tree_put(d, "node_type", "1: CA");
	fmt_guid(v, sizeof(v), dev->node_guid);
	tree_put(d, "node_guid", "%s", v);
	fmt_guid(v, sizeof(v), attr.sys_image_guid);
	tree_put(d, "sys_image_guid", "%s", v);
	tree_put(d, "fw_ver", "uroce %s", UROCE_VERSION);
	if (gethostname(host, sizeof(host)))
		strcpy(host, "localhost");
	host[sizeof(host) - 1] = 0;
	tree_put(d, "node_desc", "%s %s", host, dev->ibdev.name);
	tree_put(d, "hw_rev", "0x%x", attr.hw_ver);

	tree_pathf(sub, sizeof(sub), "%s/device", d);
	rc = tree_mkdirs(sub);
	tree_put(sub, "numa_node", "-1");
	fmt_local_cpus(v, sizeof(v));
	tree_put(sub, "local_cpus", "%s", v);
	tree_pathf(sub, sizeof(sub), "%s/device/net", d);
	rc = rc ? rc : tree_mkdirs(sub);
	for (unsigned int i = 0; i < UR_MAX_GID && !rc; i++) {
		char ifname[IF_NAMESIZE], link[PATH_MAX], target[PATH_MAX];
		unsigned int ifindex;

		if (!dev->gids[i].valid)
			continue;
		ifindex = ur_device_gid_ifindex(dev, i);
		if (!ifindex || !if_indextoname(ifindex, ifname))
			continue;
		tree_pathf(link, sizeof(link), "%s/%s", sub, ifname);
		tree_pathf(target, sizeof(target), "/sys/class/net/%s", ifname);
		if (symlink(target, link) && errno != EEXIST)
			rc = -errno;
	}
	rc = rc ? rc : write_port(dev);

	tree_pathf(sub, sizeof(sub), "%s/class/infiniband_verbs/%s", devtree.sys,
	      dev->ibdev.dev_name);
	rc = rc ? rc : tree_mkdirs(sub);
	tree_put(sub, "ibdev", "%s", dev->ibdev.name);
	tree_put(sub, "abi_version", "%d", UR_PROVIDER_ABI);
	tree_put(sub, "dev", "231:%u", 192 + dev->index);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Life cycle                                                           */
/* ------------------------------------------------------------------ */

/* UROCE_STATS for a device still open at exit (no ibv_close_device). */
static void stats_at_exit(struct ur_device *dev)
{
	struct timespec dl;

	devtree_deadline(&dl);
	if (pthread_mutex_timedlock(&dev->lock, &dl))
		return;		/* held by a thread that will not give it back */
	ur_engine_write_stats(dev);
	pthread_mutex_unlock(&dev->lock);
}

/*
 * exit() can run on a thread that holds the locks this takes, or while
 * one that never runs again holds them: an application's SIGSEGV handler
 * (libpsm's, chained from memguard) called exit() on the refresher in
 * the middle of a round. Waiting would hang the process, so the
 * refresher's own exit skips all of this, and the locks and the
 * refresher's end are waited for a bounded time; the tree left behind is
 * a dead pid's, which the next process removes (remove_stale).
 */
static void at_exit(void)
{
	struct timespec dl;

	if (refresher_is_self())
		return;
	devtree_deadline(&dl);
	if (pthread_mutex_timedlock(&devtree.lock, &dl))
		return;
	/* a forked child that never listed devices has its parent's copies */
	if (refresher_stop() && devtree.pid == getpid()) {
		for (unsigned int i = 0; i < devtree.ndev; i++)
			stats_at_exit(&devtree.devs[i]);
		if (devtree.dir[0])
			ur_rundir_rm_tree(devtree.dir);
	}
	devtree.pid = 0;
	pthread_mutex_unlock(&devtree.lock);
}

/*
 * fork() waits until the refresher is between two rounds (holding no
 * device lock the child would inherit locked); the child has no refresher
 * and publishes its own tree.
 */
static void at_fork_prepare(void)
{
	pthread_mutex_lock(&devtree.lock);
}

static void at_fork_parent(void)
{
	pthread_mutex_unlock(&devtree.lock);
}

static void at_fork_child(void)
{
	pthread_mutex_init(&devtree.lock, NULL);
	refresher_init();
	devtree.pid = 0;
	devtree.dir[0] = 0;
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
			tree_pathf(path, sizeof(path), "%s/%s/sys", root, e->d_name);
			ur_rundir_rm_tree(path);
			continue;
		}
		if (!kill((pid_t)pid, 0) || errno != ESRCH)
			continue;
		tree_pathf(path, sizeof(path), "%s/%s", root, e->d_name);
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

	pthread_mutex_lock(&devtree.lock);
	if (devtree.pid == getpid() || !n) {
		pthread_mutex_unlock(&devtree.lock);
		return;
	}
	if (!hooks_installed) {
		refresher_init();	/* before the first one can start */
		atexit(at_exit);
		pthread_atfork(at_fork_prepare, at_fork_parent,
			       at_fork_child);
		hooks_installed = true;
	}
	devtree.pid = getpid();
	devtree.dir[0] = 0;	/* never a parent's, should this one fail */
	devtree.devs = devs;
	devtree.ndev = n;
	rc = refresh_reset(n);
	rc = rc ?: ur_rundir_root(root, sizeof(root));
	if (!rc) {
		remove_stale(root);
		tree_pathf(devtree.dir, sizeof(devtree.dir), "%s/%d", root, (int)devtree.pid);
		tree_pathf(devtree.sys, sizeof(devtree.sys), "%s/sys", devtree.dir);
		rc = tree_mkdirs(devtree.sys);
	}
	if (!rc) {
		char d[PATH_MAX];

		/* without it, files are renamed over as before */
		tree_pathf(d, sizeof(d), "%s/" TREE_SHADOW_DIR, devtree.dir);
		(void)tree_mkdirs(d);
	}
	if (!rc) {
		char d[PATH_MAX];

		tree_pathf(d, sizeof(d), "%s/class/infiniband_verbs", devtree.sys);
		rc = tree_mkdirs(d);
		tree_put(d, "abi_version", "%d", IB_USER_VERBS_ABI_VERSION);
	}
	for (unsigned int i = 0; i < n && !rc; i++) {
		rc = write_device(&devs[i]);
		tree_ibdev_dir(&devs[i], devs[i].ibdev.ibdev_path,
			  sizeof(devs[i].ibdev.ibdev_path));
		tree_pathf(devs[i].ibdev.dev_path, sizeof(devs[i].ibdev.dev_path),
		      "%s/class/infiniband_verbs/%s", devtree.sys,
		      devs[i].ibdev.dev_name);
	}
	if (rc) {
		ur_warn("no device tree (%s): sysfs readers will not see "
			"the devices", strerror(-rc));
		if (devtree.dir[0])
			ur_rundir_rm_tree(devtree.dir);
		strcpy(devtree.sys, UR_DEV_FAKE_SYSFS);
		devtree.dir[0] = 0;
		set_fake_paths(devs, n);
	}
	pthread_mutex_unlock(&devtree.lock);
}

void ur_devtree_device_opened(struct ur_device *dev)
{
	unsigned int i;

	pthread_mutex_lock(&devtree.lock);
	i = (unsigned int)(dev - devtree.devs);
	if (devtree.pid != getpid() || !devtree.dir[0] || i >= devtree.ndev) {
		pthread_mutex_unlock(&devtree.lock);
		return;
	}
	write_port(dev);
	refresh_device(i);
	refresher_start();
	pthread_mutex_unlock(&devtree.lock);
}

const char *ur_devtree_sysfs_path(void)
{
	unsigned int n;
	struct ur_device *devs = ur_device_get_all(&n);

	if (devs)
		ur_devtree_publish(devs, n);
	return devtree.sys[0] ? devtree.sys : UR_DEV_FAKE_SYSFS;
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
