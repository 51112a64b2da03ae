/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The network interface an IP address is on, and its MTU: the device
 * reports its IB MTU from it (obj/device.c) and the link sizes its
 * datagrams by it (link/udp.c), so both must get the same answer.
 */
#ifndef UR_UTIL_NETIF_H
#define UR_UTIL_NETIF_H

#include <stdint.h>

#include "util/addr.h"

/* MTUs assumed when no interface can be asked: Linux's lo default, and
 * Ethernet's. */
#define UR_NETIF_LOOPBACK_MTU 65536u
#define UR_NETIF_DEFAULT_MTU 1500u

/*
 * The interface holding a, or for a loopback address (util/addr.h) the
 * loopback interface, which lists only 127.0.0.1 of 127/8. Sets *mtu and,
 * when ifindex is not NULL, *ifindex. Returns 0, or -ENODEV when there is
 * no such interface (a wildcard address, one of another host) or it
 * cannot be asked: then *mtu is UR_NETIF_LOOPBACK_MTU for a loopback
 * address, UR_NETIF_DEFAULT_MTU otherwise, and *ifindex 0.
 */
int ur_netif_of_addr(const union ur_sockaddr *a, uint32_t *mtu,
		     unsigned int *ifindex);

#endif
