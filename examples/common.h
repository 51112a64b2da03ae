/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What every example needs and none of them is about: an RC connection set
 * up through rdma_cm (librdmacm), registered buffers, waiting for a
 * completion with a deadline, and a byte pattern to check payloads by.
 *
 * Only the public verbs and rdma_cm API is used, so the examples run
 * unchanged on uroce, on Linux rxe and on a RoCE NIC. rdma_cm chooses the
 * device, the port and the GID index (and so the GRH) from the IP address,
 * which is why none of that appears in the examples.
 */
#ifndef UROCE_EXAMPLES_COMMON_H
#define UROCE_EXAMPLES_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

/* The most private data a connect (REQ) may carry through rdma_cm. */
#define EX_PDATA_MAX 56
/* How long a client keeps trying to reach a server that is not up yet. */
#define EX_CONNECT_TRY_MS 10000
/* How long any wait for a completion or an event may take. */
#define EX_WAIT_MS 15000

struct ex_conn;

/* The queues an example wants on its QP. */
struct ex_caps {
	uint32_t send_wr;	/* send queue depth */
	uint32_t recv_wr;	/* receive queue depth (0: no receives posted) */
	uint32_t inline_data;	/* max_inline_data asked for */
	uint32_t send_sge;	/* gather entries per send WR (0: 1) */
	int cqe;		/* CQ size (0: send_wr + recv_wr) */
	bool events;		/* a completion channel, for ex_wait_wc_event */
	/*
	 * Called on each new QP right before the connect or the accept, to
	 * post its first receives: a client that tries again after a
	 * refusal gets a fresh QP, which needs them too.
	 */
	int (*on_qp)(struct ex_conn *c, void *arg);
	void *arg;
};

/* One end of an RC connection. */
struct ex_conn {
	struct rdma_event_channel *ec;
	struct rdma_cm_id *id;		/* the connection (client, or accepted) */
	struct rdma_cm_id *listen;	/* server: the listening id */
	struct ibv_pd *pd;
	struct ibv_comp_channel *chan;	/* with caps.events only */
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ex_caps caps;
	uint32_t max_inline;		/* what the QP was given */
	uint8_t peer[EX_PDATA_MAX + 140]; /* private data from the peer */
	uint8_t peer_len;
	uint8_t rd_init, rd_resp;	/* READ/atomic depths to offer or accept */
	bool connected, own_pd, own_ec;
	uint64_t sends_done;		/* send-queue completions ex_wait_recv saw */
	struct ibv_wc stash[16];	/* receives ex_wait_sends met */
	int nstash;
	const char *host, *port;	/* client: where it connects */
};

/* Server: listen on host:port (host NULL: every address). */
int ex_listen(struct ex_conn *l, const char *host, const char *port);
/*
 * Server: wait for the next connect request on l's listener and build the
 * connection's PD, CQ and QP on the device it came in on (reusing pd when
 * it is not NULL, so that several connections share memory). The peer's
 * private data lands in c->peer. Then register memory and ex_accept().
 */
int ex_get_request(struct ex_conn *l, struct ex_conn *c,
		   const struct ex_caps *caps, struct ibv_pd *pd);
/* Server: accept c with pdata as the reply's private data. */
int ex_accept(struct ex_conn *c, const void *pdata, uint8_t len);

/*
 * For a server that takes several connections at once and so handles the
 * listener's events itself: the next event within ms (NULL, said, on a
 * timeout), the connection of a CONNECT_REQUEST event (as
 * ex_get_request; it acknowledges the event), and an accept that does not
 * wait for ESTABLISHED.
 */
struct rdma_cm_event *ex_next_event(struct rdma_event_channel *ec, int ms);
int ex_from_request(struct ex_conn *l, struct ex_conn *c,
		    struct rdma_cm_event *ev, const struct ex_caps *caps,
		    struct ibv_pd *pd);
int ex_accept_nowait(struct ex_conn *c, const void *pdata, uint8_t len);

/*
 * Client: resolve host:port to a device and build PD, CQ and QP on it,
 * retrying for EX_CONNECT_TRY_MS while the server is not there yet. Then
 * register memory and ex_connect().
 */
int ex_resolve(struct ex_conn *c, const char *host, const char *port,
	       const struct ex_caps *caps);
/* Client: connect, with pdata as private data; the reply's goes to c->peer. */
int ex_connect(struct ex_conn *c, const void *pdata, uint8_t len);

/* Wait for the peer to disconnect (DISCONNECTED on c's id). */
int ex_wait_disconnect(struct ex_conn *c);
/*
 * Disconnect (if connected) and free everything of c but its MRs.
 *
 * Which end disconnects matters. A WR completes only once its ACK came;
 * if that ACK was lost, the WR is sent again after a timeout, and should
 * the peer have disconnected meanwhile (it had the message, so it was
 * done), the WR completes with a flush error instead. So one end
 * disconnects once all its own WRs completed, and the other, which waits
 * with ex_wait_disconnect(), must not wait for a completion it has
 * already got an answer for: the answer proves the delivery.
 */
void ex_close(struct ex_conn *c);

/* Page-aligned zeroed memory of len bytes registered with access. */
struct ibv_mr *ex_reg(struct ibv_pd *pd, size_t len, int access);
void ex_dereg(struct ibv_mr *mr);

/* Post one receive of [addr, addr+len) with lkey. */
int ex_post_recv(struct ex_conn *c, void *addr, uint32_t len, uint32_t lkey,
		 uint64_t wr_id);
/*
 * Post one send-queue WR: opcode, local buffer, remote address and rkey
 * (RDMA ops), flags (IBV_SEND_SIGNALED, IBV_SEND_INLINE...).
 */
int ex_post_send(struct ex_conn *c, enum ibv_wr_opcode op, void *addr,
		 uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		 unsigned int flags, uint64_t wr_id);

/*
 * Busy-poll c's CQ until n completions are in wc[], each checked for
 * IBV_WC_SUCCESS; -1 (said on stderr) on an error status or after
 * EX_WAIT_MS without one.
 */
int ex_wait_wc(struct ex_conn *c, struct ibv_wc *wc, int n);
/* The same, sleeping on the completion channel instead of spinning. */
int ex_wait_wc_event(struct ex_conn *c, struct ibv_wc *wc, int n);
/*
 * Wait for the next receive completion (into *wc), counting the send-queue
 * completions met on the way in c->sends_done: for the examples whose
 * send and receive queues share one CQ.
 */
int ex_wait_recv(struct ex_conn *c, struct ibv_wc *wc);
/*
 * Wait until c->sends_done reaches n. A receive met on the way is kept for
 * ex_wait_recv: the peer may answer a SEND before its sender has seen the
 * ACK (when the ACK was lost, the answer itself acknowledges the SEND).
 */
int ex_wait_sends(struct ex_conn *c, uint64_t n);

/* Fill or check buf with the bytes of stream seed from offset off. */
void ex_fill(void *buf, size_t len, uint64_t seed, uint64_t off);
/* The first offset where buf differs from the stream, or -1. */
long ex_check(const void *buf, size_t len, uint64_t seed, uint64_t off);

/* Monotonic time in nanoseconds. */
uint64_t ex_now_ns(void);
/* Called in a loop that polls memory: yields the CPU now and then. */
void ex_relax(unsigned long *spins);
/* Say what went wrong (printf-like) on stderr, prefixed by the program. */
void ex_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Parse a number with an optional k/M/G suffix (powers of 1024). */
int ex_parse_size(const char *s, uint64_t *out);

#endif
