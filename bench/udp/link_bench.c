/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The same loopback measurements as udp_bench, through link/ (ur_link_send
 * and ur_link_recv), so the link layer's own cost can be read off against
 * the raw socket numbers.
 *
 *   link_bench lat  [-n iters] [-t secs]   64 B ping-pong: recv waiting
 *                                          in poll() and spinning
 *   link_bench tput [-t secs] [-r runs]    4096 B datagrams: batches of 32,
 *                                          and GSO trains of 15 (GRO on)
 *
 * Output: "name value unit" per line, as udp_bench.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/bench.h"

#include "link/link.h"

#define DGRAM 4096
#define BATCH 32
#define GSO_SEGS 15
#define END_MARK_LEN 1

static void die(const char *what, int rc)
{
	fprintf(stderr, "%s: %s\n", what, strerror(rc < 0 ? -rc : rc));
	exit(1);
}

static struct ur_link *mk_link(int gso, int gro, union ur_sockaddr *addr)
{
	struct ur_link_config c;
	struct ur_link *l;
	int rc;

	memset(&c, 0, sizeof(c));
	c.bind.in.sin_family = AF_INET;
	c.bind.in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c.rcvbuf = 8u << 20;
	c.sndbuf = 4u << 20;
	c.use_gso = gso;
	c.use_gro = gro;
	rc = ur_link_open(&c, &l);
	if (rc)
		die("ur_link_open", rc);
	ur_link_local_addr(l, 0, addr);
	return l;
}

static int send1(struct ur_link *l, const union ur_sockaddr *dst, void *buf,
		 size_t len, uint16_t gso)
{
	struct iovec iov = { buf, len };
	struct ur_txd d = { .dst = dst, .iov = &iov, .iovcnt = 1,
			    .gso_size = gso };

	return ur_link_send(l, &d, 1);
}

/* Waits in poll() on the link's fd between empty receives (or spins). */
static int recv_wait(struct ur_link *l, struct ur_rxd *d, unsigned int max,
		     bool busy)
{
	struct pollfd p = { .fd = ur_link_fd(l), .events = POLLIN };
	int n;

	while ((n = ur_link_recv(l, d, max)) == 0)
		if (!busy)
			poll(&p, 1, -1);
	return n;
}

static void lat_run(const char *name, bool busy, int iters, double secs)
{
	union ur_sockaddr a, b;
	struct ur_link *la, *lb;
	struct ur_rxd d;
	double *rtt, t0, t1, end;
	char buf[64];
	int i, n = 0, st;
	pid_t pid;

	la = mk_link(0, 0, &a);
	lb = mk_link(0, 0, &b);
	pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (!pid) {
		for (;;) {
			if (recv_wait(lb, &d, 1, busy) < 0 || d.data[0] == 'q')
				_exit(0);
			send1(lb, &a, d.data, d.len, 0);
		}
	}
	ur_link_close(lb);
	rtt = calloc((size_t)iters, sizeof(*rtt));
	memset(buf, 'p', sizeof(buf));
	for (i = 0; i < 1000; i++) {
		send1(la, &b, buf, sizeof(buf), 0);
		recv_wait(la, &d, 1, busy);
	}
	end = bench_now_s() + secs;
	for (i = 0; i < iters; i++) {
		t0 = bench_now_s();
		send1(la, &b, buf, sizeof(buf), 0);
		if (recv_wait(la, &d, 1, busy) < 0)
			die("recv", EIO);
		t1 = bench_now_s();
		rtt[n++] = (t1 - t0) / 2 * 1e6;
		if (!(i & 255) && t1 > end)
			break;
	}
	buf[0] = 'q';
	send1(la, &b, buf, 1, 0);
	waitpid(pid, &st, 0);
	ur_link_close(la);
	qsort(rtt, (size_t)n, sizeof(*rtt), bench_cmp_dbl);
	printf("link_lat_%s_median %.2f us\n", name, rtt[n / 2]);
	printf("link_lat_%s_p99 %.2f us\n", name, rtt[(size_t)n * 99 / 100]);
	fflush(stdout);
	free(rtt);
}

