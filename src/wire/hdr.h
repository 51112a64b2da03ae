/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RoCEv2 transport headers (IBA vol 1 ch. 9; docs/wire-notes.md §2.2-2.4) as
 * packed structs with get/set accessors. Fields are stored big-endian exactly
 * as on the wire; every byte swap in the project happens in these accessors.
 * The structs have alignment 1, so they may overlay any byte of a packet
 * buffer.
 */
#ifndef UR_WIRE_HDR_H
#define UR_WIRE_HDR_H

#include "util/compiler.h"
#include "util/iba.h"
#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

struct ur_bth {
	uint8_t opcode;
	uint8_t flags; /* SE:1 MigReq:1 PadCnt:2 TVer:4 */
	uint16_t pkey;
	uint32_t qpn;  /* FECN:1 BECN:1 resv6a:6 DestQP:24 */
	uint32_t apsn; /* AckReq:1 resv7:7 PSN:24 */
} __attribute__((packed));

struct ur_reth {
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
} __attribute__((packed));

struct ur_aeth {
	uint32_t smsn; /* Syndrome:8 MSN:24 */
} __attribute__((packed));

struct ur_atmeth {
	uint64_t va;
	uint32_t rkey;
	uint64_t swap_add;
	uint64_t compare;
} __attribute__((packed));

struct ur_atmack {
	uint64_t orig;
} __attribute__((packed));

struct ur_immdt {
	uint32_t imm; /* opaque, network order */
} __attribute__((packed));

struct ur_ieth {
	uint32_t rkey;
} __attribute__((packed));

struct ur_deth {
	uint32_t qkey;
	uint32_t sqp; /* resv8:8 SrcQP:24 */
} __attribute__((packed));

/* FLUSH extended transport header (IBA 1.5 / rxe): resv:26 SEL:2 PLT:4 */
struct ur_feth {
	uint32_t bits;
} __attribute__((packed));

/* XRC extended transport header (IBA vol 1 9.3.8 / XRC annex): resv:8
 * XRCSRQ:24, right after the BTH of every XRC request */
struct ur_xrceth {
	uint32_t srqn;
} __attribute__((packed));

/* CNP (RoCEv2 annex A17.9.2): 16 reserved bytes after the BTH */
struct ur_cnp_rsvd {
	uint8_t rsvd[16];
} __attribute__((packed));

static_assert(sizeof(struct ur_bth) == 12, "BTH is 12 bytes");
static_assert(sizeof(struct ur_reth) == 16, "RETH is 16 bytes");
static_assert(sizeof(struct ur_aeth) == 4, "AETH is 4 bytes");
static_assert(sizeof(struct ur_atmeth) == 28, "AtomicETH is 28 bytes");
static_assert(sizeof(struct ur_atmack) == 8, "AtomicAckETH is 8 bytes");
static_assert(sizeof(struct ur_immdt) == 4, "ImmDt is 4 bytes");
static_assert(sizeof(struct ur_ieth) == 4, "IETH is 4 bytes");
static_assert(sizeof(struct ur_deth) == 8, "DETH is 8 bytes");
static_assert(sizeof(struct ur_feth) == 4, "FETH is 4 bytes");
static_assert(sizeof(struct ur_xrceth) == 4, "XRCETH is 4 bytes");
static_assert(sizeof(struct ur_cnp_rsvd) == 16, "CNP reserved is 16 bytes");

#define UR_BTH_BYTES 12
#define UR_ICRC_BYTES 4
#define UR_PSN_BITS 24

/* AETH syndrome (docs/wire-notes.md §2.4) */
#define UR_AETH_TYPE_MASK 0x60
#define UR_AETH_ACK 0x00
#define UR_AETH_RNR_NAK 0x20
#define UR_AETH_RSVD 0x40
#define UR_AETH_NAK 0x60
#define UR_AETH_VALUE_MASK 0x1f
#define UR_AETH_ACK_UNLIMITED 0x1f
#define UR_AETH_NAK_PSN_SEQ 0x60
#define UR_AETH_NAK_INV_REQ 0x61
#define UR_AETH_NAK_REM_ACC 0x62
#define UR_AETH_NAK_REM_OP 0x63
#define UR_AETH_NAK_INV_RD_REQ 0x64

