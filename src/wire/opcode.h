/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The RoCEv2 opcode table as data (docs/wire-notes.md §2.5): one entry per
 * 8-bit opcode with its name, which headers follow the BTH, their offsets and
 * flags (first/middle/last/only, payload, request/response...). Parse and build
 * read it; others use the predicates. No entry (RD, reserved): mask 0.
 */
#ifndef UR_WIRE_OPCODE_H
#define UR_WIRE_OPCODE_H

#include <stdbool.h>
#include <stdint.h>

/* Transport class = opcode >> 5 (IBA 9.2: 3-bit transport prefix). */
enum ur_tclass {
	UR_TCLASS_RC = 0,
	UR_TCLASS_UC = 1,
	UR_TCLASS_RD = 2,
	UR_TCLASS_UD = 3,
	UR_TCLASS_CNP = 4, /* 0x80..0x9f: CNP lives at 0x81 */
	UR_TCLASS_XRC = 5, /* 0xa0..0xbf: RC's opcodes + 0xa0, XRCETH */
};

enum ur_opcode {
	UR_OPC_RC_SEND_FIRST = 0x00,
	UR_OPC_RC_SEND_MIDDLE = 0x01,
	UR_OPC_RC_SEND_LAST = 0x02,
	UR_OPC_RC_SEND_LAST_IMM = 0x03,
	UR_OPC_RC_SEND_ONLY = 0x04,
	UR_OPC_RC_SEND_ONLY_IMM = 0x05,
	UR_OPC_RC_WRITE_FIRST = 0x06,
	UR_OPC_RC_WRITE_MIDDLE = 0x07,
	UR_OPC_RC_WRITE_LAST = 0x08,
	UR_OPC_RC_WRITE_LAST_IMM = 0x09,
	UR_OPC_RC_WRITE_ONLY = 0x0a,
	UR_OPC_RC_WRITE_ONLY_IMM = 0x0b,
	UR_OPC_RC_READ_REQ = 0x0c,
	UR_OPC_RC_READ_RESP_FIRST = 0x0d,
	UR_OPC_RC_READ_RESP_MIDDLE = 0x0e,
	UR_OPC_RC_READ_RESP_LAST = 0x0f,
	UR_OPC_RC_READ_RESP_ONLY = 0x10,
	UR_OPC_RC_ACK = 0x11,
	UR_OPC_RC_ATOMIC_ACK = 0x12,
	UR_OPC_RC_CMP_SWAP = 0x13,
	UR_OPC_RC_FETCH_ADD = 0x14,
	UR_OPC_RC_SEND_LAST_INV = 0x16,
	UR_OPC_RC_SEND_ONLY_INV = 0x17,
	UR_OPC_RC_FLUSH = 0x1c,
	UR_OPC_RC_ATOMIC_WRITE = 0x1d,

	UR_OPC_UC_SEND_FIRST = 0x20,
	UR_OPC_UC_SEND_MIDDLE = 0x21,
	UR_OPC_UC_SEND_LAST = 0x22,
	UR_OPC_UC_SEND_LAST_IMM = 0x23,
	UR_OPC_UC_SEND_ONLY = 0x24,
	UR_OPC_UC_SEND_ONLY_IMM = 0x25,
	UR_OPC_UC_WRITE_FIRST = 0x26,
	UR_OPC_UC_WRITE_MIDDLE = 0x27,
	UR_OPC_UC_WRITE_LAST = 0x28,
	UR_OPC_UC_WRITE_LAST_IMM = 0x29,
	UR_OPC_UC_WRITE_ONLY = 0x2a,
	UR_OPC_UC_WRITE_ONLY_IMM = 0x2b,

	UR_OPC_UD_SEND_ONLY = 0x64,
	UR_OPC_UD_SEND_ONLY_IMM = 0x65,

	UR_OPC_CNP = 0x81,

	/* XRC: every RC opcode but FLUSH/ATOMIC_WRITE at RC's + 0xa0 */
	UR_OPC_XRC_BASE = 0xa0,
};

