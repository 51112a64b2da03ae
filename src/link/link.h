/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * link/: datagrams in and out. The engine hands the link complete RoCEv2
 * UDP payloads (BTH .. ICRC) and gets them back; the link knows nothing of
 * their contents. Today's link is a UDP socket bound to <ip>:4791 with
 * sendmmsg/recvmmsg, UDP GSO on send and GRO on receive (udp.c), with
 * shared-memory rings to uroce processes of this host (shm.c), plus a
 * fault injection filter (drop, duplicate, reorder, corrupt, delay;
 * fault.c) configured by ur_link_config.fault (the engine passes
 * UROCE_FAULT); link.c joins the two.
 *
 * Threads: ur_link_send() may be called from any thread concurrently.
 * ur_link_recv() is called by one thread at a time (the engine serialises
 * it); the buffers it returns stay valid until the next ur_link_recv().
 */
#ifndef UR_LINK_LINK_H
#define UR_LINK_LINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "util/addr.h"

struct ur_link;

/* Addresses one link binds: a device's GIDs (obj/limits.h's UR_MAX_GID);
 * multicast groups it can join at once (obj/limits.h's UR_MAX_MCAST_GRP
 * may not be more). */
#define UR_LINK_MAX_ADDRS 16
#define UR_LINK_MAX_GROUPS 256

/*
 * Writes the ICRC of the flat datagram pkt (len bytes, the last 4 its
 * ICRC) sent from src to dst with IPv4 ID 0. The link knows nothing of
 * the packets' contents: the engine lends it this (wire/icrc.h's
 * ur_icrc_seal) for a datagram built without its ICRC (ur_txd.no_icrc)
 * that must carry one after all: it falls back from a same-host ring to
 * a socket, or the fault stage is about to corrupt it.
 */
typedef void ur_link_seal_fn(uint8_t *pkt, size_t len,
			     const union ur_sockaddr *src,
			     const union ur_sockaddr *dst);

struct ur_link_config {
	union ur_sockaddr bind;		/* address 0 and the port to bind */
	/* addresses 1..n_more, each bound on bind's port (the port is taken
	 * from bind); one that cannot be bound is logged and its sends
	 * leave from address 0 (ur_link_local_addr() says which did) */
	union ur_sockaddr more[UR_LINK_MAX_ADDRS - 1];
	unsigned int n_more;
	unsigned int rcvbuf;		/* SO_RCVBUF bytes, 0 = link/params.h */
	unsigned int sndbuf;		/* SO_SNDBUF bytes, 0 = link/params.h */
	int use_gso;			/* allow UDP_SEGMENT on send */
	int use_gro;			/* enable UDP_GRO on receive */
	const char *fault;		/* fault injection spec (fault.c) or
					 * NULL; the engine passes UROCE_FAULT */
	int same_host;			/* move datagrams to uroce processes of
					 * this host through shared-memory rings
					 * (shm.h); the engine passes UROCE_LINK */
	uint8_t tos;			/* IPv4 TOS / IPv6 traffic class the
					 * sockets send with (IP_TOS,
					 * IPV6_TCLASS): a descriptor with this
					 * tos needs no cmsg. The engine passes
					 * ECT(0) unless UROCE_ECN=0 */
	ur_link_seal_fn *seal;		/* the engine's ICRC (above); NULL:
					 * no datagram leaves without one */
	unsigned int rx_queues;		/* receive queues (0 or 1: one; at
					 * most UR_LINK_MAX_RXQ), steered by
					 * the BTH's destination QP (below) */
};

/*
 * Receive queues. With cfg.rx_queues = n > 1 each address is bound by n
 * sockets (SO_REUSEPORT) and a classic BPF program attached to them makes
 * the kernel hand a datagram to socket (destination QPN % n): the link
 * reads those 3 bytes of the BTH for that and for nothing else. Queue q
 * is then received by ur_link_recv_q(q), one thread at a time per queue,
 * several queues at once. Queue 0 also gets what is not steered: the
 * multicast groups' sockets, the same-host ring, datagrams too short to
 * hold a BTH. A link opened with a fault spec has one queue (the stage
 * holds and reorders across QPs); one configured later
 * (ur_link_set_fault()) sees what queue 0 receives and everything sent.
 * ur_link_recv() is queue 0.
 * Since SO_REUSEPORT would let another process of the same user bind the
 * address too, the link claims the address first (an abstract unix
 * socket named after it): -EADDRINUSE as with one socket.
 */
