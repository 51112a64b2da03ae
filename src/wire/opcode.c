/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The opcode table (IBA vol 1 table 36 "OpCode field"; docs/wire-notes.md
 * §2.5): headers after the BTH in their wire order (BTH, DETH,
 * RETH | FETH+RETH | AtomicETH, AETH, AtomicAckETH, ImmDt | IETH) with
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

/* SEND and WRITE opcodes: identical for RC (0x00) and UC (0x20) but for
 * AckReq. */
#define SEND_WRITE_OPS(base, pfx, REQ)                                         \
	[base + 0x00] = { pfx " SEND_FIRST", V | REQ | FIRST | PAY |           \
			  UR_MASK_SEND | UR_MASK_RWR, 12 },                    \
	[base + 0x01] = { pfx " SEND_MIDDLE",                                  \
			  V | REQ | MIDDLE | PAY | UR_MASK_SEND, 12 },         \
	[base + 0x02] = { pfx " SEND_LAST", V | REQ | LAST | PAY |             \
			  UR_MASK_SEND | UR_MASK_COMP, 12 },                   \
	[base + 0x03] = { pfx " SEND_LAST_WITH_IMMEDIATE",                     \
			  V | REQ | LAST | PAY | UR_MASK_SEND | UR_MASK_COMP | \
				  UR_MASK_IMMDT,                               \
			  16, { OFF(IMMDT, 12) } },                            \
	[base + 0x04] = { pfx " SEND_ONLY", V | REQ | ONLY | PAY |             \
			  UR_MASK_SEND | UR_MASK_RWR | UR_MASK_COMP, 12 },     \
	[base + 0x05] = { pfx " SEND_ONLY_WITH_IMMEDIATE",                     \
			  V | REQ | ONLY | PAY | UR_MASK_SEND | UR_MASK_RWR |  \
				  UR_MASK_COMP | UR_MASK_IMMDT,                \
			  16, { OFF(IMMDT, 12) } },                            \
	[base + 0x06] = { pfx " RDMA_WRITE_FIRST",                             \
			  V | REQ | FIRST | PAY | UR_MASK_WRITE | UR_MASK_RETH,\
			  28, { OFF(RETH, 12) } },                             \
	[base + 0x07] = { pfx " RDMA_WRITE_MIDDLE",                            \
			  V | REQ | MIDDLE | PAY | UR_MASK_WRITE, 12 },        \
	[base + 0x08] = { pfx " RDMA_WRITE_LAST",                              \
			  V | REQ | LAST | PAY | UR_MASK_WRITE, 12 },          \
	[base + 0x09] = { pfx " RDMA_WRITE_LAST_WITH_IMMEDIATE",               \
			  V | REQ | LAST | PAY | UR_MASK_WRITE | UR_MASK_RWR | \
				  UR_MASK_COMP | UR_MASK_IMMDT,                \
			  16, { OFF(IMMDT, 12) } },                            \
	[base + 0x0a] = { pfx " RDMA_WRITE_ONLY",                              \
			  V | REQ | ONLY | PAY | UR_MASK_WRITE | UR_MASK_RETH, \
			  28, { OFF(RETH, 12) } },                             \
	[base + 0x0b] = { pfx " RDMA_WRITE_ONLY_WITH_IMMEDIATE",               \
			  V | REQ | ONLY | PAY | UR_MASK_WRITE | UR_MASK_RWR | \
				  UR_MASK_COMP | UR_MASK_RETH | UR_MASK_IMMDT, \
			  32, { OFF(RETH, 12), OFF(IMMDT, 28) } }

const struct ur_opcode_info ur_opcode_table[256] = {
	SEND_WRITE_OPS(0x00, "RC", RCREQ),
	[UR_OPC_RC_READ_REQ] = { "RC RDMA_READ_REQUEST",
				 V | RCREQ | ONLY | UR_MASK_READ | UR_MASK_RETH,
				 28, { OFF(RETH, 12) } },
	[UR_OPC_RC_READ_RESP_FIRST] = { "RC RDMA_READ_RESPONSE_FIRST",
					V | RESP | FIRST | PAY | UR_MASK_READ |
						UR_MASK_AETH,
					16, { OFF(AETH, 12) } },
	[UR_OPC_RC_READ_RESP_MIDDLE] = { "RC RDMA_READ_RESPONSE_MIDDLE",
					 V | RESP | MIDDLE | PAY | UR_MASK_READ,
					 12 },
	[UR_OPC_RC_READ_RESP_LAST] = { "RC RDMA_READ_RESPONSE_LAST",
				       V | RESP | LAST | PAY | UR_MASK_READ |
					       UR_MASK_AETH,
				       16, { OFF(AETH, 12) } },
	[UR_OPC_RC_READ_RESP_ONLY] = { "RC RDMA_READ_RESPONSE_ONLY",
				       V | RESP | ONLY | PAY | UR_MASK_READ |
					       UR_MASK_AETH,
				       16, { OFF(AETH, 12) } },
	[UR_OPC_RC_ACK] = { "RC ACKNOWLEDGE",
			    V | RESP | ONLY | UR_MASK_ACK | UR_MASK_AETH, 16,
			    { OFF(AETH, 12) } },
	[UR_OPC_RC_ATOMIC_ACK] = { "RC ATOMIC_ACKNOWLEDGE",
				   V | RESP | ONLY | UR_MASK_ATOMIC |
					   UR_MASK_AETH | UR_MASK_ATMACK,
				   24, { OFF(AETH, 12), OFF(ATMACK, 16) } },
	[UR_OPC_RC_CMP_SWAP] = { "RC COMPARE_SWAP",
				 V | RCREQ | ONLY | UR_MASK_ATOMIC |
					 UR_MASK_ATMETH,
				 40, { OFF(ATMETH, 12) } },
	[UR_OPC_RC_FETCH_ADD] = { "RC FETCH_ADD",
				  V | RCREQ | ONLY | UR_MASK_ATOMIC |
					  UR_MASK_ATMETH,
				  40, { OFF(ATMETH, 12) } },
	[UR_OPC_RC_SEND_LAST_INV] = { "RC SEND_LAST_WITH_INVALIDATE",
				      V | RCREQ | LAST | PAY | UR_MASK_SEND |
					      UR_MASK_COMP | UR_MASK_IETH,
				      16, { OFF(IETH, 12) } },
	[UR_OPC_RC_SEND_ONLY_INV] = { "RC SEND_ONLY_WITH_INVALIDATE",
				      V | RCREQ | ONLY | PAY | UR_MASK_SEND |
					      UR_MASK_RWR | UR_MASK_COMP |
					      UR_MASK_IETH,
				      16, { OFF(IETH, 12) } },
	[UR_OPC_RC_FLUSH] = { "RC FLUSH",
			      V | RCREQ | ONLY | UR_MASK_OTHER | UR_MASK_FETH |
				      UR_MASK_RETH,
			      32, { OFF(FETH, 12), OFF(RETH, 16) } },
	[UR_OPC_RC_ATOMIC_WRITE] = { "RC ATOMIC_WRITE",
				     V | RCREQ | ONLY | PAY | UR_MASK_OTHER |
					     UR_MASK_RETH,
				     28, { OFF(RETH, 12) }, 8 },

	SEND_WRITE_OPS(0x20, "UC", UCREQ),

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

	[UR_OPC_CNP] = { "CNP", V | ONLY | UR_MASK_OTHER | UR_MASK_CNP, 28,
			 { OFF(CNP, 12) } },
};
