/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Socket address helpers for rdma_cm ids (IPv4, IPv6 and AF_IB alike):
 * the bottom of librdmacm, calling nothing of it.
 *
 * AF_IB on RoCEv2: a struct sockaddr_ib names a GID, and a RoCEv2 GID is
 * an IP address (::ffff:a.b.c.d for IPv4), so an AF_IB address is turned
 * into that IP address at the API's edge and everything below works on IP
 * addresses. Its port is the low 16 bits of the service ID (sib_sid, under
 * sib_sid_mask), whose bits 16..31 name the port space (0x0106 TCP, 0x0111
 * UDP, 0x013F IB: RDMA_IB_IP_PS_*), as the kernel's rdma_cm reads them.
 */
#include <endian.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <unistd.h>

#include "api/rdmacm/rdmacm_priv.h"

bool cma_addr_is_any(const union ur_sockaddr *sa)
{
	if (sa->sa.sa_family == AF_INET)
		return sa->in.sin_addr.s_addr == htonl(INADDR_ANY);
	if (sa->sa.sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&sa->in6.sin6_addr);
	return false;
}

/* The service ID bits of an AF_IB address that its mask says are set. */
static uint64_t ib_sid(const struct sockaddr_ib *sib)
{
	return be64toh(sib->sib_sid) & be64toh(sib->sib_sid_mask);
}

uint16_t cma_addr_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	if (sa->sa_family == AF_IB)
		return (uint16_t)ib_sid((const struct sockaddr_ib *)sa);
	return 0;
}

uint16_t cma_addr_ib_ps(const struct sockaddr_ib *sib)
{
	return (uint16_t)(ib_sid(sib) >> 16);
}

bool cma_addr_ib_ps_given(const struct sockaddr_ib *sib)
{
	return (be64toh(sib->sib_sid_mask) & RDMA_IB_IP_PS_MASK) != 0;
}

/*
 * The GID of an AF_IB address as the IP address it is on RoCEv2, with the
 * service ID's port. The zero GID is the wildcard: IPv6's, which covers
 * IPv4 too. AF_INET and AF_INET6 are copied. 0 or EAFNOSUPPORT.
 */
int cma_addr_to_ip(const struct sockaddr *sa, union ur_sockaddr *out)
{
	const struct sockaddr_ib *sib = (const struct sockaddr_ib *)sa;
	socklen_t len = cma_addr_len(sa);

	memset(out, 0, sizeof(*out));
	if (sa->sa_family == AF_INET || sa->sa_family == AF_INET6) {
		memcpy(out, sa, len);
		return 0;
	}
	if (sa->sa_family != AF_IB)
		return EAFNOSUPPORT;
	if (ur_gid_is_zero(sib->sib_addr.sib_raw)) {
		out->in6.sin6_family = AF_INET6;
		out->in6.sin6_port = htons(cma_addr_port(sa));
		return 0;
	}
	ur_gid_to_sockaddr(sib->sib_addr.sib_raw, cma_addr_port(sa), out);
	return 0;
}

/*
 * The AF_IB form of an IP address (what an AF_IB id reports): the GID,
 * the default P_Key and the service ID of port space ps and the port, all
 * of it significant (mask all ones), as the kernel leaves a bound one.
 * The IPv4 wildcard is the zero GID.
 */
void cma_addr_to_ib(const union ur_sockaddr *ip, uint16_t ps,
		    struct sockaddr_ib *sib)
{
	memset(sib, 0, sizeof(*sib));
	sib->sib_family = AF_IB;
	sib->sib_pkey = htons(UR_PKEY_DEFAULT);
	if (!cma_addr_is_any(ip))
		ur_sockaddr_to_gid(ip, sib->sib_addr.sib_raw);
	sib->sib_sid = htobe64(((uint64_t)ps << 16) | cma_addr_port(&ip->sa));
	sib->sib_sid_mask = htobe64(~0ULL);
}

void cma_addr_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
	else if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}

socklen_t cma_addr_len(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return sizeof(struct sockaddr_in);
	if (sa->sa_family == AF_INET6)
		return sizeof(struct sockaddr_in6);
	if (sa->sa_family == AF_IB)
		return sizeof(struct sockaddr_ib);
	return 0;
}

/*
 * The source an id with no source of its own gets: the device's address,
 * in the destination's family, since rdma_cm's REQ header carries both
 * addresses under one IP version. An IPv6 destination with an IPv4 device
 * gets ::1 for ::1 (where the kernel routes loopback from) and otherwise
 * the IPv4-mapped form of the device's address.
 */
void cma_addr_src_for(const uint8_t dev_gid[16], uint16_t port,
		      const union ur_sockaddr *dst, union ur_sockaddr *out)
{
	ur_gid_to_sockaddr(dev_gid, port, out);
	if (out->sa.sa_family == dst->sa.sa_family ||
	    dst->sa.sa_family != AF_INET6)
		return;
	memset(out, 0, sizeof(*out));
	out->in6.sin6_family = AF_INET6;
	out->in6.sin6_port = htons(port);
	if (IN6_IS_ADDR_LOOPBACK(&dst->in6.sin6_addr))
		out->in6.sin6_addr = in6addr_loopback;
	else
		memcpy(&out->in6.sin6_addr, dev_gid, 16);
}

/* A UDP socket's connect() only consults the routing table: nothing is
 * sent, and getsockname() then names the source the host would use. */
int cma_addr_route_src(const union ur_sockaddr *dst, union ur_sockaddr *src)
{
	union ur_sockaddr d = *dst;
	socklen_t len = sizeof(*src);
	int fd, ret = 0;

	if (!cma_addr_port(&d.sa))
		cma_addr_set_port(&d.sa, 9);	/* any: connect() wants one */
	fd = socket(d.sa.sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	memset(src, 0, sizeof(*src));
	if (connect(fd, &d.sa, cma_addr_len(&d.sa)) ||
	    getsockname(fd, &src->sa, &len))
		ret = errno;
	close(fd);
	return ret;
}
