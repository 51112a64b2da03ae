/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * librdmacm internals. One process-wide lock (cma.lock) guards every id,
 * channel queue and connection state: connection management is rare next to
 * data transfer, and one lock keeps the CM state machine free of ordering
 * puzzles between the application's threads and the CM agents.
 *
 * Per device one agent (agent.c) owns QP1: a UD QP renumbered to 1 through
 * libibverbs' private uroce_gsi_claim(), a thread that receives CM MADs and
 * runs the retransmission timers, handing both to the CM state machine
 * through struct cma_agent_handlers. Bottom to top: addr.c (address
 * helpers), agent.c (QP1), cma.c (devices), rendezvous.c (the loopback
 * directory), channel.c (events), id_qp.c (the id's QP), id.c (ids,
 * addresses, routes), mcast.c (multicast joins), msg.c (CM messages out)
 * and recv.c (CM messages in, timers), conn.c (the application's
 * connect/accept/disconnect calls and rdma_destroy_id).
 */
#ifndef UR_API_RDMACM_PRIV_H
#define UR_API_RDMACM_PRIV_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <unistd.h>
#include <infiniband/ib.h>
#include <rdma/rdma_cma.h>

#include "api/rdmacm/params.h"
#include "cm/mad.h"
#include "util/addr.h"
#include "util/compiler.h"
#include "util/iba.h"
#include "util/list.h"

struct cma_dev {
	struct ibv_context *verbs;
	/* The GID table (UROCE_ADDRS, in order; zero where unused): every
	 * entry is an address ids bind to, resolve from and listen on. */
	uint8_t gids[UR_CM_MAX_GIDS][16];
	int ngids;			/* entries read: 0 .. ngids-1 */
	uint64_t guid;			/* node GUID, host order */
	enum ibv_mtu mtu;		/* port active MTU */
	uint8_t max_rd_atom;		/* max_qp_rd_atom / max_qp_init_rd_atom */
	struct ibv_pd *pd;		/* default PD for rdma_create_qp(pd NULL) */
	struct ibv_xrcd *xrcd;		/* XRC ids' domain, opened lazily */

	/* agent (agent.c) */
	struct ibv_pd *agent_pd;
	struct ibv_comp_channel *cch;
	struct ibv_cq *cq;
	struct ibv_qp *qp1;
	struct ibv_mr *mr;
	uint8_t *bufs;			/* UR_CM_RECV_BUFS of GRH + MAD */
	pthread_t thread;
	bool thread_started;
	int wake_fd;			/* eventfd: stop, or a nearer deadline */
	const struct cma_agent_handlers *handlers;	/* the CM above */
	bool stop;
	uint64_t stats[4];		/* see enum cma_stat */
	struct cma_ah {			/* address handles of recent peers */
		uint8_t gid[16];
		uint8_t sgid;		/* ... and the GID index they use */
		struct ibv_ah *ah;
		int inflight;		/* sends not yet completed */
		uint64_t used;
	} ahs[32];
	uint64_t ah_clock;
};

enum cma_stat {
	CMA_STAT_RX,			/* MADs received */
	CMA_STAT_TX,			/* MADs sent (first tries and retries) */
	CMA_STAT_RETX,			/* retransmissions */
	CMA_STAT_DROP,			/* malformed or unmatched, dropped */
};

enum cma_state {
	CMA_IDLE,
	CMA_BOUND,
	CMA_ADDR_RESOLVED,
	CMA_ROUTE_RESOLVED,
	CMA_LISTEN,
	CMA_REQ_SENT,			/* active: waiting for REP (or MRA'd) */
	CMA_REP_RCVD,			/* active, no QP: waiting rdma_establish */
	CMA_REQ_RCVD,			/* passive: waiting for accept/reject */
	CMA_REP_SENT,			/* passive: waiting for RTU */
	CMA_ESTABLISHED,
	CMA_DREQ_SENT,
	CMA_TIMEWAIT,			/* disconnected (DREQ/DREP done) */
	CMA_CLOSED,			/* rejected, unreachable: nothing on the wire */
};

struct cma_chan {
	struct rdma_event_channel ch;	/* fd: eventfd, one count per queued event */
	struct ur_list events;		/* struct cma_event, oldest first */
	bool internal;			/* a synchronous id's own channel */
	/* cma.lock: threads in rdma_get_cm_event's wait, which read the fd
	 * before they slept; a destroyed channel keeps its fd while any */
	unsigned int waiters;
	struct ur_list retired;		/* cma.lock: in the list of the dead */
};

