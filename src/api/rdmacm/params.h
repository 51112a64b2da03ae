/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * librdmacm's tunables, each with why it has its value (the CM's timing is
 * also described in docs/design.md, "Connection manager"). rsockets'
 * protocol sizes, which must match rdma-core's, stay in
 * rsocket/rsocket_priv.h.
 */
#ifndef UR_API_RDMACM_PARAMS_H
#define UR_API_RDMACM_PARAMS_H

/* CM timing, in the IBA's 4.096 us * 2^n encoding where a MAD carries it. */
#define UR_CM_RESPONSE_TIMEOUT 18	/* 4.096 us * 2^18 = 1.07 s per try */
#define UR_CM_MAX_RETRIES 6		/* REQ/REP/DREQ sent at most 1 + 6 times */
#define UR_CM_MRA_TIMEOUT 24		/* what our MRA asks for: 68.7 s */
#define UR_CM_ACK_TIMEOUT 14		/* RC local ACK timeout: 67 ms */
#define UR_CM_TARGET_ACK_DELAY 10	/* REP: what our responder adds, 4 ms */

/* GID entries of a device the CM reads at start: uroce's devices have 16
 * (the port's gid_tbl_len), one per UROCE_ADDRS address; a device with a
 * longer table is served on its first 16. */
#define UR_CM_MAX_GIDS 16

/* QP1 agent queues: MADs are tiny and answered at once; 64 receives absorb
 * a burst of connects, 128 sends the retransmissions of many ids. */
#define UR_CM_RECV_BUFS 64
#define UR_CM_AGENT_SEND_DEPTH 128

/* A REQ to a loopback address nobody has published yet waits this long
 * for a listener that is about to appear (msg.c, cma_send_req), looking
 * again every UR_CM_RV_POLL_NS. A server and a client started together
 * on a loaded machine (two CPU hogs, six rping pairs at once) had the
 * server listen up to 0.56 s after the client's rdma_connect (27 of 60
 * clients waited at all; with a 0.5 s wait, 7 of 60 were refused): 2 s
 * is about 4 times that, and what a client of a port nobody listens on
 * waits for its REJECTED. */
#define UR_CM_RV_WAIT_NS (2000ULL * 1000000)
#define UR_CM_RV_POLL_NS (20ULL * 1000000)

/* At exit, the last DREQs get this long to be answered (struct
 * cma_linger): about three tries at UR_CM_RESPONSE_TIMEOUT, and a bound
 * on how long a process may hang in its destructor. */
#define UR_CM_LINGER_MAX_NS (3ULL * 1000000000ULL)

/* The timeout the library's own address and route resolution uses
 * (rdma_create_ep, rsockets' connect): resolution is local, so 2 s is
 * only a bound for a loaded host. */
#define UR_CM_RESOLVE_MS 2000

/* rsockets' bounded sleeps: another thread of the same socket may take
 * the CQ event this one waits for, so nobody sleeps longer than this
 * without looking. */
#define UR_RSK_WAKE_MS 200

/* rsockets' keepalive thread (rsocket/rsocket_keepalive.c): a socket whose
 * lock is taken is looked at again this soon (the thread never waits for
 * it); the thread sleeps at most this long, so a socket's new TCP_KEEPIDLE
 * takes effect within a minute; without /proc, TCP's default keepalive
 * time. */
#define UR_RSK_KA_BUSY_MS 100
#define UR_RSK_KA_MAX_SLEEP_MS 60000
#define UR_RSK_KA_DEFAULT_S 7200

/* A datagram rsocket's peers (rsocket/rsocket_dgwire.c): each holds an AH,
 * and any UDP sender with a well-formed header gets one, so a bound (ENOBUFS
 * beyond); and datagrams one poll of its UDP socket takes, so that a flood
 * there does not starve the UD queue. */
#define UR_RSD_MAX_DESTS 1024
#define UR_RSD_UDP_READS 64

#endif
