/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The per-process device tree through the public API, as a sysfs reader
 * sees it: paths, the values the verbs queries return, live hw_counters
 * while traffic flows, each QP's own counters, rewritten without a new
 * file each time, next to no CPU while idle, removal at exit, removal of a
 * SIGKILLed process's tree by the next process, no trampling between a parent and its child,
 * and the trees of live processes left alone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <endian.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "api/ibverbs/params.h"
#include "te_util.h"

/* How long a change may take to show in the tree. The refresher runs every
 * UR_DEVTREE_REFRESH_MS, but on a loaded 2-core machine its thread can wait
 * that long for a core many times over: the test checks that files follow
 * the engine, not the scheduler's latency. */
#define SHOWS_WITHIN_MS (40 * UR_DEVTREE_REFRESH_MS)

const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
			size_t size);
int ibv_read_ibdev_sysfs_file(char *buf, size_t size, struct ibv_device *dev,
			      const char *fnfmt, ...);

static char root[1024];	/* $XDG_RUNTIME_DIR/uroce-<uid> */

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

static int read_str(const char *dir, const char *file, char *buf, size_t len)
{
	int n = ibv_read_sysfs_file(dir, file, buf, len);

	if (n >= 0 && (size_t)n < len)
		buf[n] = 0;
	return n;
}

