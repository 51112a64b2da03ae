/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <arpa/inet.h>

#include "fake_env.h"
#include "obj/device.h"
#include "util/lock_assert.h"
#include "util/time.h"

/*
 * The network: both NIC threads send through it and the test reprograms it
 * while they run, so the hooks, the fault settings and every enqueue are
 * under fe_net_lock (one datagram crosses the fake network at a time, and
 * a hook's records are the test's to read once it unset the hook).
 */
static pthread_mutex_t fe_net_lock = PTHREAD_MUTEX_INITIALIZER;
static struct fe_fault fe_fault;
static fe_tap_fn *fe_tap;
static fe_filter_fn *fe_filter;
static fe_rx_hook_fn *fe_rx_hook;
static fe_send_hook_fn *fe_send_hook;
static unsigned int fe_filtered;
static struct fe_counts fe_cnt;

void fe_set_fault(const struct fe_fault *f)
{
	static const struct fe_fault none;

	pthread_mutex_lock(&fe_net_lock);
	fe_fault = f ? *f : none;
	pthread_mutex_unlock(&fe_net_lock);
}

void fe_set_tap(fe_tap_fn *tap)
{
	pthread_mutex_lock(&fe_net_lock);
	fe_tap = tap;
	pthread_mutex_unlock(&fe_net_lock);
}

void fe_set_send_hook(fe_send_hook_fn *hook)
{
	pthread_mutex_lock(&fe_net_lock);
	fe_send_hook = hook;
	pthread_mutex_unlock(&fe_net_lock);
}

void fe_set_rx_hook(fe_rx_hook_fn *hook)
{
	pthread_mutex_lock(&fe_net_lock);
	fe_rx_hook = hook;
	pthread_mutex_unlock(&fe_net_lock);
}

unsigned int fe_set_filter(fe_filter_fn *filter)
{
	unsigned int n;

	pthread_mutex_lock(&fe_net_lock);
	fe_filter = filter;
	n = fe_filtered;
	fe_filtered = 0;
	pthread_mutex_unlock(&fe_net_lock);
	return n;
}

/* ------------------------------------------------------------------ */
/* Fake link                                                           */
/* ------------------------------------------------------------------ */

#define FE_QLEN 8192

struct fe_dgram {
	uint32_t len;
	union ur_sockaddr src;
	uint8_t data[9216];
};

struct ur_link {
	union ur_sockaddr addr;
	int efd;
	pthread_mutex_t lock;
	struct fe_dgram *q;
	unsigned int head, tail;	/* free-running */
	struct fe_dgram *rx;		/* what the last recv handed out */
	unsigned int nrx;
	struct ur_link_stats st;
	_Atomic uint8_t rx_tos;		/* what its datagrams arrive with */
	_Atomic uint8_t tx_tos;		/* the last one it sent had */
};

static struct ur_link *fe_links[2];
static uint64_t fe_rng = 88172645463325252ull;
static pthread_mutex_t fe_rng_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned int fe_rand100(void)
{
	uint64_t x;

	pthread_mutex_lock(&fe_rng_lock);
	x = fe_rng;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	fe_rng = x;
	pthread_mutex_unlock(&fe_rng_lock);
	return (unsigned int)(x % 100);
}

int ur_link_open(const struct ur_link_config *cfg, struct ur_link **out)
{
	struct ur_link *l = calloc(1, sizeof(*l));
	int i;

	l->addr = cfg->bind;
	l->efd = eventfd(0, EFD_NONBLOCK);
	l->q = calloc(FE_QLEN, sizeof(*l->q));
	l->rx = calloc(UR_RX_BATCH, sizeof(*l->rx));
	pthread_mutex_init(&l->lock, NULL);
	for (i = 0; i < 2; i++)
		if (!fe_links[i]) {
			fe_links[i] = l;
			break;
		}
	*out = l;
	return 0;
}

void ur_link_close(struct ur_link *l)
{
	int i;

	for (i = 0; i < 2; i++)
		if (fe_links[i] == l)
			fe_links[i] = NULL;
	close(l->efd);
	free(l->q);
	free(l->rx);
	free(l);
}

int ur_link_fd(const struct ur_link *l)
{
	return l->efd;
}