struct cma_event {
	struct rdma_cm_event ev;	/* first: handed to the user */
	struct ur_list node;
	struct cma_id *owner;		/* counts in owner->events_out */
	uint8_t pdata[UR_CM_RTU_PDATA];
};

/* One rdma_join_multicast of an id (mcast.c). */
struct cma_mc {
	struct ur_list node;		/* cma_id.mcs */
	union ur_sockaddr addr;		/* the group's IP address */
	uint8_t mgid[16];		/* its RoCEv2 GID */
	void *context;			/* the join's, in its events */
	uint32_t flags;			/* RDMA_MC_JOIN_FLAG_* */
	bool attached;			/* the id's QP was attached by it */
};

struct cma_id {
	struct rdma_cm_id id;		/* first: handed to the user */
	struct ur_list node;		/* cma.ids */
	struct cma_chan *chan;
	bool sync;			/* NULL channel at create: calls wait */
	enum cma_state state;
	struct cma_dev *dev;
	int events_out;			/* queued or not yet acked */
	bool destroying;

	/* addressing (id.c). src and dst are the IP addresses (an AF_IB
	 * address's GID as its IP address); id.route.addr shows them to the
	 * application, as sockaddr_ib when af_ib (cma_id_set_addrs). */
	union ur_sockaddr src, dst;
	bool af_ib;			/* bound (or resolved) with AF_IB */
	uint16_t sid_ps;		/* AF_IB: the service ID's port space */
	bool bound;			/* src address and port set */
	uint8_t sgid;			/* GID index of the source address */
	bool src_any;			/* resolved from a wildcard bind */
	bool loop_dst;			/* dst found through the rendezvous */
	bool rv_miss;			/* ... or not (yet): dgid is our own */
	uint64_t rv_until_ns;		/* REQ held while looking again */
	uint8_t dgid[16];		/* where the peer's QP1 is */
	struct ibv_sa_path_rec path;
	uint8_t tos;
	uint8_t ack_timeout;
	bool reuseaddr, afonly;
	int backlog;
	char rv_name[96];		/* rendezvous entry this listener owns */
	struct cma_id *listener;	/* passive: the listening id */
	struct ibv_qp_init_attr qp_init;	/* rdma_create_ep on a listener */
	bool has_qp_init;
	struct ibv_pd *ep_pd;
	struct ur_list mcs;		/* struct cma_mc: multicast joins */

	/* connection (conn.c) */
	uint32_t local_comm_id, remote_comm_id;
	uint64_t tid;
	uint8_t peer_gid[16];		/* where MADs go (the peer's device) */
	uint32_t remote_qpn;
	uint32_t qp_num;		/* ours (id->qp or conn_param.qp_num) */
	uint32_t sq_psn, rq_psn;
	uint8_t resp_res, init_depth;	/* ours, for RTR / RTS */
	uint8_t retry_count, rnr_retry;
	enum ibv_mtu path_mtu;
	bool srq;
	bool dreq_rcvd;			/* DISCONNECTED came from the peer */
	uint8_t mad[UR_MAD_SIZE];	/* last MAD sent, for retransmission */
	int retries_left;
	uint64_t deadline_ns;		/* 0: no timer */
	uint64_t interval_ns;

	/* ECE (ece.c): what we offer in our REQ or REP, what the peer's
	 * said (vendor 0: nothing) */
	struct ibv_ece local_ece, remote_ece;
};

/*
 * A DREQ that outlives its id: rdma_destroy_id right after rdma_disconnect
 * (rping does that) must not leave the peer without a DREQ if the first one
 * is lost, so it is retransmitted from here until a DREP comes back or the
 * retries run out, and the library's destructor waits for these (bounded).
 */
struct cma_linger {
	struct ur_list node;		/* cma.lingering */
	struct cma_dev *dev;
	uint8_t sgid;
	uint8_t peer_gid[16];
	uint32_t local_comm_id, remote_comm_id;
	uint8_t mad[UR_MAD_SIZE];
	int retries_left;
	uint64_t deadline_ns;
	uint64_t interval_ns;		/* the id's DREQ period */
};

struct cma_global {
	pthread_mutex_t lock;
	struct ur_list lingering;	/* struct cma_linger */
	bool inited;
	int init_err;
	int ndev;
	struct cma_dev *devs;
	struct ur_list ids;
	pthread_cond_t cond;		/* events acked (rdma_destroy_id waits) */
	pid_t owner;			/* the process that opened the devices */
};

/*
 * The library's destructors, in the order they run (GCC runs a larger
 * priority first): the ids a process left behind are torn down on the
 * wire (conn.c), then the DREQs are given time to be answered and the
 * devices closed (cma.c).
 */