static uint64_t read_u64(const char *dir, const char *file)
{
	char buf[64];

	assert_true(read_str(dir, file, buf, sizeof(buf)) > 0);
	return strtoull(buf, NULL, 10);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* One SEND of len bytes from p's end 0 to end 1, both completions good. */
static void send_one(struct te_pair *p, int id, uint32_t len)
{
	struct ibv_wc wc;

	assert_int_equal(te_post_recv(&p->s[1], (uint64_t)id, 0, len), 0);
	assert_int_equal(te_post_send(&p->s[0], IBV_WR_SEND, (uint64_t)id, 0,
				      len, 0, 0, IBV_SEND_SIGNALED), 0);
	assert_int_equal(te_poll(p->s[0].scq, &wc, 3000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(te_poll(p->s[1].rcq, &wc, 3000), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
}

/* A pid that belonged to a process that is gone now. */
static pid_t dead_pid(void)
{
	pid_t p = fork();

	if (!p)
		_exit(0);
	assert_true(p > 0);
	waitpid(p, NULL, 0);
	return p;
}

static void plant(pid_t pid)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%d", root, (int)pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%d/sys", root, (int)pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%d/sys/marker", root, (int)pid);
	fclose(fopen(p, "w"));
}

static bool planted(pid_t pid)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%d/sys/marker", root, (int)pid);
	return exists(p);
}

static void t_layout_and_values(void **state)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_port_attr pa;
	union ibv_gid gid;
	char want[PATH_MAX], buf[256], g[64];
	pid_t stale = dead_pid(), live = getppid();
	uint64_t guid;
	int n;

	/* before the first device list: a dead process's tree and a live one */
	plant(stale);
	plant(live);
	list = ibv_get_device_list(&n);
	assert_non_null(list);
	assert_true(n >= 1);
	snprintf(want, sizeof(want), "%s/%d/sys", root, (int)getpid());
	assert_string_equal(ibv_get_sysfs_path(), want);
	assert_false(planted(stale));
	assert_true(planted(live));

	snprintf(want, sizeof(want), "%s/class/infiniband/%s",
		 ibv_get_sysfs_path(), ibv_get_device_name(list[0]));
	assert_string_equal(list[0]->ibdev_path, want);
	snprintf(want, sizeof(want), "%s/class/infiniband_verbs/%s",
		 ibv_get_sysfs_path(), list[0]->dev_name);
	assert_string_equal(list[0]->dev_path, want);
	assert_int_equal(read_str(list[0]->dev_path, "ibdev", buf,
				  sizeof(buf)),
			 (int)strlen(ibv_get_device_name(list[0])));
	assert_string_equal(buf, ibv_get_device_name(list[0]));

	assert_true(read_str(list[0]->ibdev_path, "node_type", buf,
			     sizeof(buf)) > 0);
	assert_string_equal(buf, "1: CA");
	guid = be64toh(ibv_get_device_guid(list[0]));
	snprintf(g, sizeof(g), "%04x:%04x:%04x:%04x",
		 (unsigned int)(guid >> 48), (unsigned int)(guid >> 32) & 0xffff,
		 (unsigned int)(guid >> 16) & 0xffff,
		 (unsigned int)guid & 0xffff);
	assert_true(ibv_read_ibdev_sysfs_file(buf, sizeof(buf), list[0],
					      "node_guid") > 0);
	assert_string_equal(buf, g);

	ctx = ibv_open_device(list[0]);
	assert_non_null(ctx);
	assert_int_equal(ibv_query_port(ctx, 1, &pa), 0);
	assert_true(ibv_read_ibdev_sysfs_file(buf, sizeof(buf), list[0],
					      "ports/1/state") > 0);
	snprintf(g, sizeof(g), "%d: ", pa.state);
	assert_memory_equal(buf, g, strlen(g));
	assert_true(ibv_read_ibdev_sysfs_file(buf, sizeof(buf), list[0],
					      "ports/1/link_layer") > 0);
	assert_string_equal(buf, "Ethernet");
	/* GID 0 after open (the NIC may have picked another address) */
	assert_int_equal(ibv_query_gid(ctx, 1, 0, &gid), 0);
	snprintf(g, sizeof(g),
		 "%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:%02x%02x:"
		 "%02x%02x:%02x%02x", gid.raw[0], gid.raw[1], gid.raw[2],
		 gid.raw[3], gid.raw[4], gid.raw[5], gid.raw[6], gid.raw[7],
		 gid.raw[8], gid.raw[9], gid.raw[10], gid.raw[11], gid.raw[12],
		 gid.raw[13], gid.raw[14], gid.raw[15]);
	assert_true(ibv_read_ibdev_sysfs_file(buf, sizeof(buf), list[0],
					      "ports/1/gids/0") > 0);
	assert_string_equal(buf, g);
	assert_true(ibv_read_ibdev_sysfs_file(buf, sizeof(buf), list[0],
					      "ports/1/gid_attrs/types/0") > 0);
	assert_string_equal(buf, "RoCE v2");
	assert_true(ibv_read_ibdev_sysfs_file(buf, sizeof(buf), list[0],
					      "ports/1/gid_attrs/ndevs/0") > 0);
	snprintf(want, sizeof(want), "%s/device/net/%s", list[0]->ibdev_path,
		 buf);
	assert_true(exists(want));
	assert_true(ibv_read_ibdev_sysfs_file(buf, sizeof(buf), list[0],
					      "ports/1/pkeys/0") > 0);
	assert_string_equal(buf, "0xffff");
	assert_true(ibv_read_ibdev_sysfs_file(buf, sizeof(buf), list[0],
					      "device/numa_node") > 0);
	/* an unused GID slot: zero GID, no type (the kernel's EINVAL) */
	assert_true(ibv_read_ibdev_sysfs_file(buf, sizeof(buf), list[0],
					      "ports/1/gids/15") > 0);
	assert_string_equal(buf, "0000:0000:0000:0000:0000:0000:0000:0000");
	assert_int_equal(ibv_read_ibdev_sysfs_file(buf, sizeof(buf), list[0],
						   "ports/1/gid_attrs/types/15"),
			 -1);
	assert_int_equal(errno, ENOENT);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
}

/* sent_pkts on one side, rcvd_pkts on the other, follow the traffic
 * within 2 refresh periods and never go back. */
static void t_live_counters(void **state)
{
	struct ibv_device **list;
	struct te_pair p;
	char hw0[PATH_MAX], hw1[PATH_MAX];
	char pc0[PATH_MAX];
	uint64_t sent0, rcvd0, xmit0, t0;
	int n;

	list = ibv_get_device_list(&n);
	assert_true(n >= 2);
	snprintf(hw0, sizeof(hw0), "%s/ports/1/hw_counters",
		 list[0]->ibdev_path);
	snprintf(hw1, sizeof(hw1), "%s/ports/1/hw_counters",
		 list[1]->ibdev_path);
	assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
	assert_int_equal(te_pair_connect(&p, NULL), 0);
	/* the QP list of each device names its QP, connected to the other */
	for (int i = 0; i < 2; i++) {
		char qpf[PATH_MAX], want[128], text[4096];
		int fd;
		ssize_t r = 0;

		snprintf(qpf, sizeof(qpf), "%s/%d/qp/%s", root, (int)getpid(),
			 ibv_get_device_name(list[i]));
		snprintf(want, sizeof(want),
			 "lqpn %u type RC state RTS rqpn %u ",
			 p.s[i].qp->qp_num, p.s[1 - i].qp->qp_num);
		t0 = now_ms();
		for (;;) {
			fd = open(qpf, O_RDONLY);
			r = fd < 0 ? 0 : read(fd, text, sizeof(text) - 1);
			if (fd >= 0)
				close(fd);
			text[r > 0 ? r : 0] = 0;
			if (strstr(text, want))
				break;
			assert_true(now_ms() - t0 < SHOWS_WITHIN_MS);
			usleep(5000);
		}
	}
	usleep(150 * 1000);
	snprintf(pc0, sizeof(pc0), "%s/ports/1/counters", list[0]->ibdev_path);
	sent0 = read_u64(hw0, "sent_pkts");
	xmit0 = read_u64(pc0, "port_xmit_packets");
	rcvd0 = read_u64(hw1, "rcvd_pkts");
	for (int i = 0; i < 20; i++) {
		send_one(&p, i, 64);
	}
	t0 = now_ms();
	while (read_u64(hw0, "sent_pkts") < sent0 + 20 ||
	       read_u64(hw1, "rcvd_pkts") < rcvd0 + 20 ||
	       read_u64(pc0, "port_xmit_packets") < xmit0 + 20) {
		assert_true(now_ms() - t0 < SHOWS_WITHIN_MS);
		usleep(5000);
	}
	/* rxe's name is an alias of uroce's */
	assert_true(read_u64(hw0, "tx_pkts") >= sent0 + 20);
	te_pair_close(&p);
	te_close_devices();
	ibv_free_device_list(list);
}

/*
 * A counter rewritten as traffic moves it trades places with its kept
 * shadow: two inodes in all, and no shadow in the counter's directory. A
 * new file per rewrite (an inode made and one freed each time) cost ext4
 * much of a perftest responder's CPU (docs/benchmarks.md).
 */
static void t_rewrite_keeps_files(void **state)
{
	struct ibv_device **list;
	struct te_pair p;
	char hw1[PATH_MAX], file[PATH_MAX];
	ino_t seen[2] = { 0, 0 };
	struct dirent *e;
	struct stat st;
	DIR *dir;
	uint64_t rcvd, t0;
	int n, i, kinds = 0;

	(void)state;
	list = ibv_get_device_list(&n);
	assert_true(n >= 2);
	snprintf(hw1, sizeof(hw1), "%s/ports/1/hw_counters",
		 list[1]->ibdev_path);
	snprintf(file, sizeof(file), "%s/ports/1/hw_counters/rcvd_pkts",
		 list[1]->ibdev_path);
	assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
	assert_int_equal(te_pair_connect(&p, NULL), 0);
	for (i = 0; i < 8; i++) {
		rcvd = read_u64(hw1, "rcvd_pkts");
		send_one(&p, i, 64);
		t0 = now_ms();
		while (read_u64(hw1, "rcvd_pkts") <= rcvd) {
			assert_true(now_ms() - t0 < SHOWS_WITHIN_MS);
			usleep(5000);
		}
		assert_int_equal(stat(file, &st), 0);
		if (st.st_ino != seen[0] && st.st_ino != seen[1]) {
			assert_true(kinds < 2);
			seen[kinds++] = st.st_ino;
		}
	}
	/* and the shadows are not entries of the directory a reader lists */
	dir = opendir(hw1);
	assert_non_null(dir);
	while ((e = readdir(dir)))
		assert_true(!strcmp(e->d_name, ".") ||
			    !strcmp(e->d_name, "..") || e->d_name[0] != '.');
	closedir(dir);
	te_pair_close(&p);
	te_close_devices();
	ibv_free_device_list(list);
}

/* The value of key on QP qpn's line of <root>/<pid>/qp/<dev>; -1 none. */
static int64_t qp_counter(const char *dev, uint32_t qpn, const char *key)
{
	char path[PATH_MAX], text[8192], pat[64], *line, *k;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "%s/%d/qp/%s", root, (int)getpid(), dev);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	r = read(fd, text, sizeof(text) - 1);
	close(fd);
	text[r > 0 ? r : 0] = 0;
	snprintf(pat, sizeof(pat), "lqpn %u ", qpn);
	line = strstr(text, pat);
	if (!line)
		return -1;
	if (strchr(line, '\n'))
		*strchr(line, '\n') = 0;
	snprintf(pat, sizeof(pat), " %s ", key);
	k = strstr(line, pat);
	return k ? strtoll(k + strlen(pat), NULL, 10) : -1;
}

