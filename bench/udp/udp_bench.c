/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The machine's raw UDP baselines on loopback, two processes (fork), plain
 * sockets (no uroce code), so uroce numbers can be read against them.
 *
 *   udp_bench lat   [-n iters] [-t secs]   64 B ping-pong, blocking and
 *                                          busy-polling recv
 *   udp_bench tput  [-t secs] [-r runs]    4096 B datagrams: sendto/recv,
 *                                          sendmmsg/recvmmsg x32, GSO+GRO
 *   udp_bench relay [-n iters] [-t secs]   the same ping-pong, but in each
 *                                          process the main thread spins
 *                                          on memory and a second thread
 *                                          receives and hands the datagram
 *                                          over (blocking and busy-polling)
 *   udp_bench relay-sleep [-n iters] [-t secs]
 *                                          relay, blocking, with the
 *                                          receiving thread asleep in
 *                                          ppoll() before each recv:
 *                                          without a timeout, and with
 *                                          one of 0.4 ms (what a sleep
 *                                          with a deadline costs)
 *   udp_bench all   lat and tput
 *
 * Output: one line per measurement, "name value unit".
 * Latency is one-way = round trip / 2, median and p99 over the iterations.
 * relay is the shape of perftest's ib_write_lat over uroce: its
 * application spins on its buffer without calling the library, so the
 * packet must be received by another thread that has to win a core.
 * Throughput is what the receiver got (bytes / time from its first to its
 * last datagram), the median over the runs; loss is printed too since UDP
 * on loopback drops when the receiver's queue is full.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/bench.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define DGRAM 4096
#define BATCH 32
#define GSO_SEGS 15		/* 15 x 4096 fits the 65507-byte UDP limit */
#define MAX_ITERS 1000000
#define END_MARK_LEN 1

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* A UDP socket on 127.0.0.1, ephemeral port; *addr gets the bound one. */
static int mk_sock(struct sockaddr_in *addr, int bufsz)
{
	socklen_t sl = sizeof(*addr);
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0)
		die("socket");
	if (bufsz) {
		if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bufsz,
			       sizeof(bufsz)))
			setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bufsz,
				   sizeof(bufsz));
		if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &bufsz,
			       sizeof(bufsz)))
			setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &bufsz,
				   sizeof(bufsz));
	}
	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)addr, sizeof(*addr)))
		die("bind");
	getsockname(fd, (struct sockaddr *)addr, &sl);
	return fd;
}

/* ------------------------------------------------------------------ */
/* Latency                                                             */
/* ------------------------------------------------------------------ */

static ssize_t rx(int fd, void *buf, size_t len, bool busy)
{
	ssize_t r;

	if (!busy)
		return recv(fd, buf, len, 0);
	do
		r = recv(fd, buf, len, MSG_DONTWAIT);
	while (r < 0 && errno == EAGAIN);
	return r;
}

/*
 * relay mode: the receiving thread of a process copies each datagram into
 * "inbox" and bumps "seq"; the main thread spins on seq, never on the
 * socket. 'q' ends the receiver.
 */
struct relay {
	int fd;
	bool busy;
	int sleep_us;		/* <0: recv blocks; else ppoll() first, with
				 * this timeout (0: none) */
	char inbox[64];
	_Atomic unsigned long seq;
	ssize_t len;
};

/*
 * Sleep until the socket is readable, as a thread that also waits for a
 * deadline does. A timeout arms a kernel timer at each sleep and cancels
 * it at each wake-up; in a virtual machine both reprogram the CPU's timer
 * through the hypervisor.
 */
static void relay_sleep(struct relay *r)
{
	struct pollfd p = { .fd = r->fd, .events = POLLIN };
	struct timespec ts = { 0, (long)r->sleep_us * 1000 };

	while (ppoll(&p, 1, r->sleep_us ? &ts : NULL, NULL) == 0)
		;
}

