/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The engine's tunables, each with the reason for its value. Protocol
 * facts (opcodes, the RNR timer table, timeout encoding) are not here:
 * they come from the IBA and live with the code or in wire/; run-time
 * settings (UROCE_*) are parsed by util/config.c.
 */
#ifndef UR_ENGINE_PARAMS_H
#define UR_ENGINE_PARAMS_H

#include "obj/limits.h"

/* ---- batching: system calls per packet ---- */

/* Packets per ur_link_send() (one sendmmsg): enough to amortize the
 * system call over a window's burst, small enough that a QP's batch
 * (embedded in its transport state) stays a few tens of KB. */
#define UR_TX_BATCH 32
/* Datagrams per ur_link_recv() (one recvmmsg): a full batch is read again
 * at once, so this bounds only the stack of buffers, not throughput. */
#define UR_RX_BATCH 64
/* Expired QPs the progress stage handles per visit to the timer heap;
 * the rest wait for its next loop (it never sleeps while one is due). */
#define UR_TIMER_BATCH 64

/* ---- one packet ---- */

/* Payload pieces of one packet: every SGE of a WQE (UR_MAX_SGE) may land
 * in it (an SGE is one piece: registered memory is contiguous in our
 * address space); two spare. */
#define UR_TX_PAY_IOV (UR_MAX_SGE + 2)
/* Room for BTH and the largest extension headers (RETH+IETH/ImmDt or
 * AtomicETH or DETH+ImmDt), rounded up. */
#define UR_HDR_MAX 64

/* ---- UDP GSO trains ---- */

/* Packets with more payload pieces than this go alone: a train's iovecs
 * are copied end to end into one array of UR_TX_BATCH * this. */
#define UR_GSO_MAX_IOV 4
/* One UDP_SEGMENT train: under the 64 KiB the kernel accepts per send,
 * with room for the headers it adds. */
#define UR_GSO_MAX_BYTES 65000

/* ---- the RC requester's window ---- */

/* Unacknowledged PSNs one QP may have: 512 packets of 4 KiB (2 MiB) keep
 * a loopback pipe full; UR_NIC_WINDOW_PSNS bounds many QPs together. */
#define UR_WINDOW_PSNS 512
/* Unacknowledged PSNs all of a NIC's RC QPs together may have, shared
 * evenly among those that have any (cc.c): every QP of a peer process
 * lands in its one receive buffer, and sixteen full windows (perftest
 * -q 16: 32 MiB) overflowed it into go-back-Ns and 67 ms timeouts. Half
 * that 8 MiB buffer; one QP alone keeps its UR_WINDOW_PSNS. */
#define UR_NIC_WINDOW_PSNS (2 * UR_WINDOW_PSNS)
/* AckReq at least every this many packets, so the responder's ACKs open
 * the window before it is exhausted (and the lazy doorbell can batch). */
#define UR_ACKREQ_EVERY 32
/* Responses asked for by one READ request: a large READ goes out as
 * several requests so the window bounds READ responses in flight too. */
#define UR_READ_CHUNK_PKTS 64
/* READ responses placed past a lost one are marked by PSN in a ring this
 * long (comp_read.c), a power of two: the window keeps requests within two
 * windows of the oldest missing response (cc.c, ur_cc_window_full()), and a
 * response further ahead makes the completer go back N instead. */
#define UR_RD_SEEN_PSNS (2 * UR_WINDOW_PSNS)
/* The window of a new connection, grown by slow start: a first burst of
 * UR_WINDOW_PSNS (2 MiB) into a shallow queue (a 48 KB tbf) loses most of
 * it; 10 packets, as TCP's initial window, fit one, and loopback reaches
 * the full window within a few round trips. */
#define UR_CWND_INIT 10
/* A NAK after this many windows of ACKed PSNs since the last decrease is
 * a rare loss (cc.c): 4 tells a queue that overflows each time the window
 * reaches it (a loss every window or two) from 1 % random loss at the
 * window that loss rate leaves (a loss every 100 PSNs, some 25 PSNs). */
#define UR_CC_RARE_LOSS_WINDOWS 4
/* A NAK answered by resending the one lost packet (comp.c) takes this
 * fraction of the window off: one loss among packets that arrived is
 * random loss more often than an overflowing queue, whose losses come in
 * runs and end in a go-back-N. Kept small so that 1 % of random loss
 * leaves a window of some 40 PSNs (docs/benchmarks.md). */
#define UR_CC_RESEND_CUT 16
/* A requester that found its responder dropping what comes past a gap
 * tries resending one packet again after this many NAKs: what it found
 * may have been a run of losses (comp.c). */
#define UR_RESEND_RETRY_NAKS 8
/* Runs of lost READ responses the completer can have asked for again at
 * once, each alone (comp_read.c); one more and it goes back N instead. */