struct qp_snap {
	int64_t tx_pkts, tx_bytes, rx_pkts, rx_bytes;
};

static void qp_snap(const char *dev, uint32_t qpn, struct qp_snap *s)
{
	s->tx_pkts = qp_counter(dev, qpn, "tx_pkts");
	s->tx_bytes = qp_counter(dev, qpn, "tx_bytes");
	s->rx_pkts = qp_counter(dev, qpn, "rx_pkts");
	s->rx_bytes = qp_counter(dev, qpn, "rx_bytes");
}

/*
 * Each QP's line counts its own traffic: 20 one-packet SENDs of 100 bytes
 * are 20 packets and 2000 payload bytes out of one QP and into the other
 * (more if some were resent), and every ACK the receiver sent (at least
 * one, no payload) reached the sender, over loopback where nothing is
 * lost.
 */
static void t_qp_counters(void **state)
{
	struct ibv_device **list;
	struct te_conn_opts o = { .timeout = TE_TIMEOUT_LOADED, .retry_cnt = 7,
				  .rnr_retry = 7,
				  .psn = { 0x123456, 0xfffff0 } };
	struct qp_snap s0, r0, s1, r1;
	const char *d0, *d1;
	uint32_t q0, q1;
	int64_t resent;
	struct te_pair p;
	uint64_t t0;
	int n;

	list = ibv_get_device_list(&n);
	assert_true(n >= 2);
	d0 = ibv_get_device_name(list[0]);
	d1 = ibv_get_device_name(list[1]);
	assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
	/* under ctest -j the SENDs must not end in RETRY_EXC
	 * (TE_TIMEOUT_LOADED); resends on a loaded host are counted below */
	assert_int_equal(te_pair_connect(&p, &o), 0);
	q0 = p.s[0].qp->qp_num;
	q1 = p.s[1].qp->qp_num;
	t0 = now_ms();
	do {
		assert_true(now_ms() - t0 < SHOWS_WITHIN_MS);
		usleep(5000);
		qp_snap(d0, q0, &s0);
		qp_snap(d1, q1, &r0);
	} while (s0.tx_pkts < 0 || r0.rx_pkts < 0 || s0.rx_bytes < 0 ||
		 r0.tx_bytes < 0);
	assert_int_equal(qp_counter(d0, q0, "retransmits"), 0);
	for (int i = 0; i < 20; i++) {
		send_one(&p, i, 100);
	}
	t0 = now_ms();
	for (;;) {
		qp_snap(d0, q0, &s1);
		qp_snap(d1, q1, &r1);
		if (r1.rx_pkts - r0.rx_pkts >= 20 &&
		    r1.tx_pkts - r0.tx_pkts >= 1 &&
		    s1.tx_pkts - s0.tx_pkts == r1.rx_pkts - r0.rx_pkts &&
		    s1.rx_pkts - s0.rx_pkts == r1.tx_pkts - r0.tx_pkts)
			break;
		assert_true(now_ms() - t0 < SHOWS_WITHIN_MS);
		usleep(5000);
	}
	/* a resend (a probe on a loaded machine) is a retransmit sent and
	 * a duplicate received: the counts say so */
	resent = s1.tx_pkts - s0.tx_pkts - 20;
	assert_true(resent >= 0);
	assert_int_equal(s1.tx_bytes - s0.tx_bytes, 100 * (20 + resent));
	assert_int_equal(r1.rx_bytes - r0.rx_bytes, 100 * (20 + resent));
	assert_int_equal(qp_counter(d1, q1, "duplicate_requests"), resent);
	assert_true(!resent || qp_counter(d0, q0, "retransmits") > 0);
	assert_true(r1.tx_pkts - r0.tx_pkts <= 20 + resent);
	assert_int_equal(r1.tx_bytes, r0.tx_bytes);	/* ACKs only */
	assert_int_equal(s1.rx_bytes, s0.rx_bytes);
	assert_true(qp_counter(d0, q0, "next-psn") >= 0);
	te_pair_close(&p);
	te_close_devices();
	ibv_free_device_list(list);
}

