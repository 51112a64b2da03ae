/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RoCEv2 Invariant CRC (docs/wire-notes.md §2.8): zlib's CRC-32 over 8 x 0xFF,
 * the IP and UDP headers (synthesised from struct ur_ip_flow, IPv4 with DF)
 * with TOS/TTL/checksums (IPv6: tclass/flow label/hop limit) masked, then
 * BTH..pad with BTH byte 4 masked; stored little-endian in the last 4 bytes.
 * Receive strength: see ur_icrc_check_rx().
 */
#ifndef UR_WIRE_ICRC_H
#define UR_WIRE_ICRC_H

#include "wire/encap.h"
#include "wire/pkt.h"
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Incremental ICRC: begin() hashes the masked pseudo-headers; update() takes
 * the UDP payload from its first byte (BTH) in any number of pieces, without
 * the 4 ICRC bytes; final() returns the CRC value. */
#define UR_ICRC_HEAD_MAX (8 + 40 + 8 + 12)

struct ur_icrc {
	uint32_t crc; /* running zlib-style crc32 */
	uint32_t pos; /* bytes of UDP payload seen */
	/* masked pseudo-headers + BTH, hashed in one call once complete */
	uint8_t head_len;
	uint8_t head[UR_ICRC_HEAD_MAX];
};

void ur_icrc_begin(struct ur_icrc *c, const struct ur_ip_flow *flow,
		   size_t udp_payload_len);
void ur_icrc_update(struct ur_icrc *c, const void *buf, size_t len);
uint32_t ur_icrc_final(struct ur_icrc *c);

/* ICRC value <-> its 4 wire bytes (little-endian). */
static inline void ur_icrc_store(void *dst, uint32_t icrc)
{
	uint8_t *p = dst;

	p[0] = icrc;
	p[1] = icrc >> 8;
	p[2] = icrc >> 16;
	p[3] = icrc >> 24;
}

static inline uint32_t ur_icrc_load(const void *src)
{
	const uint8_t *p = src;

	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

/* One shot over a whole UDP payload buf[0..len) whose last 4 bytes are the
 * ICRC slot (not hashed). len must be >= 4 + UR_BTH_BYTES. */
uint32_t ur_icrc_compute(const struct ur_ip_flow *flow, const void *buf,
			 size_t len);

/* Computes and stores the ICRC of the flat datagram pkt[0..len) sent from
 * src to dst (addresses with their UDP ports) with IPv4 ID 0: what the
 * link calls (link.h's ur_link_seal_fn) for a datagram the engine built
 * for a same-host ring without its ICRC. A pair of addresses that makes
 * no flow leaves pkt as it was. */
void ur_icrc_seal(uint8_t *pkt, size_t len, const union ur_sockaddr *src,
		  const union ur_sockaddr *dst);

/* Same over an iovec (the ICRC slot = the last 4 bytes of the iovec total,
 * not hashed). Sender: fill the slot with ur_icrc_store() afterwards. */
uint32_t ur_icrc_compute_iov(const struct ur_ip_flow *flow,
			     const struct iovec *iov, int iovcnt);

/* Exact check with the flow as given (incl. flow->ip_id). */
enum ur_drop_reason ur_icrc_verify(const struct ur_ip_flow *flow,
				   const void *buf, size_t len);

/*
 * Receive-side check. A plain UDP socket cannot see the IPv4 ID, which the
 * ICRC covers. IPv6: exact check. IPv4: the CRC is affine over GF(2), so
 * this solves for the 16-bit ID that makes the stored ICRC match; on success
 * it writes it to flow->ip_id (use it for the GRH image) and returns
 * UR_DROP_NONE, else UR_DROP_ICRC.
 * Strength: IPv6 and exact checks (ur_icrc_verify) detect corruption with
 * the full 32 bits; the ID-solving IPv4 check with 16 bits: a random
 * corruption passes with probability 2^-16 (measured: 15 of 2^20), also
 * for senders that use ID 0, since any ID is a candidate. The synthesised
 * header has DF set (rxe, us): a sender without DF fails the check.
 */
enum ur_drop_reason ur_icrc_check_rx(struct ur_ip_flow *flow, const void *buf,
				     size_t len);

/*
 * The ICRC of the same IPv4 packet (UDP payload length udp_len, ICRC
 * included) when its IPv4 ID is new_id instead of old_id: icrc ^ L(old ^
 * new), L as in the receive solver. For UDP GSO trains: Linux software
 * segmentation (a device without tx-udp-segmentation, e.g. a tap or a
 * bridge port towards a VM) gives segment i of a DF train with ID 0 the ID
 * i, so a sender must compute segment i's ICRC with ID i (rxe drops it
 * otherwise). Only meaningful for IPv4 flows.
 */
uint32_t ur_icrc_ipv4_id_adjust(uint32_t icrc, size_t udp_len,
				uint16_t old_id, uint16_t new_id);

/* zlib-compatible CRC-32 (ISA-L crc32_gzip_refl): crc of data appended to a
 * message whose crc was crc (0 for an empty message). */
uint32_t ur_crc32(uint32_t crc, const void *buf, size_t len);

#endif
