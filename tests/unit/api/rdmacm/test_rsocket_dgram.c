/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rsockets' SOCK_DGRAM through the real librdmacm.so.1, both sockets in
 * one process:
 *  - bad input: errno as a UDP socket (or rdma-core's rsocket) gives it;
 *    type flags are refused, as rdma-core does (librspreload relies on it);
 *  - a first exchange, which introduces the peers over their UDP sockets,
 *    then datagrams of every size class up to the limit (2040 bytes after
 *    the 8-byte header), each checked, the sender's address as rgetsockname
 *    names it; the limit + 1 is EMSGSIZE;
 *  - after the introduction the datagrams went as RoCEv2 UD SENDs carrying
 *    rdma-core's header (the process's UROCE_PCAP capture shows them);
 *  - a connected pair with rsend/rrecv, rsendmsg/rrecvmsg (iovecs, the
 *    sender's name, MSG_TRUNC), MSG_PEEK;
 *  - non-blocking: EAGAIN with nothing queued, rpoll 0 then POLLIN once a
 *    datagram is there, POLLOUT; a blocking rrecv woken by a later send;
 *  - a burst of 40 datagrams all arrive, in order; IPv6 (::1) works;
 *  - 20 socket/exchange/close cycles leave no file descriptor behind;
 *  - a socket is numbered above an fd opened just before it (librspreload's
 *    placeholder), even with a free fd below, and works.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>
#include <rdma/rsocket.h>

#include "ta_cm.h"
#include "ta_pcap.h"

#define WAIT_MS 10000
#define MAX_DATA 2040		/* 2048-byte messages, 8-byte IPv4 header */
#define UD_SEND_ONLY 0x64	/* BTH opcode */
#define DETH_LEN 8

/* A datagram socket bound to 127.0.0.1 (or ::1) on an ephemeral port. */
static int dsock(int family, int flags)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	struct sockaddr_in a = ta_lo(0);
	int s = rsocket(family, SOCK_DGRAM, 0);

	assert_true(s >= 0);
	if (flags & SOCK_NONBLOCK)
		assert_int_equal(rfcntl(s, F_SETFL, O_NONBLOCK), 0);
	if (family == AF_INET6)
		assert_int_equal(rbind(s, (struct sockaddr *)&a6, sizeof(a6)), 0);
	else
		assert_int_equal(rbind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	return s;
}

static struct sockaddr_storage name_of(int s, socklen_t *len)
{
	struct sockaddr_storage a;

	*len = sizeof(a);
	assert_int_equal(rgetsockname(s, (struct sockaddr *)&a, len), 0);
	return a;
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

/* Waits (rpoll) until s is readable; fails after WAIT_MS. */
static void wait_in(int s)
{
	struct pollfd p = { .fd = s, .events = POLLIN };

	assert_int_equal(rpoll(&p, 1, WAIT_MS), 1);
	assert_true(p.revents & POLLIN);
}

/* One datagram of n bytes from a to b, checked with its sender's name. */
static void one_way(int a, int b, size_t n, unsigned int seed)
{
	static uint8_t out[4096], in[4096];
	struct sockaddr_storage to, from, an;
	socklen_t tolen, flen = sizeof(from), alen;

	to = name_of(b, &tolen);
	an = name_of(a, &alen);
	fill(out, n, seed);
	assert_int_equal(rsendto(a, out, n, 0, (struct sockaddr *)&to, tolen),
			 (ssize_t)n);
	wait_in(b);
	memset(in, 0, sizeof(in));
	assert_int_equal(rrecvfrom(b, in, sizeof(in), 0,
				   (struct sockaddr *)&from, &flen), (ssize_t)n);
	assert_memory_equal(in, out, n);
	assert_int_equal(flen, alen);
	assert_memory_equal(&from, &an, alen);
}

static void test_bad_input(void **state)
{
	struct sockaddr_in a = ta_lo(9);
	char b[8] = { 0 };
	int s;

	(void)state;
	assert_int_equal(rsocket(AF_INET, SOCK_DGRAM, IPPROTO_TCP), -1);
	assert_int_equal(errno, ENOTSUP);
	assert_int_equal(rsocket(AF_UNIX, SOCK_DGRAM, 0), -1);
	assert_int_equal(errno, EAFNOSUPPORT);
	/* as rdma-core: librspreload then keeps the resolver's kernel socket */
	assert_int_equal(rsocket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0), -1);
	assert_int_equal(errno, ENOTSUP);
	s = rsocket(AF_INET, SOCK_DGRAM, IPPROTO_UDP);
	assert_true(s >= 0);
	assert_int_equal(rsend(s, b, sizeof(b), 0), -1);	/* no peer */
	assert_int_equal(errno, EDESTADDRREQ);
	assert_int_equal(rlisten(s, 1), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(raccept(s, NULL, NULL), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	a.sin_family = AF_UNIX;
	assert_int_equal(rsendto(s, b, sizeof(b), 0, (struct sockaddr *)&a,
				 sizeof(a)), -1);
	assert_int_equal(errno, EAFNOSUPPORT);
	a.sin_family = AF_INET6;	/* not the socket's family */
	assert_int_equal(rsendto(s, b, sizeof(b), 0, (struct sockaddr *)&a,
				 sizeof(a)), -1);
	assert_int_equal(errno, EAFNOSUPPORT);
	a.sin_family = AF_INET;	/* too short */
	assert_int_equal(rsendto(s, b, sizeof(b), 0, (struct sockaddr *)&a,
				 sizeof(a) - 4), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rrecv(s, b, sizeof(b), MSG_DONTWAIT), -1);
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	assert_int_equal(rclose(s), 0);
	assert_int_equal(rclose(s), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(rsendto(s, b, sizeof(b), 0, NULL, 0), -1);
	assert_int_equal(errno, EBADF);
}

static bool carries(const uint8_t *p, size_t len, const void *arg)
{
	const uint8_t *want = arg;

	/* DETH, then rdma-core's header (IPv4: version 4, length 8) */
	return len >= DETH_LEN + 8 + 16 && p[DETH_LEN] == 4 &&
	       p[DETH_LEN + 1] == 8 && !memcmp(p + DETH_LEN + 8, want, 16);
}

static void test_sizes(void **state)
{
	static const size_t sizes[] = { 1, 16, 100, 1000, 1500, 2000,
					MAX_DATA };
	static uint8_t big[MAX_DATA + 1];
	struct sockaddr_storage to;
	socklen_t tolen;
	uint8_t want[16];
	int a = dsock(AF_INET, 0), b = dsock(AF_INET, 0);
	size_t i;

	(void)state;
	one_way(a, b, 32, 1);	/* by UDP, introducing a to b */
	one_way(b, a, 32, 2);	/* and b to a */
	for (i = 0; i < (sizeof(sizes) / sizeof(sizes[0])); i++) {
		one_way(a, b, sizes[i], 10 + (unsigned int)i);
		one_way(b, a, sizes[i], 20 + (unsigned int)i);
	}
	to = name_of(b, &tolen);
	assert_int_equal(rsendto(a, big, MAX_DATA + 1, 0,
				 (struct sockaddr *)&to, tolen), -1);
	assert_int_equal(errno, EMSGSIZE);

	/* the 2040-byte datagram went through the UD QP */
	fill(want, sizeof(want), 10 + (unsigned int)(sizeof(sizes) / sizeof(sizes[0])) - 1);
	assert_true(ta_pcap_count(UD_SEND_ONLY, carries, want) >= 1);
	assert_int_equal(rclose(a), 0);
	assert_int_equal(rclose(b), 0);
}

static void test_connected(void **state)
{
	struct sockaddr_storage an, bn, from;
	socklen_t alen, blen;
	uint8_t p1[300], p2[700], in[1000], small[10];
	struct iovec iov[2] = { { p1, sizeof(p1) }, { p2, sizeof(p2) } };
	struct iovec riov = { in, sizeof(in) };
	struct msghdr m = { .msg_iov = iov, .msg_iovlen = 2 };
	int a = dsock(AF_INET, 0), b = dsock(AF_INET, 0), i;

	(void)state;
	an = name_of(a, &alen);
	bn = name_of(b, &blen);
	assert_int_equal(rconnect(a, (struct sockaddr *)&bn, blen), 0);
	assert_int_equal(rconnect(b, (struct sockaddr *)&an, alen), 0);
	for (i = 0; i < 5; i++) {	/* the first go by UDP */
		fill(p1, sizeof(p1), (unsigned int)i);
		assert_int_equal(rsend(a, p1, sizeof(p1), 0), sizeof(p1));
		wait_in(b);
		assert_int_equal(rrecv(b, in, sizeof(in), 0), sizeof(p1));
		assert_memory_equal(in, p1, sizeof(p1));
		assert_int_equal(rsend(b, in, 77, 0), 77);
		wait_in(a);
		assert_int_equal(rrecv(a, in, sizeof(in), 0), 77);
		assert_memory_equal(in, p1, 77);
	}

	fill(p1, sizeof(p1), 41);
	fill(p2, sizeof(p2), 42);
	assert_int_equal(rsendmsg(a, &m, 0), 1000);
	wait_in(b);
	/* peeked twice, then taken: the same bytes */
	assert_int_equal(rrecv(b, small, sizeof(small), MSG_PEEK), 10);
	assert_memory_equal(small, p1, 10);
	assert_int_equal(rrecv(b, small, sizeof(small), MSG_PEEK), 10);
	memset(&m, 0, sizeof(m));
	m.msg_iov = &riov;
	m.msg_iovlen = 1;
	m.msg_name = &from;
	m.msg_namelen = sizeof(from);
	assert_int_equal(rrecvmsg(b, &m, 0), 1000);
	assert_memory_equal(in, p1, sizeof(p1));
	assert_memory_equal(in + sizeof(p1), p2, sizeof(p2));
	assert_int_equal(m.msg_namelen, alen);
	assert_memory_equal(&from, &an, alen);
	assert_int_equal(m.msg_flags & MSG_TRUNC, 0);

	/* a datagram larger than the buffer: cut, and said so */
	assert_int_equal(rsend(a, p2, sizeof(p2), 0), sizeof(p2));
	wait_in(b);
	riov.iov_len = 100;
	m.msg_namelen = sizeof(from);
	assert_int_equal(rrecvmsg(b, &m, 0), 100);
	assert_true(m.msg_flags & MSG_TRUNC);
	assert_memory_equal(in, p2, 100);
	assert_int_equal(rrecv(b, in, sizeof(in), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);	/* the rest went with it */
	assert_int_equal(rclose(a), 0);
	assert_int_equal(rclose(b), 0);
}

struct late_send {
	int s;
	struct sockaddr_storage to;
	socklen_t tolen;
};

static void *send_later(void *arg)
{
	struct late_send *l = arg;
	uint8_t b[64] = { 9 };

	usleep(200 * 1000);
	if (rsendto(l->s, b, sizeof(b), 0, (struct sockaddr *)&l->to,
		    l->tolen) != (ssize_t)sizeof(b))
		return (void *)1;
	return NULL;
}

static void test_nonblocking_and_poll(void **state)
{
	struct pollfd p[2];
	struct late_send l;
	struct timespec t0, t1;
	uint8_t b[64];
	pthread_t t;
	void *tret;
	int a = dsock(AF_INET, SOCK_NONBLOCK), c = dsock(AF_INET, 0);
	long ms;

	(void)state;
	assert_int_equal(rfcntl(a, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
	assert_int_equal(rrecv(a, b, sizeof(b), 0), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(rrecv(c, b, sizeof(b), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);

	p[0] = (struct pollfd){ .fd = a, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = c, .events = POLLOUT };
	assert_int_equal(rpoll(p, 2, 0), 1);
	assert_int_equal(p[0].revents, 0);
	assert_int_equal(p[1].revents, POLLOUT);
	assert_int_equal(rpoll(p, 1, 50), 0);	/* nothing for a */

	one_way(c, a, 64, 5);	/* introduced: UD from now on */
	one_way(a, c, 64, 6);
	/* rpoll sleeps until the datagram comes (by UD) */
	l.s = c;
	l.to = name_of(a, &l.tolen);
	assert_int_equal(pthread_create(&t, NULL, send_later, &l), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	p[0] = (struct pollfd){ .fd = a, .events = POLLIN };
	assert_int_equal(rpoll(p, 1, WAIT_MS), 1);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_int_equal(pthread_join(t, &tret), 0);
	assert_null(tret);
	assert_true(p[0].revents & POLLIN);
	ms = (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000;
	assert_true(ms >= 150 && ms < WAIT_MS);
	assert_int_equal(rrecv(a, b, sizeof(b), 0), 64);
	assert_int_equal(b[0], 9);

	/* a blocking receive, woken by a send from another thread */
	l.s = a;
	l.to = name_of(c, &l.tolen);
	assert_int_equal(pthread_create(&t, NULL, send_later, &l), 0);
	assert_int_equal(rrecv(c, b, sizeof(b), 0), 64);
	assert_int_equal(pthread_join(t, &tret), 0);
	assert_null(tret);
	assert_int_equal(rclose(a), 0);
	assert_int_equal(rclose(c), 0);
}

static void test_burst(void **state)
{
	struct sockaddr_storage to;
	socklen_t tolen;
	uint8_t out[1024], in[1024];
	int a = dsock(AF_INET, 0), b = dsock(AF_INET, 0), i;

	(void)state;
	one_way(a, b, 8, 1);
	one_way(b, a, 8, 2);
	to = name_of(b, &tolen);
	for (i = 0; i < 40; i++) {
		fill(out, sizeof(out), 100 + (unsigned int)i);
		assert_int_equal(rsendto(a, out, sizeof(out), 0,
					 (struct sockaddr *)&to, tolen),
				 sizeof(out));
	}
	for (i = 0; i < 40; i++) {
		wait_in(b);
		assert_int_equal(rrecv(b, in, sizeof(in), 0), sizeof(in));
		fill(out, sizeof(out), 100 + (unsigned int)i);
		assert_memory_equal(in, out, sizeof(out));
	}
	assert_int_equal(rclose(a), 0);
	assert_int_equal(rclose(b), 0);
}

static void test_ipv6(void **state)
{
	int a = dsock(AF_INET6, 0), b = dsock(AF_INET6, 0), i;

	(void)state;
	for (i = 0; i < 4; i++) {
		one_way(a, b, 2000, (unsigned int)i);
		one_way(b, a, 500, (unsigned int)i + 50);
	}
	assert_int_equal(rclose(a), 0);
	assert_int_equal(rclose(b), 0);
}

static void test_no_fd_leak(void **state)
{
	int before, i, a, b;

	(void)state;
	a = dsock(AF_INET, 0);	/* the device and its fds exist now */
	assert_int_equal(rclose(a), 0);
	before = ta_fewest_fds();
	for (i = 0; i < 20; i++) {
		a = dsock(AF_INET, 0);
		b = dsock(AF_INET, 0);
		one_way(a, b, 100, (unsigned int)i);
		one_way(b, a, 100, (unsigned int)i);
		assert_int_equal(rclose(a), 0);
		assert_int_equal(rclose(b), 0);
	}
	assert_int_equal(ta_fewest_fds(), before);
}

/*
 * librspreload maps rpoll's answer back to the application's fds by
 * scanning upward for the first fd whose rsocket number matches: a
 * socket numbered below its placeholder is reported under another fd.
 */
static void test_number_above_placeholder(void **state)
{
	struct sockaddr_in lo = ta_lo(0);
	int ph, a, b;

	(void)state;
	ph = ta_placeholder_over_hole();
	a = rsocket(AF_INET, SOCK_DGRAM, 0);
	assert_true(a > ph);
	close(ph);
	assert_int_equal(rbind(a, (struct sockaddr *)&lo, sizeof(lo)), 0);
	b = dsock(AF_INET, 0);
	one_way(a, b, 100, 1);
	one_way(b, a, 100, 2);
	assert_int_equal(rclose(a), 0);
	assert_int_equal(rclose(b), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_connected),
		cmocka_unit_test(test_nonblocking_and_poll),
		cmocka_unit_test(test_burst),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_no_fd_leak),
		cmocka_unit_test(test_number_above_placeholder),
	};
	char path[512];
	int ret;

	/* before the first verbs call: the library reads it once */
	setenv("UROCE_PCAP", "/tmp/uroce-test-rsocket-dgram-%p.pcap", 0);
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	ta_pcap_path(path, sizeof(path));
	unlink(path);
	return ret;
}