/* Waits for the child, which reported its tree path through fd. */
static void child_path(int fd, char *buf, size_t len)
{
	ssize_t r = read(fd, buf, len - 1);

	assert_true(r > 0);
	buf[r] = 0;
}

static pid_t spawn_publisher(int *fd, bool then_wait)
{
	int pfd[2];
	pid_t c;

	assert_int_equal(pipe(pfd), 0);
	c = fork();
	assert_true(c >= 0);
	if (!c) {
		const char *s;

		close(pfd[0]);
		s = ibv_get_sysfs_path();
		if (write(pfd[1], s, strlen(s)) < 0)
			_exit(2);
		close(pfd[1]);
		if (then_wait)
			pause();
		exit(0);	/* exit(), not _exit(): the handlers run */
	}
	close(pfd[1]);
	*fd = pfd[0];
	return c;
}

static void t_fork_exit_and_kill(void **state)
{
	char mine[PATH_MAX], theirs[PATH_MAX], killed[PATH_MAX];
	int fd, st;
	pid_t c;

	snprintf(mine, sizeof(mine), "%s", ibv_get_sysfs_path());
	assert_true(exists(mine));

	/* a child publishes its own tree; it is gone after exit() */
	c = spawn_publisher(&fd, false);
	child_path(fd, theirs, sizeof(theirs));
	close(fd);
	assert_int_equal(waitpid(c, &st, 0), c);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_string_not_equal(theirs, mine);
	assert_false(exists(theirs));
	assert_true(exists(mine));

	/* SIGKILL leaves the tree; the next process removes it */
	c = spawn_publisher(&fd, true);
	child_path(fd, killed, sizeof(killed));
	close(fd);
	assert_true(exists(killed));
	kill(c, SIGKILL);
	waitpid(c, NULL, 0);
	assert_true(exists(killed));
	c = spawn_publisher(&fd, false);
	child_path(fd, theirs, sizeof(theirs));
	close(fd);
	waitpid(c, NULL, 0);
	assert_false(exists(killed));
	assert_true(exists(mine));
}