#define UR_CM_DTOR_IDS 202
#define UR_CM_DTOR_DEVICES 201

extern struct cma_global cma;

/*
 * True in the process that opened the devices, false before and in a
 * forked child: a child holds copies of its parent's ids, devices and
 * locks (one may have been held by a thread that does not exist in it),
 * none of them its own to tear down at exit. Read without cma.lock.
 */
static inline bool cma_owned(void)
{
	return __atomic_load_n(&cma.owner, __ATOMIC_ACQUIRE) == getpid();
}

static inline struct cma_id *to_cma_id(struct rdma_cm_id *id)
{
	return container_of(id, struct cma_id, id);
}

/* The port space the id's ports and service IDs live in: an AF_IB id's
 * is its service ID's, else the id's. */
static inline uint16_t cma_id_ps(const struct cma_id *id)
{
	return id->af_ib ? id->sid_ps : (uint16_t)id->id.ps;
}

static inline struct cma_chan *to_cma_chan(struct rdma_event_channel *ch)
{
	return container_of(ch, struct cma_chan, ch);
}

/* cma.c */
int cma_init(void);			/* 0 or errno; opens devices, agents */
struct cma_dev *cma_dev_by_verbs(struct ibv_context *verbs);
/* The device owning address sa (any of its GIDs), and in *index which
 * GID; NULL if none. */
struct cma_dev *cma_dev_by_addr(const union ur_sockaddr *sa, uint8_t *index);
/* GID index of gid on d, or -1. */
int cma_dev_gid_index(const struct cma_dev *d, const uint8_t gid[16]);
/* The device's XRC domain (a private one, as rdma-core opens per device),
 * opened on first use; NULL and errno set if it cannot be. Lock held. */
struct ibv_xrcd *cma_dev_xrcd(struct cma_dev *d);
/* The GID an id bound to a wildcard sends to dst from (cma.c). */
uint8_t cma_dev_sgid_for(const struct cma_dev *d, const union ur_sockaddr *dst);

/* addr.c */
bool cma_addr_is_any(const union ur_sockaddr *sa);
/* The port: an AF_IB address's is the low 16 bits of its service ID. */
uint16_t cma_addr_port(const struct sockaddr *sa);
/* An AF_IB address's port space (service ID bits 16..31, masked), and
 * whether its mask gives one at all. */
uint16_t cma_addr_ib_ps(const struct sockaddr_ib *sib);
bool cma_addr_ib_ps_given(const struct sockaddr_ib *sib);
/* sa as an IP address (AF_IB: its GID's; the zero GID the IPv6
 * wildcard): 0 or EAFNOSUPPORT. */
int cma_addr_to_ip(const struct sockaddr *sa, union ur_sockaddr *out);
/* ip as an AF_IB address with the service ID of ps and ip's port. */
void cma_addr_to_ib(const union ur_sockaddr *ip, uint16_t ps,
		    struct sockaddr_ib *sib);
void cma_addr_set_port(struct sockaddr *sa, uint16_t port);
socklen_t cma_addr_len(const struct sockaddr *sa);
/* An unspecified source: the device's address in dst's family. */
void cma_addr_src_for(const uint8_t dev_gid[16], uint16_t port,
		      const union ur_sockaddr *dst, union ur_sockaddr *out);
/* The source address the host's routing picks for dst: 0 or errno. */
int cma_addr_route_src(const union ur_sockaddr *dst, union ur_sockaddr *src);
static inline int cma_err(int e)	/* rdma-core's convention: -1, errno */
{
	errno = e;
	return -1;
}

/* channel.c (cma.lock held where noted) */
struct cma_chan *cma_chan_new(bool internal);
void cma_chan_free(struct cma_chan *c);
/* Queues an event for id; pdata/len copied. Lock held. NULL: no memory. */
struct cma_event;
struct cma_event *cma_event_post(struct cma_id *id,
				 enum rdma_cm_event_type type, int status,
				 const void *pdata, unsigned int len,
				 const struct rdma_conn_param *conn,
				 struct cma_id *listen);
/* The same for UD ids: param.ud (ah_attr, qp_num, qkey) from ud. */
void cma_event_post_ud(struct cma_id *id, enum rdma_cm_event_type type,
		       int status, const void *pdata, unsigned int len,
		       const struct rdma_ud_param *ud, struct cma_id *listen);
/* Synchronous ids: waits for the reply event (lock NOT held). 0 or -1. */
int cma_sync_wait(struct cma_id *id, enum rdma_cm_event_type want);
int cma_sync_wait_event(struct cma_id *id, enum rdma_cm_event_type want,
			struct rdma_cm_event **out);
