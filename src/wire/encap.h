/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * IPv4/IPv6 + UDP encapsulation of RoCEv2 (docs/wire-notes.md §2.1, §2.9):
 * header builders (for pcaps, the ICRC pseudo-header and the 40-byte GRH image
 * that UD receivers get), a frame parser for captures (tests), and rxe's UDP
 * source-port hashes. Pure functions; IPv4 headers carry a valid checksum.
 */
#ifndef UR_WIRE_ENCAP_H
#define UR_WIRE_ENCAP_H

#include "util/addr.h"
#include "util/iba.h"
#include "wire/pkt.h"
#include <netinet/in.h>
#include <sys/uio.h>
#include <stddef.h>
#include <stdint.h>

#define UR_ETH_HDR_BYTES 14

/* The IP/UDP view of one RoCEv2 datagram. Ports are host order. */
struct ur_ip_flow {
	int family; /* AF_INET or AF_INET6 */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} src, dst;
	uint16_t sport;
	uint16_t dport;	     /* UR_ROCEV2_PORT */
	uint8_t tos;	     /* IPv4 TOS / IPv6 traffic class */
	uint8_t ttl;	     /* IPv4 TTL / IPv6 hop limit; 0 = 64 */
	uint16_t ip_id;	     /* IPv4 identification (0 when we send) */
	uint32_t flow_label; /* IPv6, 20 bits (0 when we send) */
};

/* Fill family/addresses/ports from two socket addresses (any port in them
 * is taken as the UDP port); tos/ttl/id/flow label zeroed. -EAFNOSUPPORT if
 * the families differ or are neither AF_INET nor AF_INET6. */
int ur_ip_flow_from_sockaddr(struct ur_ip_flow *flow,
			     const union ur_sockaddr *src,
			     const union ur_sockaddr *dst);

/* Same from two GIDs (IPv4-mapped -> AF_INET) plus UDP ports. */
int ur_ip_flow_from_gids(struct ur_ip_flow *flow, const uint8_t sgid[16],
			 const uint8_t dgid[16], uint16_t sport,
			 uint16_t dport);

/* IP + UDP header bytes for this family: 28 (IPv4) or 48 (IPv6). */
static inline size_t ur_ip_udp_hdr_len(int family)
{
	return (family == AF_INET6 ? UR_IPV6_HDR_BYTES : UR_IPV4_HDR_BYTES) +
	       UR_UDP_HDR_BYTES;
}

/* Internet checksum (RFC 1071) over len bytes, folded, not complemented. */
uint16_t ur_inet_csum_fold(const void *buf, size_t len);

/* Build headers for a datagram whose UDP payload (BTH..ICRC) is
 * udp_payload_len bytes. IPv4: DF set, proto 17, valid checksum, ID from
 * flow->ip_id. IPv6: next header 17, flow->flow_label. UDP checksum 0.
 * Each returns the number of bytes written, or -EINVAL (bad family or
 * length that does not fit the header's length field). */
int ur_ipv4_hdr_build(void *buf, const struct ur_ip_flow *flow,
		      size_t udp_payload_len);
int ur_ipv6_hdr_build(void *buf, const struct ur_ip_flow *flow,
		      size_t udp_payload_len);
int ur_udp_hdr_build(void *buf, const struct ur_ip_flow *flow,
		     size_t udp_payload_len);
/* IP header (per family) followed by UDP header: 28 or 48 bytes. */
int ur_ip_udp_hdr_build(void *buf, const struct ur_ip_flow *flow,
			size_t udp_payload_len);

/* UDP checksum (RFC 768 / RFC 8200 pseudo-header) of a datagram whose UDP
 * header (checksum field ignored) is udp_hdr and whose payload is iov[];
 * ready to store (0 is returned as 0xffff). A kernel UDP socket fills this
 * in itself; the pcap writer uses it (IPv6 forbids a zero checksum). */
uint16_t ur_udp_csum_iov(const struct ur_ip_flow *flow, const uint8_t *udp_hdr,
			 const struct iovec *iov, int iovcnt);

/* The 40-byte GRH image placed in front of a UD receive buffer
 * (docs/wire-notes.md §2.9): IPv4 -> 20 zero bytes + IPv4 header with a valid
 * checksum (what ibv_init_ah_from_wc checks); IPv6 -> the IPv6 header. Uses
 * family, addresses, tos, ttl, ip_id, flow_label of flow. 0 or -EINVAL. */
int ur_grh_image_build(uint8_t grh[UR_GRH_BYTES], const struct ur_ip_flow *flow,
		       size_t udp_payload_len);

/* Link types of classic pcap files. */
#define UR_LINKTYPE_ETHERNET 1
#define UR_LINKTYPE_RAW 101

/* Walk a captured frame (Ethernet with optional 802.1Q tags, or raw IP)
 * down to the UDP payload. Fills *flow (incl. tos, ttl, ip_id, flow label)
 * and returns UR_DROP_NONE with *payload and *payload_len set, or
 * UR_DROP_NOT_ROCE (not IPv4/IPv6 UDP, fragments, IPv6 extension headers)
 * or UR_DROP_BAD_LENGTH (truncated / inconsistent lengths). Does not check
 * the destination port. */
enum ur_drop_reason ur_frame_parse(const void *frame, size_t len, int linktype,
				   struct ur_ip_flow *flow,
				   const uint8_t **payload,
				   size_t *payload_len);

/* rxe's UDP source ports (docs/wire-notes.md §2.1), all in 0xC000..0xFFFF:
 * - per QP pair, symmetric (RC/UC after RTR): fold20(lqpn * rqpn);
 * - from a 20-bit flow label (flow label 0 -> use the QP-pair form);
 * - at QP create time: 0xC000 + hash_32(qpn, 14) (QP1 -> 55410). */
uint16_t ur_udp_sport_qp_pair(uint32_t lqpn, uint32_t rqpn);
uint16_t ur_udp_sport_flow_label(uint32_t flow_label);
uint16_t ur_udp_sport_qpn(uint32_t qpn);

#endif
