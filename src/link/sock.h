/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * link/'s sockets: opening one with the options RoCEv2 needs, for an
 * address of the device (unicast: sends and receives) or for an IP
 * multicast group (receives only). udp.c keeps the set and moves the
 * datagrams; nothing outside link/ includes this.
 */
#ifndef UR_LINK_SOCK_H
#define UR_LINK_SOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/udp.h>

#include "link/link.h"

/* UDP GSO and GRO (Linux 4.18, 5.0), for libcs whose headers lack them. */
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

struct ur_sock {
	int fd;				/* -1: not open */
	union ur_sockaddr local;	/* bound address and port */
	bool gso_ok;			/* kernel accepts UDP_SEGMENT */
	bool gro_on;			/* UDP_GRO enabled */
};

/*
 * A socket bound to addr (its port; 0 lets the kernel pick) with the
 * buffers, receive cmsgs and GSO/GRO of cfg, and multicast sends leaving
 * through addr's interface; with cfg.rx_queues > 1 SO_REUSEPORT (the
 * queues' further sockets, steer.c). 0 or -errno (-EADDRINUSE: the
 * address is taken).
 */
int ur_sock_open_addr(const struct ur_link_config *cfg,
		      const union ur_sockaddr *addr, struct ur_sock *s);

/*
 * A receive-only socket for group (its port): bound to the group with
 * SO_REUSEADDR, so that every device and process of this host that joins
 * it gets its own copy of each datagram, and a member of the group on the
 * interface of every address in addrs of the group's family. With gro,
 * UDP_GRO as on the address sockets (the receive slots are sized for it).
 * 0 or -errno (-EAFNOSUPPORT: no address of the group's family).
 */
int ur_sock_open_group(const struct ur_link_config *cfg, bool gro,
		       const union ur_sockaddr *group,
		       const union ur_sockaddr *addrs, unsigned int n,
		       struct ur_sock *s);

void ur_sock_close(struct ur_sock *s);

/* Largest UDP payload one datagram from address a may carry. */
uint32_t ur_sock_max_payload(const union ur_sockaddr *a);

#endif