uint32_t ur_link_max_payload(const struct ur_link *l)
{
	return 9000;
}

/* the fake link's fd (an eventfd) is readable whenever it holds datagrams */
/* as the real link: whether anything waits in the queue */
bool ur_link_rx_maybe(struct ur_link *l)
{
	bool any;

	pthread_mutex_lock(&l->lock);
	any = l->head != l->tail;
	pthread_mutex_unlock(&l->lock);
	return any;
}

bool ur_link_wait_arm(struct ur_link *l)
{
	return false;
}

/* one receive queue: the engine's further shards get what shard 0
 * forwards (engine/recv.c), with UROCE_RX_SHARDS > 1 */
unsigned int ur_link_rx_queues(const struct ur_link *l)
{
	return 1;
}

int ur_link_fd_q(const struct ur_link *l, unsigned int q)
{
	return q ? -1 : ur_link_fd(l);
}

bool ur_link_rx_maybe_q(struct ur_link *l, unsigned int q)
{
	return q ? false : ur_link_rx_maybe(l);
}

int ur_link_recv_q(struct ur_link *l, unsigned int q, struct ur_rxd *d,
		   unsigned int max)
{
	return q ? 0 : ur_link_recv(l, d, max);
}

void ur_link_wait_disarm(struct ur_link *l)
{
}

/* no same-host peers: every operation goes as packets */
void *ur_link_own_area(struct ur_link *l)
{
	return NULL;
}

void *ur_link_peer_area_get(struct ur_link *l, const union ur_sockaddr *dst,
			    int32_t *owner)
{
	return NULL;
}

void ur_link_peer_area_put(struct ur_link *l)
{
}

/* the fake link has no rings: every packet carries its ICRC */
bool ur_link_is_ring(struct ur_link *l, const union ur_sockaddr *dst)
{
	(void)l;
	(void)dst;
	return false;
}

uint32_t ur_link_ring_gen(const struct ur_link *l)
{
	(void)l;
	return 0;
}

bool ur_link_faulty(const struct ur_link *l)
{
	return false;
}

int ur_link_local_addr(const struct ur_link *l, unsigned int i,
		       union ur_sockaddr *out)
{
	if (i)
		return -ENOENT;
	*out = l->addr;
	return 0;
}

int ur_link_join(struct ur_link *l, const union ur_sockaddr *group)
{
	return -EOPNOTSUPP;
}

int ur_link_leave(struct ur_link *l, const union ur_sockaddr *group)
{
	return -ENOENT;
}

static void fe_enqueue_src(struct ur_link *to, const union ur_sockaddr *src,
			   const uint8_t *data, uint32_t len);

static void fe_enqueue(struct ur_link *to, const struct ur_link *from,
		       const uint8_t *data, uint32_t len)
{
	fe_enqueue_src(to, &from->addr, data, len);
}

static void fe_enqueue_src(struct ur_link *to, const union ur_sockaddr *src,
			   const uint8_t *data, uint32_t len)
{
	uint64_t one = 1;
	struct fe_dgram *d;
	ssize_t r;

	UR_ASSERT_HELD(&fe_net_lock);	/* reads fe_fault */
	pthread_mutex_lock(&to->lock);
	if (to->tail - to->head >= FE_QLEN)
		to->st.rx_truncated++;
	if (to->tail - to->head < FE_QLEN) {
		d = &to->q[to->tail++ % FE_QLEN];
		d->len = len;
		d->src = *src;
		memcpy(d->data, data, len);
		if (to->tail - to->head >= 2 &&
		    fe_rand100() < fe_fault.reorder_pct) {
			struct fe_dgram tmp = *d;

			__atomic_fetch_add(&fe_cnt.reordered, 1, __ATOMIC_RELAXED);

			*d = to->q[(to->tail - 2) % FE_QLEN];
			to->q[(to->tail - 2) % FE_QLEN] = tmp;
		}
	}
	pthread_mutex_unlock(&to->lock);
	r = write(to->efd, &one, sizeof(one));
	(void)r;
}

static void fe_deliver_locked(struct ur_link *from, struct ur_link *to,
			      const uint8_t *data, uint32_t len);

