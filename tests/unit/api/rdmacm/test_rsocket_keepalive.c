/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rsockets' keepalive through the real librdmacm.so.1, both ends of each
 * connection in one process, the wire read from the process's own capture
 * (UROCE_PCAP): a keepalive is rdma-core's RS_CTRL_KEEPALIVE, an RC RDMA
 * WRITE Only with Immediate of no bytes whose immediate is 0xE0000001
 * (op 7, control, argument 1).
 *  - SO_KEEPALIVE off, 2.2 s idle: none;
 *  - SO_KEEPALIVE on, TCP_KEEPIDLE 1 (rgetsockopt says 1), 2.6 s idle:
 *    keepalives went out and came in (each is recorded once sent and once
 *    received); the peer took them as nothing: no data, no hang-up, and
 *    data still flows both ways afterwards;
 *  - the same socket sending every 100 ms for 2.6 s: none (a busy socket
 *    needs no keepalive);
 *  - SO_KEEPALIVE off again, 2.2 s idle: none;
 *  - an accepted socket inherits SO_KEEPALIVE and TCP_KEEPIDLE from its
 *    listener and sends them while its client has none;
 *  - a peer process killed (no disconnect): the idle connection with
 *    SO_KEEPALIVE shows POLLERR and SO_ERROR EIO within seconds, the one
 *    without notices nothing.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <cmocka.h>
#include <rdma/rsocket.h>

#include "ta_cm.h"
#include "ta_pcap.h"

#define WAIT_MS 15000
#define RC_WRITE_ONLY_IMM 0x0B	/* BTH opcode */
#define RETH_LEN 16
#define KEEPALIVE_IMM 0xE0000001u

static uint16_t next_port;

static bool is_keepalive(const uint8_t *p, size_t len, const void *arg)
{
	uint32_t dma_len, imm;

	(void)arg;
	if (len < RETH_LEN + 4)
		return false;
	memcpy(&dma_len, p + 12, 4);
	memcpy(&imm, p + RETH_LEN, 4);
	return ntohl(dma_len) == 0 && ntohl(imm) == KEEPALIVE_IMM;
}

static int keepalives(void)
{
	int n = ta_pcap_count(RC_WRITE_ONLY_IMM, is_keepalive, NULL);

	assert_true(n >= 0);	/* the capture exists */
	return n;
}

static void set_keepalive(int s, int on, int idle);

/* A listener; its SO_KEEPALIVE (and TCP_KEEPIDLE 1) if keepalive. */
static int listener(uint16_t *port, bool keepalive)
{
	struct sockaddr_in a;
	int l, one = 1, tries;

	for (tries = 0; tries < 64; tries++, *port = next_port++) {
		a = ta_lo(*port);
		l = rsocket(AF_INET, SOCK_STREAM, 0);
		assert_true(l >= 0);
		assert_int_equal(rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one,
					     sizeof(one)), 0);
		if (keepalive)
			set_keepalive(l, 1, 1);
		if (!rbind(l, (struct sockaddr *)&a, sizeof(a)) &&
		    !rlisten(l, 4))
			return l;
		assert_int_equal(rclose(l), 0);
	}
	fail_msg("no free loopback port");
	return -1;
}

static void connect_pair(int *c, int *s, bool listener_keepalive)
{
	uint16_t port = next_port++;
	int l = listener(&port, listener_keepalive);
	struct sockaddr_in a = ta_lo(port);
	struct pollfd p;

	*c = rsocket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	assert_true(*c >= 0);
	assert_int_equal(rconnect(*c, (struct sockaddr *)&a, sizeof(a)), -1);
	assert_int_equal(errno, EINPROGRESS);
	p = (struct pollfd){ .fd = l, .events = POLLIN };
	assert_int_equal(rpoll(&p, 1, WAIT_MS), 1);
	*s = raccept(l, NULL, NULL);
	assert_true(*s >= 0);
	p = (struct pollfd){ .fd = *c, .events = POLLOUT };
	assert_int_equal(rpoll(&p, 1, WAIT_MS), 1);
	assert_int_equal(p.revents, POLLOUT);
	p = (struct pollfd){ .fd = *s, .events = POLLOUT };
	assert_int_equal(rpoll(&p, 1, WAIT_MS), 1);
	assert_int_equal(rclose(l), 0);
	assert_int_equal(rfcntl(*s, F_SETFL, O_NONBLOCK), 0);
}

