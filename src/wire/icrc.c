/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ICRC (docs/wire-notes.md §2.8) on top of ISA-L's zlib-compatible CRC-32, and
 * the receive-side IPv4 ID solver. The solver uses that a CRC is affine over
 * GF(2): for a fixed length, crc(msg with ID v) = crc(msg with ID 0) ^ L(v)
 * with L linear, L(v) = (raw CRC register of the two ID bytes) * x^(8k) mod P,
 * k = bytes after the ID. Gaussian elimination on L's 16 columns gives the ID
 * or proves none exists. The per-length elimination is cached per thread
 * (packets of one flow mostly share a length).
 */
#include "wire/icrc.h"
#include "wire/params.h"
#include <isa-l/crc.h>
#include <stdbool.h>
#include <string.h>

#define CRC32_POLY_REFL 0xedb88320u
#define LRH_MASK_BYTES 8
#define BTH_RESV8A_OFF 4 /* BTH byte 4: FECN, BECN, resv6a */
#define IPV4_ID_STREAM_OFF (LRH_MASK_BYTES + 4)

/*
 * ISA-L's AVX-512 CRC (crc32_gzip_refl_by16_10, picked on CPUs with
 * VPCLMULQDQ) returns with the upper halves of the vector registers
 * dirty, and this library is built for plain x86-64: its SSE code after
 * the call (the next packet's headers, the IPv4 header's checksum) then
 * pays the AVX-SSE transition. That cost more than the CRC itself: a
 * 4 KiB packet's ICRC took 200 ns against 47 for its payload's CRC
 * alone; with a VZEROUPPER after the call, 69 (bench/icrc). VZEROUPPER
 * is an AVX instruction, so only where the CPU and the OS have AVX.
 */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
static bool crc_vzeroupper(void)
{
	static int avx = -1;	/* a benign race: every thread finds the same */
	int v = __atomic_load_n(&avx, __ATOMIC_RELAXED);

	if (v < 0) {
		__builtin_cpu_init();
		v = __builtin_cpu_supports("avx") ? 1 : 0;
		__atomic_store_n(&avx, v, __ATOMIC_RELAXED);
	}
	return v;
}

static inline void crc_leave_avx(void)
{
	if (crc_vzeroupper())
		__asm__ volatile("vzeroupper" ::: "memory");
}
#else
static inline void crc_leave_avx(void)
{
}
#endif

uint32_t ur_crc32(uint32_t crc, const void *buf, size_t len)
{
	/* crc32_gzip_refl() takes and returns the finished (complemented)
	 * value, like zlib's crc32(); the unit test checks this. */
	uint32_t r = crc32_gzip_refl(crc, buf, len);

	crc_leave_avx();
	return r;
}

/* 8 x 0xFF + masked IP header + masked UDP header; returns its length. */
static size_t pseudo_hdr(uint8_t *ph, const struct ur_ip_flow *flow,
			 size_t udp_payload_len)
{
	uint8_t *ip = ph + LRH_MASK_BYTES;
	size_t iplen;

	memset(ph, 0xff, LRH_MASK_BYTES);
	if (flow->family == AF_INET &&
	    udp_payload_len <= 0xffff - UR_IPV4_HDR_BYTES - UR_UDP_HDR_BYTES) {
		/* ur_ip_udp_hdr_build()'s header with the masked fields
		 * already masked: no IPv4 checksum to compute and drop
		 * (every packet sent and received passes here) */
		size_t tot = UR_IPV4_HDR_BYTES + UR_UDP_HDR_BYTES +
			     udp_payload_len;
		uint8_t *u = ip + UR_IPV4_HDR_BYTES;

		ip[0] = 0x45;
		ip[1] = 0xff;			/* TOS */
		ip[2] = (uint8_t)(tot >> 8);
		ip[3] = (uint8_t)tot;
		ip[4] = (uint8_t)(flow->ip_id >> 8);
		ip[5] = (uint8_t)flow->ip_id;
		ip[6] = 0x40;			/* DF */
		ip[7] = 0;
		ip[8] = 0xff;			/* TTL */
		ip[9] = 17;			/* UDP */
		ip[10] = ip[11] = 0xff;		/* header checksum */
		memcpy(ip + 12, &flow->src.v4, 4);
		memcpy(ip + 16, &flow->dst.v4, 4);
		u[0] = (uint8_t)(flow->sport >> 8);
		u[1] = (uint8_t)flow->sport;
		u[2] = (uint8_t)(flow->dport >> 8);
		u[3] = (uint8_t)flow->dport;
		u[4] = (uint8_t)((tot - UR_IPV4_HDR_BYTES) >> 8);
		u[5] = (uint8_t)(tot - UR_IPV4_HDR_BYTES);
		u[6] = u[7] = 0xff;		/* UDP checksum */
		return LRH_MASK_BYTES + UR_IPV4_HDR_BYTES + UR_UDP_HDR_BYTES;
	}
	if (ur_ip_udp_hdr_build(ip, flow, udp_payload_len) < 0) {
		/* lengths were validated by the caller; stay deterministic */
		memset(ip, 0, UR_IPV4_HDR_BYTES + UR_UDP_HDR_BYTES);
	}
	if (flow->family == AF_INET6) {
		ip[0] = 0x6f; /* tclass + flow label */
		ip[1] = ip[2] = ip[3] = 0xff;
		ip[7] = 0xff; /* hop limit */
		iplen = UR_IPV6_HDR_BYTES;
	} else {
		ip[1] = 0xff;		/* TOS */
		ip[8] = 0xff;		/* TTL */
		ip[10] = ip[11] = 0xff; /* header checksum */
		iplen = UR_IPV4_HDR_BYTES;
	}
	ip[iplen + 6] = ip[iplen + 7] = 0xff; /* UDP checksum */
	return LRH_MASK_BYTES + iplen + UR_UDP_HDR_BYTES;
}