static void fe_deliver(struct ur_link *from, const union ur_sockaddr *dst,
		       const uint8_t *data, uint32_t len)
{
	struct ur_link *to = NULL;
	int i;

	for (i = 0; i < 2; i++)
		if (fe_links[i] &&
		    ur_sockaddr_same_host(&fe_links[i]->addr, dst))
			to = fe_links[i];
	if (!to) {
		from->st.tx_errors++;
		return;
	}
	pthread_mutex_lock(&fe_net_lock);
	fe_deliver_locked(from, to, data, len);
	pthread_mutex_unlock(&fe_net_lock);
}

static void fe_deliver_locked(struct ur_link *from, struct ur_link *to,
			      const uint8_t *data, uint32_t len)
{
	UR_ASSERT_HELD(&fe_net_lock);
	if (fe_tap)
		fe_tap(to == fe_links[0] ? 0 : 1, data, len);
	if (fe_filter && len >= 12 &&
	    fe_filter(to == fe_links[0] ? 0 : 1, data, len)) {
		fe_filtered++;
		return;
	}
	if (fe_fault.drop_opcode_once && data[0] ==
	    (uint8_t)(fe_fault.drop_opcode_once - 1)) {
		fe_fault.drop_opcode_once = 0;
		from->st.fi_delayed++;
		return;
	}
	if (fe_rand100() < fe_fault.drop_pct) {
		from->st.fi_dropped++;
		__atomic_fetch_add(&fe_cnt.dropped, 1, __ATOMIC_RELAXED);
		return;
	}
	fe_enqueue(to, from, data, len);
	if (fe_rand100() < fe_fault.dup_pct) {
		__atomic_fetch_add(&fe_cnt.duplicated, 1, __ATOMIC_RELAXED);
		fe_enqueue(to, from, data, len);
	}
}

void fe_get_counts(struct fe_counts *c)
{
	c->dropped = __atomic_load_n(&fe_cnt.dropped, __ATOMIC_RELAXED);
	c->duplicated = __atomic_load_n(&fe_cnt.duplicated, __ATOMIC_RELAXED);
	c->reordered = __atomic_load_n(&fe_cnt.reordered, __ATOMIC_RELAXED);
}

void fe_seed(uint64_t seed)
{
	pthread_mutex_lock(&fe_rng_lock);
	fe_rng = seed * 0x9e3779b97f4a7c15ull | 1;
	pthread_mutex_unlock(&fe_rng_lock);
}

void fe_debug(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		struct ur_nic *nic = fe_dev(i)->nic;
		int busy = pthread_mutex_trylock(&nic->shard[0].lock);

		if (!busy)
			pthread_mutex_unlock(&nic->shard[0].lock);
		fprintf(stderr,
			"DBG dev%d shard 0 %s queue %u (head %u tail %u) "
			"fdrop %lu qfull %lu noroute %lu\n",
			i, busy ? "HELD" : "free",
			fe_links[i]->tail - fe_links[i]->head,
			fe_links[i]->head, fe_links[i]->tail,
			(unsigned long)fe_links[i]->st.fi_dropped,
			(unsigned long)fe_links[i]->st.rx_truncated,
			(unsigned long)fe_links[i]->st.tx_errors);
	}
}

void fe_inject_from(int to_dev, const union ur_sockaddr *src,
		    const uint8_t *data, uint32_t len)
{
	pthread_mutex_lock(&fe_net_lock);
	fe_enqueue_src(fe_links[to_dev], src, data, len);
	pthread_mutex_unlock(&fe_net_lock);
}

void fe_set_rx_tos(int dev, uint8_t tos)
{
	atomic_store(&fe_links[dev]->rx_tos, tos);
}

uint8_t fe_last_tx_tos(int dev)
{
	return atomic_load(&fe_links[dev]->tx_tos);
}

void fe_inject(int to_dev, const uint8_t *data, uint32_t len)
{
	pthread_mutex_lock(&fe_net_lock);
	fe_enqueue(fe_links[to_dev], fe_links[!to_dev], data, len);
	pthread_mutex_unlock(&fe_net_lock);
}