/* --- generic big-endian field helpers (unaligned-safe through memcpy) --- */
static inline uint32_t ur_be24_get(const void *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return be32toh(v) & 0xffffffu;
}

static inline void ur_be24_set(void *p, uint32_t v24)
{
	uint32_t v;

	memcpy(&v, p, 4);
	v = htobe32((be32toh(v) & 0xff000000u) | (v24 & 0xffffffu));
	memcpy(p, &v, 4);
}

static inline uint8_t ur_be32_hi8_get(const void *p)
{
	return ((const uint8_t *)p)[0];
}

static inline void ur_be32_hi8_set(void *p, uint8_t v)
{
	((uint8_t *)p)[0] = v;
}

#define UR_HDR_GET16(p) be16toh(p)
#define UR_HDR_SET16(p, v) ((p) = htobe16(v))
#define UR_HDR_GET32(p) be32toh(p)
#define UR_HDR_SET32(p, v) ((p) = htobe32(v))
#define UR_HDR_GET64(p) be64toh(p)
#define UR_HDR_SET64(p, v) ((p) = htobe64(v))

/* --- BTH --- */
static inline uint8_t ur_bth_opcode(const struct ur_bth *h)
{
	return h->opcode;
}
static inline void ur_bth_set_opcode(struct ur_bth *h, uint8_t v)
{
	h->opcode = v;
}
static inline bool ur_bth_se(const struct ur_bth *h)
{
	return h->flags & 0x80;
}
static inline void ur_bth_set_se(struct ur_bth *h, bool v)
{
	h->flags = (h->flags & ~0x80) | (v ? 0x80 : 0);
}
static inline bool ur_bth_mig(const struct ur_bth *h)
{
	return h->flags & 0x40;
}
static inline void ur_bth_set_mig(struct ur_bth *h, bool v)
{
	h->flags = (h->flags & ~0x40) | (v ? 0x40 : 0);
}
static inline uint8_t ur_bth_pad(const struct ur_bth *h)
{
	return (h->flags >> 4) & 3;
}
static inline void ur_bth_set_pad(struct ur_bth *h, uint8_t v)
{
	h->flags = (h->flags & ~0x30) | ((v & 3) << 4);
}
static inline uint8_t ur_bth_tver(const struct ur_bth *h)
{
	return h->flags & 0xf;
}
static inline void ur_bth_set_tver(struct ur_bth *h, uint8_t v)
{
	h->flags = (h->flags & ~0x0f) | (v & 0xf);
}
static inline uint16_t ur_bth_pkey(const struct ur_bth *h)
{
	return UR_HDR_GET16(h->pkey);
}
static inline void ur_bth_set_pkey(struct ur_bth *h, uint16_t v)
{
	UR_HDR_SET16(h->pkey, v);
}
static inline bool ur_bth_fecn(const struct ur_bth *h)
{
	return ur_be32_hi8_get(&h->qpn) & 0x80;
}
static inline void ur_bth_set_fecn(struct ur_bth *h, bool v)
{
	uint8_t b = ur_be32_hi8_get(&h->qpn);

	ur_be32_hi8_set(&h->qpn, (b & ~0x80) | (v ? 0x80 : 0));
}
static inline bool ur_bth_becn(const struct ur_bth *h)
{
	return ur_be32_hi8_get(&h->qpn) & 0x40;
}
static inline void ur_bth_set_becn(struct ur_bth *h, bool v)
{
	uint8_t b = ur_be32_hi8_get(&h->qpn);

	ur_be32_hi8_set(&h->qpn, (b & ~0x40) | (v ? 0x40 : 0));
}
static inline uint8_t ur_bth_resv6a(const struct ur_bth *h)
{
	return ur_be32_hi8_get(&h->qpn) & 0x3f;
}
static inline void ur_bth_set_resv6a(struct ur_bth *h, uint8_t v)
{
	uint8_t b = ur_be32_hi8_get(&h->qpn);

	ur_be32_hi8_set(&h->qpn, (b & ~0x3f) | (v & 0x3f));
}
/*
 * uroce's private mark in resv6a, between two uroce processes of one host
 * only (engine/direct.c): a WRITE_ONLY_WITH_IMM whose payload the
 * requester already copied into the target; it carries the RETH's DMA
 * length and no payload. The ICRC masks the byte (icrc.c), and every
 * other resv6a bit stays an error.
 */
