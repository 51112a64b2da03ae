/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Communication Management MADs (IBA vol 1 ch. 12; docs/wire-notes.md §5.3-5.5)
 * as host-order structs with encoders and decoders for the 256-byte MAD the CM
 * sends on QP1. Pure: no I/O, no state. Decoders reject what a peer may not
 * send (wrong class, version, method, attribute, field values out of range) so
 * the CM above sees only well-formed messages.
 */
#ifndef UR_CM_MAD_H
#define UR_CM_MAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define UR_MAD_SIZE 256
#define UR_MAD_HDR_SIZE 24
#define UR_MAD_DATA_SIZE (UR_MAD_SIZE - UR_MAD_HDR_SIZE)

#define UR_MAD_BASE_VERSION 1
#define UR_MAD_CLASS_CM 0x07
#define UR_MAD_CM_CLASS_VERSION 2
#define UR_MAD_METHOD_SEND 0x03

enum ur_cm_attr {
	UR_CM_ATTR_REQ = 0x0010,
	UR_CM_ATTR_MRA = 0x0011,
	UR_CM_ATTR_REJ = 0x0012,
	UR_CM_ATTR_REP = 0x0013,
	UR_CM_ATTR_RTU = 0x0014,
	UR_CM_ATTR_DREQ = 0x0015,
	UR_CM_ATTR_DREP = 0x0016,
	UR_CM_ATTR_SIDR_REQ = 0x0017,
	UR_CM_ATTR_SIDR_REP = 0x0018,
	UR_CM_ATTR_LAP = 0x0019,
	UR_CM_ATTR_APR = 0x001A,
};

/* Private data capacity of each message (IBA table 99 and friends). */
#define UR_CM_REQ_PDATA 92
#define UR_CM_MRA_PDATA 222
#define UR_CM_REJ_PDATA 148
#define UR_CM_REP_PDATA 196
#define UR_CM_RTU_PDATA 224
#define UR_CM_DREQ_PDATA 220
#define UR_CM_DREP_PDATA 224
#define UR_CM_REJ_ARI 72
#define UR_CM_SIDR_REQ_PDATA 216
#define UR_CM_SIDR_REP_PDATA 136
#define UR_CM_SIDR_REP_INFO 72

/* REQ transport service types: RC 0, UC 1, RD 2, and 3 "extended",
 * whose extended transport type 1 is XRC (IBA annex A14). */
enum ur_cm_transport {
	UR_CM_TRANSPORT_RC = 0,
	UR_CM_TRANSPORT_UC = 1,
	UR_CM_TRANSPORT_EXT = 3,
};
#define UR_CM_EXT_TRANSPORT_XRC 1

/* SIDR_REP status (IBA table 114). */
enum ur_cm_sidr_status {
	UR_CM_SIDR_OK = 0,
	UR_CM_SIDR_NO_SERVICE = 1,	/* service ID not supported */
	UR_CM_SIDR_REJECT = 2,		/* rejected by the service provider */
	UR_CM_SIDR_NO_QP = 3,
};

/* REJ reasons used here (IBA table 107). */
enum ur_cm_rej_reason {
	UR_CM_REJ_NO_QP = 1,
	UR_CM_REJ_NO_RESOURCES = 3,
	UR_CM_REJ_TIMEOUT = 4,
	UR_CM_REJ_UNSUPPORTED_REQ = 5,
	UR_CM_REJ_INVALID_COMM_ID = 6,
	UR_CM_REJ_INVALID_SERVICE_ID = 8,
	UR_CM_REJ_STALE_CONN = 10,
	UR_CM_REJ_CONSUMER_DEFINED = 28,
	UR_CM_REJ_DUP_LOCAL_COMM_ID = 30,
	UR_CM_REJ_VENDOR_OPTION_NOT_SUPPORTED = 35,	/* ECE (IBA 1.4) */
};

/* REJ/MRA "message rejected/MRAed" field. */
enum ur_cm_msg_kind {
	UR_CM_MSG_REQ = 0,
	UR_CM_MSG_REP = 1,
	UR_CM_MSG_OTHER = 2,
};

/* ECE's vendor id: 24 bits in REQ and REP (an IEEE OUI). */
#define UR_CM_VENDOR_ID_MASK 0xffffffu

struct ur_mad_hdr {
	uint8_t base_version;
	uint8_t mgmt_class;
	uint8_t class_version;
	uint8_t method;
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;
	uint16_t attr_id;
	uint32_t attr_mod;
};

struct ur_cm_path {
	uint16_t local_lid, remote_lid;
	uint8_t local_gid[16], remote_gid[16];	/* network order */
	uint32_t flow_label;			/* 20 bits */
	uint8_t packet_rate;			/* 6 bits */
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint8_t sl;				/* 4 bits */
	bool subnet_local;
	uint8_t local_ack_timeout;		/* 5 bits */
};

struct ur_cm_req {
	uint32_t local_comm_id;
	uint32_t vendor_id;			/* 24 bits */
	uint64_t service_id;
	uint64_t local_ca_guid;			/* host order of the 64 bits */
	uint32_t local_qkey;
	uint32_t local_qpn;			/* 24 bits */
	uint8_t responder_resources;
	uint32_t local_eecn;
	uint8_t initiator_depth;
	uint32_t remote_eecn;
	uint8_t remote_cm_response_timeout;	/* 5 bits */
	uint8_t transport;			/* 0 RC, 1 UC, 3 XRC */
	bool flow_control;
	uint32_t starting_psn;			/* 24 bits */
	uint8_t local_cm_response_timeout;	/* 5 bits */
	uint8_t retry_count;			/* 3 bits */
	uint16_t pkey;
	uint8_t path_mtu;			/* 4 bits: enum ibv_mtu */
	bool rdc_exists;
	uint8_t rnr_retry_count;		/* 3 bits */
	uint8_t max_cm_retries;			/* 4 bits */
	bool srq;
	uint8_t ext_transport;			/* 3 bits */
	struct ur_cm_path primary;
	bool has_alternate;			/* any alternate-path byte set */
	struct ur_cm_path alternate;
	uint8_t private_data[UR_CM_REQ_PDATA];
};

