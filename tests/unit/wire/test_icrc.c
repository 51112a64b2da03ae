/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ICRC tests: ISA-L's CRC-32 against zlib (seed/chaining semantics), every
 * packet of the reference captures verifies with its captured IPv4 ID, the
 * receive-side solver recovers exactly that ID, single-bit flips are caught,
 * masked fields do not matter, incremental == one-shot, IPv6; ur_crc32()
 * returns with no upper vector state left dirty (x86-64 with AVX).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <cmocka.h>
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#endif

#include "tw_util.h"

static struct tw_set caps;

static int setup(void **state)
{
	tw_load_all(&caps);
	return caps.n ? 0 : -1;
}

static int teardown(void **state)
{
	tw_free(&caps);
	return 0;
}

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static void test_crc32_vs_zlib(void **state)
{
	static uint8_t buf[9000];
	uint32_t seed = 12345, i;

	assert_int_equal(ur_crc32(0, "123456789", 9), 0xcbf43926);
	assert_int_equal(ur_crc32(0, NULL, 0), 0);
	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd(&seed);
	for (i = 0; i < 200; i++) {
		size_t a = rnd(&seed) % 4000, b = rnd(&seed) % 4000;
		uint32_t init = i & 1 ? rnd(&seed) : 0;
		uint32_t z = (uint32_t)crc32(init, buf, (uInt)(a + b));

		/* same seed semantics as zlib: a finished crc goes in */
		assert_int_equal(ur_crc32(init, buf, a + b), z);
		assert_int_equal(ur_crc32(ur_crc32(init, buf, a), buf + a, b),
				 z);
	}
}

static void test_pcaps_verify_exact(void **state)
{
	size_t i, per_file[16] = { 0 };

	for (i = 0; i < caps.n; i++) {
		const struct tw_pkt *p = &caps.pkts[i];

		if (ur_icrc_verify(&p->flow, p->udp, p->len) != UR_DROP_NONE)
			fail_msg("%s frame %u: ICRC mismatch", p->file,
				 p->frame);
	}
	/* all 737 RoCEv2 datagrams of the 7 captures were loaded */
	for (i = 0; i < caps.n; i++) {
		size_t f;

		for (f = 0; f < tw_pcap_nfiles; f++)
			if (caps.pkts[i].file == tw_pcap_files[f])
				per_file[f]++;
	}
	for (i = 0; i < tw_pcap_nfiles; i++)
		assert_true(per_file[i] > 0);
	assert_int_equal(caps.n, 737);
}

static void test_pcaps_solve_id(void **state)
{
	size_t i, nonzero = 0, zero = 0;

	for (i = 0; i < caps.n; i++) {
		const struct tw_pkt *p = &caps.pkts[i];
		struct ur_ip_flow f = p->flow;

		f.ip_id = 0xdead;		/* unknown to a UDP socket */
		f.tos = 0x55;			/* masked: must not matter */
		f.ttl = 1;
		if (ur_icrc_check_rx(&f, p->udp, p->len) != UR_DROP_NONE)
			fail_msg("%s frame %u: ID not solved", p->file,
				 p->frame);
		if (f.ip_id != p->flow.ip_id)
			fail_msg("%s frame %u: solved ID %#x, captured %#x",
				 p->file, p->frame, f.ip_id, p->flow.ip_id);
		if (p->flow.ip_id)
			nonzero++;
		else
			zero++;
	}
	/* rxe uses incrementing IDs; the host peer (plain UDP socket) 0 */
	assert_true(nonzero > 600);
	assert_true(zero > 0);
}

