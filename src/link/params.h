/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The link's tunables, each with why it has its value. Changing one
 * changes behaviour only, never the wire; the benchmarks in
 * docs/benchmarks.md were taken with these.
 */
#ifndef UR_LINK_PARAMS_H
#define UR_LINK_PARAMS_H

/*
 * Socket buffers (what ur_link_config's 0 means; the engine uses these).
 * Receive: 8 MiB, room for what the peers' send windows put in flight while
 * the progress thread is off the core, since a datagram the kernel drops
 * there costs a retransmission timeout. Send: 4 MiB, room for a burst of
 * 64 KiB GSO trains before sendmmsg() meets ENOBUFS. Both are capped by
 * net.core.[rw]mem_max unless the process has CAP_NET_ADMIN (the FORCE
 * options).
 */
#define UR_LINK_RCVBUF (8u << 20)
#define UR_LINK_SNDBUF (4u << 20)

/* A full socket buffer (EAGAIN/ENOBUFS) empties within microseconds: retry
 * this many times before the datagram counts as lost (RC retransmits it). */
#define UR_LINK_TX_RETRIES 16
/* Datagrams per sendmmsg(): one call per burst, a 64-entry stack array. */
#define UR_LINK_TX_CHUNK 64
/* iovecs of one datagram when a GSO train is cut by hand (no UDP_SEGMENT):
 * headers plus an SGE list of up to 32 entries fit. */
#define UR_LINK_MAX_IOV 64

/*
 * Receive slots, one per recvmmsg() entry. With GRO a slot may hold a
 * whole 64 KiB train, so fewer of them; without it a 9000-byte jumbo
 * datagram is the largest we expect. The arena is mmap'd, so slots never
 * filled cost no memory.
 */
#define UR_LINK_RX_SLOTS 64
#define UR_LINK_RX_SLOTS_GRO 32
#define UR_LINK_RX_BUF 9216u
#define UR_LINK_RX_BUF_GRO 65536u
/* Control messages of one received datagram: pktinfo, TOS/tclass, TTL and
 * the GRO segment size fit with room to spare. */
#define UR_LINK_CMSG_SPACE 128

/* Fault injection (fault.c): a reordered datagram waits for the next one
 * in its direction at most this long, so a lone datagram still arrives. */
#define UR_FAULT_REORDER_MAX_NS (10ull * 1000000ull)
/* Datagrams taken from the socket per fault-stage receive. */
#define UR_FAULT_RAW_BATCH 64
/* The stage flattens each send descriptor into one scratch buffer before
 * cutting it into datagrams: a GSO train is at most 64 KiB (UDP's limit). */
#define UR_FAULT_SCRATCH 65536

/*
 * The same-host rings (shm.c). A slot carries one datagram: the largest
 * RoCEv2 datagram at the largest IB MTU (4096 payload + BTH, the largest
 * extended headers, ICRC: under 4200 bytes) fits, and a larger one (a
 * path MTU beyond 4096) goes by UDP. 2048 slots, about 9 MiB of tmpfs per
 * process, allocated when the device opens (a /dev/shm too full for it
 * leaves the device on UDP): room for what the peers' send windows put
 * in flight while the owner is off the core, as the UDP receive buffer
 * above.
 */
#define UR_SHM_SLOTS 2048u
#define UR_SHM_SLOT_DATA 4352u
/* Peers whose rings a link keeps mapped; further ones go by UDP. */
#define UR_SHM_MAX_PEERS 256u
/* An address with no ring (a remote host, a peer with UROCE_LINK=udp) is
 * looked up again after this long, so a peer that opens its device later
 * still moves to the rings. */
#define UR_SHM_ABSENT_NS (1000ull * 1000000ull)
/* A receive tries the ring before the sockets but on every this-many-th
 * call: a socket tried first costs a recvmmsg that between two uroce
 * processes finds nothing nearly always (about 165 ns here, once per
 * datagram received when the two alternated), and every this many calls
 * a stream through the ring still lets a socket's datagrams in. A ring
 * found empty hands over to the sockets at once. */
#define UR_SHM_SOCK_TURN 8u
/* Stale rings of dead processes removed per ur_shm_open(). */
#define UR_SHM_SWEEP_MAX 256u

#endif
