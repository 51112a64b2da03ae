/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RoCEv2 GIDs are IP addresses: IPv4 as the IPv4-mapped IPv6 address
 * ::ffff:a.b.c.d, IPv6 as itself. These helpers convert between a GID and a
 * socket address (port 4791 unless stated).
 */
#ifndef UR_UTIL_ADDR_H
#define UR_UTIL_ADDR_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#define UR_ROCEV2_PORT 4791
/* Header sizes (IPv4 without options) and the 16-bit IP length field. */
#define UR_IPV4_HDR_BYTES 20
#define UR_IPV6_HDR_BYTES 40
#define UR_UDP_HDR_BYTES 8
#define UR_IP_LEN_MAX 65535u
/* IPv4 TTL / IPv6 hop limit when the verbs give none (0 would be dropped
 * by the first router): Linux's default, net.ipv4.ip_default_ttl. */
#define UR_DEFAULT_HOP_LIMIT 64

/* The ECN field, the low two bits of the IPv4 TOS and of the IPv6 traffic
 * class (RFC 3168): Not-ECT 00, ECT(1) 01, ECT(0) 10, CE 11. RoCEv2 NICs
 * send ECT(0) and switches mark CE instead of dropping (DCQCN). */
#define UR_IP_ECN_MASK 0x03u
#define UR_IP_ECN_ECT0 0x02u
#define UR_IP_ECN_CE 0x03u

union ur_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
	struct sockaddr_storage ss;
};

static inline bool ur_gid_is_v4mapped(const uint8_t gid[16])
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(gid, prefix, sizeof(prefix));
}

static inline bool ur_gid_is_zero(const uint8_t gid[16])
{
	static const uint8_t zero[16];

	return !memcmp(gid, zero, sizeof(zero));
}

/* An IPv4 address (4 bytes, network order) as its GID, ::ffff:a.b.c.d. */
static inline void ur_gid_from_ipv4(const void *v4, uint8_t gid[16])
{
	memset(gid, 0, 10);
	gid[10] = gid[11] = 0xff;
	memcpy(gid + 12, v4, 4);
}

/* GID -> socket address with the given UDP port (host order). */
static inline void ur_gid_to_sockaddr(const uint8_t gid[16], uint16_t port,
				      union ur_sockaddr *out)
{
	memset(out, 0, sizeof(*out));
	if (ur_gid_is_v4mapped(gid)) {
		out->in.sin_family = AF_INET;
		out->in.sin_port = htons(port);
		memcpy(&out->in.sin_addr, gid + 12, 4);
	} else {
		out->in6.sin6_family = AF_INET6;
		out->in6.sin6_port = htons(port);
		memcpy(&out->in6.sin6_addr, gid, 16);
	}
}

/* Socket address -> GID (IPv4 becomes IPv4-mapped). */
static inline void ur_sockaddr_to_gid(const union ur_sockaddr *sa,
				      uint8_t gid[16])
{
	if (sa->sa.sa_family == AF_INET)
		ur_gid_from_ipv4(&sa->in.sin_addr, gid);
	else
		memcpy(gid, &sa->in6.sin6_addr, 16);
}

/* A numeric IPv4 or IPv6 address (port 0). false if s is neither. */
static inline bool ur_addr_parse(const char *s, union ur_sockaddr *out)
{
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, s, &out->in.sin_addr) == 1) {
		out->in.sin_family = AF_INET;
		return true;
	}
	if (inet_pton(AF_INET6, s, &out->in6.sin6_addr) == 1) {
		out->in6.sin6_family = AF_INET6;
		return true;
	}
	return false;
}

/* 127.0.0.0/8, ::1, or ::ffff:127.x.y.z: routed to the loopback interface. */
static inline bool ur_addr_is_loopback(const union ur_sockaddr *a)
{
	if (a->sa.sa_family == AF_INET)
		return (ntohl(a->in.sin_addr.s_addr) >> 24) == 127;
	if (a->sa.sa_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&a->in6.sin6_addr) ||
		       (IN6_IS_ADDR_V4MAPPED(&a->in6.sin6_addr) &&
			a->in6.sin6_addr.s6_addr[12] == 127);
	return false;
}

/*
 * A multicast GID: IPv6 ff00::/8, or IPv4-mapped 224.0.0.0/4 (RoCEv2
 * carries an IPv4 group as ::ffff:224.x.y.z, as the kernel's
 * rdma_is_multicast_addr() reads it).
 */
static inline bool ur_gid_is_multicast(const uint8_t gid[16])
{
	if (ur_gid_is_v4mapped(gid))
		return (gid[12] & 0xf0) == 0xe0;
	return gid[0] == 0xff;
}

/* A multicast IP address (224.0.0.0/4, ff00::/8). */
static inline bool ur_addr_is_multicast(const union ur_sockaddr *a)
{
	if (a->sa.sa_family == AF_INET)
		return IN_MULTICAST(ntohl(a->in.sin_addr.s_addr));
	return a->sa.sa_family == AF_INET6 &&
	       IN6_IS_ADDR_MULTICAST(&a->in6.sin6_addr);
}

/* Same host address (ports ignored). */
static inline bool ur_sockaddr_same_host(const union ur_sockaddr *a,
					 const union ur_sockaddr *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return false;
	if (a->sa.sa_family == AF_INET)
		return a->in.sin_addr.s_addr == b->in.sin_addr.s_addr;
	return !memcmp(&a->in6.sin6_addr, &b->in6.sin6_addr, 16);
}

#endif