/* Header bits of ur_opcode_info.mask (which headers follow the BTH). */
enum ur_hdr_id {
	UR_HDR_BTH,
	UR_HDR_XRCETH, /* XRC requests: the target SRQ, right after the BTH */
	UR_HDR_DETH,
	UR_HDR_FETH, /* FLUSH: FETH precedes RETH */
	UR_HDR_RETH,
	UR_HDR_ATMETH,
	UR_HDR_AETH,
	UR_HDR_ATMACK,
	UR_HDR_IMMDT,
	UR_HDR_IETH,
	UR_HDR_CNP, /* 16 reserved bytes of a CNP */
	UR_HDR_NUM,
};

#define UR_MASK_BTH (1u << UR_HDR_BTH)
#define UR_MASK_DETH (1u << UR_HDR_DETH)
#define UR_MASK_FETH (1u << UR_HDR_FETH)
#define UR_MASK_RETH (1u << UR_HDR_RETH)
#define UR_MASK_ATMETH (1u << UR_HDR_ATMETH)
#define UR_MASK_AETH (1u << UR_HDR_AETH)
#define UR_MASK_ATMACK (1u << UR_HDR_ATMACK)
#define UR_MASK_IMMDT (1u << UR_HDR_IMMDT)
#define UR_MASK_IETH (1u << UR_HDR_IETH)
#define UR_MASK_CNP (1u << UR_HDR_CNP)
#define UR_MASK_XRCETH (1u << UR_HDR_XRCETH)
#define UR_MASK_HDRS ((1u << UR_HDR_NUM) - 1)

/* Flag bits of ur_opcode_info.mask, above the header bits. */
#define UR_MASK_VALID (1u << 16)   /* opcode has an entry */
#define UR_MASK_PAYLOAD (1u << 17) /* may carry payload */
#define UR_MASK_START (1u << 18)   /* first packet of a message (FIRST/ONLY) */
#define UR_MASK_MIDDLE (1u << 19)
#define UR_MASK_END (1u << 20)	  /* last packet of a message (LAST/ONLY) */
#define UR_MASK_REQ (1u << 21)	  /* request (requester -> responder) */
#define UR_MASK_RESP (1u << 22)	  /* response (responder -> requester) */
#define UR_MASK_ACKREQ (1u << 23) /* AckReq may be set */
#define UR_MASK_SEND (1u << 24)
#define UR_MASK_WRITE (1u << 25)
#define UR_MASK_READ (1u << 26)	  /* read request or read response */
#define UR_MASK_ATOMIC (1u << 27) /* CMP_SWAP / FETCH_ADD / ATOMIC_ACK */
#define UR_MASK_RWR (1u << 28)	  /* consumes a receive WQE */
#define UR_MASK_COMP (1u << 29)	  /* completes a receive WQE */
#define UR_MASK_ACK (1u << 30)	  /* ACK / NAK (AETH, no payload) */
#define UR_MASK_OTHER (1u << 31)  /* FLUSH, ATOMIC_WRITE, CNP */

struct ur_opcode_info {
	const char *name;	    /* IBA name, e.g. "RC SEND_FIRST" */
	uint32_t mask;		    /* UR_MASK_* */
	uint8_t length;		    /* BTH + all extension headers */
	uint8_t offset[UR_HDR_NUM]; /* from BTH start; valid if in mask */
	uint8_t fixed_payload;	    /* exact payload length, or 0 = any */
};

extern const struct ur_opcode_info ur_opcode_table[256];
extern const uint8_t ur_hdr_size[UR_HDR_NUM];

static inline const struct ur_opcode_info *ur_op_info(uint8_t op)
{
	return &ur_opcode_table[op];
}

static inline uint32_t ur_op_mask(uint8_t op)
{
	return ur_opcode_table[op].mask;
}

static inline bool ur_op_valid(uint8_t op)
{
	return ur_op_mask(op) & UR_MASK_VALID;
}

static inline unsigned int ur_op_tclass(uint8_t op)
{
	return op >> 5;
}

static inline const char *ur_op_name(uint8_t op)
{
	return ur_op_valid(op) ? ur_opcode_table[op].name : "UNKNOWN";
}

static inline uint8_t ur_op_hdr_len(uint8_t op)
{
	return ur_opcode_table[op].length;
}

