/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Numbers the InfiniBand Architecture fixes that more than one layer needs,
 * stated once: obj/ validates verbs input with them, wire/ puts them in
 * headers, the engine, cm/ and librdmacm use them. They live in util/
 * because that is the one layer all of those may include.
 */
#ifndef UR_UTIL_IBA_H
#define UR_UTIL_IBA_H

#include <stdbool.h>
#include <stdint.h>

#include "util/addr.h"

/* QPNs and PSNs are 24 bits (BTH; PSN arithmetic: IBA 9.7.1). */
#define UR_QPN_MASK 0xffffffu
#define UR_PSN_MASK 0xffffffu
#define UR_QPN_GSI 1u			/* QP1, the General Services QP */
#define UR_QPN_MCAST 0xffffffu		/* multicast/permissive QPN */

/* The default (full-member) P_Key, the only one RoCE uses: uroce has a
 * P_Key table of one entry. */
#define UR_PKEY_DEFAULT 0xffffu
/* QP1's well-known Q_Key (docs/wire-notes.md §5.2). */
#define UR_GSI_QKEY 0x80010000u

/* The GRH a UD receive buffer starts with (docs/wire-notes.md §2.9); for
 * an IPv4 datagram it is 20 zero bytes and then the IPv4 header. */
#define UR_GRH_BYTES 40
#define UR_GRH_IPV4_OFF (UR_GRH_BYTES - UR_IPV4_HDR_BYTES)
/* The GRH/IPv6 flow label is 20 bits. */
#define UR_FLOW_LABEL_MASK 0xfffffu

/*
 * The IBA's timeout encoding, 4.096 us * 2^t, in ns (t above 31 is taken
 * as 31): the QP's local ACK timeout, the CM's response and service
 * timeouts. What 0 means is the caller's (for a QP: no timeout).
 */
static inline uint64_t ur_iba_timeout_ns(unsigned int t)
{
	return 4096ull << (t > 31 ? 31 : t);
}

/*
 * Bytes of an IB MTU code (PortInfo's encoding, which enum ibv_mtu copies:
 * 1 = 256 ... 5 = 4096); 0 for anything else, which callers must have
 * refused (a path MTU from modify_qp is checked by obj/qp_state.c).
 */
static inline uint32_t ur_mtu_bytes(int mtu)
{
	return mtu >= 1 && mtu <= 5 ? 128u << mtu : 0;
}

/*
 * The most bytes a RoCEv2 packet with a full-MTU payload adds after its IP
 * header: UDP 8, BTH 12, XRCETH 4, RETH 16 and ImmDt 4 (an XRC RDMA WRITE
 * Only with Immediate), ICRC 4 (tests/unit/wire/test_hdr.c checks it
 * against the opcode table).
 */
#define UR_ROCEV2_MAX_HDR_BYTES 48

/* The largest IB MTU code (1..5) whose packets fit in a link MTU. */
static inline int ur_mtu_for_link(uint32_t link_mtu, bool ipv6)
{
	uint32_t hdr = (ipv6 ? UR_IPV6_HDR_BYTES : UR_IPV4_HDR_BYTES) +
		       UR_ROCEV2_MAX_HDR_BYTES;
	int m = 5;

	while (m > 1 && ur_mtu_bytes(m) + hdr > link_mtu)
		m--;
	return m;
}

#endif
