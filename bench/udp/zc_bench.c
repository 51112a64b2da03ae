/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Whether MSG_ZEROCOPY saves anything on this host (docs/design.md,
 * "Kernel send and receive options not used"): UDP GSO trains of
 * 15 x 4096 B to a receiving child process on 127.0.0.1, sent plainly
 * and with MSG_ZEROCOPY in alternating runs.
 *
 *   zc_bench [-n trains] [-r runs]
 *
 * Output per mode: "zc_<plain|zerocopy>_gbps <median> GB/s",
 * "zc_<mode>_cpu <median> s/GB" (the sender's user + system time per GB
 * sent) and, for zerocopy, "zc_copied <n> of <m>": how many of the sends
 * the kernel's completion notifications say it copied after all
 * (SO_EE_CODE_ZEROCOPY_COPIED).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/bench.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif

#define SEG 4096
#define SEGS 15
#define MAX_RUNS 64

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_stime.tv_sec +
	       ((double)ru.ru_utime.tv_usec + (double)ru.ru_stime.tv_usec) *
		       1e-6;
}

/* Reads the notifications queued so far; adds to *done and *copied. */
static void reap(int fd, long *done, long *copied)
{
	char ctl[128];
	struct msghdr m;
	struct cmsghdr *cm;
	struct sock_extended_err *e;
	long k;

	for (;;) {
		memset(&m, 0, sizeof(m));
		m.msg_control = ctl;
		m.msg_controllen = sizeof(ctl);
		if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			return;
		cm = CMSG_FIRSTHDR(&m);
		if (!cm)
			continue;
		e = (struct sock_extended_err *)(void *)CMSG_DATA(cm);
		if (e->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
			continue;
		k = (long)(e->ee_data - e->ee_info) + 1;
		*done += k;
		if (e->ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
			*copied += k;
	}
}

/* The receiver: drains until a second passes with nothing. */
static void sink(int fd)
{
	struct timeval tv = { .tv_sec = 1 };
	static char buf[65536];

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	while (recv(fd, buf, sizeof(buf), 0) > 0)
		;
	_exit(0);
}

/* One run: GB/s sent; *cpu gets s/GB, *copied and *done the counts. */
static double run(int zc, int trains, double *cpu, long *copied, long *done)
{
	int r = socket(AF_INET, SOCK_DGRAM, 0), s = socket(AF_INET, SOCK_DGRAM, 0);
	int one = 1, seg = SEG, rcvbuf = 64 << 20, i;
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t al = sizeof(a);
	static char buf[SEG * SEGS] __attribute__((aligned(4096)));
	double t0, c0, gb = (double)trains * SEG * SEGS / 1e9;
	pid_t pid;

	if (r < 0 || s < 0)
		die("socket");
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (setsockopt(r, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)))
		setsockopt(r, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	if (bind(r, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(r, (struct sockaddr *)&a, &al))
		die("bind");
	if (setsockopt(s, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg)))
		die("UDP_SEGMENT");
	if (zc && setsockopt(s, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one)))
		die("SO_ZEROCOPY");
	if (connect(s, (struct sockaddr *)&a, sizeof(a)))
		die("connect");
	memset(buf, 0x5a, sizeof(buf));
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid)
		sink(r);
	*copied = *done = 0;
	t0 = bench_now_s();
	c0 = cpu_s();
	for (i = 0; i < trains; i++) {
		if (send(s, buf, sizeof(buf), zc ? MSG_ZEROCOPY : 0) < 0) {
			if (errno != ENOBUFS && errno != EAGAIN)
				die("send");
			/* the queue, or the notifications' budget: reap */
			if (zc)
				reap(s, done, copied);
			i--;
			continue;
		}
		if (zc && !(i & 15))
			reap(s, done, copied);
	}
	t0 = bench_now_s() - t0;
	*cpu = (cpu_s() - c0) / gb;
	if (zc) {
		usleep(100000);
		reap(s, done, copied);
	}
	close(s);
	waitpid(pid, NULL, 0);
	close(r);
	return gb / t0;
}

int main(int argc, char **argv)
{
	double g[2][MAX_RUNS], c[2][MAX_RUNS];
	long copied = 0, done = 0, cp, dn;
	int trains = 20000, runs = 3, opt, i, zc;

	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		if (opt == 'n')
			trains = atoi(optarg);
		else if (opt == 'r')
			runs = atoi(optarg);
		else
			goto usage;
	}
	if (trains < 1 || runs < 1 || runs > MAX_RUNS)
		goto usage;
	for (i = 0; i < runs; i++)
		for (zc = 0; zc < 2; zc++) {
			g[zc][i] = run(zc, trains, &c[zc][i], &cp, &dn);
			copied += cp;
			done += dn;
		}
	for (zc = 0; zc < 2; zc++) {
		const char *m = zc ? "zerocopy" : "plain";

		printf("zc_%s_gbps %.2f GB/s\n", m, bench_median(g[zc], runs));
		printf("zc_%s_cpu %.3f s/GB\n", m, bench_median(c[zc], runs));
	}
	printf("zc_copied %ld of %ld\n", copied, done);
	return 0;
usage:
	fprintf(stderr, "usage: zc_bench [-n trains] [-r runs 1..%d]\n",
		MAX_RUNS);
	return 2;
}
