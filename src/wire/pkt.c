/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Packet parse (untrusted input, every check against the opcode table
 * before any header is touched), the QP-aware length and class checks, the
 * header builder and the drop-reason names.
 */
#include "wire/pkt.h"
#include <errno.h>

const char *const ur_drop_reason_names[UR_DROP__MAX] = {
    [UR_DROP_NONE] = "none",
    [UR_DROP_TOO_SHORT] = "too_short",
    [UR_DROP_BAD_OPCODE] = "bad_opcode",
    [UR_DROP_BAD_TVER] = "bad_tver",
    [UR_DROP_RESERVED] = "reserved_bits",
    [UR_DROP_BAD_LENGTH] = "bad_length",
    [UR_DROP_BAD_PAD] = "bad_pad",
    [UR_DROP_PAYLOAD_LEN] = "payload_length",
    [UR_DROP_MTU_EXCEEDED] = "mtu_exceeded",
    [UR_DROP_SEG_LENGTH] = "segment_length",
    [UR_DROP_OPCODE_CLASS] = "opcode_class",
    [UR_DROP_ICRC] = "icrc",
    [UR_DROP_UNKNOWN_QP] = "unknown_qp",
    [UR_DROP_QP_STATE] = "qp_state",
    [UR_DROP_WRONG_PEER] = "wrong_peer",
    [UR_DROP_BAD_PKEY] = "bad_pkey",
    [UR_DROP_BAD_QKEY] = "bad_qkey",
    [UR_DROP_PSN_WINDOW] = "psn_window",
    [UR_DROP_DUPLICATE] = "duplicate",
    [UR_DROP_OPCODE_SEQ] = "opcode_sequence",
    [UR_DROP_NO_RECV_WQE] = "no_recv_wqe",
    [UR_DROP_RECV_TOO_SMALL] = "recv_too_small",
    [UR_DROP_ACCESS] = "access",
    [UR_DROP_UNSUPPORTED] = "unsupported",
    [UR_DROP_NOT_ROCE] = "not_roce",
    [UR_DROP_WRONG_PORT] = "wrong_peer_port",
    [UR_DROP_HARDENED] = "hardened",
    [UR_DROP_MCAST_DEST] = "mcast_not_group",
    [UR_DROP_MCAST_NO_GROUP] = "mcast_no_group",
    [UR_DROP_MCAST_SELF] = "mcast_self",
};

const char *ur_drop_reason_str(enum ur_drop_reason r)
{
	if ((unsigned int)r >= UR_DROP__MAX || !ur_drop_reason_names[r])
		return "invalid";
	return ur_drop_reason_names[r];
}

/* Pointer to header h of a packet whose opcode has it, else NULL. */
static const void *hdr_ptr(const uint8_t *p, const struct ur_opcode_info *oi,
			   enum ur_hdr_id h)
{
	return (oi->mask & (1u << h)) ? p + oi->offset[h] : NULL;
}

enum ur_drop_reason ur_pkt_parse(const void *buf, size_t len,
				 struct ur_pkt *pkt)
{
	const uint8_t *p = buf;
	const struct ur_opcode_info *oi;
	const struct ur_bth *bth = buf;
	size_t area;
	uint8_t pad;

	if (unlikely(len < UR_BTH_BYTES + UR_ICRC_BYTES))
		return UR_DROP_TOO_SHORT;
	if (unlikely(len > 0xffff - 8 /* UDP length field */))
		return UR_DROP_BAD_LENGTH;
	oi = ur_op_info(ur_bth_opcode(bth));
	if (unlikely(!(oi->mask & UR_MASK_VALID)))
		return UR_DROP_BAD_OPCODE;
	if (unlikely(ur_bth_tver(bth)))
		return UR_DROP_BAD_TVER;
	if (unlikely((ur_bth_resv6a(bth) & ~UR_BTH_RESV6A_PLACED) ||
		     ur_bth_resv7(bth)))
		return UR_DROP_RESERVED;
	if (unlikely(len < (size_t)oi->length + UR_ICRC_BYTES))
		return UR_DROP_BAD_LENGTH;

	/* payload + pad between the headers and the ICRC */
	area = len - oi->length - UR_ICRC_BYTES;
	pad = ur_bth_pad(bth);
	if (!(oi->mask & UR_MASK_PAYLOAD)) {
		if (unlikely(pad))
			return UR_DROP_BAD_PAD;
		if (unlikely(area))
			return UR_DROP_PAYLOAD_LEN;
	} else {
		/* pad fills the payload up to a 4-byte boundary (IBA 9.2.3) */
		if (unlikely(area < pad || (area & 3)))
			return UR_DROP_BAD_PAD;
		if (unlikely(oi->fixed_payload &&
			     area - pad != oi->fixed_payload))
			return UR_DROP_PAYLOAD_LEN;
	}