static inline bool ur_op_has(uint8_t op, enum ur_hdr_id h)
{
	return ur_op_mask(op) & (1u << h);
}

/* Offset of header h from BTH start; only meaningful if ur_op_has(). */
static inline uint8_t ur_op_hdr_off(uint8_t op, enum ur_hdr_id h)
{
	return ur_opcode_table[op].offset[h];
}

/* Position in a message. ONLY is both first and last: is_first/is_last
 * are strict, has_start/has_end include ONLY. */
static inline bool ur_op_has_start(uint8_t op)
{
	return ur_op_mask(op) & UR_MASK_START;
}

static inline bool ur_op_has_end(uint8_t op)
{
	return ur_op_mask(op) & UR_MASK_END;
}

static inline bool ur_op_is_first(uint8_t op)
{
	return (ur_op_mask(op) & (UR_MASK_START | UR_MASK_END)) ==
	       UR_MASK_START;
}

static inline bool ur_op_is_middle(uint8_t op)
{
	return ur_op_mask(op) & UR_MASK_MIDDLE;
}

static inline bool ur_op_is_last(uint8_t op)
{
	return (ur_op_mask(op) & (UR_MASK_START | UR_MASK_END)) == UR_MASK_END;
}

static inline bool ur_op_is_only(uint8_t op)
{
	return (ur_op_mask(op) & (UR_MASK_START | UR_MASK_END)) ==
	       (UR_MASK_START | UR_MASK_END);
}

static inline bool ur_op_has_payload(uint8_t op)
{
	return ur_op_mask(op) & UR_MASK_PAYLOAD;
}

static inline bool ur_op_is_request(uint8_t op)
{
	return ur_op_mask(op) & UR_MASK_REQ;
}

static inline bool ur_op_is_response(uint8_t op)
{
	return ur_op_mask(op) & UR_MASK_RESP;
}

static inline bool ur_op_may_ackreq(uint8_t op)
{
	return ur_op_mask(op) & UR_MASK_ACKREQ;
}

static inline bool ur_op_is_send(uint8_t op)
{
	return ur_op_mask(op) & UR_MASK_SEND;
}

static inline bool ur_op_is_write(uint8_t op)
{
	return ur_op_mask(op) & UR_MASK_WRITE;
}

static inline bool ur_op_is_read(uint8_t op)
{
	return ur_op_mask(op) & UR_MASK_READ;
}

static inline bool ur_op_is_atomic(uint8_t op)
{
	return ur_op_mask(op) & UR_MASK_ATOMIC;
}

static inline bool ur_op_is_ack(uint8_t op)
{
	return ur_op_mask(op) & UR_MASK_ACK;
}

static inline bool ur_op_consumes_rwr(uint8_t op)
{
	return ur_op_mask(op) & UR_MASK_RWR;
}

static inline bool ur_op_completes_rwr(uint8_t op)
{
	return ur_op_mask(op) & UR_MASK_COMP;
}

static inline bool ur_op_has_imm(uint8_t op)
{
	return ur_op_has(op, UR_HDR_IMMDT);
}

static inline bool ur_op_has_inv(uint8_t op)
{
	return ur_op_has(op, UR_HDR_IETH);
}

/* Opcode may be received/sent by a QP of transport class tclass
 * (UR_TCLASS_RC/UC/UD, the 3-bit prefix). */
/* The XRC opcode that stands where RC's rc_op does (IBA vol 1 9.2, table
 * 38: XRC is RC's opcode set under the transport prefix 101b). */
static inline uint8_t ur_op_rc_to_xrc(uint8_t rc_op)
{
	return (uint8_t)(rc_op + UR_OPC_XRC_BASE);
}

/* The RC opcode an XRC opcode corresponds to; others are returned as is. */
static inline uint8_t ur_op_xrc_to_rc(uint8_t op)
{
	return ur_op_tclass(op) == UR_TCLASS_XRC ?
		       (uint8_t)(op - UR_OPC_XRC_BASE) : op;
}

static inline bool ur_op_valid_for_class(uint8_t op, unsigned int tclass)
{
	return ur_op_valid(op) && ur_op_tclass(op) == tclass &&
	       tclass != UR_TCLASS_CNP;
}

#endif
