/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * link/ with several addresses and multicast groups, on loopback: every
 * address receives, a datagram leaves from the address its descriptor
 * names (ur_txd.via), an address that cannot be bound is reported and its
 * sends leave from address 0, and a joined group's datagrams arrive with
 * the group as destination until the link leaves it, also when the
 * link's fd has to become an epoll set (a process sleeping in poll()).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "link/link.h"
#include "util/random.h"
#include "util/time.h"

static union ur_sockaddr v4(uint32_t host_order, uint16_t port)
{
	union ur_sockaddr s;

	memset(&s, 0, sizeof(s));
	s.in.sin_family = AF_INET;
	s.in.sin_port = htons(port);
	s.in.sin_addr.s_addr = htonl(host_order);
	return s;
}

/* 127.R.R.1 .. : a /24 of loopback of this run */
static uint32_t base_addr(void)
{
	return 0x7f000000u | ((ur_random_u32() % 0xfe00u + 0x100u) << 8);
}

static int send_via(struct ur_link *l, uint8_t via,
		    const union ur_sockaddr *dst, const char *msg)
{
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = strlen(msg) };
	struct ur_txd d = { .dst = dst, .iov = &iov, .iovcnt = 1, .via = via };

	return ur_link_send(l, &d, 1);
}

/* Sleeps in poll() on the link's fd as the progress thread does, then
 * receives one datagram; 1, or 0 after ms. */
static int recv_one(struct ur_link *l, struct ur_rxd *d, int ms)
{
	struct pollfd p = { .fd = ur_link_fd(l), .events = POLLIN };
	uint64_t end = ur_now_ns() + (uint64_t)ms * 1000000ull;
	int n;

	while ((n = ur_link_recv(l, d, 1)) == 0 && ur_now_ns() < end)
		poll(&p, 1, 20);
	return n;
}

static void test_every_address_receives(void **state)
{
	uint32_t b = base_addr();
	union ur_sockaddr peer_a = v4(b + 9, 0), got;
	struct ur_link_config c;
	struct ur_link *dev, *peer;
	struct ur_rxd d;
	unsigned int i;

	memset(&c, 0, sizeof(c));
	c.bind = v4(b + 1, 0);
	c.more[0] = v4(b + 2, 0);
	c.more[1] = v4(b + 3, 0);
	c.n_more = 2;
	assert_int_equal(ur_link_open(&c, &dev), 0);
	memset(&c, 0, sizeof(c));
	c.bind = peer_a;
	assert_int_equal(ur_link_open(&c, &peer), 0);
	ur_link_local_addr(peer, 0, &peer_a);
	for (i = 0; i < 3; i++) {
		union ur_sockaddr a;

		assert_int_equal(ur_link_local_addr(dev, i, &a), 0);
		assert_int_equal(ntohl(a.in.sin_addr.s_addr), b + 1 + i);
		/* all on address 0's (ephemeral) port */
		assert_int_equal(ur_link_local_addr(dev, 0, &got), 0);
		assert_int_equal(a.in.sin_port, got.in.sin_port);
		/* the peer reaches address i ... */
		assert_int_equal(send_via(peer, 0, &a, "to"), 1);
		assert_int_equal(recv_one(dev, &d, 1000), 1);
		assert_int_equal(d.dst.in.sin_addr.s_addr, a.in.sin_addr.s_addr);
		/* ... and the answer leaves from address i */
		assert_int_equal(send_via(dev, (uint8_t)i, &peer_a, "fro"), 1);
		assert_int_equal(recv_one(peer, &d, 1000), 1);
		assert_int_equal(d.src.in.sin_addr.s_addr, a.in.sin_addr.s_addr);
	}
	assert_int_equal(ur_link_local_addr(dev, 3, &got), -ENOENT);
	ur_link_close(dev);
	ur_link_close(peer);
}