/* Drops every queued event of id (lock held). */
void cma_chan_drop_events(struct cma_id *id);
void cma_event_move(struct cma_id *id, struct cma_chan *to);

/* id.c */
struct cma_id *cma_id_new(struct cma_chan *chan, void *context,
			  enum rdma_port_space ps, enum ibv_qp_type qpt);
/* Sets the id's addresses (NULL: unchanged) and what id.route.addr shows
 * of them. */
void cma_id_set_addrs(struct cma_id *id, const union ur_sockaddr *src,
		      const union ur_sockaddr *dst);
void cma_fill_path(struct cma_id *id);
/* The address vector a UD id reports for gid (ESTABLISHED, multicast):
 * global, the id's GID index, hop limit 64, the id's TOS. */
void cma_ud_av(const struct cma_id *id, const uint8_t gid[16],
	       struct ibv_ah_attr *ah);
/* Sets id->dgid (and loop_dst) for dst: 0 or errno. Lock held. */
int cma_route_dst(struct cma_id *id, const union ur_sockaddr *dst);

/* mcast.c (lock held): the id's join of addr, or NULL; rdma_destroy_id
 * ends every join. */
struct cma_mc *cma_mc_find(struct cma_id *id, const union ur_sockaddr *addr);
void cma_mc_leave_all(struct cma_id *id);

/* id_qp.c (lock held) */
int cma_qp_attr(struct cma_id *id, enum ibv_qp_state state,
		struct ibv_qp_attr *attr, int *mask);
int cma_modify_qp(struct cma_id *id, enum ibv_qp_state state);
void cma_qp_to_err(struct cma_id *id);
/* Destroys the CQs and channels the library made for the id. */
void cma_destroy_cqs(struct rdma_cm_id *id);
/* Makes the id's receive CQ (and channel) of n entries: 0 or errno. */
int cma_create_recv_cq(struct rdma_cm_id *id, int n);

/*
 * agent.c. The agent sits below the CM state machine and calls it only
 * through these handlers, with cma.lock held (recv.c's cma_cm_handlers).
 */
struct cma_agent_handlers {
	/* One received MAD of len bytes from the port at src_gid, sent to
	 * our GID dst_gid. */
	void (*mad)(struct cma_dev *dev, const uint8_t src_gid[16],
		    const uint8_t dst_gid[16], const uint8_t *mad, size_t len);
	/* Runs due timers; returns the next deadline (0 none). */
	uint64_t (*timers)(struct cma_dev *dev, uint64_t now);
};
int cma_agent_start(struct cma_dev *dev, const struct cma_agent_handlers *h);
void cma_agent_stop(struct cma_dev *dev);
/* Sends one 256-byte MAD from GID index sgid to the QP1 at gid (lock
 * held). 0 or errno. */
int cma_agent_send(struct cma_dev *dev, uint8_t sgid, const uint8_t gid[16],
		   const uint8_t mad[UR_MAD_SIZE]);
void cma_agent_kick(struct cma_dev *dev);	/* re-read timer deadlines */

/*
 * ece.c (lock held): ECE through the CM's REQ and REP. qp_created: a QP
 * made by rdma_create_qp gets the peer's options if a REQ brought some,
 * and what its device kept is offered (0 or errno). req_fill/rep_fill put
 * ours in an outgoing message; req_rcvd/rep_rcvd record the peer's, and
 * rep_rcvd sets them on the id's QP before it goes to RTR (0 or errno).
 */
int cma_ece_qp_created(struct cma_id *id, struct ibv_qp *qp);
void cma_ece_req_fill(const struct cma_id *id, struct ur_cm_msg *m);
void cma_ece_req_rcvd(struct cma_id *id, const struct ur_cm_msg *m);
void cma_ece_rep_fill(const struct cma_id *id, struct ur_cm_msg *m);
int cma_ece_rep_rcvd(struct cma_id *id, const struct ur_cm_msg *m);

/* rendezvous.c */
int cma_rv_publish(struct cma_id *id);		/* listener on loopback/any */
void cma_rv_withdraw(struct cma_id *id);
/* Looks up (ps, port, ip) of a loopback destination: 0 and in gid the
 * listener's GID (the one that is dst's, else one of like's family, else
 * its first), or -ENOENT. */
int cma_rv_lookup(enum rdma_port_space ps, const union ur_sockaddr *dst,
		  const uint8_t like[16], uint8_t gid[16]);

#endif /* UR_API_RDMACM_PRIV_H */