struct rx_result {
	double bytes, secs;
};

static void tput_receiver(struct ur_link *l, int out)
{
	struct ur_rxd d[64];
	struct rx_result res = { 0 };
	double first = 0, last = 0;
	bool done = false;
	int n, i;

	while (!done) {
		n = recv_wait(l, d, 64, false);
		if (n < 0)
			die("ur_link_recv", n);
		for (i = 0; i < n; i++) {
			if (d[i].len == END_MARK_LEN) {
				done = true;
				break;
			}
			if (!first)
				first = bench_now_s();
			res.bytes += d[i].len;
		}
		last = bench_now_s();
	}
	res.secs = last - first;
	if (write(out, &res, sizeof(res)) != sizeof(res))
		die("write", errno);
}

static double tput_run(bool gso, double secs, double *loss)
{
	static char payload[GSO_SEGS * DGRAM];
	struct ur_txd t[BATCH];
	struct iovec iov[BATCH];
	union ur_sockaddr a, b;
	struct ur_link *la, *lb;
	struct rx_result res;
	double sent = 0, end;
	int p[2], i, st, r;
	pid_t pid;

	la = mk_link(gso, 0, &a);
	lb = mk_link(0, gso, &b);
	if (pipe(p))
		die("pipe", errno);
	pid = fork();
	if (pid < 0)
		die("fork", errno);
	if (!pid) {
		ur_link_close(la);
		close(p[0]);
		tput_receiver(lb, p[1]);
		_exit(0);
	}
	ur_link_close(lb);
	close(p[1]);
	for (i = 0; i < BATCH; i++) {
		iov[i] = (struct iovec){ payload, gso ? sizeof(payload) :
							DGRAM };
		t[i] = (struct ur_txd){ .dst = &b, .iov = &iov[i],
					.iovcnt = 1,
					.gso_size = gso ? DGRAM : 0 };
	}
	end = bench_now_s() + secs;
	while (bench_now_s() < end) {
		for (int k = 0; k < 16; k++) {
			r = ur_link_send(la, t, gso ? 1 : BATCH);
			if (r > 0)
				sent += (double)r * (double)iov[0].iov_len;
		}
	}
	for (i = 0; i < 200; i++) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };

		send1(la, &b, payload, END_MARK_LEN, 0);
		if (poll(&pf, 1, 5) > 0)
			break;
	}
	if (read(p[0], &res, sizeof(res)) != sizeof(res)) {
		kill(pid, SIGKILL);
		die("receiver", EIO);
	}
	waitpid(pid, &st, 0);
	ur_link_close(la);
	close(p[0]);
	*loss = sent > 0 ? 1.0 - res.bytes / sent : 0;
	return res.secs > 0 ? res.bytes / res.secs / 1e9 : 0;
}

static void tput_all(double secs, int runs)
{
	static const char *const names[] = { "batch32", "gso15_gro" };
	double gbs[16], loss[16];
	int m, r;

	if (runs > 16)
		runs = 16;
	for (m = 0; m < 2; m++) {
		for (r = 0; r < runs; r++)
			gbs[r] = tput_run(m == 1, secs, &loss[r]);
		printf("link_tput_%s %.3f GB/s\n", names[m], bench_median(gbs, runs));
		printf("link_tput_%s_loss %.1f %%\n", names[m],
		       bench_median(loss, runs) * 100);
		fflush(stdout);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: link_bench lat|tput|all [-n iters] "
		"[-t secs] [-r runs]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct bench_args a = { .iters = 50000, .runs = 3, .secs = 1.0 };

	if (bench_parse_args(argc, argv, &a, 1000000))
		usage();
	signal(SIGPIPE, SIG_IGN);
	if (!strcmp(a.mode, "lat") || !strcmp(a.mode, "all")) {
		lat_run("block", false, a.iters, a.secs * 2);
		lat_run("busy", true, a.iters, a.secs * 2);
	}
	if (!strcmp(a.mode, "tput") || !strcmp(a.mode, "all"))
		tput_all(a.secs, a.runs);
	else if (strcmp(a.mode, "lat"))
		usage();
	return 0;
}
