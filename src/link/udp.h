/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * link/'s datagram backend: the UDP sockets of a device's addresses and
 * of its multicast groups, batched sends (sendmmsg, UDP GSO) and receives
 * (recvmmsg, UDP GRO), and the same-host rings (shm.h) for uroce
 * processes of this host; no policy. link.c (the facade the
 * engine calls) and fault.c (the fault filter between the two) use it;
 * nothing outside link/ includes this.
 *
 * Threads: as link.h: ur_udp_send()/ur_udp_sendto() from any thread,
 * ur_udp_recv() from one thread at a time.
 */
#ifndef UR_LINK_UDP_H
#define UR_LINK_UDP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "link/link.h"

struct ur_udp;

/* Returns 0 and *out, or -errno (-EADDRINUSE when the address is taken). */
int ur_udp_open(const struct ur_link_config *cfg, struct ur_udp **out);
void ur_udp_close(struct ur_udp *u);

/* Readable when ur_udp_recv() has datagrams: the lone socket, or an epoll
 * fd over the set once it holds several (link.h: re-read it). */
int ur_udp_fd(const struct ur_udp *u);
/* An epoll fd over every socket, the same for the backend's life (the
 * fault stage waits on it). */
int ur_udp_set_fd(const struct ur_udp *u);
/* The smallest of the addresses' interfaces. */
uint32_t ur_udp_max_payload(const struct ur_udp *u);
/* ur_link_local_addr()'s contract. */
int ur_udp_local_addr(const struct ur_udp *u, unsigned int i,
		      union ur_sockaddr *out);
/* ur_link_join()/ur_link_leave()'s contracts. */
int ur_udp_join(struct ur_udp *u, const union ur_sockaddr *group);
int ur_udp_leave(struct ur_udp *u, const union ur_sockaddr *group);

/* ur_link_send()'s contract without the fault stage. */
int ur_udp_send(struct ur_udp *u, const struct ur_txd *d, unsigned int n);
/* One flat datagram from address via with traffic class tos (the
 * descriptor's it came from). 0 or -errno. */
int ur_udp_sendto(struct ur_udp *u, uint8_t via, const union ur_sockaddr *dst,
		  uint8_t tos, const void *buf, size_t len);
/* Never blocks: hands out what is pending or what one recvmmsg brings.
 * Returns the count (0 when nothing came) or -errno. */
int ur_udp_recv(struct ur_udp *u, struct ur_rxd *d, unsigned int max);
/* link.h's receive queues: how many, and queue q > 0's fd, receive and
 * look (queue 0 is the calls without _q) */
unsigned int ur_udp_rx_queues(const struct ur_udp *u);
int ur_udp_fd_q(const struct ur_udp *u, unsigned int q);
int ur_udp_recv_q(struct ur_udp *u, unsigned int q, struct ur_rxd *d,
		  unsigned int max);
bool ur_udp_rx_maybe_q(struct ur_udp *u, unsigned int q);

/* ur_link_wait_arm()/_disarm()'s contracts (the same-host ring's part). */
bool ur_udp_rx_maybe(struct ur_udp *u);
bool ur_udp_wait_arm(struct ur_udp *u);
void ur_udp_wait_disarm(struct ur_udp *u);

/* ur_link_own_area() and ur_link_peer_area_get()/_put(): the ring's. */
void *ur_udp_own_area(struct ur_udp *u);
void *ur_udp_peer_area_get(struct ur_udp *u, const union ur_sockaddr *dst,
			   int32_t *owner);
void ur_udp_peer_area_put(struct ur_udp *u);

/* Writes the ICRC of a flat datagram built without one (ur_txd.no_icrc),
 * before the fault stage copies or corrupts it: sent from local address
 * via to dst (tx), or as received (rx: x->no_icrc is cleared). false
 * when the engine lent no seal function (ur_link_config.seal). */
bool ur_udp_seal_tx(struct ur_udp *u, uint8_t via,
		    const union ur_sockaddr *dst, uint8_t *pkt, size_t len);
bool ur_udp_seal_rx(struct ur_udp *u, struct ur_rxd *x);
/* ur_link_is_ring() and ur_link_ring_gen(). */
bool ur_udp_is_ring(struct ur_udp *u, const union ur_sockaddr *dst);
uint32_t ur_udp_ring_gen(const struct ur_udp *u);

/* Fills the socket's tx_* and rx_* counters of st (leaves the rest). */
void ur_udp_stats(const struct ur_udp *u, struct ur_link_stats *st);
uint64_t ur_udp_tx_blocked(const struct ur_udp *u);

#endif