	pkt->deth = hdr_ptr(p, oi, UR_HDR_DETH);
	if (unlikely(pkt->deth && ur_deth_resv8(pkt->deth)))
		return UR_DROP_RESERVED;
	pkt->feth = hdr_ptr(p, oi, UR_HDR_FETH);
	if (unlikely(pkt->feth && ur_feth_resv(pkt->feth)))
		return UR_DROP_RESERVED;
	pkt->xrceth = hdr_ptr(p, oi, UR_HDR_XRCETH);
	if (unlikely(pkt->xrceth && ur_xrceth_resv8(pkt->xrceth)))
		return UR_DROP_RESERVED;

	pkt->buf = p;
	pkt->len = (uint32_t)len;
	pkt->mask = oi->mask;
	pkt->opcode = ur_bth_opcode(bth);
	pkt->pad = pad;
	pkt->hdr_len = oi->length;
	pkt->ackreq = ur_bth_ackreq(bth);
	pkt->se = ur_bth_se(bth);
	pkt->placed = ur_bth_resv6a(bth) & UR_BTH_RESV6A_PLACED;
	pkt->psn = ur_bth_psn(bth);
	pkt->qpn = ur_bth_qpn(bth);
	pkt->bth = bth;
	pkt->reth = hdr_ptr(p, oi, UR_HDR_RETH);
	pkt->atmeth = hdr_ptr(p, oi, UR_HDR_ATMETH);
	pkt->aeth = hdr_ptr(p, oi, UR_HDR_AETH);
	pkt->atmack = hdr_ptr(p, oi, UR_HDR_ATMACK);
	pkt->immdt = hdr_ptr(p, oi, UR_HDR_IMMDT);
	pkt->ieth = hdr_ptr(p, oi, UR_HDR_IETH);
	pkt->payload = p + oi->length;
	pkt->paylen = (uint32_t)(area - pad);
	pkt->icrc = (uint32_t)p[len - 4] | (uint32_t)p[len - 3] << 8 |
		    (uint32_t)p[len - 2] << 16 | (uint32_t)p[len - 1] << 24;
	return UR_DROP_NONE;
}

enum ur_drop_reason ur_pkt_check_mtu(const struct ur_pkt *pkt, uint32_t mtu)
{
	uint32_t m = pkt->mask;

	if (!(m & UR_MASK_PAYLOAD))
		return UR_DROP_NONE;
	if (pkt->paylen > mtu)
		return UR_DROP_MTU_EXCEEDED;
	switch (m & (UR_MASK_START | UR_MASK_MIDDLE | UR_MASK_END)) {
	case UR_MASK_START:
	case UR_MASK_MIDDLE:
		if (pkt->paylen != mtu)
			return UR_DROP_SEG_LENGTH;
		break;
	case UR_MASK_END:
		if (!pkt->paylen)
			return UR_DROP_SEG_LENGTH;
		break;
	default:
		break;
	}
	return UR_DROP_NONE;
}

enum ur_drop_reason ur_pkt_check_class(const struct ur_pkt *pkt,
				       unsigned int tclass)
{
	return ur_op_valid_for_class(pkt->opcode, tclass)
		   ? UR_DROP_NONE
		   : UR_DROP_OPCODE_CLASS;
}

