/* SPDX-License-Identifier: BSD-2-Clause */
/* The interface of an address and its MTU (netif.h). */
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "util/netif.h"

static bool ifa_has(const struct ifaddrs *ifa, const union ur_sockaddr *a)
{
	const struct sockaddr *s = ifa->ifa_addr;

	if (!s || s->sa_family != a->sa.sa_family)
		return false;
	if (s->sa_family == AF_INET)
		return ((const struct sockaddr_in *)s)->sin_addr.s_addr ==
		       a->in.sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)s)->sin6_addr,
		       &a->in6.sin6_addr, 16);
}

static int ifname_mtu(const char *name, uint32_t *mtu)
{
	struct ifreq ifr;
	int fd, rc = -ENODEV;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (!ioctl(fd, SIOCGIFMTU, &ifr) && ifr.ifr_mtu > 0) {
		*mtu = (uint32_t)ifr.ifr_mtu;
		rc = 0;
	}
	close(fd);
	return rc;
}

int ur_netif_of_addr(const union ur_sockaddr *a, uint32_t *mtu,
		     unsigned int *ifindex)
{
	bool loop = ur_addr_is_loopback(a);
	struct ifaddrs *ifs, *ifa;
	int rc = -ENODEV;

	*mtu = loop ? UR_NETIF_LOOPBACK_MTU : UR_NETIF_DEFAULT_MTU;
	if (ifindex)
		*ifindex = 0;
	if (getifaddrs(&ifs))
		return -errno;
	for (ifa = ifs; ifa; ifa = ifa->ifa_next)
		if (ifa_has(ifa, a))
			break;
	if (!ifa && loop)
		for (ifa = ifs; ifa; ifa = ifa->ifa_next)
			if (ifa->ifa_flags & IFF_LOOPBACK)
				break;
	if (ifa) {
		rc = ifname_mtu(ifa->ifa_name, mtu);
		if (!rc && ifindex)
			*ifindex = if_nametoindex(ifa->ifa_name);
	}
	freeifaddrs(ifs);
	return rc;
}