#define UR_RD_ASKS 8
/* The window after a timeout, and its floor after losses (TCP restarts
 * at a few segments for the same reason: a retransmission must not be the
 * burst a shallow queue just dropped). */
#define UR_CWND_MIN 4

/* ---- ECN and CNPs (ecn.c, cc.c) ---- */

/* A QP sends at most one CNP per this long, however many CE-marked
 * packets it receives: DCQCN's notification point (SIGCOMM 2015) uses
 * 50 us, the time a sender's cut takes to show in the marking queue; a
 * CNP per marked packet would be a second flood into a congested path. */
#define UR_CNP_INTERVAL_NS 50000ull
/* A requester's window shrinks for a CNP at most once per this long, as
 * DCQCN's reaction point cuts its rate at most once per period, and at
 * most once per congestion episode (cc.c): NICs may send a CNP per few
 * microseconds, and a cut shows in the queue only a round trip later. */
#define UR_CC_CNP_INTERVAL_NS 50000ull
/* DCQCN's alpha, the share of the window a CNP takes (half of it), in
 * units of this; it starts at 1 (a CNP halves the window)... */
#define UR_CC_ALPHA_ONE 1024u
/* ... and moves by 1/2^this toward 1 at every cut, toward 0 at every
 * window of PSNs ACKed without one (DCQCN: g = 1/256 per 55 us; a window
 * is a round trip, some tens of DCQCN's periods on a loaded host, hence
 * the larger gain). Sparse marks then cut little, dense ones halve. */
#define UR_CC_ALPHA_SHIFT 4
/* After a cut the window climbs back half the way to where it was, once
 * per window of ACKed PSNs, this many times (DCQCN's fast recovery, F = 5
 * stages), then grows by one per window as after a loss. */
#define UR_CC_CNP_RECOVERY_STEPS 5
/* ---- pacing (cc.c) ---- */

/* A paced requester releases its window at gain/4 x cwnd / srtt: twice
 * that in slow start (the window doubles per round trip, so must the
 * rate), 5/4 above ssthresh (room for the window to grow by a PSN per
 * round trip and for the round trip to shrink as the queue drains). */
#define UR_PACE_GAIN_SS 8
#define UR_PACE_GAIN_CA 5
/* The credit a paced QP may save up, in time at its rate: what leaves
 * at once after a pause. 200 us at 1.25 Gbit/s is 31 KB, inside a 48 KB
 * queue; a wait lasts until half of it is back, so a loaded host wakes
 * the requester some 10 000 times a second per paced QP, not per packet. */
#define UR_PACE_BURST_NS 200000ull
/* What a packet costs on the wire beyond its payload: Ethernet 14, IPv4
 * 20, UDP 8, BTH 12, ICRC 4 (a RETH or IPv6 adds a little more). */
#define UR_PACE_HDR_BYTES 58u
/* Rates are capped here (bytes per second, 8 Tbit/s): far above any
 * link, and it keeps the arithmetic inside 64 bits. */
#define UR_PACE_RATE_MAX 1000000000000ull

/* Send WQEs the requester handles per run before it lets the caller go
 * (the rest follows on the next ACK, deadline or doorbell). */
#define UR_REQ_BUDGET 4096

/* ---- loss recovery ---- */

/* The recovery probe fires after 3 smoothed round trips, at least this
 * long: a loaded 2-core host delays threads by hundreds of microseconds,
 * and a probe below that would resend what is only late. */
#define UR_PROBE_MIN_NS 500000ull
/* ... and this long before any round trip was measured. */
#define UR_PROBE_INIT_NS 4000000ull
/* The probe interval doubles per probe without progress, up to 2^this:
 * a host whose round trips grew does not probe itself into a storm. */
#define UR_PROBE_MAX_BACKOFF 6

/* ---- receive shards (docs/design.md, "Receive shards") ---- */

/* Shards a device may have (UROCE_RX_SHARDS; the link's UR_LINK_MAX_RXQ;
 * poll masks are 64 bits). */
#define UR_MAX_RX_SHARDS 16
/* Unset UROCE_RX_SHARDS: as many as the process may run on cores, at most
 * this many (nic.c); UR_RX_SHARDS_DEFAULT_MAX is a guess at where more
 * sockets per address stop paying for the wake-ups they add. */
#define UR_RX_SHARDS_DEFAULT_MAX 4
/* A deadline that had to flush a QP's held receive WQE found its shard's
 * lock taken (only tried there): it comes back this much later. */
#define UR_SHARD_RETRY_NS 50000ull

/* ---- the progress thread and a polling application ---- */

