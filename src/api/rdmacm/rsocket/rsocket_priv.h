/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rsockets internals: a stream socket over one RC QP, speaking rdma-core's
 * rsocket wire protocol (its docs/rsocket) so that either end may be
 * rdma-core's librdmacm.
 *
 * The socket's number is the fd of its own rdma_cm event channel, so it is
 * a real, unique fd (as rdma-core's is). Connection set-up runs on that
 * channel through the public rdma_cm calls; a blocking call sleeps in
 * poll() on the channel fd and the CQ's completion channel fd, both kept
 * O_NONBLOCK, never inside a library call.
 *
 * Data moves by RDMA WRITE WITH IMMEDIATE into the peer's receive buffer;
 * the immediate is a 32-bit message: 3 bits of type, 29 of argument.
 * The receive buffer is offered in halves: the first in the connect private
 * data, each next one by an RDMA WRITE of an rsk_sge into the peer's
 * "target SGL" (two entries), followed by a credit message.
 */
#ifndef UR_API_RDMACM_RSOCKET_PRIV_H
#define UR_API_RDMACM_RSOCKET_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <rdma/rdma_cma.h>

#include "api/rdmacm/params.h"

/* Message types (bits 31:29 of the immediate) */
enum {
	RSK_OP_DATA = 0,		/* argument: bytes written */
	RSK_OP_WRITE = 2,		/* riowrite (local wr_id only, no imm) */
	RSK_OP_SGL = 4,			/* argument: new credit limit (sseq) */
	RSK_OP_IOMAP_SGL = 6,
	RSK_OP_CTRL = 7,		/* argument: RSK_CTRL_* */
};
enum {
	RSK_CTRL_DISCONNECT = 0,
	RSK_CTRL_KEEPALIVE = 1,
	RSK_CTRL_SHUTDOWN = 2,
};
#define RSK_MSG(op, arg) (((uint32_t)(op) << 29) | ((uint32_t)(arg) & 0x1FFFFFFF))
#define RSK_MSG_OP(m) ((uint32_t)(m) >> 29)
#define RSK_MSG_ARG(m) ((uint32_t)(m) & 0x1FFFFFFF)

#define RSK_WR_RECV (1ULL << 63)	/* wr_id: a receive (else: the msg) */

/* rdma-core's defaults and limits, so both ends size alike */
#define RSK_SGL_SIZE 2			/* target SGL entries */
#define RSK_CTRL_SLOTS 4		/* send queue entries kept for control */
#define RSK_SNDLOWAT 2048		/* least free send buffer to send */
#define RSK_MAX_XFER 65536		/* largest single RDMA write */
#define RSK_FIRST_XFER 2048		/* first write of a send; doubles */
#define RSK_QP_MIN 16
#define RSK_QP_MAX 0xFFFE
#define RSK_DEF_QP 384
#define RSK_DEF_INLINE 64
#define RSK_DEF_BUF (1U << 17)
#define RSK_CONN_VERSION 1
#define RSK_CONN_FLAG_NET 1		/* sender is big-endian */
#define RSK_CONN_FLAG_IOMAP 2

/* What the peer writes into our target SGL: in the writer's byte order. */
struct rsk_sge {
	uint64_t addr;
	uint32_t key;
	uint32_t length;
};

/* An iomap entry: where the peer lets us write its buffer at offset */
struct rsk_iomap {
	uint64_t offset;
	struct rsk_sge sge;
};

/* A buffer of ours that riomap exposed, in the peer's target iomap */
struct rsk_map {
	uint64_t offset;
	struct ibv_mr *mr;		/* NULL: the slot is free */
	bool sent;			/* written into the peer's iomap */
};

/* The REQ's and REP's private data (all big-endian) */
struct rsk_conn_data {
	uint8_t version;
	uint8_t flags;
	uint16_t credits;		/* our receive queue depth */
	uint8_t reserved[3];
	uint8_t target_iomap_size;
	struct rsk_sge target_sgl;	/* where the peer writes our SGEs */
	struct rsk_sge data_buf;	/* first half of our receive buffer */
};
_Static_assert(sizeof(struct rsk_conn_data) == 40, "rdma-core's layout");

enum rsk_state {
	RSK_INIT,
	RSK_BOUND,
	RSK_LISTENING,
	RSK_RESOLVING_ADDR,
	RSK_RESOLVING_ROUTE,
	RSK_CONNECTING,
	RSK_ACCEPTING,			/* REP sent: sends wait for the RTU */
	RSK_CONNECTED,			/* readable/writable say what is left */
	RSK_DISCONNECTED,		/* the peer or the CM ended it */
	RSK_CONNECT_ERROR,		/* err says why */
	RSK_ERROR,			/* a failed completion: err */
};

struct rsd;

struct rsk {
	int fd;				/* its number: chan->fd (a UDP socket's
					 * for SOCK_DGRAM) */
	struct rsd *dg;			/* SOCK_DGRAM's state; NULL: a stream */
	pthread_mutex_t lock;
	struct rdma_event_channel *chan;
	struct rdma_cm_id *id;
	enum rsk_state state;
	bool readable, writable;	/* not shut down in that direction */
	int err;			/* SO_ERROR */
	int fs_flags;			/* O_NONBLOCK */
	int fd_flags;
	int domain;

	/* options (before connecting) */
	uint32_t sbuf_size, rbuf_size;
	uint16_t sq_size, rq_size, sq_inline;
	uint64_t so_opts, tcp_opts, ipv6_opts;	/* 1 << optname when on */
	int keepalive_time;		/* TCP_KEEPIDLE; 0: the system's */
	int tos;
	int64_t last_send_ms;		/* CLOCK_MONOTONIC of our last post */

	/* verbs */
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	bool cq_armed;
	unsigned int unacked;
	struct ibv_mr *smr, *rmr, *tmr;
	uint8_t *sbuf, *rbuf;
	volatile struct rsk_sge *target_sgl;	/* written by the peer */
	volatile struct rsk_iomap *target_iomap;	/* after it, same MR */
	uint16_t target_iomap_size;	/* entries we offer the peer */
	struct rsk_iomap *tiomap;	/* ours, taken in as for tsge */
	bool swap;			/* peer's byte order differs */

	/* sending */
	/* The offered halves as we use them: an entry of target_sgl is taken
	 * in (and zeroed there) when a credit message has completed, so the
	 * peer's RDMA WRITE of it is over, and the peer writes that entry
	 * again only once we have filled the half it named. */
	struct rsk_sge tsge[RSK_SGL_SIZE];
	int tsgl_next;			/* the entry the peer's next SGE lands in */
	int target_sge;			/* the entry we write into next */
	struct rsk_sge remote_sgl;	/* the peer's target SGL */
	int remote_sge;			/* its entry we update next */
	struct rsk_sge remote_iomap;	/* the peer's target iomap (entries) */
	struct rsk_map *maps;		/* remote_iomap.length slots */
	bool maps_pending;		/* a riomap not yet sent */
	uint16_t sseq_no, sseq_comp;	/* data messages sent / allowed */
	uint32_t ctrl_seqno, ctrl_max_seqno;
	int sqe_avail;
	uint32_t sbuf_avail;
	uint32_t sbuf_head;		/* offset where the next copy goes */

	/* receiving */
	uint16_t rseq_no, rseq_comp;	/* data messages consumed / next credit */
	uint32_t rbuf_avail;		/* consumed, not yet offered again */
	uint32_t rbuf_free;		/* offset of the next half to offer */
	uint32_t rbuf_off;		/* where the next unread byte is */
	uint32_t *rmsg;			/* lengths of unread data messages */
	int rmsg_head, rmsg_tail;	/* ring of rq_size + 1 */
};

/*
 * The files, each calling only those above it in this list:
 *   rsocket_table.c  the number -> socket table, new sockets, errno
 *   rsocket_wire.c   QP and buffers, connect data, posting, completions,
 *                    credits, sleeping on the fds
 *   rsocket_keepalive.c  the thread sending keepalives
 *   rsocket_dgwire.c, rsocket_dgram.c  SOCK_DGRAM (rsocket_dgram.h)
 *   rsocket_cm.c     CM events, the progress loop, the ends' names
 *   rsocket_iomap.c  riomap/riounmap/riowrite
 *   rsocket_io.c     rsend/rrecv and their forms
 *   rsocket_conn.c, rsocket.c, rsocket_poll.c: the other exported calls
 * "lock held": the socket's lock.
 */

/* rsocket_table.c */
struct rsk *rsk_get(int fd);		/* NULL: not an rsocket */
int rsk_err(int e);			/* -1 with errno e */
int64_t rsk_now_ms(void);		/* CLOCK_MONOTONIC */
/* A socket with its channel (sizes and flags from parent, if any). */
struct rsk *rsk_new(const struct rsk *parent);
struct rsk *rsk_new_fd(int fd);		/* numbered fd, no channel, defaults */
/* fd, or a duplicate above every open fd (the old one closed): a new
 * socket's number, above librspreload's placeholder */
int rsk_number_above_open(int fd);
int rsk_publish(struct rsk *rs);	/* enters it in the table: 0 or -1 */
void rsk_unpublish(struct rsk *rs);

static inline bool rsk_nonblocking(const struct rsk *rs, int flags)
{
	return (rs->fs_flags & O_NONBLOCK) || (flags & MSG_DONTWAIT);
}

/* rsocket_wire.c (lock held) */
bool rsk_set_qp_opt(struct rsk *rs, int optname, int v);
int rsk_create_qp(struct rsk *rs, struct rdma_cm_id *id,
		  enum ibv_qp_type type, uint32_t send_sge, uint32_t recv_sge);
int rsk_create_ep(struct rsk *rs);
void rsk_free_ep(struct rsk *rs);	/* QP, buffers, iomaps */
void rsk_destroy(struct rsk *rs);	/* and the id, channel, memory */
void rsk_format_conn(struct rsk *rs, struct rsk_conn_data *c);
void rsk_save_conn(struct rsk *rs, const struct rsk_conn_data *c);
int rsk_iomap_scale(int value);		/* the size's 8-bit encoding */
int rsk_iomap_unscale(int scale);
int rsk_post_write(struct rsk *rs, struct ibv_sge *sgl, int n, uint32_t msg,
		   unsigned int flags, uint64_t addr, uint32_t rkey, bool imm);
int rsk_post_ctrl(struct rsk *rs, uint32_t ctrl);
/* Copies len bytes from the iovecs into the send ring: the SGEs (1 or 2). */
int rsk_stage(struct rsk *rs, const struct iovec **cur, size_t *off,
	      size_t len, struct ibv_sge sg[2]);
size_t rsk_next_xfer(uint32_t *olen, size_t left);	/* 2 KiB doubling */
int rsk_poll_cq(struct rsk *rs);	/* drains the CQ; credits */
void rsk_update_credits(struct rsk *rs);	/* grants them when due */
bool rsk_can_send(struct rsk *rs);
bool rsk_have_rdata(struct rsk *rs);
bool rsk_sends_done(struct rsk *rs);
bool rsk_ctrl_avail_or_closed(struct rsk *rs);
/* Arms the CQ's notification; true if it was not armed (look again). */
bool rsk_arm(struct rsk *rs);
void rsk_cq_event(struct rsk *rs);	/* consumes a CQ channel event */
/* Sleeps (lock dropped) until the CQ or the CM channel has something, or
 * ms elapse (-1: no bound). 0, or -1 with errno. */
int rsk_wait(struct rsk *rs, int ms);

/* rsocket_keepalive.c (lock held): lists or unlists the socket by its
 * SO_KEEPALIVE, for the thread that sends RSK_CTRL_KEEPALIVE on it when
 * it sent nothing for keepalive_time seconds. */
int rsk_keepalive_update(struct rsk *rs);
void rsk_keepalive_forget(struct rsk *rs);	/* before freeing it */

/* rsocket_dgram.c: SOCK_DGRAM behind the exported calls (the lock taken
 * inside, but rsd_revents's) */
int rsd_socket(int domain);
int rsd_bind(struct rsk *rs, const struct sockaddr *addr, socklen_t len);
int rsd_connect(struct rsk *rs, const struct sockaddr *addr, socklen_t len);
ssize_t rsd_sendv(struct rsk *rs, const struct iovec *iov, int iovcnt,
		  int flags, const struct sockaddr *to, socklen_t tolen);
/* *mflags (if not NULL) gets MSG_TRUNC when the datagram was cut */
ssize_t rsd_recvv(struct rsk *rs, const struct iovec *iov, int iovcnt,
		  int flags, struct sockaddr *from, socklen_t *fromlen,
		  int *mflags);
short rsd_revents(struct rsk *rs, short events);	/* lock held */
int rsd_shutdown(struct rsk *rs, int how);
void rsd_close(struct rsk *rs);		/* frees it (unpublished first) */
int rsd_name(struct rsk *rs, bool peer, struct sockaddr *addr,
	     socklen_t *len);
int rsd_setsockopt(struct rsk *rs, int level, int optname,
		   const void *optval, socklen_t optlen);
int rsd_getsockopt(struct rsk *rs, int level, int optname, void *optval,
		   socklen_t *optlen);

/* rsocket_cm.c (lock held) */
void rsk_conn_failed(struct rsk *rs, int err);
int rsk_cm_progress(struct rsk *rs);	/* handles queued CM events */
/* Drives a connect in progress: 0 connected, -1 EINPROGRESS, or -1. */
int rsk_connect_wait(struct rsk *rs, bool nonblock);
/* Runs the CM and the CQ until test() holds; EWOULDBLOCK if nonblock. */
int rsk_process(struct rsk *rs, bool nonblock, bool (*test)(struct rsk *));
/* Waits (or EWOULDBLOCK) until a message may be sent: 0 or -1. */
int rsk_wait_send(struct rsk *rs, int flags);

/* rsocket_iomap.c (lock held) */
int rsk_send_iomaps(struct rsk *rs, int flags);	/* queued riomaps */

#endif /* UR_API_RDMACM_RSOCKET_PRIV_H */
