/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Datagrams the engine builds for a same-host ring without their ICRC
 * (ur_txd.no_icrc): the ring carries the flag to the receiver, the link
 * answers ur_link_is_ring() for ring peers only (and never without a seal
 * function), and everywhere such a datagram leaves the ring path it gets
 * its right ICRC first (the seal is wire/'s ur_icrc_seal, as the engine
 * lends it): a UDP-only peer, the fault stage's copies on send, its
 * corruption on receive (which its receiver must then detect).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "link/link.h"
#include "tl_util.h"
#include "wire/icrc.h"

static struct ur_link *link_new(int same_host, const char *fault, bool seal,
				union ur_sockaddr *addr)
{
	struct ur_link_config c;
	struct ur_link *l;

	memset(&c, 0, sizeof(c));
	tl_rand_v4(&c.bind, 0);
	c.use_gso = 1;
	c.use_gro = 1;
	c.same_host = same_host;
	c.fault = fault;
	c.seal = seal ? ur_icrc_seal : NULL;
	assert_int_equal(ur_link_open(&c, &l), 0);
	assert_int_equal(ur_link_local_addr(l, 0, addr), 0);
	return l;
}

static struct ur_link_stats stats(struct ur_link *l)
{
	struct ur_link_stats st;

	ur_link_get_stats(l, &st);
	return st;
}

/* A datagram of len bytes (BTH onwards: the seal hashes any bytes) whose
 * ICRC bytes are zero, as the engine leaves them for a ring. */
static void fill(uint8_t *buf, size_t len, uint8_t seed)
{
	size_t k;

	for (k = 0; k < len; k++)
		buf[k] = (uint8_t)(seed + k * 13u);
	memset(buf + len - UR_ICRC_BYTES, 0, UR_ICRC_BYTES);
}

static int send_flagged(struct ur_link *l, const union ur_sockaddr *dst,
			const uint8_t *buf, size_t len, uint16_t gso,
			bool no_icrc)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct ur_txd d = { .dst = dst, .iov = &iov, .iovcnt = 1,
			    .gso_size = gso, .no_icrc = no_icrc };

	return ur_link_send(l, &d, 1);
}

/* The ICRC d carries is the one its sender's address pair gives (ID 0). */
static bool icrc_ok(const struct ur_rxd *d)
{
	struct ur_ip_flow flow;

	assert_int_equal(ur_ip_flow_from_sockaddr(&flow, &d->src, &d->dst),
			 0);
	return ur_icrc_verify(&flow, d->data, d->len) == UR_DROP_NONE;
}

/* The flag travels with the slot, both ways; the ring peer is a ring. */
static void test_flag_through_ring(void **state)
{
	union ur_sockaddr aa, ba;
	struct ur_link *a = link_new(1, NULL, true, &aa);
	struct ur_link *b = link_new(1, NULL, true, &ba);
	uint8_t buf[256];
	struct ur_rxd d[4];

	(void)state;
	assert_true(ur_link_is_ring(a, &ba));
	fill(buf, sizeof(buf), 1);
	assert_int_equal(send_flagged(a, &ba, buf, sizeof(buf), 0, true), 1);
	assert_int_equal(tl_recv_wait(b, d, 4, 500), 1);
	assert_true(d[0].ring);
	assert_true(d[0].no_icrc);
	assert_memory_equal(d[0].data, buf, sizeof(buf));
	assert_int_equal(send_flagged(a, &ba, buf, sizeof(buf), 0, false), 1);
	assert_int_equal(tl_recv_wait(b, d, 4, 500), 1);
	assert_true(d[0].ring);
	assert_false(d[0].no_icrc);
	assert_int_equal(stats(a).shm_tx_pkts, 2);
	ur_link_close(a);
	ur_link_close(b);
}

/* Not a ring: a UDP-only peer, a link with no seal function, a host. */
static void test_is_ring(void **state)
{
	union ur_sockaddr aa, ba, ca, far;
	struct ur_link *a = link_new(1, NULL, true, &aa);
	struct ur_link *b = link_new(0, NULL, true, &ba);
	struct ur_link *c = link_new(1, NULL, false, &ca);
	uint32_t gen;

	(void)state;
	far = aa;
	far.in.sin_addr.s_addr = htonl(0xc0000201);	/* 192.0.2.1 */
	assert_false(ur_link_is_ring(a, &ba));
	assert_false(ur_link_is_ring(a, &far));
	assert_false(ur_link_is_ring(c, &aa));
	assert_true(ur_link_is_ring(a, &ca));
	/* asked again with nothing changed: the generation stands */
	gen = ur_link_ring_gen(a);
	assert_true(ur_link_is_ring(a, &ca));
	assert_int_equal(ur_link_ring_gen(a), gen);
	/* the peer goes: the next send finds its ring closed */
	ur_link_close(c);
	assert_int_equal(tl_send_buf(a, &ca, "0123456789abcdef", 16, 0), 1);
	assert_true(ur_link_ring_gen(a) != gen);
	assert_false(ur_link_is_ring(a, &ca));
	ur_link_close(a);
	ur_link_close(b);
}