int ur_link_send(struct ur_link *l, const struct ur_txd *d, unsigned int n)
{
	static __thread uint8_t buf[65536];
	fe_send_hook_fn *hook;
	unsigned int i, k;
	size_t len, off, seg;

	pthread_mutex_lock(&fe_net_lock);
	if (fe_fault.tx_blocked)
		l->st.tx_blocked++;
	pthread_mutex_unlock(&fe_net_lock);
	for (i = 0; i < n; i++) {
		atomic_store(&l->tx_tos, d[i].tos);
		len = 0;
		for (k = 0; k < d[i].iovcnt; k++) {
			memcpy(buf + len, d[i].iov[k].iov_base,
			       d[i].iov[k].iov_len);
			len += d[i].iov[k].iov_len;
		}
		seg = d[i].gso_size ? d[i].gso_size : len;
		for (off = 0; off < len; off += seg) {
			size_t s = len - off < seg ? len - off : seg;

			fe_deliver(l, d[i].dst, buf + off, (uint32_t)s);
			/* the posting thread and the progress thread both
			 * send: the counters are fe_net_lock's */
			pthread_mutex_lock(&fe_net_lock);
			l->st.tx_pkts++;
			pthread_mutex_unlock(&fe_net_lock);
		}
	}
	pthread_mutex_lock(&fe_net_lock);
	hook = fe_send_hook;
	pthread_mutex_unlock(&fe_net_lock);
	if (hook)
		hook(l == fe_links[0] ? 0 : 1, n);
	return (int)n;
}

int ur_link_recv(struct ur_link *l, struct ur_rxd *d, unsigned int max)
{
	fe_rx_hook_fn *hook;
	unsigned int n = 0;
	uint64_t v;
	ssize_t r;

	if (max > UR_RX_BATCH)
		max = UR_RX_BATCH;
	r = read(l->efd, &v, sizeof(v));
	(void)r;
	pthread_mutex_lock(&l->lock);
	while (n < max && l->head != l->tail) {
		l->rx[n] = l->q[l->head++ % FE_QLEN];
		d[n].data = l->rx[n].data;
		d[n].len = l->rx[n].len;
		d[n].src = l->rx[n].src;
		d[n].dst = l->addr;
		d[n].tos = atomic_load(&l->rx_tos);
		d[n].ttl = 64;
		n++;
	}
	if (l->head != l->tail) {
		uint64_t one = 1;

		r = write(l->efd, &one, sizeof(one));
	}
	pthread_mutex_unlock(&l->lock);
	pthread_mutex_lock(&fe_net_lock);
	l->st.rx_pkts += n;
	hook = fe_rx_hook;
	pthread_mutex_unlock(&fe_net_lock);
	if (hook)	/* outside fe_net_lock: senders hold sq_lock, then it */
		hook(l == fe_links[0] ? 0 : 1);
	return (int)n;
}

uint64_t ur_link_tx_blocked(const struct ur_link *l)
{
	uint64_t n;

	pthread_mutex_lock(&fe_net_lock);
	n = l->st.tx_blocked;
	pthread_mutex_unlock(&fe_net_lock);
	return n;
}

void ur_link_get_stats(const struct ur_link *l, struct ur_link_stats *st)
{
	pthread_mutex_lock(&fe_net_lock);
	*st = l->st;
	pthread_mutex_unlock(&fe_net_lock);
}

/* ------------------------------------------------------------------ */
/* Fake obj                                                            */
/* ------------------------------------------------------------------ */

static struct ur_device fe_devs[2];
static uint32_t fe_next_key = 0x1000, fe_next_qpn = 0x20;

struct ur_device *fe_dev(int i)
{
	return &fe_devs[i];
}

void fe_init(void)
{
	int i;

	if (getenv("FE_SEED"))
		fe_rng = strtoull(getenv("FE_SEED"), NULL, 0) | 1;
	for (i = 0; i < 2; i++) {
		struct ur_device *d = &fe_devs[i];

		memset(d, 0, sizeof(*d));
		d->index = (unsigned int)i;
		pthread_mutex_init(&d->lock, NULL);
		pthread_rwlock_init(&d->obj_lock, NULL);
		ur_u32_map_init(&d->mem_keys);
		ur_u32_map_init(&d->qpns);
		d->active_mtu = IBV_MTU_1024;
		d->gids[0].valid = true;
		if (getenv("FE_V6")) {
			/* fd00::1:<i>, never routed: the fake link only
			 * compares addresses */
			d->gids[0].addr.in6.sin6_family = AF_INET6;
			d->gids[0].addr.in6.sin6_addr.s6_addr[0] = 0xfd;
			d->gids[0].addr.in6.sin6_addr.s6_addr[13] = 1;
			d->gids[0].addr.in6.sin6_addr.s6_addr[15] =
				(uint8_t)(i + 1);
		} else {
			d->gids[0].addr.in.sin_family = AF_INET;
			d->gids[0].addr.in.sin_addr.s_addr =
				htonl(0x7f000001u + (uint32_t)i + 100);
		}
		d->num_gids = 1;
		d->open_count = 1;
		if (ur_nic_get(d))
			abort();
	}
}

