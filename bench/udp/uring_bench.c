/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Whether io_uring would save uroce's link system calls on this host
 * (docs/design.md, "Kernel send and receive options not used"): the two
 * shapes the engine's traffic has, each with plain socket calls and with
 * io_uring, alternating per run, two processes on 127.0.0.1.
 *
 *   uring_bench lat    [-n round trips] [-r runs]
 *   uring_bench stream [-n datagrams]   [-r runs]
 *
 * lat: a 64 B ping-pong, both sides blocking (as the progress thread
 * sleeps). Plain: recv() then send(), two calls per hop. io_uring: the
 * reply's send and the next receive are submitted, and the receive
 * waited for, in one io_uring_enter() per hop. Prints
 * "uring_lat_<plain|uring> <median one-way> us".
 *
 * stream: 4096 B datagrams. Plain: sendmmsg() and recvmmsg() of 32.
 * io_uring: 32 sendmsg SQEs per submission; the receiver keeps one
 * multishot recvmsg with a ring of provided buffers, so a datagram is
 * received with no call of its own (what uroce's receive needs: the
 * source address comes with each). Prints "uring_stream_<mode>_gbps"
 * (bytes received per second of the receiver's time) and
 * "uring_stream_<mode>_cpu" (both processes' CPU seconds per GB
 * received), medians of the runs, and the datagrams lost.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <liburing.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/bench.h"

#define LAT_BYTES 64
#define DGRAM 4096
#define BATCH 32
#define NBUFS 256		/* provided receive buffers, a power of 2 */
#define BUF_BYTES (DGRAM + 256)	/* room for io_uring_recvmsg_out + name */
#define BGID 1
#define MAX_RUNS 32

enum mode { PLAIN, URING };
static const char *const mode_name[] = { "plain", "uring" };

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void die_rc(const char *what, int rc)
{
	fprintf(stderr, "%s: %s\n", what, strerror(-rc));
	exit(1);
}

static double tv_s(const struct timeval *tv)
{
	return (double)tv->tv_sec + (double)tv->tv_usec * 1e-6;
}

static double cpu_of(const struct rusage *ru)
{
	return tv_s(&ru->ru_utime) + tv_s(&ru->ru_stime);
}

/* A UDP socket bound to 127.0.0.1 (port chosen by the kernel). */
static int udp_bound(struct sockaddr_in *a)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0), buf = 64 << 20;
	socklen_t al = sizeof(*a);

	if (fd < 0)
		die("socket");
	memset(a, 0, sizeof(*a));
	a->sin_family = AF_INET;
	a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
	if (bind(fd, (struct sockaddr *)a, sizeof(*a)) ||
	    getsockname(fd, (struct sockaddr *)a, &al))
		die("bind");
	return fd;
}

static void ring_init(struct io_uring *ring)
{
	int rc = io_uring_queue_init(2 * BATCH, ring, 0);

	if (rc)
		die_rc("io_uring_queue_init", rc);
}

static struct io_uring_sqe *sqe_get(struct io_uring *ring)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	if (!sqe)
		die_rc("io_uring_get_sqe", -EBUSY);
	return sqe;
}

/* ---- lat ---- */

/* One hop with io_uring: send buf (unless !send), then wait for the
 * next datagram in buf; one io_uring_enter(). */
static void uring_hop(struct io_uring *ring, int fd, char *buf, int send)
{
	struct io_uring_cqe *cqe;
	unsigned int want = send ? 2 : 1, got = 0;
	int rc;

	if (send)
		io_uring_prep_send(sqe_get(ring), fd, buf, LAT_BYTES, 0);
	io_uring_prep_recv(sqe_get(ring), fd, buf, LAT_BYTES, 0);
	rc = io_uring_submit_and_wait(ring, want);
	if (rc < 0)
		die_rc("io_uring_submit_and_wait", rc);
	while (got < want) {
		rc = io_uring_wait_cqe(ring, &cqe);
		if (rc)
			die_rc("io_uring_wait_cqe", rc);
		if (cqe->res < 0)
			die_rc("io_uring send/recv", cqe->res);
		io_uring_cqe_seen(ring, cqe);
		got++;
	}
}