/* An application that spun on its CQs this recently runs the receive path
 * itself: the progress thread stops watching the socket meanwhile, as a
 * second thread woken per datagram would steal its core (UROCE_QUIET_US
 * overrides; util/config.c parses it), unless one-sided requests come in
 * (UR_ONE_SIDED_HOLD_NS below). */
#define UR_APP_POLL_QUIET_NS 500000ull
/* The progress thread polls this long after traffic before it sleeps: 0,
 * as on 2 cores spinning threads starve the applications (UROCE_SPIN_US
 * overrides). */
#define UR_RX_SPIN_NS 0ull
/* With UROCE_BUSY_POLL=1 it polls this long after traffic instead: a
 * thread that spins for good holds a core its application may need (on
 * 2 cores a 64 B ib_write_lat pair is 4 spinners, and every round
 * waited for a scheduler tick, 4-10 ms); one that stops spinning this
 * long after the last datagram leaves the core within that time and is
 * woken like a sleeping one. A stream's datagrams come microseconds
 * apart; a round trip's gap here (20-50 us) is better slept through on
 * 2 cores (64 B ib_write_lat typical 33 us with 10 us of spin, 75 with
 * 50, 23 sleeping). Where cores are free, UROCE_SPIN_US spins longer. */
#define UR_BUSY_SPIN_NS 10000ull
/* Polls closer than this count as a spin ... */
#define UR_APP_POLL_GAP_NS 20000ull
/* ... and this many in a row make one: an application that polls once
 * and then blocks for an event never counts as spinning. */
#define UR_APP_POLL_SPIN 16
/* A poll that ends the application's wait yields the CPU at most once in
 * this long (ur_engine_poll_done()): a bound on the system calls a stream
 * of completions costs, long against the syscall, short against a round
 * trip. */
#define UR_POLL_YIELD_GAP_NS 20000ull
/* A WRITE, READ or atomic received this recently keeps the progress
 * thread on the socket even while the application spins on a CQ: such a
 * request makes no CQE, so the application may be waiting for the next
 * one on memory (ib_write_lat), and only the thread can execute it. Long
 * against a round trip: a peer's one-sided traffic comes in streams. */
#define UR_ONE_SIDED_HOLD_NS 100000000ull
/* A requester that stopped at its window this recently may still be
 * waiting for the peer's responses, and a poll_cq that finds nothing then
 * gives up the CPU (peer_wait_yield(), progress.c). Long enough to cover
 * the waits of the 1 % loss trace (a recovery probe, a peer thread behind
 * another on its core: p50 1 ms, p90 2-4 ms), short enough that a phase
 * of latency tests after a bandwidth phase soon polls without yields. */
#define UR_REQ_BLOCKED_HOLD_NS 5000000ull

/* ---- the responder ---- */

/* Requests a responder keeps when they come past a gap (reorder.c): a
 * window behind the lost packet and the window a requester may send on
 * while it resends that packet alone (req.c, req_resend_one()). A power of
 * two: the store is a ring indexed by PSN. */
#define UR_REORDER_PSNS (2 * UR_WINDOW_PSNS)
/* ... and at most this many bytes of them per device, so a peer's window
 * on each of many QPs cannot take the host's memory. */
#define UR_REORDER_MAX_BYTES (64u << 20)
/* Buffers a device keeps for its stores' next gaps once drained, up to
 * this many bytes: a gap keeps a window of requests, and allocating and
 * freeing them each time made the heap grow and shrink with every loss
 * (page faults and zeroed pages on the receive path: a 1 % loss
 * ib_write_bw responder spent 2.4 times the CPU per packet of a loss-free
 * one). */
#define UR_REORDER_SPARE_BYTES (8u << 20)

/* READ and atomic results kept per QP for replay: as many as a requester
 * may have outstanding (max_dest_rd_atomic's limit), so a retried request
 * always finds its result. */
#define UR_NUM_RES UR_MAX_QP_RD_ATOM

/*
 * Same-host copies (direct.c). A copy holds its MR entry for at most one
 * chunk: a deregistration waits for at most one chunk's copy (1 MiB, about
 * 0.1 ms at this machine's process_vm_writev speed). The target's pid is
 * proven again this often: a pid can only be reused after the whole pid
 * space wrapped, which takes far longer than this.
 */
#define UR_DX_CHUNK (1u << 20)
/*
 * WRITEs posted together (a post list) leave in one process_vm_writev: up
 * to this many WQEs of at most UR_DX_BATCH_BYTES each, with at most
 * UR_DX_BATCH_IOV local pieces. The system call, not the bytes, is what
 * a small WRITE costs.
 */
#define UR_DX_BATCH 32u
#define UR_DX_BATCH_BYTES (64u * 1024u)
#define UR_DX_BATCH_IOV 128u
#define UR_DX_REVERIFY_NS (10ull * 1000000ull)

#endif