void fe_fini(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		fe_devs[i].open_count = 0;
		ur_nic_put(&fe_devs[i]);
		ur_u32_map_fini(&fe_devs[i].mem_keys);
		ur_u32_map_fini(&fe_devs[i].qpns);
	}
}

struct ur_qp *ur_qp_lookup(struct ur_device *dev, uint32_t qpn)
{
	return ur_u32_map_find(&dev->qpns, qpn);
}

struct ur_mem *ur_mem_lookup(struct ur_device *dev, uint32_t key)
{
	return ur_u32_map_find(&dev->mem_keys, key);
}

int ur_mem_check(const struct ur_mem *m, const struct ur_pd *pd,
		 uint32_t qp_num, uint64_t iova, uint64_t len,
		 unsigned int access, uintptr_t *host)
{
	if (!m->valid || m->pd != pd || (m->access & access) != access)
		return -EACCES;
	if (len && (iova < m->iova || iova + len > m->iova + m->length ||
		    iova + len < iova))
		return -EINVAL;
	*host = m->host_base + (uintptr_t)(iova - m->iova);
	return 0;
}

struct ur_mr *fe_reg_mr(struct ur_device *dev, struct ur_pd *pd, void *addr,
			size_t len, unsigned int access)
{
	struct ur_mr *mr = calloc(1, sizeof(*mr));

	mr->mem.kind = UR_MEM_MR;
	mr->mem.pd = pd;
	mr->mem.iova = (uintptr_t)addr;
	mr->mem.host_base = (uintptr_t)addr;
	mr->mem.length = len;
	mr->mem.access = access;
	mr->mem.valid = true;
	mr->ibmr.lkey = mr->ibmr.rkey = fe_next_key++;
	pthread_rwlock_wrlock(&dev->obj_lock);
	ur_u32_map_insert(&dev->mem_keys, mr->ibmr.lkey, &mr->mem);
	pthread_rwlock_unlock(&dev->obj_lock);
	return mr;
}

void fe_dereg_mr(struct ur_device *dev, struct ur_mr *mr)
{
	pthread_rwlock_wrlock(&dev->obj_lock);
	ur_u32_map_remove(&dev->mem_keys, mr->ibmr.lkey);
	pthread_rwlock_unlock(&dev->obj_lock);
	free(mr);
}

void fe_cq_init(struct ur_cq *cq, uint32_t size)
{
	memset(cq, 0, sizeof(*cq));
	pthread_spin_init(&cq->lock, 0);
	cq->size = size;
	cq->ring = calloc(size, sizeof(*cq->ring));
}

int ur_cq_push(struct ur_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	int rc = 0;

	pthread_spin_lock(&cq->lock);
	if (cq->tail - cq->head >= cq->size)
		rc = -ENOSPC;
	else
		cq->ring[cq->tail++ % cq->size].wc = *wc;
	pthread_spin_unlock(&cq->lock);
	return rc;
}

static bool cq_pop(struct ur_cq *cq, struct ibv_wc *wc)
{
	bool got = false;

	pthread_spin_lock(&cq->lock);
	if (cq->head != cq->tail) {
		*wc = cq->ring[cq->head++ % cq->size].wc;
		got = true;
	}
	pthread_spin_unlock(&cq->lock);
	return got;
}

/* Pops one completion within timeout_ms; between looks, runs dev's
 * receive path inline if dev is given, else naps. */
static int cq_wait_for(struct ur_cq *cq, struct ur_device *dev,
		       struct ibv_wc *wc, int timeout_ms)
{
	uint64_t end = ur_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct timespec ts = { 0, 50000 };