/* n bytes each way, each end reading what the other sent */
static void both_ways(int c, int s, uint8_t mark)
{
	uint8_t out[100], in[100];
	struct pollfd p;
	int i, ends[2] = { c, s };

	for (i = 0; i < 2; i++) {
		memset(out, mark + i, sizeof(out));
		assert_int_equal(rsend(ends[i], out, sizeof(out), 0),
				 sizeof(out));
		p = (struct pollfd){ .fd = ends[1 - i], .events = POLLIN };
		assert_int_equal(rpoll(&p, 1, WAIT_MS), 1);
		assert_int_equal(p.revents, POLLIN);
		assert_int_equal(rrecv(ends[1 - i], in, sizeof(in), MSG_WAITALL),
				 sizeof(in));
		assert_memory_equal(in, out, sizeof(out));
	}
}

static void set_keepalive(int s, int on, int idle)
{
	socklen_t len = sizeof(int);
	int v;

	assert_int_equal(rsetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &on,
				     sizeof(on)), 0);
	if (idle) {
		assert_int_equal(rsetsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE,
					     &idle, sizeof(idle)), 0);
		assert_int_equal(rgetsockopt(s, IPPROTO_TCP, TCP_KEEPIDLE, &v,
					     &len), 0);
		assert_int_equal(v, idle);
	}
	assert_int_equal(rgetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, &len),
			 0);
	assert_int_equal(!!v, !!on);
}

static void test_keepalive(void **state)
{
	uint8_t b[8];
	struct pollfd p[2];
	int c, s, before, after, i;

	(void)state;
	connect_pair(&c, &s, false);
	both_ways(c, s, 1);

	/* off: an idle connection stays silent */
	before = keepalives();
	sleep(2);
	usleep(200 * 1000);
	assert_int_equal(keepalives(), before);

	/* on, one second: they go out, and the peer ignores them */
	set_keepalive(c, 1, 1);
	sleep(2);
	usleep(600 * 1000);
	after = keepalives();
	assert_true(after - before >= 2);	/* sent and received */
	p[0] = (struct pollfd){ .fd = s, .events = POLLIN };
	p[1] = (struct pollfd){ .fd = c, .events = POLLIN };
	assert_int_equal(rpoll(p, 2, 0), 0);	/* no data, no POLLHUP/ERR */
	assert_int_equal(rrecv(s, b, sizeof(b), 0), -1);
	assert_int_equal(errno, EAGAIN);
	both_ways(c, s, 10);

	/* a socket that keeps sending needs none */
	before = keepalives();
	for (i = 0; i < 26; i++) {
		memset(b, i, sizeof(b));
		assert_int_equal(rsend(c, b, sizeof(b), 0), sizeof(b));
		usleep(100 * 1000);
		while (rrecv(s, b, sizeof(b), 0) > 0)
			;
	}
	assert_int_equal(keepalives(), before);

	/* off again: silent */
	set_keepalive(c, 0, 0);
	sleep(2);
	usleep(200 * 1000);
	assert_int_equal(keepalives(), before);
	both_ways(c, s, 20);
	assert_int_equal(rclose(c), 0);
	assert_int_equal(rclose(s), 0);
}

/* An accepted socket takes SO_KEEPALIVE and TCP_KEEPIDLE from its
 * listener: keepalives come from it while the client has none. */
static void test_inherited(void **state)
{
	int c, s, before, v;
	socklen_t len = sizeof(v);

	(void)state;
	connect_pair(&c, &s, true);
	assert_int_equal(rgetsockopt(s, SOL_SOCKET, SO_KEEPALIVE, &v, &len), 0);
	assert_int_equal(v, 1);
	assert_int_equal(rgetsockopt(c, SOL_SOCKET, SO_KEEPALIVE, &v, &len), 0);
	assert_int_equal(v, 0);
	both_ways(c, s, 30);
	before = keepalives();
	sleep(2);
	usleep(600 * 1000);
	assert_true(keepalives() - before >= 2);
	both_ways(c, s, 40);
	assert_int_equal(rclose(c), 0);
	assert_int_equal(rclose(s), 0);
}

