/* SPDX-License-Identifier: BSD-2-Clause */
/* Helpers of the link/ unit tests (test_link.c, test_shm.c). */
#ifndef UR_TESTS_UNIT_LINK_TL_UTIL_H
#define UR_TESTS_UNIT_LINK_TL_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "link/link.h"

/* A random 127/8 address (never .0.0.0 or .255.255.255) with port. */
void tl_rand_v4(union ur_sockaddr *s, uint16_t port);
/* One descriptor of len bytes from buf (a GSO train with gso). */
int tl_send_buf(struct ur_link *l, const union ur_sockaddr *dst,
		const void *buf, size_t len, uint16_t gso);
/* Receives what l has within ms: polls its fd in 1 ms slices, calling
 * ur_link_recv() between them (which is what lets held datagrams out of
 * a fault stage configured after open). */
int tl_recv_wait(struct ur_link *l, struct ur_rxd *d, unsigned int max,
		 int ms);

#endif