static void test_bitflips(void **state)
{
	size_t i, bit, flips = 0, exact_pass = 0, solver_pass = 0;
	static uint8_t buf[70000];

	for (i = 0; i < caps.n; i++) {
		const struct tw_pkt *p = &caps.pkts[i];

		memcpy(buf, p->udp, p->len);
		for (bit = 0; bit < p->len * 8; bit++) {
			struct ur_ip_flow f = p->flow;

			buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
			/* BTH byte 4 is masked by definition */
			if (bit / 8 != 4) {
				flips++;
				if (ur_icrc_verify(&f, buf, p->len) ==
				    UR_DROP_NONE)
					exact_pass++;
				if (ur_icrc_check_rx(&f, buf, p->len) ==
				    UR_DROP_NONE)
					solver_pass++;
			} else {
				assert_int_equal(ur_icrc_verify(&f, buf,
								p->len),
						 UR_DROP_NONE);
			}
			buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		}
	}
	print_message("bit flips: %zu, passed exact check: %zu, passed "
		      "ID-solving check: %zu\n",
		      flips, exact_pass, solver_pass);
	assert_int_equal(exact_pass, 0);
	assert_int_equal(solver_pass, UR_TEST_SOLVER_PASSES);
}

/* Random corruption of the stored ICRC: the ID solver accepts a random
 * 32-bit value with probability 2^16 / 2^32 (it has 16 unknowns), so over
 * 2^20 trials about 16 pass; exact verification accepts none. */
static void test_solver_strength(void **state)
{
	const struct tw_pkt *p = &caps.pkts[0];
	uint32_t seed = 2024, i, solver = 0, exact = 0;
	uint8_t buf[2048];

	memcpy(buf, p->udp, p->len);
	for (i = 0; i < (1u << 20); i++) {
		struct ur_ip_flow f = p->flow;
		uint32_t v = rnd(&seed);

		if (!v)
			continue;
		ur_icrc_store(buf + p->len - 4,
			      ur_icrc_load(p->udp + p->len - 4) ^ v);
		if (ur_icrc_verify(&f, buf, p->len) == UR_DROP_NONE)
			exact++;
		if (ur_icrc_check_rx(&f, buf, p->len) == UR_DROP_NONE)
			solver++;
	}
	print_message("random ICRC corruptions: 2^20, passed exact: %u, "
		      "passed ID solver: %u (expected ~16)\n",
		      exact, solver);
	assert_int_equal(exact, 0);
	assert_in_range(solver, 4, 40);
}

static void test_masked_fields(void **state)
{
	const struct tw_pkt *p = &caps.pkts[0];
	struct ur_ip_flow f = p->flow;
	uint8_t buf[2048];

	memcpy(buf, p->udp, p->len);
	f.tos ^= 0xff;
	f.ttl ^= 0x3f;
	assert_int_equal(ur_icrc_verify(&f, buf, p->len), UR_DROP_NONE);
	buf[4] = 0xc0;				/* FECN, BECN */
	assert_int_equal(ur_icrc_verify(&f, buf, p->len), UR_DROP_NONE);
	f.ip_id ^= 1;				/* covered */
	assert_int_equal(ur_icrc_verify(&f, buf, p->len), UR_DROP_ICRC);
	f = p->flow;
	f.sport ^= 1;				/* covered */
	assert_int_equal(ur_icrc_verify(&f, buf, p->len), UR_DROP_ICRC);
	f = p->flow;
	((uint8_t *)&f.src.v4)[3] ^= 1;		/* covered */
	assert_int_equal(ur_icrc_verify(&f, buf, p->len), UR_DROP_ICRC);
	f = p->flow;
	assert_int_equal(ur_icrc_verify(&f, buf, 3), UR_DROP_ICRC);
	assert_int_equal(ur_icrc_check_rx(&f, buf, 15), UR_DROP_ICRC);
}