static void plain_hop(int fd, char *buf, int send_first)
{
	if (send_first && send(fd, buf, LAT_BYTES, 0) != LAT_BYTES)
		die("send");
	if (recv(fd, buf, LAT_BYTES, 0) != LAT_BYTES)
		die("recv");
}

/* The echoing side: n + 1 receives (the first one primes), n replies. */
static void lat_echo(int fd, enum mode m, int n)
{
	static char buf[LAT_BYTES];
	struct io_uring ring;
	int i;

	if (m == URING) {
		ring_init(&ring);
		uring_hop(&ring, fd, buf, 0);
		for (i = 0; i < n - 1; i++)
			uring_hop(&ring, fd, buf, 1);
		io_uring_prep_send(sqe_get(&ring), fd, buf, LAT_BYTES, 0);
		io_uring_submit_and_wait(&ring, 1);
		io_uring_queue_exit(&ring);
	} else {
		plain_hop(fd, buf, 0);
		for (i = 0; i < n - 1; i++)
			plain_hop(fd, buf, 1);
		if (send(fd, buf, LAT_BYTES, 0) != LAT_BYTES)
			die("send");
	}
	_exit(0);
}

/* Median one-way latency in µs of n round trips. */
static double lat_run(enum mode m, int n)
{
	struct sockaddr_in a, b;
	int fa = udp_bound(&a), fb = udp_bound(&b), i;
	static char buf[LAT_BYTES];
	double *rt = malloc(sizeof(*rt) * (size_t)n), t, med;
	struct io_uring ring;
	pid_t pid;

	if (!rt || connect(fa, (struct sockaddr *)&b, sizeof(b)) ||
	    connect(fb, (struct sockaddr *)&a, sizeof(a)))
		die("connect");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		close(fa);
		lat_echo(fb, m, n);
	}
	close(fb);
	if (m == URING)
		ring_init(&ring);
	for (i = 0; i < n; i++) {
		t = bench_now_s();
		if (m == URING)
			uring_hop(&ring, fa, buf, 1);
		else
			plain_hop(fa, buf, 1);
		rt[i] = bench_now_s() - t;
	}
	if (m == URING)
		io_uring_queue_exit(&ring);
	waitpid(pid, NULL, 0);
	close(fa);
	med = bench_median(rt, n) / 2 * 1e6;
	free(rt);
	return med;
}

/* ---- stream ---- */

struct sink_result {
	long bytes;
	double secs;		/* first datagram to last */
};

static void sink_plain(int fd, int n, struct sink_result *r)
{
	static char bufs[BATCH][DGRAM];
	struct mmsghdr mm[BATCH];
	struct iovec iov[BATCH];
	struct sockaddr_in from[BATCH];
	double t0 = 0, t1 = 0;
	long got = 0;
	int i, k;

	for (i = 0; i < BATCH; i++) {
		iov[i] = (struct iovec){ bufs[i], DGRAM };
		mm[i].msg_hdr = (struct msghdr){
			.msg_name = &from[i], .msg_iov = &iov[i],
			.msg_iovlen = 1,
		};
	}
	while (got < n) {
		for (i = 0; i < BATCH; i++)
			mm[i].msg_hdr.msg_namelen = sizeof(from[i]);
		k = recvmmsg(fd, mm, BATCH, MSG_WAITFORONE, NULL);
		if (k <= 0)
			break;	/* SO_RCVTIMEO: the rest was lost */
		if (!got)
			t0 = bench_now_s();
		t1 = bench_now_s();
		for (i = 0; i < k; i++)
			r->bytes += mm[i].msg_len;
		got += k;
	}
	r->secs = t1 - t0;
}

