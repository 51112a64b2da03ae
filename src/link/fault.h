/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * link/'s fault injection filter (drop, duplicate, reorder, corrupt,
 * delay, CE marks; the spec syntax is in fault.c, its parser in
 * fault_spec.c). It sits between the facade
 * (link.c) and the socket backend (udp.h) and calls only the backend.
 * Nothing outside link/ includes this.
 */
#ifndef UR_LINK_FAULT_H
#define UR_LINK_FAULT_H

#include <stdbool.h>

#include "link/udp.h"

struct ur_fault;

/*
 * A filter in front of udp, injecting nothing until configured. With
 * pollable, ur_fault_fd() is an epoll fd over the socket and a timerfd
 * that fires when a held datagram is due, so a caller sleeping in poll()
 * wakes up to call ur_fault_recv(), which lets it out.
 */
int ur_fault_create(struct ur_udp *udp, bool pollable, struct ur_fault **out);
void ur_fault_destroy(struct ur_fault *f);
/* The epoll fd of a pollable filter, -1 otherwise. */
int ur_fault_fd(const struct ur_fault *f);

/* Parses spec; returns 1 if it enables any fault, 0 if none, -EINVAL on
 * a syntax error (logged, old config kept). Held tx datagrams are sent
 * and held rx datagrams dropped first. */
int ur_fault_configure(struct ur_fault *f, const char *spec);

/* ur_link_send()/ur_link_recv() through the filter; both also release
 * held datagrams that are due. */
int ur_fault_send(struct ur_fault *f, const struct ur_txd *d, unsigned int n);
int ur_fault_recv(struct ur_fault *f, struct ur_rxd *d, unsigned int max);

/* Fills the fi_* counters of st. */
void ur_fault_stats(const struct ur_fault *f, struct ur_link_stats *st);

#endif