static void *relay_rx(void *arg)
{
	struct relay *r = arg;
	char buf[64];

	for (;;) {
		ssize_t n;

		if (r->sleep_us >= 0)
			relay_sleep(r);
		n = rx(r->fd, buf, sizeof(buf), r->busy);

		if (n > 0)
			memcpy(r->inbox, buf, (size_t)n);
		r->len = n;
		atomic_fetch_add_explicit(&r->seq, 1, memory_order_release);
		if (n <= 0 || buf[0] == 'q')
			return NULL;
	}
}

/* Spin until the receiver delivered the next datagram; its length. */
static ssize_t relay_wait(struct relay *r, unsigned long *seen)
{
	while (atomic_load_explicit(&r->seq, memory_order_acquire) == *seen)
		;
	(*seen)++;
	return r->len;
}

static void relay_start(struct relay *r, pthread_t *t, int fd, bool busy,
			int sleep_us)
{
	r->fd = fd;
	r->busy = busy;
	r->sleep_us = sleep_us;
	atomic_init(&r->seq, 0);
	if (pthread_create(t, NULL, relay_rx, r))
		die("pthread_create");
}

/* One side's receive: from the socket, or from its relay thread. */
static ssize_t lat_rx(int fd, char *buf, bool busy, struct relay *r,
		      unsigned long *seen)
{
	ssize_t n;

	if (!r)
		return rx(fd, buf, 64, busy);
	n = relay_wait(r, seen);
	if (n > 0)
		memcpy(buf, r->inbox, (size_t)n);
	return n;
}

static void lat_run(const char *name, bool busy, bool relay, int sleep_us,
		    int iters, double secs)
{
	struct sockaddr_in a, b;
	double *rtt, t0, t1, end;
	struct relay rl = { 0 };
	unsigned long seen = 0;
	pthread_t th;
	char buf[64];
	int fa, fb, i, n = 0, st;
	pid_t pid;

	fa = mk_sock(&a, 0);
	fb = mk_sock(&b, 0);
	connect(fa, (struct sockaddr *)&b, sizeof(b));
	connect(fb, (struct sockaddr *)&a, sizeof(a));
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {		/* echo side */
		close(fa);
		if (relay)
			relay_start(&rl, &th, fb, busy, sleep_us);
		for (;;) {
			ssize_t r = lat_rx(fb, buf, busy, relay ? &rl : NULL,
					   &seen);

			if (r <= 0 || buf[0] == 'q') {
				if (relay)	/* ends the other's receiver */
					send(fb, "q", 1, 0);
				_exit(0);
			}
			send(fb, buf, (size_t)r, 0);
		}
	}
	close(fb);
	if (relay)
		relay_start(&rl, &th, fa, busy, sleep_us);
	rtt = calloc((size_t)iters, sizeof(*rtt));
	memset(buf, 'p', sizeof(buf));
	/* warm up */
	for (i = 0; i < (relay ? 100 : 1000); i++) {
		send(fa, buf, sizeof(buf), 0);
		lat_rx(fa, buf, busy, relay ? &rl : NULL, &seen);
	}
	end = bench_now_s() + secs;
	for (i = 0; i < iters; i++) {
		t0 = bench_now_s();
		send(fa, buf, sizeof(buf), 0);
		if (lat_rx(fa, buf, busy, relay ? &rl : NULL, &seen) <= 0)
			die("recv");
		t1 = bench_now_s();
		rtt[n++] = (t1 - t0) / 2 * 1e6;
		if (!(i & 63) && t1 > end)
			break;
	}
	buf[0] = 'q';
	send(fa, buf, 1, 0);
	waitpid(pid, &st, 0);
	if (relay)
		pthread_join(th, NULL);
	close(fa);
	qsort(rtt, (size_t)n, sizeof(*rtt), bench_cmp_dbl);
	printf("udp_lat_%s%s_median %.2f us\n", relay ? "relay_" : "", name,
	       rtt[n / 2]);
	printf("udp_lat_%s%s_p99 %.2f us\n", relay ? "relay_" : "", name,
	       rtt[(size_t)n * 99 / 100]);
	printf("udp_lat_%s%s_iters %d count\n", relay ? "relay_" : "", name, n);
	fflush(stdout);
	free(rtt);
}

