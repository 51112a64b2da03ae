/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A debug-only event trace of the progress model: which thread received,
 * slept, armed, rang a doorbell, and when. Compiled out unless the build
 * sets UROCE_TRACE (cmake -DUROCE_TRACE=ON); then UROCE_TRACE=<path> makes
 * each process write its events to <path>.<pid> at exit, one line each
 * (monotonic ns, thread id, event, two arguments), for tools/trace_merge.py
 * to lay the two sides of a same-host pair side by side.
 */
#ifndef UR_UTIL_TRACE_H
#define UR_UTIL_TRACE_H

#include <stddef.h>
#include <stdint.h>

enum ur_trace_ev {
	UR_TR_TX,		/* a: dest QPN << 8 | opcode, b: PSN */
	UR_TR_RX,		/* a: QPN << 8 | opcode, b: PSN */
	UR_TR_WAIT,		/* a: deaf, b: timeout ns from now (0: none) */
	UR_TR_WOKE,		/* a: revents bits (1 wake, 2 timer, 4 fd) */
	UR_TR_ARM_HIT,		/* the arm found datagrams: no sleep */
	UR_TR_DOORBELL,		/* a producer rang a sleeping owner */
	UR_TR_BURST,		/* a: datagrams, b: 1 thread, 0 poll_cq */
	UR_TR_TRYLOCK_FAIL,	/* poll_cq found rx_lock taken */
	UR_TR_DEADLINE,		/* a: QPN, b: what ran (1 kick, 2 rto/rnr) */
	UR_TR_RETRANSMIT,	/* a: QPN, b: PSN it goes back to */
	UR_TR_YIELD,		/* poll_cq gave up the CPU */
	UR_TR_WAKE_BY,		/* a timerfd set: a = ns from now */
	UR_TR_N
};

#ifdef UR_TRACE_EVENTS
void ur_trace(enum ur_trace_ev ev, uint64_t a, uint64_t b);
/* a datagram's BTH (its first 12 bytes): dest QPN << 8 | opcode, PSN */
static inline void ur_trace_bth(enum ur_trace_ev ev, const void *data,
				size_t len)
{
	const uint8_t *b = data;

	if (len < 12)
		return;
	ur_trace(ev,
		 ((uint64_t)b[5] << 24 | (uint64_t)b[6] << 16 |
		  (uint64_t)b[7] << 8) | b[0],
		 (uint64_t)b[9] << 16 | (uint64_t)b[10] << 8 | b[11]);
}
#else
static inline void ur_trace(enum ur_trace_ev ev, uint64_t a, uint64_t b)
{
	(void)ev;
	(void)a;
	(void)b;
}

static inline void ur_trace_bth(enum ur_trace_ev ev, const void *data,
				size_t len)
{
	(void)ev;
	(void)data;
	(void)len;
}
#endif

#endif
