/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers shared by the wire unit tests: load every RoCEv2 datagram of the
 * repository's reference captures (tests/data/pcaps) with its flow and frame
 * number, and build a test datagram for a given opcode.
 */
#ifndef UR_TESTS_WIRE_TW_UTIL_H
#define UR_TESTS_WIRE_TW_UTIL_H

#include "wire/wire.h"
#include <stddef.h>
#include <stdint.h>

struct tw_pkt {
	const char *file;	/* capture file name (static) */
	unsigned int frame;	/* 1-based frame number */
	struct ur_ip_flow flow; /* as captured (incl. IPv4 ID) */
	uint8_t *udp;		/* UDP payload (malloc'd) */
	size_t len;
};

struct tw_set {
	struct tw_pkt *pkts;
	size_t n, cap;
};

extern const char *const tw_pcap_files[];
extern const size_t tw_pcap_nfiles;

/* Absolute path of a capture in tests/data/pcaps (static buffer). */
const char *tw_pcap_path(const char *file);
/* Append every UDP/4791 datagram of file to set; returns how many. */
size_t tw_load(struct tw_set *set, const char *file);
/* All captures. */
void tw_load_all(struct tw_set *set);
void tw_free(struct tw_set *set);

/* A sample IPv4 / IPv6 flow. */
void tw_flow_v4(struct ur_ip_flow *flow);
void tw_flow_v6(struct ur_ip_flow *flow);

/* Build a complete UDP payload (headers, payload of paylen bytes filled
 * with a pattern, pad, ICRC for flow) for opcode op into buf; returns its
 * length (or -errno). */
int tw_build(uint8_t *buf, size_t buflen, uint8_t op, uint32_t paylen,
	     const struct ur_ip_flow *flow, struct ur_hdr_fields *fields_out);

/* A datagram a peer could send: the headers of f (pad and P_Key filled
 * in), paylen bytes of pay, the pad and the ICRC for flow, into buf.
 * Returns its length, or -errno. Tests that forge packets use it. */
int tw_seal(uint8_t *buf, size_t buflen, struct ur_hdr_fields *f,
	    const void *pay, uint32_t paylen, const struct ur_ip_flow *flow);

#endif