#define UR_BTH_RESV6A_PLACED 0x20

static inline uint32_t ur_bth_qpn(const struct ur_bth *h)
{
	return ur_be24_get(&h->qpn);
}
static inline void ur_bth_set_qpn(struct ur_bth *h, uint32_t v)
{
	ur_be24_set(&h->qpn, v);
}
static inline bool ur_bth_ackreq(const struct ur_bth *h)
{
	return ur_be32_hi8_get(&h->apsn) & 0x80;
}
static inline void ur_bth_set_ackreq(struct ur_bth *h, bool v)
{
	uint8_t b = ur_be32_hi8_get(&h->apsn);

	ur_be32_hi8_set(&h->apsn, (b & ~0x80) | (v ? 0x80 : 0));
}
static inline uint8_t ur_bth_resv7(const struct ur_bth *h)
{
	return ur_be32_hi8_get(&h->apsn) & 0x7f;
}
static inline void ur_bth_set_resv7(struct ur_bth *h, uint8_t v)
{
	uint8_t b = ur_be32_hi8_get(&h->apsn);

	ur_be32_hi8_set(&h->apsn, (b & ~0x7f) | (v & 0x7f));
}
static inline uint32_t ur_bth_psn(const struct ur_bth *h)
{
	return ur_be24_get(&h->apsn);
}
static inline void ur_bth_set_psn(struct ur_bth *h, uint32_t v)
{
	ur_be24_set(&h->apsn, v);
}

/* --- RETH --- */
static inline uint64_t ur_reth_va(const struct ur_reth *h)
{
	return UR_HDR_GET64(h->va);
}
static inline void ur_reth_set_va(struct ur_reth *h, uint64_t v)
{
	UR_HDR_SET64(h->va, v);
}
static inline uint32_t ur_reth_rkey(const struct ur_reth *h)
{
	return UR_HDR_GET32(h->rkey);
}
static inline void ur_reth_set_rkey(struct ur_reth *h, uint32_t v)
{
	UR_HDR_SET32(h->rkey, v);
}
static inline uint32_t ur_reth_len(const struct ur_reth *h)
{
	return UR_HDR_GET32(h->len);
}
static inline void ur_reth_set_len(struct ur_reth *h, uint32_t v)
{
	UR_HDR_SET32(h->len, v);
}

/* --- AETH --- */
static inline uint8_t ur_aeth_syn(const struct ur_aeth *h)
{
	return ur_be32_hi8_get(&h->smsn);
}
static inline void ur_aeth_set_syn(struct ur_aeth *h, uint8_t v)
{
	ur_be32_hi8_set(&h->smsn, v);
}
static inline uint32_t ur_aeth_msn(const struct ur_aeth *h)
{
	return ur_be24_get(&h->smsn);
}
static inline void ur_aeth_set_msn(struct ur_aeth *h, uint32_t v)
{
	ur_be24_set(&h->smsn, v);
}

/* --- AtomicETH --- */
static inline uint64_t ur_atmeth_va(const struct ur_atmeth *h)
{
	return UR_HDR_GET64(h->va);
}
static inline void ur_atmeth_set_va(struct ur_atmeth *h, uint64_t v)
{
	UR_HDR_SET64(h->va, v);
}
static inline uint32_t ur_atmeth_rkey(const struct ur_atmeth *h)
{
	return UR_HDR_GET32(h->rkey);
}
static inline void ur_atmeth_set_rkey(struct ur_atmeth *h, uint32_t v)
{
	UR_HDR_SET32(h->rkey, v);
}
static inline uint64_t ur_atmeth_swap_add(const struct ur_atmeth *h)
{
	return UR_HDR_GET64(h->swap_add);
}
static inline void ur_atmeth_set_swap_add(struct ur_atmeth *h, uint64_t v)
{
	UR_HDR_SET64(h->swap_add, v);
}
static inline uint64_t ur_atmeth_compare(const struct ur_atmeth *h)
{
	return UR_HDR_GET64(h->compare);
}
static inline void ur_atmeth_set_compare(struct ur_atmeth *h, uint64_t v)
{
	UR_HDR_SET64(h->compare, v);
}