void ur_icrc_begin(struct ur_icrc *c, const struct ur_ip_flow *flow,
		   size_t udp_payload_len)
{
	c->head_len = (uint8_t)pseudo_hdr(c->head, flow, udp_payload_len);
	c->crc = 0;
	c->pos = 0;
}

/* Hash the buffered pseudo-headers and BTH bytes (once). */
static void flush_head(struct ur_icrc *c)
{
	if (c->head_len) {
		c->crc = ur_crc32(0, c->head, c->head_len);
		c->head_len = 0;
	}
}

void ur_icrc_update(struct ur_icrc *c, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	/* The BTH (first 12 bytes) joins the pseudo-headers so that masking
	 * byte 4 costs no extra CRC call. */
	if (c->pos < UR_BTH_BYTES && c->head_len) {
		size_t n = UR_MIN(len, UR_BTH_BYTES - c->pos);

		memcpy(c->head + c->head_len, p, n);
		if (c->pos <= BTH_RESV8A_OFF && c->pos + n > BTH_RESV8A_OFF)
			c->head[c->head_len + BTH_RESV8A_OFF - c->pos] = 0xff;
		c->head_len += (uint8_t)n;
		c->pos += (uint32_t)n;
		p += n;
		len -= n;
		if (c->pos < UR_BTH_BYTES)
			return;
	}
	flush_head(c);
	if (len) {
		c->crc = ur_crc32(c->crc, p, len);
		c->pos += (uint32_t)len;
	}
}

uint32_t ur_icrc_final(struct ur_icrc *c)
{
	flush_head(c);
	return c->crc;
}

uint32_t ur_icrc_compute(const struct ur_ip_flow *flow, const void *buf,
			 size_t len)
{
	struct ur_icrc c;

	ur_icrc_begin(&c, flow, len);
	ur_icrc_update(&c, buf, len >= UR_ICRC_BYTES ? len - UR_ICRC_BYTES : 0);
	return ur_icrc_final(&c);
}

void ur_icrc_seal(uint8_t *pkt, size_t len, const union ur_sockaddr *src,
		  const union ur_sockaddr *dst)
{
	struct ur_ip_flow flow;

	if (len < UR_ICRC_BYTES || ur_ip_flow_from_sockaddr(&flow, src, dst))
		return;
	ur_icrc_store(pkt + len - UR_ICRC_BYTES,
		      ur_icrc_compute(&flow, pkt, len));
}