int ur_hdr_build(void *buf, size_t buflen, const struct ur_hdr_fields *f)
{
	const struct ur_opcode_info *oi = ur_op_info(f->opcode);
	uint8_t *p = buf;
	struct ur_bth *bth = buf;

	if (!(oi->mask & UR_MASK_VALID))
		return -EINVAL;
	if (buflen < oi->length)
		return -ENOSPC;
	memset(p, 0, oi->length);
	ur_bth_set_opcode(bth, f->opcode);
	ur_bth_set_se(bth, f->se);
	ur_bth_set_mig(bth, f->mig);
	ur_bth_set_pad(bth, f->pad);
	ur_bth_set_pkey(bth, f->pkey);
	ur_bth_set_fecn(bth, f->fecn);
	ur_bth_set_becn(bth, f->becn);
	ur_bth_set_qpn(bth, f->qpn);
	ur_bth_set_ackreq(bth, f->ackreq);
	ur_bth_set_psn(bth, f->psn);
	if (f->placed)
		ur_bth_set_resv6a(bth, UR_BTH_RESV6A_PLACED);
	if (oi->mask & UR_MASK_DETH) {
		struct ur_deth *h = (void *)(p + oi->offset[UR_HDR_DETH]);

		ur_deth_set_qkey(h, f->deth.qkey);
		ur_deth_set_sqp(h, f->deth.sqp);
	}
	if (oi->mask & UR_MASK_XRCETH)
		ur_xrceth_set_srqn((void *)(p + oi->offset[UR_HDR_XRCETH]),
				   f->xrc_srqn);
	if (oi->mask & UR_MASK_FETH)
		ur_feth_set((void *)(p + oi->offset[UR_HDR_FETH]), f->feth.sel,
			    f->feth.plt);
	if (oi->mask & UR_MASK_RETH) {
		struct ur_reth *h = (void *)(p + oi->offset[UR_HDR_RETH]);

		ur_reth_set_va(h, f->reth.va);
		ur_reth_set_rkey(h, f->reth.rkey);
		ur_reth_set_len(h, f->reth.len);
	}
	if (oi->mask & UR_MASK_ATMETH) {
		struct ur_atmeth *h = (void *)(p + oi->offset[UR_HDR_ATMETH]);

		ur_atmeth_set_va(h, f->atmeth.va);
		ur_atmeth_set_rkey(h, f->atmeth.rkey);
		ur_atmeth_set_swap_add(h, f->atmeth.swap_add);
		ur_atmeth_set_compare(h, f->atmeth.compare);
	}
	if (oi->mask & UR_MASK_AETH) {
		struct ur_aeth *h = (void *)(p + oi->offset[UR_HDR_AETH]);

		ur_aeth_set_syn(h, f->aeth.syn);
		ur_aeth_set_msn(h, f->aeth.msn);
	}
	if (oi->mask & UR_MASK_ATMACK)
		ur_atmack_set_orig((void *)(p + oi->offset[UR_HDR_ATMACK]),
				   f->atmack_orig);
	if (oi->mask & UR_MASK_IMMDT)
		ur_immdt_set_imm_be((void *)(p + oi->offset[UR_HDR_IMMDT]),
				    f->imm_be);
	if (oi->mask & UR_MASK_IETH)
		ur_ieth_set_rkey((void *)(p + oi->offset[UR_HDR_IETH]),
				 f->ieth_rkey);
	return oi->length;
}

void ur_pkt_to_fields(const struct ur_pkt *pkt, struct ur_hdr_fields *f)
{
	memset(f, 0, sizeof(*f));
	f->opcode = pkt->opcode;
	f->se = pkt->se;
	f->mig = ur_bth_mig(pkt->bth);
	f->ackreq = pkt->ackreq;
	f->placed = pkt->placed;
	f->fecn = ur_bth_fecn(pkt->bth);
	f->becn = ur_bth_becn(pkt->bth);
	f->pad = pkt->pad;
	f->pkey = ur_bth_pkey(pkt->bth);
	f->qpn = pkt->qpn;
	f->psn = pkt->psn;
	if (pkt->deth) {
		f->deth.qkey = ur_deth_qkey(pkt->deth);
		f->deth.sqp = ur_deth_sqp(pkt->deth);
	}
	if (pkt->xrceth)
		f->xrc_srqn = ur_xrceth_srqn(pkt->xrceth);
	if (pkt->feth) {
		f->feth.sel = ur_feth_sel(pkt->feth);
		f->feth.plt = ur_feth_plt(pkt->feth);
	}
	if (pkt->reth) {
		f->reth.va = ur_reth_va(pkt->reth);
		f->reth.rkey = ur_reth_rkey(pkt->reth);
		f->reth.len = ur_reth_len(pkt->reth);
	}
	if (pkt->atmeth) {
		f->atmeth.va = ur_atmeth_va(pkt->atmeth);
		f->atmeth.rkey = ur_atmeth_rkey(pkt->atmeth);
		f->atmeth.swap_add = ur_atmeth_swap_add(pkt->atmeth);
		f->atmeth.compare = ur_atmeth_compare(pkt->atmeth);
	}
	if (pkt->aeth) {
		f->aeth.syn = ur_aeth_syn(pkt->aeth);
		f->aeth.msn = ur_aeth_msn(pkt->aeth);
	}
	if (pkt->atmack)
		f->atmack_orig = ur_atmack_orig(pkt->atmack);
	if (pkt->immdt)
		f->imm_be = ur_immdt_imm_be(pkt->immdt);
	if (pkt->ieth)
		f->ieth_rkey = ur_ieth_rkey(pkt->ieth);
}
