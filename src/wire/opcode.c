/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The opcode table (IBA vol 1 table 36 "OpCode field"; docs/wire-notes.md
 * §2.5): headers after the BTH in their wire order (BTH, DETH,
 * XRCETH, RETH | FETH+RETH | AtomicETH, AETH, AtomicAckETH, ImmDt | IETH) with
 * offsets from the BTH.
 * Unlisted opcodes are zero-filled, i.e. not UR_MASK_VALID.
 */
#include "wire/opcode.h"
#include "wire/hdr.h"

const uint8_t ur_hdr_size[UR_HDR_NUM] = {
	[UR_HDR_BTH] = sizeof(struct ur_bth),
	[UR_HDR_DETH] = sizeof(struct ur_deth),
	[UR_HDR_RETH] = sizeof(struct ur_reth),
	[UR_HDR_FETH] = sizeof(struct ur_feth),
	[UR_HDR_ATMETH] = sizeof(struct ur_atmeth),
	[UR_HDR_AETH] = sizeof(struct ur_aeth),
	[UR_HDR_ATMACK] = sizeof(struct ur_atmack),
	[UR_HDR_IMMDT] = sizeof(struct ur_immdt),
	[UR_HDR_IETH] = sizeof(struct ur_ieth),
	[UR_HDR_CNP] = sizeof(struct ur_cnp_rsvd),
	[UR_HDR_XRCETH] = sizeof(struct ur_xrceth),
};

#define V (UR_MASK_VALID | UR_MASK_BTH)
#define OFF(h, o) [UR_HDR_##h] = (o)

/* Message position and direction shorthands */
#define FIRST UR_MASK_START
#define MIDDLE UR_MASK_MIDDLE
#define LAST UR_MASK_END
#define ONLY (UR_MASK_START | UR_MASK_END)
#define PAY UR_MASK_PAYLOAD
#define RCREQ (UR_MASK_REQ | UR_MASK_ACKREQ)	/* RC requests may ask for ACK */
#define UCREQ UR_MASK_REQ
#define RESP UR_MASK_RESP

/*
 * SEND and WRITE opcodes: identical for RC (0x00), UC (0x20) and XRC (0xa0)
 * but for AckReq and, in XRC requests, the XRCETH of X bytes (XM its mask
 * bit) right after the BTH, which moves every later header by X.
 */
#define SEND_WRITE_OPS(base, pfx, REQ, X, XM)                                  \
	[base + 0x00] = { pfx " SEND_FIRST", V | REQ | FIRST | PAY | XM |      \
			  UR_MASK_SEND | UR_MASK_RWR, 12 + X, { XOFF } },      \
	[base + 0x01] = { pfx " SEND_MIDDLE",                                  \
			  V | REQ | MIDDLE | PAY | XM | UR_MASK_SEND, 12 + X,  \
			  { XOFF } },                                          \
	[base + 0x02] = { pfx " SEND_LAST", V | REQ | LAST | PAY | XM |        \
			  UR_MASK_SEND | UR_MASK_COMP, 12 + X, { XOFF } },     \
	[base + 0x03] = { pfx " SEND_LAST_WITH_IMMEDIATE",                     \
			  V | REQ | LAST | PAY | XM | UR_MASK_SEND |           \
				  UR_MASK_COMP | UR_MASK_IMMDT,                \
			  16 + X, { XOFF, OFF(IMMDT, 12 + X) } },              \
	[base + 0x04] = { pfx " SEND_ONLY", V | REQ | ONLY | PAY | XM |        \
			  UR_MASK_SEND | UR_MASK_RWR | UR_MASK_COMP, 12 + X,   \
			  { XOFF } },                                          \
	[base + 0x05] = { pfx " SEND_ONLY_WITH_IMMEDIATE",                     \
			  V | REQ | ONLY | PAY | XM | UR_MASK_SEND |           \
				  UR_MASK_RWR | UR_MASK_COMP | UR_MASK_IMMDT,  \
			  16 + X, { XOFF, OFF(IMMDT, 12 + X) } },              \
	[base + 0x06] = { pfx " RDMA_WRITE_FIRST",                             \
			  V | REQ | FIRST | PAY | XM | UR_MASK_WRITE |         \
				  UR_MASK_RETH,                                \
			  28 + X, { XOFF, OFF(RETH, 12 + X) } },               \
	[base + 0x07] = { pfx " RDMA_WRITE_MIDDLE",                            \
			  V | REQ | MIDDLE | PAY | XM | UR_MASK_WRITE, 12 + X, \
			  { XOFF } },                                          \
	[base + 0x08] = { pfx " RDMA_WRITE_LAST",                              \
			  V | REQ | LAST | PAY | XM | UR_MASK_WRITE, 12 + X,   \
			  { XOFF } },                                          \
	[base + 0x09] = { pfx " RDMA_WRITE_LAST_WITH_IMMEDIATE",               \
			  V | REQ | LAST | PAY | XM | UR_MASK_WRITE |          \
				  UR_MASK_RWR | UR_MASK_COMP | UR_MASK_IMMDT,  \
			  16 + X, { XOFF, OFF(IMMDT, 12 + X) } },              \
	[base + 0x0a] = { pfx " RDMA_WRITE_ONLY",                              \
			  V | REQ | ONLY | PAY | XM | UR_MASK_WRITE |          \
				  UR_MASK_RETH,                                \
			  28 + X, { XOFF, OFF(RETH, 12 + X) } },               \
	[base + 0x0b] = { pfx " RDMA_WRITE_ONLY_WITH_IMMEDIATE",               \
			  V | REQ | ONLY | PAY | XM | UR_MASK_WRITE |          \
				  UR_MASK_RWR | UR_MASK_COMP | UR_MASK_RETH |  \
				  UR_MASK_IMMDT,                               \
			  32 + X,                                              \
			  { XOFF, OFF(RETH, 12 + X), OFF(IMMDT, 28 + X) } }