	do {
		if (cq_pop(cq, wc))
			return 1;
		if (dev)
			ur_engine_poll(dev);
		else
			nanosleep(&ts, NULL);
	} while (ur_now_ns() < end);
	return 0;
}

int fe_cq_spin(struct ur_cq *cq, struct ur_device *dev, struct ibv_wc *wc,
	       int timeout_ms)
{
	return cq_wait_for(cq, dev, wc, timeout_ms);
}

int fe_cq_wait(struct ur_cq *cq, struct ibv_wc *wc, int timeout_ms)
{
	return cq_wait_for(cq, NULL, wc, timeout_ms);
}

int fe_cq_poll(struct ur_cq *cq, struct ibv_wc *wc, int timeout_ms)
{
	uint64_t end = ur_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	struct timespec ts = { 0, 20000 };

	do {
		if (cq_pop(cq, wc))
			return 1;
		ur_engine_poll(&fe_devs[0]);
		ur_engine_poll(&fe_devs[1]);
		nanosleep(&ts, NULL);
	} while (ur_now_ns() < end);
	return 0;
}

int ur_qp_take_recv(struct ur_qp *qp, struct ur_recv_wqe *out)
{
	struct ur_recv_wqe *w;
	int rc = -EAGAIN;

	pthread_spin_lock(&qp->rq_lock);
	if (qp->rq.producer != qp->rq.consumer) {
		w = ur_wq_slot(&qp->rq, qp->rq.consumer++);
		memcpy(out, w, sizeof(*w) + w->num_sge * sizeof(struct ur_sge));
		rc = 0;
	}
	pthread_spin_unlock(&qp->rq_lock);
	return rc;
}

void ur_async_event_post(struct ibv_context *ctx,
			 const struct ibv_async_event *ev)
{
}

static void wq_init(struct ur_wq *wq, uint32_t slots, uint32_t stride)
{
	memset(wq, 0, sizeof(*wq));
	wq->slots = slots;
	wq->stride = stride;
	wq->max_wr = slots;
	wq->max_sge = 4;
	wq->max_inline = 256;
	wq->buf = calloc(slots, stride);
}

struct ur_qp *fe_qp_create(struct ur_device *dev, struct ur_pd *pd,
			   struct ur_cq *scq, struct ur_cq *rcq,
			   enum ibv_qp_type t)
{
	struct ur_qp *qp = calloc(1, sizeof(*qp));

	qp->dev = dev;
	qp->pd = pd;
	qp->send_cq = scq;
	qp->recv_cq = rcq;
	qp->type = t;
	qp->state = IBV_QPS_RESET;
	qp->ibqp_ex.qp_base.qp_num = fe_next_qpn++;
	qp->ibqp_ex.qp_base.qp_type = t;
	pthread_mutex_init(&qp->sq_lock, NULL);
	pthread_spin_init(&qp->rq_lock, 0);
	wq_init(&qp->sq, 256, sizeof(struct ur_send_wqe) +
				      UR_MAX_INLINE_DATA);
	wq_init(&qp->rq, 256, sizeof(struct ur_recv_wqe) +
				      4 * sizeof(struct ur_sge));
	if (ur_engine_qp_init(qp))
		abort();
	pthread_rwlock_wrlock(&dev->obj_lock);
	ur_u32_map_insert(&dev->qpns, ur_qp_num(qp), qp);
	pthread_rwlock_unlock(&dev->obj_lock);
	return qp;
}

void fe_qp_destroy(struct ur_qp *qp)
{
	struct ur_device *dev = qp->dev;

	pthread_rwlock_wrlock(&dev->obj_lock);
	ur_u32_map_remove(&dev->qpns, ur_qp_num(qp));
	pthread_rwlock_unlock(&dev->obj_lock);
	ur_engine_qp_fini(qp);
	free(qp->sq.buf);
	free(qp->rq.buf);
	free(qp);
}

/* As obj/'s ur_qp_modify: the state is read and written under sq_lock
 * (the engine's progress thread moves a QP to ERR under it), and the engine
 * hears of the change after the lock is released. */