/* --- AtomicAckETH --- */
static inline uint64_t ur_atmack_orig(const struct ur_atmack *h)
{
	return UR_HDR_GET64(h->orig);
}
static inline void ur_atmack_set_orig(struct ur_atmack *h, uint64_t v)
{
	UR_HDR_SET64(h->orig, v);
}

/* --- ImmDt: host-order value, and the raw network-order word (wc.imm_data) ---
 */
static inline uint32_t ur_immdt_imm(const struct ur_immdt *h)
{
	return UR_HDR_GET32(h->imm);
}
static inline void ur_immdt_set_imm(struct ur_immdt *h, uint32_t v)
{
	UR_HDR_SET32(h->imm, v);
}
static inline uint32_t ur_immdt_imm_be(const struct ur_immdt *h)
{
	return h->imm;
}
static inline void ur_immdt_set_imm_be(struct ur_immdt *h, uint32_t be)
{
	h->imm = be;
}

/* --- IETH --- */
static inline uint32_t ur_ieth_rkey(const struct ur_ieth *h)
{
	return UR_HDR_GET32(h->rkey);
}
static inline void ur_ieth_set_rkey(struct ur_ieth *h, uint32_t v)
{
	UR_HDR_SET32(h->rkey, v);
}

/* --- DETH --- */
static inline uint32_t ur_deth_qkey(const struct ur_deth *h)
{
	return UR_HDR_GET32(h->qkey);
}
static inline void ur_deth_set_qkey(struct ur_deth *h, uint32_t v)
{
	UR_HDR_SET32(h->qkey, v);
}
static inline uint8_t ur_deth_resv8(const struct ur_deth *h)
{
	return ur_be32_hi8_get(&h->sqp);
}
static inline void ur_deth_set_resv8(struct ur_deth *h, uint8_t v)
{
	ur_be32_hi8_set(&h->sqp, v);
}
static inline uint32_t ur_deth_sqp(const struct ur_deth *h)
{
	return ur_be24_get(&h->sqp);
}
static inline void ur_deth_set_sqp(struct ur_deth *h, uint32_t v)
{
	ur_be24_set(&h->sqp, v);
}

/* --- XRCETH --- */
static inline uint32_t ur_xrceth_srqn(const struct ur_xrceth *h)
{
	return ur_be24_get(&h->srqn);
}
static inline uint8_t ur_xrceth_resv8(const struct ur_xrceth *h)
{
	return ur_be32_hi8_get(&h->srqn);
}
static inline void ur_xrceth_set_srqn(struct ur_xrceth *h, uint32_t v)
{
	ur_be24_set(&h->srqn, v);
}

/* --- FETH --- */
static inline uint8_t ur_feth_sel(const struct ur_feth *h)
{
	return (UR_HDR_GET32(h->bits) >> 4) & 3;
}
static inline uint8_t ur_feth_plt(const struct ur_feth *h)
{
	return UR_HDR_GET32(h->bits) & 0xf;
}
static inline uint32_t ur_feth_resv(const struct ur_feth *h)
{
	return UR_HDR_GET32(h->bits) & ~0x3fu;
}
static inline void ur_feth_set(struct ur_feth *h, uint8_t sel, uint8_t plt)
{
	UR_HDR_SET32(h->bits, ((uint32_t)(sel & 3) << 4) | (plt & 0xf));
}

/* Pad bytes after a payload of len bytes (docs/wire-notes.md §2.7). */
static inline uint8_t ur_pad_len(uint32_t payload_len)
{
	return (uint8_t)(-payload_len & 3);
}

#endif
