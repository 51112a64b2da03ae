/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * IPv4/IPv6/UDP header build and parse for RoCEv2 datagrams, the UD GRH
 * image and rxe's UDP source-port hashes (docs/wire-notes.md §2.1, §2.9).
 * Headers are written byte by byte in network order; nothing here does I/O.
 */
#include "wire/encap.h"
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#define ETHERTYPE_IPV4 0x0800
#define ETHERTYPE_IPV6 0x86dd
#define ETHERTYPE_VLAN 0x8100
#define ETHERTYPE_QINQ 0x88a8
#define IPPROTO_UDP_NUM 17

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

int ur_ip_flow_from_sockaddr(struct ur_ip_flow *flow,
			     const union ur_sockaddr *src,
			     const union ur_sockaddr *dst)
{
	int fam = src->sa.sa_family;

	if (fam != dst->sa.sa_family || (fam != AF_INET && fam != AF_INET6))
		return -EAFNOSUPPORT;
	memset(flow, 0, sizeof(*flow));
	flow->family = fam;
	if (fam == AF_INET) {
		flow->src.v4 = src->in.sin_addr;
		flow->dst.v4 = dst->in.sin_addr;
		flow->sport = ntohs(src->in.sin_port);
		flow->dport = ntohs(dst->in.sin_port);
	} else {
		flow->src.v6 = src->in6.sin6_addr;
		flow->dst.v6 = dst->in6.sin6_addr;
		flow->sport = ntohs(src->in6.sin6_port);
		flow->dport = ntohs(dst->in6.sin6_port);
	}
	return 0;
}

int ur_ip_flow_from_gids(struct ur_ip_flow *flow, const uint8_t sgid[16],
			 const uint8_t dgid[16], uint16_t sport, uint16_t dport)
{
	bool v4 = ur_gid_is_v4mapped(sgid);

	if (v4 != ur_gid_is_v4mapped(dgid))
		return -EAFNOSUPPORT;
	memset(flow, 0, sizeof(*flow));
	if (v4) {
		flow->family = AF_INET;
		memcpy(&flow->src.v4, sgid + 12, 4);
		memcpy(&flow->dst.v4, dgid + 12, 4);
	} else {
		flow->family = AF_INET6;
		memcpy(&flow->src.v6, sgid, 16);
		memcpy(&flow->dst.v6, dgid, 16);
	}
	flow->sport = sport;
	flow->dport = dport;
	return 0;
}

uint16_t ur_inet_csum_fold(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t sum = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += get16(p + i);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* One's-complement sum over bytes that may arrive in odd-sized pieces. */
struct csum {
	uint32_t sum;
	bool odd;
};

static void csum_add(struct csum *c, const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++) {
		c->sum += c->odd ? p[i] : (uint32_t)p[i] << 8;
		c->odd = !c->odd;
		if (c->sum >= 0x80000000u)
			c->sum = (c->sum & 0xffff) + (c->sum >> 16);
	}
}

uint16_t ur_udp_csum_iov(const struct ur_ip_flow *flow, const uint8_t *udp_hdr,
			 const struct iovec *iov, int iovcnt)
{
	struct csum c = {0};
	uint8_t ph[8];
	uint16_t ulen = get16(udp_hdr + 4);
	int i;

	if (flow->family == AF_INET6) {
		csum_add(&c, (const uint8_t *)&flow->src.v6, 16);
		csum_add(&c, (const uint8_t *)&flow->dst.v6, 16);
		ph[0] = ph[1] = 0;
		put16(ph + 2, ulen);
		ph[4] = ph[5] = ph[6] = 0;
		ph[7] = IPPROTO_UDP_NUM;
		csum_add(&c, ph, 8);
	} else {
		csum_add(&c, (const uint8_t *)&flow->src.v4, 4);
		csum_add(&c, (const uint8_t *)&flow->dst.v4, 4);
		ph[0] = 0;
		ph[1] = IPPROTO_UDP_NUM;
		put16(ph + 2, ulen);
		csum_add(&c, ph, 4);
	}
	csum_add(&c, udp_hdr, 6); /* ports, length; checksum as 0 */
	for (i = 0; i < iovcnt; i++)
		csum_add(&c, iov[i].iov_base, iov[i].iov_len);
	while (c.sum >> 16)
		c.sum = (c.sum & 0xffff) + (c.sum >> 16);
	c.sum = ~c.sum & 0xffff;
	return c.sum ? (uint16_t)c.sum : 0xffff;
}