/* ------------------------------------------------------------------ */
/* Throughput                                                          */
/* ------------------------------------------------------------------ */

enum tput_mode { T_SINGLE, T_MMSG, T_GSO };
static const char *const tput_names[] = { "sendto_recv", "mmsg32",
					  "gso15_gro" };

struct rx_result {
	double bytes, secs, dgrams;
};

static void tput_receiver(int fd, enum tput_mode m, int out)
{
	static char bufs[BATCH][65536];
	struct mmsghdr mm[BATCH];
	struct iovec iov[BATCH];
	char cbuf[BATCH][64];
	struct rx_result res = { 0 };
	double first = 0, last = 0;
	int i, r, on = 1, nb = m == T_SINGLE ? 1 : BATCH;
	bool done = false;

	if (m == T_GSO && setsockopt(fd, SOL_UDP, UDP_GRO, &on, sizeof(on)))
		die("UDP_GRO");
	while (!done) {
		for (i = 0; i < nb; i++) {
			iov[i].iov_base = bufs[i];
			iov[i].iov_len = m == T_GSO ? 65536 : DGRAM;
			memset(&mm[i].msg_hdr, 0, sizeof(mm[i].msg_hdr));
			mm[i].msg_hdr.msg_iov = &iov[i];
			mm[i].msg_hdr.msg_iovlen = 1;
			mm[i].msg_hdr.msg_control = cbuf[i];
			mm[i].msg_hdr.msg_controllen = sizeof(cbuf[i]);
		}
		if (m == T_SINGLE) {
			r = (int)recv(fd, bufs[0], DGRAM, 0);
			if (r < 0)
				die("recv");
			mm[0].msg_len = (unsigned int)r;
			r = 1;
		} else {
			r = recvmmsg(fd, mm, (unsigned int)nb, MSG_WAITFORONE,
				     NULL);
			if (r < 0)
				die("recvmmsg");
		}
		for (i = 0; i < r; i++) {
			unsigned int len = mm[i].msg_len;
			struct cmsghdr *c;
			int seg = 0;

			if (len == END_MARK_LEN) {
				done = true;
				break;
			}
			if (!first)
				first = bench_now_s();
			res.bytes += len;
			for (c = CMSG_FIRSTHDR(&mm[i].msg_hdr); c && m == T_GSO;
			     c = CMSG_NXTHDR(&mm[i].msg_hdr, c))
				if (c->cmsg_level == SOL_UDP &&
				    c->cmsg_type == UDP_GRO)
					memcpy(&seg, CMSG_DATA(c), sizeof(seg));
			res.dgrams += seg ? (len + (unsigned int)seg - 1) /
						   (unsigned int)seg : 1;
		}
		last = bench_now_s();
	}
	res.secs = last - first;
	if (write(out, &res, sizeof(res)) != sizeof(res))
		die("write");
}