/*
 * READ, the responses, atomics and SEND with invalidate: the same for RC
 * (0x00) and XRC (0xa0). Responses never carry an XRCETH (the requester
 * knows its QP); requests carry it as above.
 */
#define READ_ATOMIC_OPS(base, pfx, X, XM)                                      \
	[base + 0x0c] = { pfx " RDMA_READ_REQUEST",                            \
			  V | RCREQ | ONLY | XM | UR_MASK_READ | UR_MASK_RETH, \
			  28 + X, { XOFF, OFF(RETH, 12 + X) } },               \
	[base + 0x0d] = { pfx " RDMA_READ_RESPONSE_FIRST",                     \
			  V | RESP | FIRST | PAY | UR_MASK_READ | UR_MASK_AETH,\
			  16, { OFF(AETH, 12) } },                             \
	[base + 0x0e] = { pfx " RDMA_READ_RESPONSE_MIDDLE",                    \
			  V | RESP | MIDDLE | PAY | UR_MASK_READ, 12 },        \
	[base + 0x0f] = { pfx " RDMA_READ_RESPONSE_LAST",                      \
			  V | RESP | LAST | PAY | UR_MASK_READ | UR_MASK_AETH, \
			  16, { OFF(AETH, 12) } },                             \
	[base + 0x10] = { pfx " RDMA_READ_RESPONSE_ONLY",                      \
			  V | RESP | ONLY | PAY | UR_MASK_READ | UR_MASK_AETH, \
			  16, { OFF(AETH, 12) } },                             \
	[base + 0x11] = { pfx " ACKNOWLEDGE",                                  \
			  V | RESP | ONLY | UR_MASK_ACK | UR_MASK_AETH, 16,    \
			  { OFF(AETH, 12) } },                                 \
	[base + 0x12] = { pfx " ATOMIC_ACKNOWLEDGE",                           \
			  V | RESP | ONLY | UR_MASK_ATOMIC | UR_MASK_AETH |    \
				  UR_MASK_ATMACK,                              \
			  24, { OFF(AETH, 12), OFF(ATMACK, 16) } },            \
	[base + 0x13] = { pfx " COMPARE_SWAP",                                 \
			  V | RCREQ | ONLY | XM | UR_MASK_ATOMIC |             \
				  UR_MASK_ATMETH,                              \
			  40 + X, { XOFF, OFF(ATMETH, 12 + X) } },             \
	[base + 0x14] = { pfx " FETCH_ADD",                                    \
			  V | RCREQ | ONLY | XM | UR_MASK_ATOMIC |             \
				  UR_MASK_ATMETH,                              \
			  40 + X, { XOFF, OFF(ATMETH, 12 + X) } },             \
	[base + 0x16] = { pfx " SEND_LAST_WITH_INVALIDATE",                    \
			  V | RCREQ | LAST | PAY | XM | UR_MASK_SEND |         \
				  UR_MASK_COMP | UR_MASK_IETH,                 \
			  16 + X, { XOFF, OFF(IETH, 12 + X) } },               \
	[base + 0x17] = { pfx " SEND_ONLY_WITH_INVALIDATE",                    \
			  V | RCREQ | ONLY | PAY | XM | UR_MASK_SEND |         \
				  UR_MASK_RWR | UR_MASK_COMP | UR_MASK_IETH,   \
			  16 + X, { XOFF, OFF(IETH, 12 + X) } }

/* The XRCETH's offset: meaningful only where the mask has it. */
#define XOFF OFF(XRCETH, 12)
#define XRC_X 4
#define XRC_XM UR_MASK_XRCETH

const struct ur_opcode_info ur_opcode_table[256] = {
	SEND_WRITE_OPS(0x00, "RC", RCREQ, 0, 0),
	READ_ATOMIC_OPS(0x00, "RC", 0, 0),
	[UR_OPC_RC_FLUSH] = { "RC FLUSH",
			      V | RCREQ | ONLY | UR_MASK_OTHER | UR_MASK_FETH |
				      UR_MASK_RETH,
			      32, { OFF(FETH, 12), OFF(RETH, 16) } },
	[UR_OPC_RC_ATOMIC_WRITE] = { "RC ATOMIC_WRITE",
				     V | RCREQ | ONLY | PAY | UR_MASK_OTHER |
					     UR_MASK_RETH,
				     28, { OFF(RETH, 12) }, 8 },

	SEND_WRITE_OPS(0x20, "UC", UCREQ, 0, 0),

	[UR_OPC_UD_SEND_ONLY] = { "UD SEND_ONLY",
				  V | UCREQ | ONLY | PAY | UR_MASK_SEND |
					  UR_MASK_RWR | UR_MASK_COMP |
					  UR_MASK_DETH,
				  20, { OFF(DETH, 12) } },
	[UR_OPC_UD_SEND_ONLY_IMM] = { "UD SEND_ONLY_WITH_IMMEDIATE",
				      V | UCREQ | ONLY | PAY | UR_MASK_SEND |
					      UR_MASK_RWR | UR_MASK_COMP |
					      UR_MASK_DETH | UR_MASK_IMMDT,
				      24, { OFF(DETH, 12), OFF(IMMDT, 20) } },

	SEND_WRITE_OPS(UR_OPC_XRC_BASE, "XRC", RCREQ, XRC_X, XRC_XM),
	READ_ATOMIC_OPS(UR_OPC_XRC_BASE, "XRC", XRC_X, XRC_XM),

	[UR_OPC_CNP] = { "CNP", V | ONLY | UR_MASK_OTHER | UR_MASK_CNP, 28,
			 { OFF(CNP, 12) } },
};