#define UR_LINK_MAX_RXQ 16

/* One datagram, or with gso_size a train of datagrams cut every gso_size
 * bytes of the concatenated iovecs (the last may be shorter). */
struct ur_txd {
	const union ur_sockaddr *dst;
	const struct iovec *iov;
	unsigned int iovcnt;
	uint16_t gso_size;
	uint8_t tos;			/* IPv4 TOS / IPv6 traffic class, DSCP
					 * and ECN (the GRH traffic class of
					 * the AH or QP, per datagram); one
					 * other than ur_link_config.tos goes
					 * as a cmsg */
	uint8_t via;			/* index of the local address it
					 * leaves from (0 = cfg.bind) */
	uint8_t ttl;			/* IPv4 TTL / IPv6 hop limit; 0 =
					 * the socket's (the engine sets it
					 * for multicast only: the AH's hop
					 * limit) */
	bool no_icrc;			/* its ICRC bytes were not computed:
					 * only for a destination that
					 * ur_link_is_ring() said goes by a
					 * ring; anywhere else the link seals
					 * it first (ur_link_config.seal) */
};

/* One received datagram. */
struct ur_rxd {
	uint8_t *data;			/* UDP payload */
	uint32_t len;
	union ur_sockaddr src;		/* sender IP and UDP port */
	union ur_sockaddr dst;		/* our IP, or the multicast group,
					 * it was sent to */
	uint8_t tos;			/* IPv4 TOS / IPv6 traffic class, ECN
					 * field included (IP_RECVTOS,
					 * IPV6_RECVTCLASS; a same-host ring
					 * carries the sender's) */
	uint8_t ttl;			/* IPv4 TTL / IPv6 hop limit */
	bool ring;			/* came through a same-host ring
					 * (shm.h), from a uroce process */
	bool no_icrc;			/* from a ring, sent with no ICRC
					 * computed: nothing to check */
};

/* Returns 0 and *out, or -errno (-EADDRINUSE when the address is taken). */
int ur_link_open(const struct ur_link_config *cfg, struct ur_link **out);
void ur_link_close(struct ur_link *l);

/* The pollable fd: readable when ur_link_recv() has datagrams. It may
 * change after ur_link_join() (a lone socket's fd becomes an epoll fd over
 * the socket set): poll the value returned now, not one kept. */
int ur_link_fd(const struct ur_link *l);
/* The receive queues opened (1 when the kernel refused the steering). */
unsigned int ur_link_rx_queues(const struct ur_link *l);
/* Queue q's pollable fd (q 0: ur_link_fd()). */
int ur_link_fd_q(const struct ur_link *l, unsigned int q);

/* Largest UDP payload one datagram may carry (path MTU math uses it). */
uint32_t ur_link_max_payload(const struct ur_link *l);
/* Bound address i (0 = cfg.bind, with the kernel's port if it asked for
 * 0): 0 and *out, or -ENOENT when address i was not bound. */
int ur_link_local_addr(const struct ur_link *l, unsigned int i,
		       union ur_sockaddr *out);

/*
 * Receives the IP multicast group (port: cfg.bind's) on the interfaces of
 * the link's addresses of the group's family; the group's datagrams then
 * come out of ur_link_recv() with dst = the group. Other processes and
 * devices on this host may join the same group, and a datagram this host
 * sends to it reaches all of them (IP_MULTICAST_LOOP). 0, -EALREADY when
 * joined, -EAFNOSUPPORT when no address has the group's family, -ENOMEM
 * past UR_LINK_MAX_GROUPS, or -errno.
 */
int ur_link_join(struct ur_link *l, const union ur_sockaddr *group);
/* Stops receiving the group: 0, or -ENOENT when it was not joined. */
int ur_link_leave(struct ur_link *l, const union ur_sockaddr *group);

/*
 * Sends n datagram descriptors. Returns the number of descriptors fully
 * handed to the kernel (n on success), or -errno if none was. A transient
 * ENOBUFS/EAGAIN is retried inside; the caller treats a short count as loss
 * (RC retransmits).
 */
int ur_link_send(struct ur_link *l, const struct ur_txd *d, unsigned int n);

/*
 * Receives up to max datagrams (GRO trains are split into datagrams here).
 * Never blocks: returns the count, 0 when nothing is there, or -errno. To
 * wait, poll ur_link_fd() for POLLIN.
 */
