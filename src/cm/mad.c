/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CM MAD codec. Offsets are inside the 232 data bytes that follow the
 * 24-byte MAD header (docs/wire-notes.md §5.3); multi-bit fields sharing a byte
 * are MSB first, as IBA draws them.
 */
#include <errno.h>
#include <string.h>

#include "cm/mad.h"
#include "util/iba.h"

static void put8(uint8_t *p, uint8_t v)
{
	p[0] = v;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put24(uint8_t *p, uint32_t v)
{
	p[0] = v >> 16;
	p[1] = v >> 8;
	p[2] = v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, v >> 32);
	put32(p + 4, v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

void ur_cm_hdr_init(struct ur_mad_hdr *h, uint16_t attr_id, uint64_t tid)
{
	memset(h, 0, sizeof(*h));
	h->base_version = UR_MAD_BASE_VERSION;
	h->mgmt_class = UR_MAD_CLASS_CM;
	h->class_version = UR_MAD_CM_CLASS_VERSION;
	h->method = UR_MAD_METHOD_SEND;
	h->tid = tid;
	h->attr_id = attr_id;
}

/* A path is 44 bytes: REQ offsets 52-95 (primary) and 96-139 (alternate). */
static void path_encode(const struct ur_cm_path *a, uint8_t *p)
{
	put16(p + 0, a->local_lid);
	put16(p + 2, a->remote_lid);
	memcpy(p + 4, a->local_gid, 16);
	memcpy(p + 20, a->remote_gid, 16);
	put32(p + 36, (a->flow_label & 0xFFFFF) << 12 |
			       (a->packet_rate & 0x3F));
	put8(p + 40, a->traffic_class);
	put8(p + 41, a->hop_limit);
	put8(p + 42, (uint8_t)((a->sl & 0xF) << 4 | (a->subnet_local << 3)));
	put8(p + 43, (uint8_t)((a->local_ack_timeout & 0x1F) << 3));
}

static void path_decode(const uint8_t *p, struct ur_cm_path *a)
{
	uint32_t fl = get32(p + 36);

	a->local_lid = get16(p + 0);
	a->remote_lid = get16(p + 2);
	memcpy(a->local_gid, p + 4, 16);
	memcpy(a->remote_gid, p + 20, 16);
	a->flow_label = fl >> 12;
	a->packet_rate = fl & 0x3F;
	a->traffic_class = p[40];
	a->hop_limit = p[41];
	a->sl = p[42] >> 4;
	a->subnet_local = p[42] >> 3 & 1;
	a->local_ack_timeout = p[43] >> 3;
}

static int req_encode(const struct ur_cm_req *r, uint8_t *d)
{
	if (r->local_qpn > UR_QPN_MASK || r->starting_psn > UR_PSN_MASK ||
	    r->transport > 3 || r->retry_count > 7 || r->rnr_retry_count > 7 ||
	    r->max_cm_retries > 15 || r->path_mtu > 15 ||
	    r->remote_cm_response_timeout > 31 ||
	    r->local_cm_response_timeout > 31)
		return -EINVAL;
	put32(d + 0, r->local_comm_id);
	put24(d + 5, r->vendor_id);
	put64(d + 8, r->service_id);
	put64(d + 16, r->local_ca_guid);
	put32(d + 28, r->local_qkey);
	put24(d + 32, r->local_qpn);
	put8(d + 35, r->responder_resources);
	put24(d + 36, r->local_eecn);
	put8(d + 39, r->initiator_depth);
	put24(d + 40, r->remote_eecn);
	put8(d + 43, (uint8_t)(r->remote_cm_response_timeout << 3 |
			       r->transport << 1 | r->flow_control));
	put24(d + 44, r->starting_psn);
	put8(d + 47, (uint8_t)(r->local_cm_response_timeout << 3 |
			       r->retry_count));
	put16(d + 48, r->pkey);
	put8(d + 50, (uint8_t)(r->path_mtu << 4 | r->rdc_exists << 3 |
			       r->rnr_retry_count));
	put8(d + 51, (uint8_t)(r->max_cm_retries << 4 | r->srq << 3 |
			       (r->ext_transport & 7)));
	path_encode(&r->primary, d + 52);
	if (r->has_alternate)
		path_encode(&r->alternate, d + 96);
	memcpy(d + 140, r->private_data, UR_CM_REQ_PDATA);
	return 0;
}

static void req_decode(const uint8_t *d, struct ur_cm_req *r)
{
	static const uint8_t zero[44];

	r->local_comm_id = get32(d + 0);
	r->vendor_id = get24(d + 5);
	r->service_id = get64(d + 8);
	r->local_ca_guid = get64(d + 16);
	r->local_qkey = get32(d + 28);
	r->local_qpn = get24(d + 32);
	r->responder_resources = d[35];
	r->local_eecn = get24(d + 36);
	r->initiator_depth = d[39];
	r->remote_eecn = get24(d + 40);
	r->remote_cm_response_timeout = d[43] >> 3;
	r->transport = d[43] >> 1 & 3;
	r->flow_control = d[43] & 1;
	r->starting_psn = get24(d + 44);
	r->local_cm_response_timeout = d[47] >> 3;
	r->retry_count = d[47] & 7;
	r->pkey = get16(d + 48);
	r->path_mtu = d[50] >> 4;
	r->rdc_exists = d[50] >> 3 & 1;
	r->rnr_retry_count = d[50] & 7;
	r->max_cm_retries = d[51] >> 4;
	r->srq = d[51] >> 3 & 1;
	r->ext_transport = d[51] & 7;
	path_decode(d + 52, &r->primary);
	r->has_alternate = memcmp(d + 96, zero, sizeof(zero)) != 0;
	path_decode(d + 96, &r->alternate);
	memcpy(r->private_data, d + 140, UR_CM_REQ_PDATA);
}

static int rep_encode(const struct ur_cm_rep *r, uint8_t *d)
{
	if (r->local_qpn > UR_QPN_MASK || r->starting_psn > UR_PSN_MASK ||
	    r->target_ack_delay > 31 || r->failover_accepted > 3 ||
	    r->rnr_retry_count > 7)
		return -EINVAL;
	put32(d + 0, r->local_comm_id);
	put32(d + 4, r->remote_comm_id);
	put32(d + 8, r->local_qkey);
	put24(d + 12, r->local_qpn);
	put24(d + 16, r->local_eecn);
	put24(d + 20, r->starting_psn);
	/* ECE's vendor id in the bytes after the three 24-bit fields, high
	 * byte first (IBA 1.4 table 103; the Linux CM's layout) */
	put8(d + 15, (uint8_t)(r->vendor_id >> 16));
	put8(d + 19, (uint8_t)(r->vendor_id >> 8));
	put8(d + 23, (uint8_t)r->vendor_id);
	put8(d + 24, r->responder_resources);
	put8(d + 25, r->initiator_depth);
	put8(d + 26, (uint8_t)(r->target_ack_delay << 3 |
			       r->failover_accepted << 1 | r->flow_control));
	put8(d + 27, (uint8_t)(r->rnr_retry_count << 5 | r->srq << 4));
	put64(d + 28, r->local_ca_guid);
	memcpy(d + 36, r->private_data, UR_CM_REP_PDATA);
	return 0;
}

static void rep_decode(const uint8_t *d, struct ur_cm_rep *r)
{
	r->local_comm_id = get32(d + 0);
	r->remote_comm_id = get32(d + 4);
	r->local_qkey = get32(d + 8);
	r->local_qpn = get24(d + 12);
	r->local_eecn = get24(d + 16);
	r->starting_psn = get24(d + 20);
	r->vendor_id = (uint32_t)d[15] << 16 | (uint32_t)d[19] << 8 | d[23];
	r->responder_resources = d[24];
	r->initiator_depth = d[25];
	r->target_ack_delay = d[26] >> 3;
	r->failover_accepted = d[26] >> 1 & 3;
	r->flow_control = d[26] & 1;
	r->rnr_retry_count = d[27] >> 5;
	r->srq = d[27] >> 4 & 1;
	r->local_ca_guid = get64(d + 28);
	memcpy(r->private_data, d + 36, UR_CM_REP_PDATA);
}

static int rej_encode(const struct ur_cm_rej *r, uint8_t *d)
{
	if (r->msg_rejected > 2 || r->ari_length > UR_CM_REJ_ARI)
		return -EINVAL;
	put32(d + 0, r->local_comm_id);
	put32(d + 4, r->remote_comm_id);
	put8(d + 8, (uint8_t)(r->msg_rejected << 6));
	put8(d + 9, (uint8_t)(r->ari_length << 1));
	put16(d + 10, r->reason);
	memcpy(d + 12, r->ari, UR_CM_REJ_ARI);
	memcpy(d + 84, r->private_data, UR_CM_REJ_PDATA);
	return 0;
}

static int rej_decode(const uint8_t *d, struct ur_cm_rej *r)
{
	r->local_comm_id = get32(d + 0);
	r->remote_comm_id = get32(d + 4);
	r->msg_rejected = d[8] >> 6;
	r->ari_length = d[9] >> 1;
	r->reason = get16(d + 10);
	memcpy(r->ari, d + 12, UR_CM_REJ_ARI);
	memcpy(r->private_data, d + 84, UR_CM_REJ_PDATA);
	return r->msg_rejected > 2 || r->ari_length > UR_CM_REJ_ARI ?
		       -EPROTO : 0;
}

static int mra_encode(const struct ur_cm_mra *m, uint8_t *d)
{
	if (m->msg_mraed > 2 || m->service_timeout > 31)
		return -EINVAL;
	put32(d + 0, m->local_comm_id);
	put32(d + 4, m->remote_comm_id);
	put8(d + 8, (uint8_t)(m->msg_mraed << 6));
	put8(d + 9, (uint8_t)(m->service_timeout << 3));
	memcpy(d + 10, m->private_data, UR_CM_MRA_PDATA);
	return 0;
}

static int mra_decode(const uint8_t *d, struct ur_cm_mra *m)
{
	m->local_comm_id = get32(d + 0);
	m->remote_comm_id = get32(d + 4);
	m->msg_mraed = d[8] >> 6;
	m->service_timeout = d[9] >> 3;
	memcpy(m->private_data, d + 10, UR_CM_MRA_PDATA);
	return m->msg_mraed > 2 ? -EPROTO : 0;
}

static int sidr_rep_encode(const struct ur_cm_sidr_rep *r, uint8_t *d)
{
	if (r->qpn > UR_QPN_MASK || r->info_length > UR_CM_SIDR_REP_INFO)
		return -EINVAL;
	put32(d + 0, r->request_id);
	put8(d + 4, r->status);
	put8(d + 5, r->info_length);
	put24(d + 8, r->qpn);
	put64(d + 12, r->service_id);
	put32(d + 20, r->qkey);
	memcpy(d + 24, r->info, UR_CM_SIDR_REP_INFO);
	memcpy(d + 96, r->private_data, UR_CM_SIDR_REP_PDATA);
	return 0;
}

static int sidr_rep_decode(const uint8_t *d, struct ur_cm_sidr_rep *r)
{
	r->request_id = get32(d + 0);
	r->status = d[4];
	r->info_length = d[5];
	r->qpn = get24(d + 8);
	r->service_id = get64(d + 12);
	r->qkey = get32(d + 20);
	memcpy(r->info, d + 24, UR_CM_SIDR_REP_INFO);
	memcpy(r->private_data, d + 96, UR_CM_SIDR_REP_PDATA);
	return r->info_length > UR_CM_SIDR_REP_INFO ? -EPROTO : 0;
}

int ur_cm_encode(const struct ur_cm_msg *msg, uint8_t out[UR_MAD_SIZE])
{
	const struct ur_mad_hdr *h = &msg->hdr;
	uint8_t *d = out + UR_MAD_HDR_SIZE;
	int ret = 0;

	memset(out, 0, UR_MAD_SIZE);
	put8(out + 0, h->base_version);
	put8(out + 1, h->mgmt_class);
	put8(out + 2, h->class_version);
	put8(out + 3, h->method);
	put16(out + 4, h->status);
	put16(out + 6, h->class_specific);
	put64(out + 8, h->tid);
	put16(out + 16, h->attr_id);
	put32(out + 20, h->attr_mod);

	switch (h->attr_id) {
	case UR_CM_ATTR_REQ:
		ret = req_encode(&msg->req, d);
		break;
	case UR_CM_ATTR_REP:
		ret = rep_encode(&msg->rep, d);
		break;
	case UR_CM_ATTR_RTU:
		put32(d + 0, msg->rtu.local_comm_id);
		put32(d + 4, msg->rtu.remote_comm_id);
		memcpy(d + 8, msg->rtu.private_data, UR_CM_RTU_PDATA);
		break;
	case UR_CM_ATTR_REJ:
		ret = rej_encode(&msg->rej, d);
		break;
	case UR_CM_ATTR_MRA:
		ret = mra_encode(&msg->mra, d);
		break;
	case UR_CM_ATTR_DREQ:
		if (msg->dreq.remote_qpn > UR_QPN_MASK)
			return -EINVAL;
		put32(d + 0, msg->dreq.local_comm_id);
		put32(d + 4, msg->dreq.remote_comm_id);
		put24(d + 8, msg->dreq.remote_qpn);
		memcpy(d + 12, msg->dreq.private_data, UR_CM_DREQ_PDATA);
		break;
	case UR_CM_ATTR_DREP:
		put32(d + 0, msg->dreq.local_comm_id);
		put32(d + 4, msg->dreq.remote_comm_id);
		memcpy(d + 8, msg->dreq.private_data, UR_CM_DREP_PDATA);
		break;
	case UR_CM_ATTR_SIDR_REQ:
		put32(d + 0, msg->sidr_req.request_id);
		put16(d + 4, msg->sidr_req.pkey);
		put64(d + 8, msg->sidr_req.service_id);
		memcpy(d + 16, msg->sidr_req.private_data,
		       UR_CM_SIDR_REQ_PDATA);
		break;
	case UR_CM_ATTR_SIDR_REP:
		ret = sidr_rep_encode(&msg->sidr_rep, d);
		break;
	default:
		ret = -EINVAL;
	}
	return ret;
}

int ur_cm_decode(const uint8_t *buf, size_t len, struct ur_cm_msg *msg)
{
	struct ur_mad_hdr *h = &msg->hdr;
	const uint8_t *d = buf + UR_MAD_HDR_SIZE;

	memset(msg, 0, sizeof(*msg));
	if (len < UR_MAD_SIZE)
		return -EPROTO;
	h->base_version = buf[0];
	h->mgmt_class = buf[1];
	h->class_version = buf[2];
	h->method = buf[3];
	h->status = get16(buf + 4);
	h->class_specific = get16(buf + 6);
	h->tid = get64(buf + 8);
	h->attr_id = get16(buf + 16);
	h->attr_mod = get32(buf + 20);
	if (h->base_version != UR_MAD_BASE_VERSION ||
	    h->mgmt_class != UR_MAD_CLASS_CM ||
	    h->class_version != UR_MAD_CM_CLASS_VERSION ||
	    h->method != UR_MAD_METHOD_SEND)
		return -EPROTO;

	switch (h->attr_id) {
	case UR_CM_ATTR_REQ:
		req_decode(d, &msg->req);
		return 0;
	case UR_CM_ATTR_REP:
		rep_decode(d, &msg->rep);
		return 0;
	case UR_CM_ATTR_RTU:
		msg->rtu.local_comm_id = get32(d + 0);
		msg->rtu.remote_comm_id = get32(d + 4);
		memcpy(msg->rtu.private_data, d + 8, UR_CM_RTU_PDATA);
		return 0;
	case UR_CM_ATTR_REJ:
		return rej_decode(d, &msg->rej);
	case UR_CM_ATTR_MRA:
		return mra_decode(d, &msg->mra);
	case UR_CM_ATTR_DREQ:
		msg->dreq.local_comm_id = get32(d + 0);
		msg->dreq.remote_comm_id = get32(d + 4);
		msg->dreq.remote_qpn = get24(d + 8);
		memcpy(msg->dreq.private_data, d + 12, UR_CM_DREQ_PDATA);
		return 0;
	case UR_CM_ATTR_DREP:
		msg->dreq.local_comm_id = get32(d + 0);
		msg->dreq.remote_comm_id = get32(d + 4);
		memcpy(msg->dreq.private_data, d + 8, UR_CM_DREP_PDATA);
		return 0;
	case UR_CM_ATTR_SIDR_REQ:
		msg->sidr_req.request_id = get32(d + 0);
		msg->sidr_req.pkey = get16(d + 4);
		msg->sidr_req.service_id = get64(d + 8);
		memcpy(msg->sidr_req.private_data, d + 16,
		       UR_CM_SIDR_REQ_PDATA);
		return 0;
	case UR_CM_ATTR_SIDR_REP:
		return sidr_rep_decode(d, &msg->sidr_rep);
	case UR_CM_ATTR_LAP:
	case UR_CM_ATTR_APR:
		/* the ids are where REJ needs them (local at 0) */
		msg->rej.local_comm_id = get32(d + 0);
		msg->rej.remote_comm_id = get32(d + 4);
		return -EOPNOTSUPP;
	default:
		return -EPROTO;
	}
}

void ur_cm_req_set_remote_gid(uint8_t mad[UR_MAD_SIZE], const uint8_t gid[16])
{
	memcpy(mad + UR_MAD_HDR_SIZE + 72, gid, 16);
}

const char *ur_cm_attr_str(uint16_t attr_id)
{
	static const char *const names[] = {
		"REQ", "MRA", "REJ", "REP", "RTU", "DREQ",
		"DREP", "SIDR_REQ", "SIDR_REP", "LAP", "APR",
	};

	if (attr_id >= UR_CM_ATTR_REQ && attr_id <= UR_CM_ATTR_APR)
		return names[attr_id - UR_CM_ATTR_REQ];
	return "unknown";
}

void ur_cma_hdr_encode(const struct ur_cma_hdr *h, uint8_t out[UR_CMA_HDR_SIZE])
{
	out[0] = 0;	/* cma_version 0.0 */
	out[1] = (uint8_t)(h->ip_version << 4);
	put16(out + 2, h->src_port);
	memcpy(out + 4, h->src_addr, 16);
	memcpy(out + 20, h->dst_addr, 16);
}

int ur_cma_hdr_decode(const uint8_t in[UR_CMA_HDR_SIZE], struct ur_cma_hdr *h)
{
	h->ip_version = in[1] >> 4;
	h->src_port = get16(in + 2);
	memcpy(h->src_addr, in + 4, 16);
	memcpy(h->dst_addr, in + 20, 16);
	if (in[0] != 0 || (h->ip_version != 4 && h->ip_version != 6))
		return -EPROTO;
	return 0;
}