int ur_ipv4_hdr_build(void *buf, const struct ur_ip_flow *flow,
		      size_t udp_payload_len)
{
	uint8_t *h = buf;
	size_t tot = UR_IPV4_HDR_BYTES + UR_UDP_HDR_BYTES + udp_payload_len;

	if (flow->family != AF_INET || tot > 0xffff)
		return -EINVAL;
	h[0] = 0x45; /* version 4, IHL 5 */
	h[1] = flow->tos;
	put16(h + 2, (uint16_t)tot);
	put16(h + 4, flow->ip_id);
	put16(h + 6, 0x4000); /* DF, offset 0 */
	h[8] = flow->ttl ? flow->ttl : UR_DEFAULT_HOP_LIMIT;
	h[9] = IPPROTO_UDP_NUM;
	put16(h + 10, 0);
	memcpy(h + 12, &flow->src.v4, 4);
	memcpy(h + 16, &flow->dst.v4, 4);
	put16(h + 10, (uint16_t)~ur_inet_csum_fold(h, UR_IPV4_HDR_BYTES));
	return UR_IPV4_HDR_BYTES;
}

int ur_ipv6_hdr_build(void *buf, const struct ur_ip_flow *flow,
		      size_t udp_payload_len)
{
	uint8_t *h = buf;
	size_t plen = UR_UDP_HDR_BYTES + udp_payload_len;
	uint32_t w;

	if (flow->family != AF_INET6 || plen > 0xffff)
		return -EINVAL;
	w = 6u << 28 | (uint32_t)flow->tos << 20 | (flow->flow_label & 0xfffff);
	h[0] = w >> 24;
	h[1] = w >> 16;
	h[2] = w >> 8;
	h[3] = w;
	put16(h + 4, (uint16_t)plen);
	h[6] = IPPROTO_UDP_NUM;
	h[7] = flow->ttl ? flow->ttl : UR_DEFAULT_HOP_LIMIT;
	memcpy(h + 8, &flow->src.v6, 16);
	memcpy(h + 24, &flow->dst.v6, 16);
	return UR_IPV6_HDR_BYTES;
}

int ur_udp_hdr_build(void *buf, const struct ur_ip_flow *flow,
		     size_t udp_payload_len)
{
	uint8_t *h = buf;

	if (udp_payload_len > 0xffff - UR_UDP_HDR_BYTES)
		return -EINVAL;
	put16(h, flow->sport);
	put16(h + 2, flow->dport);
	put16(h + 4, (uint16_t)(UR_UDP_HDR_BYTES + udp_payload_len));
	put16(h + 6, 0); /* no checksum (rxe sends 0) */
	return UR_UDP_HDR_BYTES;
}

int ur_ip_udp_hdr_build(void *buf, const struct ur_ip_flow *flow,
			size_t udp_payload_len)
{
	int n, m;

	if (flow->family == AF_INET)
		n = ur_ipv4_hdr_build(buf, flow, udp_payload_len);
	else
		n = ur_ipv6_hdr_build(buf, flow, udp_payload_len);
	if (n < 0)
		return n;
	m = ur_udp_hdr_build((uint8_t *)buf + n, flow, udp_payload_len);
	return m < 0 ? m : n + m;
}

int ur_grh_image_build(uint8_t grh[UR_GRH_BYTES], const struct ur_ip_flow *flow,
		       size_t udp_payload_len)
{
	int n;

	if (flow->family == AF_INET) {
		memset(grh, 0, UR_GRH_BYTES - UR_IPV4_HDR_BYTES);
		n = ur_ipv4_hdr_build(grh + UR_GRH_BYTES - UR_IPV4_HDR_BYTES,
				      flow, udp_payload_len);
	} else {
		n = ur_ipv6_hdr_build(grh, flow, udp_payload_len);
	}
	return n < 0 ? n : 0;
}

static enum ur_drop_reason parse_udp(const uint8_t *p, size_t len,
				     struct ur_ip_flow *flow,
				     const uint8_t **payload,
				     size_t *payload_len)
{
	size_t ulen;

	if (len < UR_UDP_HDR_BYTES)
		return UR_DROP_BAD_LENGTH;
	ulen = get16(p + 4);
	if (ulen < UR_UDP_HDR_BYTES || ulen > len)
		return UR_DROP_BAD_LENGTH;
	flow->sport = get16(p);
	flow->dport = get16(p + 2);
	*payload = p + UR_UDP_HDR_BYTES;
	*payload_len = ulen - UR_UDP_HDR_BYTES;
	return UR_DROP_NONE;
}

