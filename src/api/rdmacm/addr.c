/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Socket address helpers for rdma_cm ids (IPv4 and IPv6 alike): the
 * bottom of librdmacm, calling nothing of it.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "api/rdmacm/rdmacm_priv.h"

bool cma_addr_is_any(const union ur_sockaddr *sa)
{
	if (sa->sa.sa_family == AF_INET)
		return sa->in.sin_addr.s_addr == htonl(INADDR_ANY);
	if (sa->sa.sa_family == AF_INET6)
		return IN6_IS_ADDR_UNSPECIFIED(&sa->in6.sin6_addr);
	return false;
}

uint16_t cma_addr_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return 0;
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