void fe_qp_modify(struct ur_qp *qp, enum ibv_qp_state st, int mask)
{
	enum ibv_qp_state old;

	ur_engine_qp_lock(qp);
	old = qp->state;
	if (st == IBV_QPS_RESET) {
		qp->sq.producer = qp->sq.consumer = qp->sq.cursor = 0;
		pthread_spin_lock(&qp->rq_lock);
		qp->rq.producer = qp->rq.consumer = 0;
		pthread_spin_unlock(&qp->rq_lock);
	}
	qp->state = st;
	qp->attr.qp_state = st;
	ur_engine_qp_modified(qp, old, mask | IBV_QP_STATE);
	ur_engine_qp_unlock(qp);
}

void fe_set_port(union ur_sockaddr *a)
{
	if (a->sa.sa_family == AF_INET6)
		a->in6.sin6_port = htons(UR_ROCEV2_PORT);
	else
		a->in.sin_port = htons(UR_ROCEV2_PORT);
}

void fe_connect(struct ur_qp *a, struct ur_qp *b, uint32_t psn_a,
		uint32_t psn_b, uint8_t timeout, uint8_t retry,
		uint8_t rnr_retry)
{
	struct ur_qp *q[2] = { a, b };
	uint32_t psn[2] = { psn_a, psn_b };
	int i;

	for (i = 0; i < 2; i++) {
		struct ur_qp *me = q[i], *peer = q[!i];

		fe_qp_modify(me, IBV_QPS_RESET, 0);
		me->attr.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
					   IBV_ACCESS_REMOTE_READ |
					   IBV_ACCESS_REMOTE_ATOMIC;
		me->attr.qkey = 0x11111111;
		fe_qp_modify(me, IBV_QPS_INIT, IBV_QP_ACCESS_FLAGS);
		me->attr.dest_qp_num = ur_qp_num(peer);
		me->attr.rq_psn = psn[!i];
		me->attr.path_mtu = IBV_MTU_1024;
		me->path_mtu_bytes = 1024;
		me->attr.max_dest_rd_atomic = 16;
		me->attr.min_rnr_timer = 1;
		me->av.dest = peer->dev->gids[0].addr;
		fe_set_port(&me->av.dest);
		fe_qp_modify(me, IBV_QPS_RTR,
			     IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_RQ_PSN |
				     IBV_QP_DEST_QPN);
	}
	for (i = 0; i < 2; i++) {
		struct ur_qp *me = q[i];

		me->attr.sq_psn = psn[i];
		me->attr.timeout = timeout;
		me->attr.retry_cnt = retry;
		me->attr.rnr_retry = rnr_retry;
		me->attr.max_rd_atomic = 16;
		fe_qp_modify(me, IBV_QPS_RTS,
			     IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY);
	}
}

struct ur_send_wqe *fe_sq_next(struct ur_qp *qp)
{
	struct ur_send_wqe *w = ur_wq_slot(&qp->sq, qp->sq.producer);

	memset(w, 0, qp->sq.stride);
	return w;
}

void fe_sq_post(struct ur_qp *qp)
{
	pthread_mutex_lock(&qp->sq_lock);
	qp->sq.producer++;
	ur_engine_sq_kick(qp);
	ur_engine_sq_unlock(qp);
}

void fe_rq_post(struct ur_qp *qp, uint64_t wr_id, void *addr, uint32_t len,
		uint32_t lkey)
{
	struct ur_recv_wqe *w;

	pthread_spin_lock(&qp->rq_lock);
	w = ur_wq_slot(&qp->rq, qp->rq.producer);
	w->wr_id = wr_id;
	w->num_sge = 1;
	w->length = len;
	w->sge[0].addr = (uintptr_t)addr;
	w->sge[0].length = len;
	w->sge[0].lkey = lkey;
	qp->rq.producer++;
	pthread_spin_unlock(&qp->rq_lock);
	ur_engine_rq_kick(qp);
}

int fe_side_open(struct fe_side *s, int dev, enum ibv_qp_type t)
{
	memset(s, 0, sizeof(*s));
	s->dev = fe_dev(dev);
	fe_cq_init(&s->scq, 1024);
	fe_cq_init(&s->rcq, 1024);
	s->buf = aligned_alloc(4096, 65536);
	memset(s->buf, 0, 65536);
	s->mr = fe_reg_mr(s->dev, &s->pd, s->buf, 65536,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ |
				  IBV_ACCESS_REMOTE_ATOMIC);
	s->qp = fe_qp_create(s->dev, &s->pd, &s->scq, &s->rcq, t);
	return 0;
}