static void test_incremental(void **state)
{
	struct ur_ip_flow flow;
	static uint8_t buf[5000];
	uint32_t seed = 99, i, want;
	int len;

	tw_flow_v4(&flow);
	len = tw_build(buf, sizeof(buf), UR_OPC_RC_WRITE_FIRST, 4096, &flow,
		       NULL);
	assert_int_equal(len, 28 + 4096 + 4);
	want = ur_icrc_load(buf + len - 4);
	assert_int_equal(ur_icrc_compute(&flow, buf, (size_t)len), want);
	for (i = 0; i < 300; i++) {
		struct iovec iov[4];
		struct ur_icrc c;
		size_t cut[3], k, pos = 0, n = (size_t)len - 4;

		/* random 3 cuts, including cuts at 0..12 around BTH byte 4 */
		for (k = 0; k < 3; k++)
			cut[k] = i < 100 ? rnd(&seed) % 13 : rnd(&seed) % n;
		if (cut[0] > cut[1]) {
			size_t t = cut[0];

			cut[0] = cut[1];
			cut[1] = t;
		}
		if (cut[1] > cut[2]) {
			size_t t = cut[1];

			cut[1] = cut[2];
			cut[2] = t;
		}
		if (cut[0] > cut[1]) {
			size_t t = cut[0];

			cut[0] = cut[1];
			cut[1] = t;
		}
		ur_icrc_begin(&c, &flow, (size_t)len);
		for (k = 0; k < 3; k++) {
			ur_icrc_update(&c, buf + pos, cut[k] - pos);
			iov[k].iov_base = buf + pos;
			iov[k].iov_len = cut[k] - pos;
			pos = cut[k];
		}
		ur_icrc_update(&c, buf + pos, n - pos);
		assert_int_equal(ur_icrc_final(&c), want);
		/* the iovec form includes the 4 ICRC bytes in the last piece */
		iov[3].iov_base = buf + pos;
		iov[3].iov_len = (size_t)len - pos;
		assert_int_equal(ur_icrc_compute_iov(&flow, iov, 4), want);
	}
}

static void test_ipv6(void **state)
{
	struct ur_ip_flow flow, f;
	uint8_t buf[2048];
	int len;

	tw_flow_v6(&flow);
	len = tw_build(buf, sizeof(buf), UR_OPC_UD_SEND_ONLY, 256, &flow,
		       NULL);
	f = flow;
	f.tos = 0xe0;
	f.flow_label = 0x12345;
	f.ttl = 2;
	assert_int_equal(ur_icrc_verify(&f, buf, (size_t)len), UR_DROP_NONE);
	assert_int_equal(ur_icrc_check_rx(&f, buf, (size_t)len), UR_DROP_NONE);
	buf[30] ^= 0x10;
	assert_int_equal(ur_icrc_check_rx(&f, buf, (size_t)len), UR_DROP_ICRC);
	buf[30] ^= 0x10;
	f.dport ^= 1;
	assert_int_equal(ur_icrc_check_rx(&f, buf, (size_t)len), UR_DROP_ICRC);
	/* the v4 form of the same bytes does not verify */
	tw_flow_v4(&f);
	assert_int_equal(ur_icrc_verify(&f, buf, (size_t)len), UR_DROP_ICRC);
}

static void test_sender_id0(void **state)
{
	struct ur_ip_flow flow;
	uint8_t buf[2048];
	int len;

	tw_flow_v4(&flow);
	len = tw_build(buf, sizeof(buf), UR_OPC_RC_SEND_ONLY, 100, &flow,
		       NULL);
	flow.ip_id = 0x4242;
	assert_int_equal(ur_icrc_check_rx(&flow, buf, (size_t)len),
			 UR_DROP_NONE);
	assert_int_equal(flow.ip_id, 0);
}

/*
 * ur_icrc_ipv4_id_adjust: (1) an rxe packet's ICRC computed with ID 0 and
 * moved to the ID rxe really sent equals the one on the wire; (2) a GSO
 * train as Linux software segmentation emits it (segment i gets IPv4 ID i)
 * verifies exactly only with the adjusted ICRCs (rxe drops the others:
 * found by tests/interop/run_rxe.sh).
 */
