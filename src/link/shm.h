/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * link/'s same-host path: datagrams between uroce processes of one host
 * (and one network namespace) through shared-memory rings instead of the
 * kernel's UDP stack. Each link that binds a loopback address owns one
 * ring, a file in /dev/shm named by the user, the network namespace and
 * the address:port (so the UDP bind, which is exclusive, also makes the
 * name ours). A sender maps the ring of a destination that has one and
 * copies each datagram into a slot; the owner hands the slots out as
 * received datagrams. Above link/ the two paths differ in one thing: a
 * datagram the engine built for a ring may carry no computed ICRC (a
 * flag in its slot says so, and its receiver skips the check); otherwise
 * they are the same RoCEv2 packets, so loss, retries, fault injection
 * and the pcap behave as on the wire.
 *
 * Only udp.c (the datagram backend) calls this: it routes each
 * descriptor here first and sends the ones this declines by UDP, and it
 * sends the doorbell (a zero-length UDP datagram to the owner's
 * address) when this says the owner sleeps.
 *
 * Threads: ur_shm_send() from any thread; ur_shm_recv(), _wait_arm() and
 * _wait_disarm() from the one thread that receives (link.h).
 */
#ifndef UR_LINK_SHM_H
#define UR_LINK_SHM_H

#include <stdbool.h>
#include <stddef.h>

#include "link/link.h"

struct ur_shm;

/* Opens the ring of a link whose n local addresses are addrs (with
 * their bound ports). 0 and *out; -ENOENT (*out NULL) when none is a
 * loopback address or /dev/shm is unusable: the link is UDP only. */
int ur_shm_open(const union ur_sockaddr *addrs, unsigned int n,
		struct ur_shm **out);
/* Removes the ring's names and unmaps every ring; senders that still
 * hold it see it closed. */
void ur_shm_close(struct ur_shm *s);

enum ur_shm_tx {
	UR_SHM_NOT_LOCAL,	/* no ring for d->dst: send it by UDP */
	UR_SHM_SENT,		/* in the ring, and its owner is awake */
	UR_SHM_SENT_NONE,	/* nothing stored: the ring is full (or
				 * every datagram faulted) */
	UR_SHM_SENT_WAKE,	/* in the ring, and its owner sleeps: send
				 * it a doorbell */
};
/* Delivers descriptor d (len bytes in its iovecs; a GSO train is cut
 * into its datagrams) from local address src. d->dst is a loopback
 * address (the caller's test: only those can have a ring). */
enum ur_shm_tx ur_shm_send(struct ur_shm *s, const struct ur_txd *d,
			   size_t len, const union ur_sockaddr *src);

/* Whether a datagram to dst would go into a ring now (ur_link_is_ring()),
 * and the generation that moves when that may change. */
bool ur_shm_is_ring(struct ur_shm *s, const union ur_sockaddr *dst);
uint32_t ur_shm_gen(const struct ur_shm *s);

/* Never blocks: up to max datagrams from the own ring, valid until the
 * next call. Returns the count. */
unsigned int ur_shm_recv(struct ur_shm *s, struct ur_rxd *d,
			 unsigned int max);
/* Before the receiving thread sleeps: asks senders for a doorbell.
 * true when datagrams are already there (do not sleep). */
/* Datagrams in the own ring not yet handed out (any thread may ask). */
bool ur_shm_rx_maybe(struct ur_shm *s);
bool ur_shm_wait_arm(struct ur_shm *s);
/* After it woke. */
void ur_shm_wait_disarm(struct ur_shm *s);

/*
 * The engine's shared area: UR_LINK_AREA_BYTES at the end of each ring
 * file, zero when the ring is made, whose contents the link never reads.
 * ur_shm_own_area() is this link's (NULL without a ring); ur_shm_area_get()
 * maps dst's (as a send would) and returns it with its owner's pid, and
 * the area stays mapped until ur_shm_area_put() (the peers' read lock is
 * held in between); NULL when dst has no ring.
 */
void *ur_shm_own_area(struct ur_shm *s);
void *ur_shm_area_get(struct ur_shm *s, const union ur_sockaddr *dst,
		      int32_t *owner);
void ur_shm_area_put(struct ur_shm *s);

/* udp.c sent a doorbell for a ring put (counted in the stats). */
void ur_shm_note_doorbell(struct ur_shm *s);

/* Adds the shm_* counters to st. */
void ur_shm_stats(const struct ur_shm *s, struct ur_link_stats *st);

#endif