static enum ur_drop_reason parse_ipv4(const uint8_t *p, size_t len,
				      struct ur_ip_flow *flow,
				      const uint8_t **payload,
				      size_t *payload_len)
{
	size_t ihl, tot;

	if (len < UR_IPV4_HDR_BYTES)
		return UR_DROP_BAD_LENGTH;
	ihl = (size_t)(p[0] & 0xf) * 4;
	tot = get16(p + 2);
	if ((p[0] >> 4) != 4 || ihl < UR_IPV4_HDR_BYTES)
		return UR_DROP_NOT_ROCE;
	if (tot < ihl || tot > len)
		return UR_DROP_BAD_LENGTH;
	/* fragments (MF or offset) and non-UDP are not RoCEv2 datagrams */
	if ((get16(p + 6) & 0x3fff) || p[9] != IPPROTO_UDP_NUM)
		return UR_DROP_NOT_ROCE;
	/* the ICRC pseudo-header assumes a 20-byte header without options */
	if (ihl != UR_IPV4_HDR_BYTES)
		return UR_DROP_NOT_ROCE;
	flow->family = AF_INET;
	flow->tos = p[1];
	flow->ip_id = get16(p + 4);
	flow->ttl = p[8];
	flow->flow_label = 0;
	memcpy(&flow->src.v4, p + 12, 4);
	memcpy(&flow->dst.v4, p + 16, 4);
	return parse_udp(p + ihl, tot - ihl, flow, payload, payload_len);
}

static enum ur_drop_reason parse_ipv6(const uint8_t *p, size_t len,
				      struct ur_ip_flow *flow,
				      const uint8_t **payload,
				      size_t *payload_len)
{
	size_t plen;
	uint32_t w;

	if (len < UR_IPV6_HDR_BYTES)
		return UR_DROP_BAD_LENGTH;
	w = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
	    p[3];
	if ((w >> 28) != 6 || p[6] != IPPROTO_UDP_NUM)
		return UR_DROP_NOT_ROCE;
	plen = get16(p + 4);
	if (plen > len - UR_IPV6_HDR_BYTES)
		return UR_DROP_BAD_LENGTH;
	flow->family = AF_INET6;
	flow->tos = (w >> 20) & 0xff;
	flow->flow_label = w & 0xfffff;
	flow->ttl = p[7];
	flow->ip_id = 0;
	memcpy(&flow->src.v6, p + 8, 16);
	memcpy(&flow->dst.v6, p + 24, 16);
	return parse_udp(p + UR_IPV6_HDR_BYTES, plen, flow, payload,
			 payload_len);
}

enum ur_drop_reason ur_frame_parse(const void *frame, size_t len, int linktype,
				   struct ur_ip_flow *flow,
				   const uint8_t **payload, size_t *payload_len)
{
	const uint8_t *p = frame;
	uint16_t type;

	memset(flow, 0, sizeof(*flow));
	if (linktype == UR_LINKTYPE_ETHERNET) {
		if (len < UR_ETH_HDR_BYTES)
			return UR_DROP_BAD_LENGTH;
		type = get16(p + 12);
		p += UR_ETH_HDR_BYTES;
		len -= UR_ETH_HDR_BYTES;
		while (type == ETHERTYPE_VLAN || type == ETHERTYPE_QINQ) {
			if (len < 4)
				return UR_DROP_BAD_LENGTH;
			type = get16(p + 2);
			p += 4;
			len -= 4;
		}
		if (type == ETHERTYPE_IPV4)
			return parse_ipv4(p, len, flow, payload, payload_len);
		if (type == ETHERTYPE_IPV6)
			return parse_ipv6(p, len, flow, payload, payload_len);
		return UR_DROP_NOT_ROCE;
	}
	if (linktype == UR_LINKTYPE_RAW && len >= 1) {
		if ((p[0] >> 4) == 4)
			return parse_ipv4(p, len, flow, payload, payload_len);
		if ((p[0] >> 4) == 6)
			return parse_ipv6(p, len, flow, payload, payload_len);
	}
	return UR_DROP_NOT_ROCE;
}

/* 0xC000 | 14 bits: the low 14 bits of a 20-bit label folded with its
 * top 6 bits (rdma_get_udp_sport() semantics, docs/wire-notes.md §2.1). */
uint16_t ur_udp_sport_flow_label(uint32_t flow_label)
{
	uint32_t fl = flow_label & 0xfffff;

	return (uint16_t)(((fl & 0x3fff) ^ ((fl & 0xfc000) >> 14)) | 0xc000);
}

uint16_t ur_udp_sport_qp_pair(uint32_t lqpn, uint32_t rqpn)
{
	uint64_t v = (uint64_t)lqpn * rqpn;

	/* fold the 64-bit product to a 20-bit flow label */
	v ^= v >> 20;
	v ^= v >> 40;
	return ur_udp_sport_flow_label((uint32_t)(v & 0xfffff));
}

uint16_t ur_udp_sport_qpn(uint32_t qpn)
{
	/* multiplicative hash of the QPN, top 14 bits (hash_32(qpn, 14)) */
	uint32_t h = (uint32_t)(qpn * 0x61c88647u) >> 18;

	return (uint16_t)(0xc000 + (h & 0x3fff));
}
