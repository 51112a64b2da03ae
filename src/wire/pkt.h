/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Parse and build RoCEv2 packets (the UDP payload: BTH .. pad, ICRC).
 * ur_pkt_parse() validates an untrusted buffer completely against the opcode
 * table and never reads outside [buf, buf + len); on success struct ur_pkt
 * is a view into the buffer. Every rejection has its own enum ur_drop_reason
 * (also used by the engine for its per-reason drop counters).
 */
#ifndef UR_WIRE_PKT_H
#define UR_WIRE_PKT_H

#include "wire/hdr.h"
#include "wire/opcode.h"
#include <stddef.h>
#include <stdint.h>

enum ur_drop_reason {
	UR_DROP_NONE = 0,
	/* found by ur_pkt_parse() */
	UR_DROP_TOO_SHORT,   /* shorter than BTH + ICRC */
	UR_DROP_BAD_OPCODE,  /* opcode has no table entry (RD, reserved) */
	UR_DROP_BAD_TVER,    /* BTH TVer != 0 */
	UR_DROP_RESERVED,    /* reserved bits set (BTH, DETH, FETH, XRCETH) */
	UR_DROP_BAD_LENGTH,  /* shorter than headers + pad + ICRC */
	UR_DROP_BAD_PAD,     /* pad count on an opcode without payload,
			      * or pad larger than the payload area */
	UR_DROP_PAYLOAD_LEN, /* payload on a no-payload opcode, or not
			      * the fixed size (ATOMIC_WRITE: 8) */
	/* found by the QP-aware checks below */
	UR_DROP_MTU_EXCEEDED, /* payload > path MTU */
	UR_DROP_SEG_LENGTH,   /* FIRST/MIDDLE != MTU or empty LAST */
	UR_DROP_OPCODE_CLASS, /* opcode not valid for the QP class */
	/* found by the ICRC check */
	UR_DROP_ICRC, /* ICRC mismatch */
	/* found by the engine */
	UR_DROP_UNKNOWN_QP, /* no such QPN (or QPN 0) */
	UR_DROP_QP_STATE,   /* QP not in a state that accepts it */
	UR_DROP_WRONG_PEER, /* RC/UC: source address is not the peer */
	UR_DROP_BAD_PKEY,
	UR_DROP_BAD_QKEY,
	UR_DROP_PSN_WINDOW,	/* PSN outside the acceptance window */
	UR_DROP_DUPLICATE,	/* duplicate PSN */
	UR_DROP_OPCODE_SEQ,	/* FIRST/MIDDLE/LAST out of sequence */
	UR_DROP_NO_RECV_WQE,	/* no receive WQE (RNR / UD drop) */
	UR_DROP_RECV_TOO_SMALL, /* receive buffer cannot hold it (+ GRH) */
	UR_DROP_ACCESS,		/* rkey / range / access check failed */
	UR_DROP_UNSUPPORTED,	/* valid but not implemented (CNP) */
	UR_DROP_NOT_ROCE,	/* not IPv4/IPv6 UDP 4791 (frame parsing) */
	UR_DROP_WRONG_PORT,	/* RC/UC: peer's IP, not its bound UDP port */
	UR_DROP_HARDENED,	/* would have moved a QP to ERR (hardened) */
	UR_DROP_MCAST_DEST,	/* QPN 0xFFFFFF not sent to an IP multicast
				 * group */
	UR_DROP_MCAST_NO_GROUP, /* a group no QP of the device is attached to */
	UR_DROP_MCAST_SELF,	/* the sending QP asked not to hear itself */
	UR_DROP__MAX,
};

extern const char *const ur_drop_reason_names[UR_DROP__MAX];

/* Short snake_case name ("icrc", "too_short"...), "invalid" if out of range. */
const char *ur_drop_reason_str(enum ur_drop_reason r);

/* A parsed packet: pointers into the caller's buffer, NULL if absent. */
struct ur_pkt {
	const uint8_t *buf; /* BTH start = UDP payload start */
	uint32_t len;	    /* UDP payload length incl. ICRC */
	uint32_t mask;	    /* ur_op_mask(opcode) */
	uint8_t opcode;
	uint8_t pad;
	uint8_t hdr_len; /* BTH + extension headers */
	bool ackreq;
	bool se;
	bool placed;	/* UR_BTH_RESV6A_PLACED (hdr.h): the receiver
			 * honours it from a same-host ring only */
	uint32_t psn;
	uint32_t qpn; /* destination QPN */
	const struct ur_bth *bth;
	const struct ur_deth *deth;
	const struct ur_reth *reth;
	const struct ur_feth *feth;
	const struct ur_atmeth *atmeth;
	const struct ur_aeth *aeth;
	const struct ur_atmack *atmack;
	const struct ur_immdt *immdt;
	const struct ur_ieth *ieth;
	const struct ur_xrceth *xrceth;	/* XRC requests */
	const uint8_t *payload; /* never NULL after a successful parse */
	uint32_t paylen;	/* excludes pad and ICRC */
	uint32_t icrc;		/* ICRC as stored (little-endian word) */
};

/* Validate buf[0..len) (a UDP payload) and fill *pkt. UR_DROP_NONE or the
 * reason; *pkt is undefined on failure. */
enum ur_drop_reason ur_pkt_parse(const void *buf, size_t len,
				 struct ur_pkt *pkt);

/* Payload length vs path MTU (bytes: 256..4096): FIRST/MIDDLE == mtu,
 * LAST 1..mtu, ONLY 0..mtu (docs/wire-notes.md §2.5, rxe CHK_LENGTH). */
enum ur_drop_reason ur_pkt_check_mtu(const struct ur_pkt *pkt, uint32_t mtu);

/* Opcode allowed on a QP of transport class tclass (UR_TCLASS_RC/UC/UD). */
enum ur_drop_reason ur_pkt_check_class(const struct ur_pkt *pkt,
				       unsigned int tclass);

/* Field values for ur_hdr_build(); fields of headers the opcode does not
 * carry are ignored. */
struct ur_hdr_fields {
	uint8_t opcode;
	bool se;
	bool mig;
	bool ackreq;
	bool fecn;
	bool becn;
	bool placed;   /* UR_BTH_RESV6A_PLACED (hdr.h): same-host only */
	uint8_t pad;   /* use ur_pad_len(payload length) */
	uint16_t pkey; /* 0xffff normally */
	uint32_t qpn;  /* destination QPN */
	uint32_t psn;
	struct {
		uint64_t va;
		uint32_t rkey;
		uint32_t len;
	} reth;
	struct {
		uint8_t syn;
		uint32_t msn;
	} aeth;
	struct {
		uint64_t va;
		uint32_t rkey;
		uint64_t swap_add;
		uint64_t compare;
	} atmeth;
	uint64_t atmack_orig;
	uint32_t imm_be; /* ImmDt, network order (wc.imm_data) */
	uint32_t ieth_rkey;
	uint32_t xrc_srqn; /* XRCETH: the responder's XRC SRQ */
	struct {
		uint32_t qkey;
		uint32_t sqp;
	} deth;
	struct {
		uint8_t sel;
		uint8_t plt;
	} feth;
};

/* Write BTH + extension headers for f->opcode into buf (reserved fields 0).
 * Returns the header length, -EINVAL for an unknown opcode, -ENOSPC if
 * buflen is too small. */
int ur_hdr_build(void *buf, size_t buflen, const struct ur_hdr_fields *f);

/* Inverse of ur_hdr_build() for a parsed packet (tests, tracing). */
void ur_pkt_to_fields(const struct ur_pkt *pkt, struct ur_hdr_fields *f);

#endif
