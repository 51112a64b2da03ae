/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The link's facade (link.h), what the engine calls: the socket backend
 * (udp.c) with the fault filter (fault.c) in front of it while a fault
 * spec is active. Without one, a send or receive is one relaxed load away
 * from the socket.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "link/fault.h"
#include "link/udp.h"
#include "util/compiler.h"

struct ur_link {
	struct ur_udp *udp;
	struct ur_fault *fi;		/* always there; injects once configured */
	atomic_bool fi_on;		/* fast-path check: route through fi */
	int fault_fd;			/* the filter's pollable fd, or -1 */
};

int ur_link_open(const struct ur_link_config *cfg, struct ur_link **out)
{
	const char *spec = cfg->fault;
	bool faults = spec && *spec;
	struct ur_link *l;
	int rc;

	*out = NULL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	if (faults) {	/* link.h: the stage sees every datagram */
		struct ur_link_config one = *cfg;

		one.rx_queues = 1;
		rc = ur_udp_open(&one, &l->udp);
	} else {
		rc = ur_udp_open(cfg, &l->udp);
	}
	/* with faults, a poller must also wake for held datagrams */
	rc = rc ?: ur_fault_create(l->udp, faults, &l->fi);
	rc = rc ?: (faults ? ur_link_set_fault(l, spec) : 0);
	if (rc) {
		ur_link_close(l);
		return rc;
	}
	l->fault_fd = faults ? ur_fault_fd(l->fi) : -1;
	*out = l;
	return 0;
}

void ur_link_close(struct ur_link *l)
{
	if (!l)
		return;
	if (l->fi)
		ur_fault_destroy(l->fi);
	ur_udp_close(l->udp);
	free(l);
}

int ur_link_fd(const struct ur_link *l)
{
	return l->fault_fd >= 0 ? l->fault_fd : ur_udp_fd(l->udp);
}

unsigned int ur_link_rx_queues(const struct ur_link *l)
{
	return ur_udp_rx_queues(l->udp);
}

int ur_link_fd_q(const struct ur_link *l, unsigned int q)
{
	return q ? ur_udp_fd_q(l->udp, q) : ur_link_fd(l);
}

uint32_t ur_link_max_payload(const struct ur_link *l)
{
	return ur_udp_max_payload(l->udp);
}

int ur_link_local_addr(const struct ur_link *l, unsigned int i,
		       union ur_sockaddr *out)
{
	return ur_udp_local_addr(l->udp, i, out);
}

int ur_link_join(struct ur_link *l, const union ur_sockaddr *group)
{
	return ur_udp_join(l->udp, group);
}

int ur_link_leave(struct ur_link *l, const union ur_sockaddr *group)
{
	return ur_udp_leave(l->udp, group);
}

int ur_link_set_fault(struct ur_link *l, const char *spec)
{
	int rc = ur_fault_configure(l->fi, spec);

	if (rc < 0)
		return rc;
	atomic_store(&l->fi_on, rc > 0);
	return 0;
}

int ur_link_send(struct ur_link *l, const struct ur_txd *d, unsigned int n)
{
	if (!n)
		return 0;
	if (unlikely(atomic_load_explicit(&l->fi_on, memory_order_relaxed)))
		return ur_fault_send(l->fi, d, n);
	return ur_udp_send(l->udp, d, n);
}

int ur_link_recv(struct ur_link *l, struct ur_rxd *d, unsigned int max)
{
	if (unlikely(atomic_load_explicit(&l->fi_on, memory_order_relaxed)))
		return ur_fault_recv(l->fi, d, max);
	return ur_udp_recv(l->udp, d, max);
}

int ur_link_recv_q(struct ur_link *l, unsigned int q, struct ur_rxd *d,
		   unsigned int max)
{
	return q ? ur_udp_recv_q(l->udp, q, d, max) : ur_link_recv(l, d, max);
}

bool ur_link_rx_maybe_q(struct ur_link *l, unsigned int q)
{
	return q ? ur_udp_rx_maybe_q(l->udp, q) : ur_link_rx_maybe(l);
}

bool ur_link_rx_maybe(struct ur_link *l)
{
	if (unlikely(atomic_load_explicit(&l->fi_on, memory_order_relaxed)))
		return true;
	return ur_udp_rx_maybe(l->udp);
}

bool ur_link_wait_arm(struct ur_link *l)
{
	return ur_udp_wait_arm(l->udp);
}

void ur_link_wait_disarm(struct ur_link *l)
{
	ur_udp_wait_disarm(l->udp);
}

void *ur_link_own_area(struct ur_link *l)
{
	return ur_udp_own_area(l->udp);
}

void *ur_link_peer_area_get(struct ur_link *l, const union ur_sockaddr *dst,
			    int32_t *owner)
{
	return ur_udp_peer_area_get(l->udp, dst, owner);
}

void ur_link_peer_area_put(struct ur_link *l)
{
	ur_udp_peer_area_put(l->udp);
}

bool ur_link_is_ring(struct ur_link *l, const union ur_sockaddr *dst)
{
	return ur_udp_is_ring(l->udp, dst);
}

uint32_t ur_link_ring_gen(const struct ur_link *l)
{
	return ur_udp_ring_gen(l->udp);
}

bool ur_link_faulty(const struct ur_link *l)
{
	return atomic_load_explicit(&((struct ur_link *)l)->fi_on,
				    memory_order_relaxed);
}

uint64_t ur_link_tx_blocked(const struct ur_link *l)
{
	return ur_udp_tx_blocked(l->udp);
}

void ur_link_get_stats(const struct ur_link *l, struct ur_link_stats *st)
{
	memset(st, 0, sizeof(*st));
	ur_udp_stats(l->udp, st);
	ur_fault_stats(l->fi, st);
}