/* The child: a listener, two connections accepted and echoed until it
 * is killed (SIGKILL: no DREQ, no disconnect). */
static void dead_peer_child(int wfd)
{
	uint16_t port = next_port++;
	int l = listener(&port, false);
	struct pollfd p[2];
	char buf[256], ok = 1;
	ssize_t n;
	int i;

	if (write(wfd, &port, sizeof(port)) != sizeof(port))
		_exit(1);
	p[0] = (struct pollfd){ .fd = raccept(l, NULL, NULL), .events = POLLIN };
	p[1] = (struct pollfd){ .fd = raccept(l, NULL, NULL), .events = POLLIN };
	if (p[0].fd < 0 || p[1].fd < 0 || write(wfd, &ok, 1) != 1)
		_exit(1);
	for (;;) {
		if (rpoll(p, 2, 1000) < 0)
			_exit(1);
		for (i = 0; i < 2; i++)
			if (p[i].revents & POLLIN) {
				n = rrecv(p[i].fd, buf, sizeof(buf), 0);
				if (n > 0 && rsend(p[i].fd, buf, (size_t)n, 0) != n)
					_exit(1);
			}
	}
}

/* 100 bytes to the child and back, so that nothing (credits, buffer
 * offers) is left to send on the connection when it goes idle. */
static void echo_once(int c)
{
	uint8_t out[100], in[100];

	memset(out, c, sizeof(out));
	assert_int_equal(rsend(c, out, sizeof(out), 0), sizeof(out));
	assert_int_equal(rrecv(c, in, sizeof(in), MSG_WAITALL), sizeof(in));
	assert_memory_equal(in, out, sizeof(out));
}

/*
 * What a keepalive is for: the peer process dies without a word (SIGKILL:
 * its NIC answers nothing). The idle connection with SO_KEEPALIVE (1 s)
 * fails within seconds (its keepalive's RC retries run out: POLLERR,
 * SO_ERROR EIO); the one without stays silent all the same time.
 * First in the program: forked before this process used any verbs.
 */
static void test_dead_peer(void **state)
{
	struct sockaddr_in a;
	struct pollfd p[2];
	int fds[2], c1, c2, v, i;
	socklen_t len = sizeof(v);
	char ok, path[512];
	uint16_t port;
	pid_t pid;

	(void)state;
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(fds[0]);
		dead_peer_child(fds[1]);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &port, sizeof(port)), sizeof(port));
	a = ta_lo(port);
	c1 = rsocket(AF_INET, SOCK_STREAM, 0);
	c2 = rsocket(AF_INET, SOCK_STREAM, 0);
	assert_true(c1 >= 0 && c2 >= 0);
	assert_int_equal(rconnect(c1, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(rconnect(c2, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(read(fds[0], &ok, 1), 1);
	close(fds[0]);
	for (i = 0; i < 3; i++) {
		echo_once(c1);
		echo_once(c2);
	}
	set_keepalive(c1, 1, 1);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	ta_pcap_path_of(pid, path, sizeof(path));	/* the child's capture */
	unlink(path);

	p[0] = (struct pollfd){ .fd = c1, .events = POLLIN };
	for (i = 0; i < 80 && !(p[0].revents & POLLERR); i++)
		assert_true(rpoll(&p[0], 1, 100) >= 0);
	assert_true(p[0].revents & POLLERR);
	assert_int_equal(rgetsockopt(c1, SOL_SOCKET, SO_ERROR, &v, &len), 0);
	assert_int_equal(v, EIO);
	p[1] = (struct pollfd){ .fd = c2, .events = POLLIN | POLLOUT };
	assert_int_equal(rpoll(&p[1], 1, 0), 1);
	assert_int_equal(p[1].revents, POLLOUT);	/* nothing noticed */
	assert_int_equal(rclose(c1), 0);
	assert_int_equal(rclose(c2), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dead_peer),
		cmocka_unit_test(test_keepalive),
		cmocka_unit_test(test_inherited),
	};
	char path[512];
	int ret;

	next_port = (uint16_t)(20000 + (getpid() * 7) % 20000);
	/* before the first verbs call: the library reads it once */
	setenv("UROCE_PCAP", "/tmp/uroce-test-rsocket-keepalive-%p.pcap", 0);
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	ta_pcap_path(path, sizeof(path));
	unlink(path);
	return ret;
}