void fe_side_close(struct fe_side *s)
{
	if (s->qp)
		fe_qp_destroy(s->qp);
	fe_dereg_mr(s->dev, s->mr);
	free(s->buf);
	free(s->scq.ring);
	free(s->rcq.ring);
}

void fe_pair_open(struct fe_side s[2])
{
	fe_set_fault(NULL);
	fe_side_open(&s[0], 0, IBV_QPT_RC);
	fe_side_open(&s[1], 1, IBV_QPT_RC);
	fe_connect(s[0].qp, s[1].qp, 0x10, 0x20, 14, 7, 7);
}

void fe_pair_close(struct fe_side s[2])
{
	fe_set_filter(NULL);
	fe_side_close(&s[0]);
	fe_side_close(&s[1]);
}

int ur_mw_bind_wqe(struct ur_qp *qp, struct ur_send_wqe *wqe)
{
	return -EINVAL;
}

int ur_mem_invalidate(struct ur_device *dev, struct ur_pd *pd,
		      uint32_t qp_num, uint32_t rkey)
{
	return -EINVAL;
}

int ur_device_reroll_auto_addr(struct ur_device *dev)
{
	return -EADDRNOTAVAIL;
}

/* No XRC in the fake: no XRC SRQ is ever found. */
struct ur_srq *ur_srq_lookup_xrc(struct ur_device *dev, uint32_t srqn)
{
	(void)dev;
	(void)srqn;
	return NULL;
}

bool ur_xrcd_same_domain(const struct ur_xrcd *a, const struct ur_xrcd *b)
{
	return a == b;
}

/* no other process here: no SRQ is another process's */
bool ur_xrcd_srq_on_host(const struct ur_xrcd *xrcd, uint32_t srqn)
{
	(void)xrcd;
	(void)srqn;
	return false;
}

/* nor another process's SRQ to lend WQEs */
int ur_xrcd_ring(const struct ur_xrcd *xrcd, uint32_t srqn,
		 struct ur_xring **out)
{
	(void)xrcd;
	(void)srqn;
	(void)out;
	return -ENODEV;
}

int ur_xring_copy(struct ur_xring *x, const struct ur_recv_wqe *w,
		  uint32_t off, const void *src, uint32_t len)
{
	(void)x, (void)w, (void)off, (void)src, (void)len;
	return -ENODEV;
}

void ur_xring_complete(struct ur_xring *x, uint64_t idx,
		       const struct ibv_wc *wc)
{
	(void)x, (void)idx, (void)wc;
}

uint64_t ur_xring_id(const struct ur_xring *x)
{
	(void)x;
	return 0;
}

void ur_xring_owner(const struct ur_xring *x, int32_t *pid, uint32_t *pd,
		    uint8_t gid[16])
{
	(void)x, (void)pd;
	*pid = 0;
	memset(gid, 0, 16);
}

/* obj/rq_ring.c: the fake has no shared RQs, so no SEND is copied */
int ur_rq_ring_open(struct ur_qp *qp, const unsigned int *defer)
{
	(void)qp, (void)defer;
	return -EOPNOTSUPP;
}

void ur_rq_ring_close(struct ur_qp *qp)
{
	(void)qp;
}

void ur_rq_ring_free(struct ur_qp *qp)
{
	(void)qp;
}

bool ur_rq_ring_ident(const struct ur_qp *qp, int32_t *fd, uint64_t *id)
{
	(void)qp, (void)fd, (void)id;
	return false;
}

void ur_rq_ring_drain(struct ur_qp *qp)
{
	(void)qp;
}

int ur_xring_open_fd(int32_t pid, int32_t fd, uint64_t id,
		     struct ur_xring **out)
{
	(void)pid, (void)fd, (void)id, (void)out;
	return -ENODEV;
}

void ur_xring_close(struct ur_xring *x)
{
	(void)x;
}

int ur_xring_send(struct ur_xring *x, int32_t me, struct ur_xsend *m,
		  unsigned int n, unsigned int *copied)
{
	(void)x, (void)me, (void)m, (void)n;
	*copied = 0;
	return -ENODEV;
}