static void test_id_adjust(void **state)
{
	struct ur_ip_flow flow;
	uint8_t buf[2048];
	uint32_t seed = 77, c0;
	size_t i, moved = 0;
	int len, k;

	for (i = 0; i < caps.n; i++) {
		const struct tw_pkt *p = &caps.pkts[i];
		struct ur_ip_flow f = p->flow;

		if (f.family != AF_INET)
			continue;
		f.ip_id = 0;
		c0 = ur_icrc_compute(&f, p->udp, p->len);
		assert_int_equal(ur_icrc_ipv4_id_adjust(c0, p->len, 0,
							p->flow.ip_id),
				 ur_icrc_load(p->udp + p->len - 4));
		assert_int_equal(ur_icrc_ipv4_id_adjust(
					 ur_icrc_load(p->udp + p->len - 4),
					 p->len, p->flow.ip_id, 0),
				 c0);
		moved += p->flow.ip_id != 0;
	}
	assert_true(moved > 600);

	tw_flow_v4(&flow);
	for (k = 0; k < 64; k++) {
		uint16_t a = (uint16_t)rnd(&seed), b = (uint16_t)rnd(&seed);
		uint32_t paylen = rnd(&seed) % 1500;

		flow.ip_id = a;
		len = tw_build(buf, sizeof(buf), UR_OPC_RC_SEND_MIDDLE,
			       paylen & ~3u, &flow, NULL);
		assert_true(len > 0);
		assert_int_equal(ur_icrc_ipv4_id_adjust(
					 ur_icrc_load(buf + len - 4),
					 (size_t)len, a, a),
				 ur_icrc_load(buf + len - 4));
		ur_icrc_store(buf + len - 4,
			      ur_icrc_ipv4_id_adjust(
				      ur_icrc_load(buf + len - 4),
				      (size_t)len, a, b));
		flow.ip_id = b;
		assert_int_equal(ur_icrc_verify(&flow, buf, (size_t)len),
				 UR_DROP_NONE);
		if (a != b) {
			flow.ip_id = a;
			assert_int_equal(ur_icrc_verify(&flow, buf,
							(size_t)len),
					 UR_DROP_ICRC);
		}
	}

	/* a train of 4 x 1024 B: built with ID 0, segment i leaves with ID i */
	for (k = 0; k < 4; k++) {
		flow.ip_id = 0;
		len = tw_build(buf, sizeof(buf), UR_OPC_RC_SEND_MIDDLE, 1024,
			       &flow, NULL);
		flow.ip_id = (uint16_t)k;
		assert_int_equal(ur_icrc_verify(&flow, buf, (size_t)len),
				 k ? UR_DROP_ICRC : UR_DROP_NONE);
		ur_icrc_store(buf + len - 4,
			      ur_icrc_ipv4_id_adjust(
				      ur_icrc_load(buf + len - 4),
				      (size_t)len, 0, (uint16_t)k));
		assert_int_equal(ur_icrc_verify(&flow, buf, (size_t)len),
				 UR_DROP_NONE);
	}
}

/*
 * ISA-L's AVX-512 CRC left the upper halves of ymm/zmm0-15 in use, and
 * every SSE instruction of the library after it paid the AVX-SSE
 * transition (a 4 KiB packet's ICRC took 3x its CRC). XGETBV with ECX=1
 * (XINUSE) says which state components are not in their initial state:
 * bit 2 YMM_Hi128, bit 6 ZMM_Hi256 (the upper bits of registers 0-15,
 * what VZEROUPPER clears; glibc's AVX-512 string functions use only
 * zmm16-31, bit 7).
 */
static void test_crc_leaves_no_avx_state(void **state)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	unsigned int a, b, c, d, lo, hi;
	static uint8_t buf[8192];
	struct ur_ip_flow flow = { .family = AF_INET };
	uint32_t crc;

	(void)state;
	if (!__get_cpuid_count(0xd, 1, &a, &b, &c, &d) || !(a & 4) ||
	    !__builtin_cpu_supports("avx"))
		skip();
	memset(buf, 0x5a, sizeof(buf));
	crc = ur_crc32(0, buf, 4096);
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
	assert_int_equal(lo & 0x44, 0);
	crc ^= ur_icrc_compute(&flow, buf, 4112);
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
	assert_int_equal(lo & 0x44, 0);
	(void)crc;
	(void)hi;
#else
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32_vs_zlib),
		cmocka_unit_test(test_pcaps_verify_exact),
		cmocka_unit_test(test_pcaps_solve_id),
		cmocka_unit_test(test_bitflips),
		cmocka_unit_test(test_solver_strength),
		cmocka_unit_test(test_masked_fields),
		cmocka_unit_test(test_incremental),
		cmocka_unit_test(test_ipv6),
		cmocka_unit_test(test_sender_id0),
		cmocka_unit_test(test_id_adjust),
		cmocka_unit_test(test_crc_leaves_no_avx_state),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