static void sink_uring(int fd, int n, struct sink_result *r)
{
	static char bufs[NBUFS][BUF_BYTES] __attribute__((aligned(64)));
	struct io_uring_buf_ring *br;
	struct io_uring_buf_reg reg = { .ring_entries = NBUFS, .bgid = BGID };
	struct __kernel_timespec idle = { .tv_sec = 1 };
	struct msghdr mh = { .msg_namelen = sizeof(struct sockaddr_in) };
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	double t0 = 0, t1 = 0;
	long got = 0;
	int i, rc, armed = 0;

	ring_init(&ring);
	if (posix_memalign((void **)&br, 4096, NBUFS * sizeof(*br->bufs)))
		die("posix_memalign");
	reg.ring_addr = (unsigned long)br;
	rc = io_uring_register_buf_ring(&ring, &reg, 0);
	if (rc)
		die_rc("io_uring_register_buf_ring", rc);
	io_uring_buf_ring_init(br);
	for (i = 0; i < NBUFS; i++)
		io_uring_buf_ring_add(br, bufs[i], BUF_BYTES, (unsigned short)i,
				      io_uring_buf_ring_mask(NBUFS), i);
	io_uring_buf_ring_advance(br, NBUFS);
	while (got < n) {
		unsigned int head, seen = 0;

		if (!armed) {
			struct io_uring_sqe *sqe = sqe_get(&ring);

			io_uring_prep_recvmsg_multishot(sqe, fd, &mh, 0);
			sqe->flags |= IOSQE_BUFFER_SELECT;
			sqe->buf_group = BGID;
			armed = 1;
		}
		rc = io_uring_submit_and_wait_timeout(&ring, &cqe, 1, &idle,
						      NULL);
		if (rc == -ETIME)
			break;	/* the rest was lost */
		if (rc < 0 && rc != -EINTR)
			die_rc("io_uring_submit_and_wait_timeout", rc);
		io_uring_for_each_cqe(&ring, head, cqe) {
			seen++;
			if (!(cqe->flags & IORING_CQE_F_MORE))
				armed = 0;	/* ended (no buffer): rearm */
			if (cqe->res < 0) {
				if (cqe->res != -ENOBUFS)
					die_rc("multishot recvmsg", cqe->res);
				continue;
			}
			if (cqe->flags & IORING_CQE_F_BUFFER) {
				unsigned int id = cqe->flags >>
						  IORING_CQE_BUFFER_SHIFT;
				struct io_uring_recvmsg_out *o =
					io_uring_recvmsg_validate(bufs[id],
								  cqe->res, &mh);

				if (!o)
					die_rc("io_uring_recvmsg_validate",
					       -EINVAL);
				r->bytes += o->payloadlen;
				if (!got)
					t0 = bench_now_s();
				got++;
				io_uring_buf_ring_add(br, bufs[id], BUF_BYTES,
						      (unsigned short)id,
						      io_uring_buf_ring_mask(NBUFS),
						      0);
				io_uring_buf_ring_advance(br, 1);
			}
		}
		io_uring_cq_advance(&ring, seen);
		t1 = bench_now_s();
	}
	r->secs = t1 - t0;
	io_uring_queue_exit(&ring);
}

static void send_plain(int fd, int n)
{
	static char buf[DGRAM];
	struct mmsghdr mm[BATCH];
	struct iovec iov = { buf, DGRAM };
	int i, k;

	memset(buf, 0x5a, sizeof(buf));
	for (i = 0; i < BATCH; i++)
		mm[i].msg_hdr = (struct msghdr){ .msg_iov = &iov,
						 .msg_iovlen = 1 };
	for (i = 0; i < n; i += k) {
		k = sendmmsg(fd, mm, (unsigned int)(n - i < BATCH ? n - i :
						    BATCH), 0);
		if (k < 0) {
			if (errno != ENOBUFS && errno != EAGAIN)
				die("sendmmsg");
			k = 0;
		}
	}
}