struct ur_cm_rep {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;			/* 24 bits */
	uint32_t vendor_id;			/* 24 bits, ECE: in 3 bytes */
	uint32_t local_eecn;
	uint32_t starting_psn;			/* 24 bits */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t target_ack_delay;		/* 5 bits */
	uint8_t failover_accepted;		/* 2 bits */
	bool flow_control;
	uint8_t rnr_retry_count;		/* 3 bits */
	bool srq;
	uint64_t local_ca_guid;
	uint8_t private_data[UR_CM_REP_PDATA];
};

struct ur_cm_rtu {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t private_data[UR_CM_RTU_PDATA];
};

struct ur_cm_rej {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t msg_rejected;			/* 2 bits: ur_cm_msg_kind */
	uint8_t ari_length;			/* 7 bits */
	uint16_t reason;
	uint8_t ari[UR_CM_REJ_ARI];
	uint8_t private_data[UR_CM_REJ_PDATA];
};

struct ur_cm_mra {
	uint32_t local_comm_id, remote_comm_id;
	uint8_t msg_mraed;			/* 2 bits: ur_cm_msg_kind */
	uint8_t service_timeout;		/* 5 bits */
	uint8_t private_data[UR_CM_MRA_PDATA];
};

/* DREQ and DREP share a shape; DREQ adds the remote QPN. */
struct ur_cm_dreq {
	uint32_t local_comm_id, remote_comm_id;
	uint32_t remote_qpn;			/* 24 bits; DREQ only */
	uint8_t private_data[UR_CM_DREP_PDATA];	/* DREQ uses the first 220 */
};

struct ur_cm_sidr_req {
	uint32_t request_id;
	uint16_t pkey;
	uint64_t service_id;
	uint8_t private_data[UR_CM_SIDR_REQ_PDATA];
};

struct ur_cm_sidr_rep {
	uint32_t request_id;
	uint8_t status;
	uint8_t info_length;
	uint32_t qpn;				/* 24 bits */
	uint64_t service_id;
	uint32_t qkey;
	uint8_t info[UR_CM_SIDR_REP_INFO];
	uint8_t private_data[UR_CM_SIDR_REP_PDATA];
};

/* One decoded CM MAD. */
struct ur_cm_msg {
	struct ur_mad_hdr hdr;
	union {
		struct ur_cm_req req;
		struct ur_cm_rep rep;
		struct ur_cm_rtu rtu;
		struct ur_cm_rej rej;
		struct ur_cm_mra mra;
		struct ur_cm_dreq dreq;		/* DREQ and DREP */
		struct ur_cm_sidr_req sidr_req;
		struct ur_cm_sidr_rep sidr_rep;
	};
};

/* Fills the common header of a CM Send MAD. */
void ur_cm_hdr_init(struct ur_mad_hdr *h, uint16_t attr_id, uint64_t tid);

/*
 * Encodes msg (hdr.attr_id selects the union member) into out[256].
 * Returns 0, or -EINVAL for an attribute this codec does not build or a
 * field out of its range.
 */
int ur_cm_encode(const struct ur_cm_msg *msg, uint8_t out[UR_MAD_SIZE]);

/*
 * Decodes a received MAD. Returns 0; -EPROTO for a MAD that is not a CM
 * Send of class version 2, or with a field value IBA does not define;
 * -EOPNOTSUPP for a CM attribute we do not decode (LAP, APR: hdr and the
 * two communication IDs are still filled in so the caller can answer).
 */
int ur_cm_decode(const uint8_t *buf, size_t len, struct ur_cm_msg *msg);

const char *ur_cm_attr_str(uint16_t attr_id);

/* Rewrites the primary remote GID of an encoded REQ in place. */
void ur_cm_req_set_remote_gid(uint8_t mad[UR_MAD_SIZE], const uint8_t gid[16]);

/*
 * rdma_cm's private-data header at the start of a REQ for the IP port
 * spaces (36 bytes): version, IP version, source port, source and
 * destination address (IPv4 in the last 4 bytes of 16).
 */
#define UR_CMA_HDR_SIZE 36
struct ur_cma_hdr {
	uint8_t ip_version;			/* 4 or 6 */
	uint16_t src_port;			/* host order */
	uint8_t src_addr[16], dst_addr[16];	/* IPv4: 12 zero bytes first */
};

void ur_cma_hdr_encode(const struct ur_cma_hdr *h, uint8_t out[UR_CMA_HDR_SIZE]);
/* Returns 0 or -EPROTO (unknown version or IP version). */
int ur_cma_hdr_decode(const uint8_t in[UR_CMA_HDR_SIZE], struct ur_cma_hdr *h);

/* Service IDs of the IP port spaces: 0x0000000001PP0000 | port. */
#define UR_CM_SID_PS_MASK 0xFFFFFFFFFFFF0000ULL
static inline uint64_t ur_cm_service_id(uint16_t ps, uint16_t port)
{
	return ((uint64_t)ps << 16) | port;
}

#endif /* UR_CM_MAD_H */