int ur_link_recv(struct ur_link *l, struct ur_rxd *d, unsigned int max);
/* The same from receive queue q (above). */
int ur_link_recv_q(struct ur_link *l, unsigned int q, struct ur_rxd *d,
		   unsigned int max);

/*
 * Whether ur_link_recv() may have datagrams now, asked without the
 * caller's receive serialisation (a poll_cq that would otherwise take the
 * receive lock just to find nothing): the same-host ring's head, then a
 * zero-timeout poll() of ur_link_fd(). A true may be stale; a false is
 * never wrong when asked, except for a fault stage holding delayed
 * datagrams (it answers true whenever one is configured).
 */
bool ur_link_rx_maybe(struct ur_link *l);
bool ur_link_rx_maybe_q(struct ur_link *l, unsigned int q);

/*
 * The receiving thread's sleep. Before it blocks on ur_link_fd(), it
 * calls ur_link_wait_arm(): true means datagrams are already there (do
 * not block); false, that every way in will now make the fd readable
 * (a same-host sender rings a doorbell). ur_link_wait_disarm() once
 * awake. A thread that polls without blocking calls neither.
 */
bool ur_link_wait_arm(struct ur_link *l);
void ur_link_wait_disarm(struct ur_link *l);

struct ur_link_stats {
	uint64_t tx_pkts, tx_bytes, tx_errors;
	uint64_t tx_blocked;		/* ur_link_tx_blocked() */
	uint64_t rx_pkts, rx_bytes, rx_truncated;
	uint64_t fi_dropped, fi_duplicated, fi_reordered, fi_corrupted,
		fi_delayed, fi_ce_marked;
	/* the same-host rings: datagrams in and out (also in tx_pkts and
	 * rx_pkts), doorbells sent, datagrams lost to this link's full ring */
	uint64_t shm_tx_pkts, shm_rx_pkts, shm_doorbells, shm_full_drops;
};
void ur_link_get_stats(const struct ur_link *l, struct ur_link_stats *st);
/* How many times a send found the socket's buffer or the local queue
 * full (EAGAIN, ENOBUFS) and waited for it: monotonic, cheap to read
 * around a send to see whether it met local congestion. */
uint64_t ur_link_tx_blocked(const struct ur_link *l);

/*
 * A same-host peer's shared area (shm.h: at the end of its ring file,
 * UR_LINK_AREA_BYTES, zero at first, never read by the link): the engine
 * publishes there what peers on this host may read (its memory keys).
 * ur_link_own_area() is NULL without a ring. ur_link_peer_area_get()
 * returns dst's area and its owner's pid, or NULL when dst has no ring;
 * it stays mapped until ur_link_peer_area_put(), which must follow soon
 * (it holds a lock that a ring lookup waits for).
 */
#define UR_LINK_AREA_BYTES (256u * 1024u)
void *ur_link_own_area(struct ur_link *l);
void *ur_link_peer_area_get(struct ur_link *l, const union ur_sockaddr *dst,
			    int32_t *owner);
void ur_link_peer_area_put(struct ur_link *l);
/*
 * Whether datagrams to dst go through a same-host ring now, so that the
 * engine may leave their ICRC out (ur_txd.no_icrc): memory the two
 * processes share carries them, where nothing but a bug could corrupt
 * them. False without a seal function (ur_link_config.seal). The answer
 * stands while ur_link_ring_gen() returns what it returned before the
 * call: the generation moves whenever a ring peer is looked up, appears
 * or goes. A stale "true" costs a copy (the link seals the datagram and
 * sends it by UDP), a stale "false" an ICRC nobody checks.
 */
bool ur_link_is_ring(struct ur_link *l, const union ur_sockaddr *dst);
uint32_t ur_link_ring_gen(const struct ur_link *l);

/* Datagrams pass the fault stage (ur_link_set_fault() configured one). */
bool ur_link_faulty(const struct ur_link *l);

/*
 * Replaces the fault injection config (syntax in fault.c; NULL or "" turns
 * it off); ur_link_config.fault sets it at ur_link_open(). For tests; call
 * it while no other thread sends. Returns 0 or -EINVAL (bad spec, old one
 * kept). With a fault spec at open, ur_link_fd() is an epoll fd that also
 * turns readable when a delayed/reordered datagram is due (call
 * ur_link_recv() to let it out); after a later ur_link_set_fault() only ur_link_send/recv
 * calls release held datagrams (poll with a timeout and call again).
 */
int ur_link_set_fault(struct ur_link *l, const char *spec);

#endif