/* A flagged descriptor that no ring takes leaves by UDP sealed, each
 * datagram of a train alone with its own ICRC. */
static void test_fallback_sealed(void **state)
{
	union ur_sockaddr aa, ba;
	struct ur_link *a = link_new(1, NULL, true, &aa);
	struct ur_link *b = link_new(0, NULL, true, &ba);
	static uint8_t buf[3 * 500];
	struct ur_rxd d[8];
	unsigned int k, got = 0;
	int n;

	(void)state;
	for (k = 0; k < 3; k++)
		fill(buf + k * 500, 500, (uint8_t)k);
	assert_int_equal(send_flagged(a, &ba, buf, sizeof(buf), 500, true),
			 1);
	while (got < 3 && (n = tl_recv_wait(b, d, 8, 500)) > 0) {
		for (k = 0; k < (unsigned int)n; k++, got++) {
			assert_false(d[k].ring);
			assert_false(d[k].no_icrc);
			assert_int_equal(d[k].len, 500);
			assert_memory_equal(d[k].data, buf + got * 500,
					    500 - UR_ICRC_BYTES);
			assert_true(icrc_ok(&d[k]));
		}
	}
	assert_int_equal(got, 3);
	assert_int_equal(stats(a).shm_tx_pkts, 0);
	assert_int_equal(stats(a).tx_errors, 0);
	ur_link_close(a);
	ur_link_close(b);
}

/* The sender's fault stage copies what it duplicates: sealed copies. */
static void test_fault_tx_sealed(void **state)
{
	union ur_sockaddr aa, ba;
	struct ur_link *a = link_new(1, "seed=5,dup=1", true, &aa);
	struct ur_link *b = link_new(1, NULL, true, &ba);
	uint8_t buf[300];
	struct ur_rxd d[4];
	int n, k, got = 0;

	(void)state;
	fill(buf, sizeof(buf), 9);
	assert_int_equal(send_flagged(a, &ba, buf, sizeof(buf), 0, true), 1);
	while (got < 2 && (n = tl_recv_wait(b, d, 4, 500)) > 0) {
		for (k = 0; k < n; k++, got++) {
			assert_true(d[k].ring);
			assert_false(d[k].no_icrc);
			assert_true(icrc_ok(&d[k]));
		}
	}
	assert_int_equal(got, 2);
	assert_int_equal(stats(a).fi_duplicated, 1);
	ur_link_close(a);
	ur_link_close(b);
}

/* The receiver's fault stage corrupts a ring datagram sent with no ICRC:
 * it seals it first, so the receiver checks it and the one flipped bit
 * fails the check. */
static void test_fault_rx_corrupt(void **state)
{
	union ur_sockaddr aa, ba;
	struct ur_link *a = link_new(1, NULL, true, &aa);
	struct ur_link *b = link_new(1, "seed=7,corrupt=1,dir=rx", true, &ba);
	uint8_t buf[300], sealed[300];
	unsigned int k, bits = 0;
	struct ur_rxd d[4];

	(void)state;
	fill(buf, sizeof(buf), 3);
	assert_int_equal(send_flagged(a, &ba, buf, sizeof(buf), 0, true), 1);
	assert_int_equal(tl_recv_wait(b, d, 4, 500), 1);
	assert_false(d[0].no_icrc);
	assert_false(icrc_ok(&d[0]));
	memcpy(sealed, buf, sizeof(buf));
	ur_icrc_seal(sealed, sizeof(sealed), &aa, &ba);
	for (k = 0; k < sizeof(sealed); k++)
		bits += (unsigned int)__builtin_popcount(sealed[k] ^
							 d[0].data[k]);
	assert_int_equal(bits, 1);
	assert_int_equal(stats(b).fi_corrupted, 1);
	ur_link_close(a);
	ur_link_close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flag_through_ring),
		cmocka_unit_test(test_is_ring),
		cmocka_unit_test(test_fallback_sealed),
		cmocka_unit_test(test_fault_tx_sealed),
		cmocka_unit_test(test_fault_rx_corrupt),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