/* One timed run; returns receiver GB/s, sets *loss (fraction). */
static double tput_run(enum tput_mode m, double secs, double *loss)
{
	static char payload[GSO_SEGS * DGRAM];
	struct sockaddr_in a, b;
	struct mmsghdr mm[BATCH];
	struct iovec iov[BATCH];
	struct rx_result res;
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} cb;
	struct msghdr gm;
	struct cmsghdr *c;
	double sent = 0, end;
	uint16_t gso = DGRAM;
	int fa, fb, p[2], i, st;
	pid_t pid;

	fa = mk_sock(&a, 4 << 20);
	fb = mk_sock(&b, 8 << 20);
	if (pipe(p))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		close(fa);
		close(p[0]);
		tput_receiver(fb, m, p[1]);
		_exit(0);
	}
	close(fb);
	close(p[1]);
	connect(fa, (struct sockaddr *)&b, sizeof(b));
	usleep(20000);		/* let the receiver enable GRO */
	for (i = 0; i < BATCH; i++) {
		iov[i].iov_base = payload;
		iov[i].iov_len = DGRAM;
		memset(&mm[i].msg_hdr, 0, sizeof(mm[i].msg_hdr));
		mm[i].msg_hdr.msg_iov = &iov[i];
		mm[i].msg_hdr.msg_iovlen = 1;
	}
	memset(&gm, 0, sizeof(gm));
	iov[0].iov_len = DGRAM;
	gm.msg_control = cb.buf;
	gm.msg_controllen = sizeof(cb.buf);
	c = CMSG_FIRSTHDR(&gm);
	c->cmsg_level = SOL_UDP;
	c->cmsg_type = UDP_SEGMENT;
	c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
	memcpy(CMSG_DATA(c), &gso, sizeof(gso));
	end = bench_now_s() + secs;
	while (bench_now_s() < end) {
		for (int k = 0; k < 16; k++) {
			if (m == T_SINGLE) {
				if (send(fa, payload, DGRAM, 0) == DGRAM)
					sent += DGRAM;
			} else if (m == T_MMSG) {
				int r = sendmmsg(fa, mm, BATCH, 0);

				if (r > 0)
					sent += (double)r * DGRAM;
			} else {
				struct iovec g = { payload, sizeof(payload) };

				gm.msg_iov = &g;
				gm.msg_iovlen = 1;
				if (sendmsg(fa, &gm, 0) > 0)
					sent += sizeof(payload);
			}
		}
	}
	/* end marks: repeat in case the receiver's queue is full */
	for (i = 0; i < 200; i++) {
		struct pollfd pf = { .fd = p[0], .events = POLLIN };

		send(fa, payload, END_MARK_LEN, 0);
		if (poll(&pf, 1, 5) > 0)
			break;
	}
	if (read(p[0], &res, sizeof(res)) != sizeof(res)) {
		kill(pid, SIGKILL);
		die("receiver");
	}
	waitpid(pid, &st, 0);
	close(fa);
	close(p[0]);
	*loss = sent > 0 ? 1.0 - res.bytes / sent : 0;
	return res.secs > 0 ? res.bytes / res.secs / 1e9 : 0;
}

static void tput_all(double secs, int runs)
{
	double gbs[16], loss[16];
	int m, r;

	if (runs > 16)
		runs = 16;
	for (m = T_SINGLE; m <= T_GSO; m++) {
		for (r = 0; r < runs; r++)
			gbs[r] = tput_run((enum tput_mode)m, secs, &loss[r]);
		printf("udp_tput_%s %.3f GB/s\n", tput_names[m], bench_median(gbs, runs));
		printf("udp_tput_%s_loss %.1f %%\n", tput_names[m],
		       bench_median(loss, runs) * 100);
		fflush(stdout);
	}
}

static void usage(void)
{
	fprintf(stderr, "usage: udp_bench lat|relay|relay-sleep|tput|all "
		"[-n iters] [-t secs] [-r runs]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct bench_args a = { .iters = 50000, .runs = 3, .secs = 1.0 };

	if (bench_parse_args(argc, argv, &a, MAX_ITERS))
		usage();
	if (!strcmp(a.mode, "lat") || !strcmp(a.mode, "all")) {
		lat_run("block", false, false, -1, a.iters, a.secs * 2);
		lat_run("busy", true, false, -1, a.iters, a.secs * 2);
	}
	if (!strcmp(a.mode, "relay")) {
		lat_run("block", false, true, -1, a.iters, a.secs * 2);
		lat_run("busy", true, true, -1, a.iters, a.secs * 2);
		return 0;
	}
	if (!strcmp(a.mode, "relay-sleep")) {
		lat_run("ppoll", false, true, 0, a.iters, a.secs * 2);
		lat_run("ppoll_timeout", false, true, 400, a.iters,
			a.secs * 2);
		return 0;
	}
	if (!strcmp(a.mode, "tput") || !strcmp(a.mode, "all"))
		tput_all(a.secs, a.runs);
	else if (strcmp(a.mode, "lat"))
		usage();
	return 0;
}
