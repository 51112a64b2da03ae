/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The link's receive queues (link.h, "Receive queues"), over UDP on
 * random 127/8 addresses:
 *  - every datagram reaches queue (BTH destination QPN % n), each of 256
 *    QPNs, whole and once; one too short for a BTH and a zero-length one
 *    (a ring's doorbell) reach queue 0, and the doorbell is never handed
 *    out;
 *  - a second link on the same address and port, with queues or without,
 *    gets -EADDRINUSE, and a link with queues cannot join a plain
 *    socket's address either; the address is free again once closed;
 *  - queue q's fd turns readable for its own datagrams only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "link/link.h"
#include "skip.h"
#include "tl_util.h"

#define NQ 4
#define NQPN 256
#define PAY 64

static int open_q(const union ur_sockaddr *a, unsigned int q,
		  struct ur_link **l)
{
	struct ur_link_config c;

	memset(&c, 0, sizeof(c));
	c.bind = *a;
	c.rx_queues = q;
	return ur_link_open(&c, l);
}

/* A plain UDP socket on another 127/8 address, the datagrams' sender. */
static int sender(void)
{
	union ur_sockaddr a;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	tl_rand_v4(&a, 0);
	assert_int_equal(bind(fd, &a.sa, sizeof(a.in)), 0);
	return fd;
}

static void send_qpn(int fd, const union ur_sockaddr *to, uint32_t qpn,
		     size_t len)
{
	uint8_t b[PAY];

	memset(b, 0xa5, sizeof(b));
	if (len >= 8) {
		b[4] = 0;
		b[5] = (uint8_t)(qpn >> 16);
		b[6] = (uint8_t)(qpn >> 8);
		b[7] = (uint8_t)qpn;
	}
	if (len >= 12)
		memcpy(b + 8, &qpn, 4);	/* which one, whole */
	assert_int_equal(sendto(fd, b, len, 0, &to->sa, sizeof(to->in)),
			 (ssize_t)len);
}

/* What queue q holds now, all of it (the datagrams are on loopback:
 * there once sendto() returned). */
static unsigned int drain_q(struct ur_link *l, unsigned int q,
			    unsigned int *seen, unsigned int *shorts)
{
	struct ur_rxd d[64];
	unsigned int total = 0;
	uint32_t qpn;
	int n, i;

	while ((n = ur_link_recv_q(l, q, d, 64)) > 0) {
		for (i = 0; i < n; i++) {
			if (d[i].len < 12) {
				assert_int_equal(q, 0);
				(*shorts)++;
				continue;
			}
			assert_int_equal(d[i].len, PAY);
			memcpy(&qpn, d[i].data + 8, 4);
			assert_int_equal(qpn % NQ, q);
			assert_true(qpn < NQPN);
			seen[qpn]++;
		}
		total += (unsigned int)n;
	}
	assert_true(n == 0);
	return total;
}

static void test_each_qpn_its_queue(void **state)
{
	unsigned int seen[NQPN] = { 0 }, shorts = 0, q, i, total = 0;
	union ur_sockaddr a, me;
	struct ur_link *l;
	int fd;

	(void)state;
	tl_rand_v4(&a, 0);
	assert_int_equal(open_q(&a, NQ, &l), 0);
	if (ur_link_rx_queues(l) != NQ) {
		ur_link_close(l);
		ur_skip("the kernel refused SO_ATTACH_REUSEPORT_CBPF\n");
	}
	assert_int_equal(ur_link_local_addr(l, 0, &me), 0);
	fd = sender();
	for (i = 0; i < NQPN; i++)
		send_qpn(fd, &me, i, PAY);
	send_qpn(fd, &me, 3, 6);	/* no BTH */
	send_qpn(fd, &me, 3, 0);	/* a doorbell */
	/* each queue's fd says so; the last one sent is queue 0's */
	for (q = 0; q < NQ; q++) {
		struct pollfd p = { .fd = ur_link_fd_q(l, q),
				    .events = POLLIN };

		assert_int_equal(poll(&p, 1, 1000), 1);
	}
	for (q = NQ; q-- > 0;)
		total += drain_q(l, q, seen, &shorts);
	assert_int_equal(total, NQPN + 1);
	assert_int_equal(shorts, 1);
	for (i = 0; i < NQPN; i++)
		assert_int_equal(seen[i], 1);
	/* and nothing is left for anybody */
	for (q = 0; q < NQ; q++)
		assert_false(ur_link_rx_maybe_q(l, q));
	close(fd);
	ur_link_close(l);
}

static void test_address_stays_exclusive(void **state)
{
	struct ur_link *l, *l2 = NULL;
	union ur_sockaddr a, me;

	(void)state;
	tl_rand_v4(&a, 0);
	assert_int_equal(open_q(&a, NQ, &l), 0);
	assert_int_equal(ur_link_local_addr(l, 0, &me), 0);
	assert_int_equal(open_q(&me, NQ, &l2), -EADDRINUSE);
	assert_int_equal(open_q(&me, 1, &l2), -EADDRINUSE);
	ur_link_close(l);
	/* free again; and a plain socket keeps a queued link out */
	assert_int_equal(open_q(&me, 1, &l), 0);
	assert_int_equal(open_q(&me, NQ, &l2), -EADDRINUSE);
	ur_link_close(l);
	assert_int_equal(open_q(&me, NQ, &l), 0);
	ur_link_close(l);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_each_qpn_its_queue),
		cmocka_unit_test(test_address_stays_exclusive),
	};

	return ur_run_tests(tests);
}