static void test_unbindable_address(void **state)
{
	uint32_t b = base_addr();
	union ur_sockaddr peer_a = v4(b + 9, 0), a0;
	struct ur_link_config c;
	struct ur_link *dev, *peer;
	struct ur_rxd d;

	memset(&c, 0, sizeof(c));
	c.bind = peer_a;
	assert_int_equal(ur_link_open(&c, &peer), 0);
	ur_link_local_addr(peer, 0, &peer_a);
	/* address 1 is the peer's own, on the same port: taken */
	memset(&c, 0, sizeof(c));
	c.bind = v4(b + 1, ntohs(peer_a.in.sin_port));
	c.more[0] = peer_a;
	c.n_more = 1;
	assert_int_equal(ur_link_open(&c, &dev), 0);
	assert_int_equal(ur_link_local_addr(dev, 1, &a0), -ENOENT);
	assert_int_equal(ur_link_local_addr(dev, 0, &a0), 0);
	assert_int_equal(send_via(dev, 1, &peer_a, "x"), 1);
	assert_int_equal(recv_one(peer, &d, 1000), 1);
	assert_int_equal(d.src.in.sin_addr.s_addr, a0.in.sin_addr.s_addr);
	ur_link_close(dev);
	ur_link_close(peer);
}

static void test_group(void **state)
{
	uint32_t b = base_addr();
	union ur_sockaddr g, a0;
	struct ur_link_config c;
	struct ur_link *dev, *other, *sender;
	struct ur_rxd d;
	int fd_before;

	memset(&c, 0, sizeof(c));
	c.bind = v4(b + 1, 0);
	c.use_gro = 1;
	assert_int_equal(ur_link_open(&c, &dev), 0);
	ur_link_local_addr(dev, 0, &a0);
	/* the group on the same port as the devices, as 4791 is */
	g = v4(0xef000000u | (ur_random_u32() & 0xffffff), ntohs(a0.in.sin_port));
	c.bind = v4(b + 2, ntohs(a0.in.sin_port));
	assert_int_equal(ur_link_open(&c, &other), 0);
	c.bind = v4(b + 3, 0);
	assert_int_equal(ur_link_open(&c, &sender), 0);

	assert_int_equal(ur_link_join(dev, &g), 0);
	assert_int_equal(ur_link_join(dev, &g), -EALREADY);
	fd_before = ur_link_fd(other);
	assert_int_equal(ur_link_join(other, &g), 0);
	assert_int_not_equal(ur_link_fd(other), fd_before);	/* a set now */
	/* both links of this host get their copy, with the group as dst */
	assert_int_equal(send_via(sender, 0, &g, "all"), 1);
	assert_int_equal(recv_one(dev, &d, 1000), 1);
	assert_int_equal(d.dst.in.sin_addr.s_addr, g.in.sin_addr.s_addr);
	assert_int_equal(d.len, 3);
	assert_int_equal(recv_one(other, &d, 1000), 1);
	assert_int_equal(d.dst.in.sin_addr.s_addr, g.in.sin_addr.s_addr);
	/* left: nothing more for dev, other still hears */
	assert_int_equal(ur_link_leave(dev, &g), 0);
	assert_int_equal(ur_link_leave(dev, &g), -ENOENT);
	assert_int_equal(send_via(sender, 0, &g, "one"), 1);
	assert_int_equal(recv_one(other, &d, 1000), 1);
	assert_int_equal(recv_one(dev, &d, 100), 0);
	/* not a group; a group of a family no address has */
	assert_int_equal(ur_link_join(dev, &a0), -EINVAL);
	memset(&g, 0, sizeof(g));
	g.in6.sin6_family = AF_INET6;
	g.in6.sin6_addr.s6_addr[0] = 0xff;
	g.in6.sin6_addr.s6_addr[1] = 0x0e;
	g.in6.sin6_addr.s6_addr[15] = 7;
	assert_int_equal(ur_link_join(dev, &g), -EAFNOSUPPORT);
	ur_link_close(dev);
	ur_link_close(other);
	ur_link_close(sender);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_address_receives),
		cmocka_unit_test(test_unbindable_address),
		cmocka_unit_test(test_group),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