uint32_t ur_icrc_compute_iov(const struct ur_ip_flow *flow,
			     const struct iovec *iov, int iovcnt)
{
	struct ur_icrc c;
	size_t total = 0, left;
	int i;

	for (i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	ur_icrc_begin(&c, flow, total);
	left = total >= UR_ICRC_BYTES ? total - UR_ICRC_BYTES : 0;
	for (i = 0; i < iovcnt && left; i++) {
		size_t n = UR_MIN(iov[i].iov_len, left);

		ur_icrc_update(&c, iov[i].iov_base, n);
		left -= n;
	}
	return ur_icrc_final(&c);
}

enum ur_drop_reason ur_icrc_verify(const struct ur_ip_flow *flow,
				   const void *buf, size_t len)
{
	if (len < UR_ICRC_BYTES)
		return UR_DROP_ICRC;
	return ur_icrc_compute(flow, buf, len) ==
		       ur_icrc_load((const uint8_t *)buf + len - UR_ICRC_BYTES)
		   ? UR_DROP_NONE
		   : UR_DROP_ICRC;
}

/* --- GF(2)[x] mod P, reflected (bit 31 = x^0), as the CRC register --- */

static uint32_t gf_mul(uint32_t a, uint32_t b)
{
	uint32_t m = 1u << 31, p = 0;

	while (m) {
		if (a & m)
			p ^= b;
		m >>= 1;
		b = (b & 1) ? (b >> 1) ^ CRC32_POLY_REFL : b >> 1;
	}
	return p;
}

/* x^(8 * nbytes) mod P */
static uint32_t gf_x8n(size_t nbytes)
{
	uint32_t r = 1u << 31, base = 1u << 23; /* x^0, x^8 */

	while (nbytes) {
		if (nbytes & 1)
			r = gf_mul(r, base);
		base = gf_mul(base, base);
		nbytes >>= 1;
	}
	return r;
}

/* CRC register after two bytes (hi, lo) from state 0, no inversion. */
static uint32_t raw16(uint16_t v)
{
	uint32_t r = 0;
	int i, k;

	for (i = 0; i < 2; i++) {
		r ^= (i ? v : v >> 8) & 0xff;
		for (k = 0; k < 8; k++)
			r = (r & 1) ? (r >> 1) ^ CRC32_POLY_REFL : r >> 1;
	}
	return r;
}

/* Bytes hashed after the IPv4 ID for a UDP payload of udp_len (with ICRC). */
static size_t bytes_after_id(size_t udp_len)
{
	/* stream: 8 + 20 (IP) + 8 (UDP) + udp_len - 4 (no ICRC) bytes */
	return LRH_MASK_BYTES + UR_IPV4_HDR_BYTES + UR_UDP_HDR_BYTES +
	       udp_len - UR_ICRC_BYTES - IPV4_ID_STREAM_OFF - 2;
}

/*
 * L, the change an IPv4 ID change makes to the ICRC of a packet of one UDP
 * payload length, as its 16 columns (the change for each ID bit: L is
 * linear), and their row-echelon form for the receive side's solver.
 */
struct id_solver {
	size_t udp_len;
	uint32_t col[16];
	uint32_t vec[16];
	uint32_t pivot[16];
	uint16_t comb[16];
};

static void solver_init(struct id_solver *s, size_t udp_len)
{
	uint32_t shift = gf_x8n(bytes_after_id(udp_len));
	int i, j;

	s->udp_len = udp_len;
	for (i = 0; i < 16; i++) {
		uint32_t v = gf_mul(shift, raw16((uint16_t)(1u << i)));
		uint16_t comb = (uint16_t)(1u << i);

		s->col[i] = v;

		for (j = 0; j < i; j++) {
			if (v & s->pivot[j]) {
				v ^= s->vec[j];
				comb ^= s->comb[j];
			}
		}
		/* v != 0: L is injective (deg < 32, x invertible mod P) */
		s->vec[i] = v;
		s->comb[i] = comb;
		s->pivot[i] = v ? 1u << (31 - __builtin_clz(v)) : 0;
	}
}

static bool solver_solve(const struct id_solver *s, uint32_t delta,
			 uint16_t *id)
{
	uint16_t v = 0;
	int i;

	for (i = 0; i < 16; i++) {
		if (delta & s->pivot[i]) {
			delta ^= s->vec[i];
			v ^= s->comb[i];
		}
	}
	*id = v;
	return delta == 0;
}

/* per thread, direct-mapped by length (wire/params.h) */
static __thread struct id_solver solver_cache[UR_ICRC_SOLVER_CACHE];

static const struct id_solver *solver_get(size_t udp_len)
{
	struct id_solver *s = &solver_cache[(udp_len >> 2) % UR_ICRC_SOLVER_CACHE];

	if (s->udp_len != udp_len)
		solver_init(s, udp_len);
	return s;
}

/* L(d) from the cached columns: the x^(8n) power behind them costs about
 * 1.5 us, and every segment but the first of a GSO train needs L. */
uint32_t ur_icrc_ipv4_id_adjust(uint32_t icrc, size_t udp_len,
				uint16_t old_id, uint16_t new_id)
{
	unsigned int d = (unsigned int)(old_id ^ new_id);
	const struct id_solver *s;

	if (!d)
		return icrc;
	s = solver_get(udp_len);
	for (; d; d &= d - 1)
		icrc ^= s->col[__builtin_ctz(d)];
	return icrc;
}

enum ur_drop_reason ur_icrc_check_rx(struct ur_ip_flow *flow, const void *buf,
				     size_t len)
{
	struct ur_ip_flow f0;
	uint32_t stored, crc0;
	uint16_t id;

	if (len < UR_BTH_BYTES + UR_ICRC_BYTES)
		return UR_DROP_ICRC;
	if (flow->family != AF_INET)
		return ur_icrc_verify(flow, buf, len);
	stored = ur_icrc_load((const uint8_t *)buf + len - UR_ICRC_BYTES);
	f0 = *flow;
	f0.ip_id = 0;
	crc0 = ur_icrc_compute(&f0, buf, len);
	if (crc0 == stored) {
		flow->ip_id = 0;
		return UR_DROP_NONE;
	}
	if (!solver_solve(solver_get(len), crc0 ^ stored, &id))
		return UR_DROP_ICRC;
	flow->ip_id = id;
	return UR_DROP_NONE;
}