static void send_uring(int fd, int n)
{
	static char buf[DGRAM];
	struct iovec iov = { buf, DGRAM };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct io_uring ring;
	struct io_uring_cqe *cqe;
	int i, k, j, rc;

	memset(buf, 0x5a, sizeof(buf));
	ring_init(&ring);
	for (i = 0; i < n; i += k) {
		unsigned int head, seen = 0;

		k = n - i < BATCH ? n - i : BATCH;
		for (j = 0; j < k; j++)
			io_uring_prep_sendmsg(sqe_get(&ring), fd, &mh, 0);
		rc = io_uring_submit_and_wait(&ring, (unsigned int)k);
		if (rc < 0)
			die_rc("io_uring_submit_and_wait", rc);
		io_uring_for_each_cqe(&ring, head, cqe) {
			if (cqe->res < 0 && cqe->res != -ENOBUFS &&
			    cqe->res != -EAGAIN)
				die_rc("io_uring sendmsg", cqe->res);
			seen++;
		}
		io_uring_cq_advance(&ring, seen);
		/* completions left for the next wait count toward it */
		while (seen < (unsigned int)k) {
			rc = io_uring_wait_cqe(&ring, &cqe);
			if (rc)
				die_rc("io_uring_wait_cqe", rc);
			io_uring_cqe_seen(&ring, cqe);
			seen++;
		}
	}
	io_uring_queue_exit(&ring);
}

/* One run: GB/s received; *cpu gets both sides' CPU s/GB, *lost the
 * datagrams that never arrived. */
static double stream_run(enum mode m, int n, double *cpu, long *lost)
{
	struct sockaddr_in a, b;
	int fa = udp_bound(&a), fb = udp_bound(&b), p[2], st;
	struct timeval tv = { .tv_sec = 1 };
	struct sink_result r = { 0 };
	struct rusage self0, self1, child;
	pid_t pid;

	if (connect(fa, (struct sockaddr *)&b, sizeof(b)) || pipe(p))
		die("connect");
	setsockopt(fb, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		close(fa);
		close(p[0]);
		if (m == URING)
			sink_uring(fb, n, &r);
		else
			sink_plain(fb, n, &r);
		if (write(p[1], &r, sizeof(r)) != sizeof(r))
			_exit(1);
		_exit(0);
	}
	close(fb);
	close(p[1]);
	usleep(50000);	/* the receiver is waiting before the first send */
	getrusage(RUSAGE_SELF, &self0);
	if (m == URING)
		send_uring(fa, n);
	else
		send_plain(fa, n);
	getrusage(RUSAGE_SELF, &self1);
	if (read(p[0], &r, sizeof(r)) != sizeof(r))
		die("the receiver's result");
	if (wait4(pid, &st, 0, &child) < 0 || !WIFEXITED(st) ||
	    WEXITSTATUS(st))
		die("receiver");
	close(p[0]);
	close(fa);
	*lost = n - r.bytes / DGRAM;
	*cpu = (cpu_of(&self1) - cpu_of(&self0) + cpu_of(&child)) /
	       ((double)r.bytes / 1e9);
	return r.secs > 0 ? (double)r.bytes / r.secs / 1e9 : 0;
}

int main(int argc, char **argv)
{
	struct bench_args a = { .runs = 3, .secs = 1 };
	double v[2][MAX_RUNS], c[2][MAX_RUNS];
	long lost[2] = { 0 }, l;
	int i, lat;

	lat = argc > 1 && !strcmp(argv[1], "lat");
	a.iters = lat ? 20000 : 200000;
	if (bench_parse_args(argc, argv, &a, 10000000) || a.runs > MAX_RUNS ||
	    (!lat && strcmp(a.mode, "stream")))
		goto usage;
	for (i = 0; i < a.runs; i++)
		for (enum mode m = PLAIN; m <= URING; m++) {
			if (lat) {
				v[m][i] = lat_run(m, a.iters);
			} else {
				v[m][i] = stream_run(m, a.iters, &c[m][i], &l);
				lost[m] += l;
			}
		}
	for (enum mode m = PLAIN; m <= URING; m++) {
		if (lat) {
			printf("uring_lat_%s %.2f us\n", mode_name[m],
			       bench_median(v[m], a.runs));
			continue;
		}
		printf("uring_stream_%s_gbps %.2f GB/s\n", mode_name[m],
		       bench_median(v[m], a.runs));
		printf("uring_stream_%s_cpu %.3f s/GB\n", mode_name[m],
		       bench_median(c[m], a.runs));
		printf("uring_stream_%s_lost %ld of %ld\n", mode_name[m],
		       lost[m], (long)a.iters * a.runs);
	}
	return 0;
usage:
	fprintf(stderr, "usage: uring_bench lat|stream [-n count] [-r runs 1..%d]\n",
		MAX_RUNS);
	return 2;
}