/* CPU time of this process's thread named name (schedstat: ns), or of
 * the whole process when there is no such thread or no schedstat. */
static uint64_t thread_cpu_ns(const char *name)
{
	char path[64], comm[32];
	unsigned long long ns;
	struct dirent *e;
	struct timespec ts;
	DIR *d = opendir("/proc/self/task");
	FILE *f;

	while (d && (e = readdir(d))) {
		snprintf(path, sizeof(path), "/proc/self/task/%.16s/comm",
			 e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (!fgets(comm, sizeof(comm), f))
			comm[0] = 0;
		fclose(f);
		comm[strcspn(comm, "\n")] = 0;
		if (strcmp(comm, name))
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%.16s/schedstat",
			 e->d_name);
		f = fopen(path, "r");
		if (f && fscanf(f, "%llu", &ns) == 1) {
			fclose(f);
			closedir(d);
			return ns;
		}
		if (f)
			fclose(f);
	}
	if (d)
		closedir(d);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * An open device with no traffic costs (next to) no CPU: the refresher
 * sleeps between rounds and a round with unchanged counters writes
 * nothing. (Its timed wait once used CLOCK_MONOTONIC deadlines on a
 * CLOCK_REALTIME condition variable and never slept: half a core per
 * process with a device open.)
 */
static void t_idle_is_cheap(void **state)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	char path[PATH_MAX], file[PATH_MAX];
	struct stat before, after;
	uint64_t cpu0, cpu = 0, v0 = 0, v1 = 1;
	int n, tries;

	list = ibv_get_device_list(&n);
	assert_non_null(list);
	ctx = ibv_open_device(list[0]);
	assert_non_null(ctx);
	snprintf(path, sizeof(path), "%s/ports/1/hw_counters",
		 list[0]->ibdev_path);
	snprintf(file, sizeof(file), "%s/ports/1/hw_counters/rcvd_pkts",
		 list[0]->ibdev_path);
	usleep(150 * 1000);	/* the refresher's first rounds */
	/* a stray datagram (an earlier test's peer) moves the counters: then
	 * measure again */
	for (tries = 0; tries < 5 && v0 != v1; tries++) {
		v0 = read_u64(path, "link_rx_pkts") +
		     read_u64(path, "link_tx_pkts");
		assert_int_equal(stat(file, &before), 0);
		cpu0 = thread_cpu_ns("uroce-devtree");
		usleep(1000 * 1000);
		cpu = thread_cpu_ns("uroce-devtree") - cpu0;
		v1 = read_u64(path, "link_rx_pkts") +
		     read_u64(path, "link_tx_pkts");
	}
	assert_int_equal(v0, v1);
	/* 20 rounds: a spinning refresher burns hundreds of ms here */
	print_message("idle second: %" PRIu64 " us of the refresher's CPU\n",
		      cpu / 1000);
	assert_true(cpu < 20 * 1000000ull);
	/* still the file written before (a rewrite renames a new one in) */
	assert_int_equal(stat(file, &after), 0);
	assert_int_equal(before.st_ino, after.st_ino);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
}

static int setup(void **state)
{
	char tmpl[] = "/tmp/uroce-devtree-XXXXXX";
	char *base = mkdtemp(tmpl);

	if (!base)
		return -1;
	/* our own runtime root, before the library's first look at it */
	setenv("XDG_RUNTIME_DIR", base, 1);
	setenv("UROCE_NUM_DEVICES", "2", 1);
	/* the counters under test count packets: a same-host SEND would be
	 * a copy (engine/direct_send.c) */
	setenv("UROCE_LINK", "rings", 1);
	snprintf(root, sizeof(root), "%s/uroce-%u", base,
		 (unsigned int)getuid());
	return mkdir(root, 0700);
}

static int teardown(void **state)
{
	char cmd[PATH_MAX + 16];

	/* what is left: the live parent's planted marker, and our tree
	 * until exit; the test's own directory goes now */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", getenv("XDG_RUNTIME_DIR"));
	return system(cmd) == -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(t_layout_and_values),
		cmocka_unit_test(t_live_counters),
		cmocka_unit_test(t_rewrite_keeps_files),
		cmocka_unit_test(t_qp_counters),
		cmocka_unit_test(t_idle_is_cheap),
		cmocka_unit_test(t_fork_exit_and_kill),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
