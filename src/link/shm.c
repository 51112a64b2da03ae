/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The same-host rings (shm.h says what they are for).
 *
 * A ring is one file in /dev/shm (tmpfs: no writeback), allocated whole
 * when it is made (so that no store into it can fault later), mode 0600,
 * named
 *   uroce-<uid>-<netns inode>-<address>-<port>
 * for each loopback address the link bound; further names of one link
 * are hard links to the first. The UDP bind of <address>:<port> is
 * exclusive, so whoever holds it owns the name: at open the owner
 * replaces any file left there by a dead process.
 *
 * Many producers (every thread of every peer process), one consumer (the
 * owner's receiving thread). Producers take a robust process-shared
 * mutex, copy their datagrams into the slots after head and then publish
 * them with one release store of head: a producer killed while it held
 * the mutex published nothing (the next one recovers the mutex through
 * EOWNERDEAD), so no slot is ever seen half written. The consumer reads
 * head (acquire), hands the slots out and frees them (tail) at its next
 * call, when the engine is done with them.
 *
 * Sleeping: the owner's progress thread sets `waiting` before it blocks
 * and re-reads head; a producer stores head, then reads `waiting` (both
 * seq_cst), so one of the two sees the other: either the thread finds
 * the datagram, or the producer sends a doorbell, a zero-length datagram
 * to the owner's UDP socket (udp.c), which wakes the poll that watches
 * it and is dropped there. Only the thread clears `waiting`, once awake:
 * the owner's poll_cq may read the doorbell off the socket first (and
 * drain the ring), and then the next datagram must ring again, or the
 * thread would sleep through it. A send of several descriptors rings
 * once, after its last put (udp.c's shm_route() says why). While the
 * application spins on its CQ the thread does not arm, and its poll_cq
 * drains the ring with no system call at all.
 *
 * A datagram the engine built without its ICRC (ur_txd.no_icrc: the
 * destination is a ring peer, ur_shm_is_ring()) keeps that in its slot
 * (SHM_SLOT_NO_ICRC), so that its receiver skips the check; one that no
 * ring takes is sealed by udp.c before it leaves by a socket.
 *
 * A dead owner looks like a dead host: its ring fills and the rest is
 * dropped, so RC peers retry until IBV_WC_RETRY_EXC_ERR. A producer that
 * finds a ring full or closed checks the owner and, if it is gone, looks
 * the address up again (a new process may own it by then).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "link/params.h"
#include "link/shm.h"
#include "util/addr.h"
#include "util/compiler.h"
#include "util/log.h"
#include "util/memguard.h"
#include "util/random.h"
#include "util/time.h"

#define SHM_DIR "/dev/shm"
#define SHM_MAGIC 0x7552696eu	/* "uRin" */
#define SHM_VERSION 3u
#define SHM_SLOT_HDR 64u
#define SHM_STRIDE (SHM_SLOT_HDR + UR_SHM_SLOT_DATA)

/* The datagram's ICRC bytes were never computed (ur_txd.no_icrc): its
 * receiver does not check them. */
#define SHM_SLOT_NO_ICRC 0x1u

/* addresses as sockaddr_in6 bytes (an IPv4 one fits): the union's
 * sockaddr_storage would not fit the line */
struct shm_slot_hdr {
	uint32_t len;
	uint8_t tos, ttl;
	uint8_t flags;			/* SHM_SLOT_* */
	uint8_t pad;
	struct sockaddr_in6 src, dst;
};
_Static_assert(sizeof(struct shm_slot_hdr) <= SHM_SLOT_HDR,
	       "slot header fits its cache line");

struct shm_ring {
	_Atomic uint32_t magic;			/* stored last, at creation */
	uint32_t version, nslots, stride;
	int32_t owner;				/* pid */
	uint32_t id;				/* random: names the ring to TSan */
	_Atomic uint32_t closed;		/* the owner closed its link */
	pthread_mutex_t plock;			/* producers */
	alignas(64) _Atomic uint64_t head;	/* next slot to fill (plock) */
	alignas(64) _Atomic uint64_t tail;	/* first slot not yet freed */
	alignas(64) _Atomic uint32_t waiting;	/* the owner wants a doorbell */
	_Atomic uint64_t full_drops;		/* datagrams a full ring lost */
	uint64_t area_off;			/* the engine's area (shm.h) */
	alignas(64) uint8_t slots[];
};

/*
 * ThreadSanitizer tracks atomics by address, and a process that holds
 * both ends of a ring (two devices, the unit tests) maps it twice: the
 * producer's release of head and the consumer's acquire are at different
 * addresses, so it would not see the slots handed over. Both ends tell it
 * about the hand-over on an address named by the ring's id instead.
 */
#if defined(__SANITIZE_THREAD__)
#define UR_SHM_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UR_SHM_TSAN 1
#endif
#endif
#ifdef UR_SHM_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
static char tsan_keys[256];
#define tsan_handover_release(r) __tsan_release(&tsan_keys[(r)->id % 256])
#define tsan_handover_acquire(r) __tsan_acquire(&tsan_keys[(r)->id % 256])
#else
#define tsan_handover_release(r) ((void)(r))
#define tsan_handover_acquire(r) ((void)(r))
#endif

/* the slots, then the engine's area (UR_LINK_AREA_BYTES) */
static size_t ring_area_off(uint32_t nslots)
{
	return sizeof(struct shm_ring) + (size_t)nslots * SHM_STRIDE;
}

static size_t ring_size(uint32_t nslots)
{
	return ring_area_off(nslots) + UR_LINK_AREA_BYTES;
}

static uint8_t *slot_at(struct shm_ring *r, uint64_t pos)
{
	return r->slots + (size_t)(pos % r->nslots) * SHM_STRIDE;
}

struct shm_peer {
	union ur_sockaddr addr;		/* with port */
	struct shm_ring *ring;		/* NULL: none (yet) */
	size_t map_len;
	uint64_t retry_at;		/* no ring: look again after this */
	atomic_bool stale;		/* closed or owner gone: look again */
};

struct ur_shm {
	struct shm_ring *own;
	size_t own_len;
	char names[UR_LINK_MAX_ADDRS][96];
	unsigned int n_names;
	pid_t pid;			/* the owner: a forked child is not */
	/* consumer: first slot not handed out; written under the link's
	 * receive serialisation, read by the sleeping thread's arm */
	_Atomic uint64_t next;

	/* peers: the send path reads under the read lock; a lookup or a
	 * remap (which unmaps) takes it as a writer */
	pthread_rwlock_t peers_lock;
	struct shm_peer peers[UR_SHM_MAX_PEERS];
	unsigned int n_peers;

	/* moves whenever a peer entry is looked up or goes stale: the
	 * engine's cached ur_shm_is_ring() answers hold while it stands */
	_Atomic uint32_t gen;

	_Atomic uint64_t tx_pkts, rx_pkts, doorbells, tx_faults;
};

static inline void shm_count(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

static bool owner_alive(int32_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

/* This process's network namespace (its inode), 0 if /proc says nothing;
 * read once, by whichever thread comes first. */
static unsigned long netns_id(void)
{
	static _Atomic unsigned long id;
	unsigned long v = atomic_load_explicit(&id, memory_order_relaxed);
	struct stat st;

	if (!v && !stat("/proc/self/ns/net", &st)) {
		v = (unsigned long)st.st_ino;
		atomic_store_explicit(&id, v, memory_order_relaxed);
	}
	return v;
}

/* The name of the ring of a (loopback) address, or false. */
static bool ring_name(const union ur_sockaddr *a, char *buf, size_t len)
{
	unsigned long netns = netns_id();
	char host[INET6_ADDRSTRLEN];
	uint16_t port;
	int n;

	if (a->sa.sa_family == AF_INET) {
		inet_ntop(AF_INET, &a->in.sin_addr, host, sizeof(host));
		port = ntohs(a->in.sin_port);
	} else {
		inet_ntop(AF_INET6, &a->in6.sin6_addr, host, sizeof(host));
		port = ntohs(a->in6.sin6_port);
	}
	n = snprintf(buf, len, SHM_DIR "/uroce-%u-%lu-%s-%u",
		     (unsigned int)getuid(), netns, host, port);
	return n > 0 && (size_t)n < len;
}

/* Maps the ring file fd; NULL unless it is a whole ring of this version. */
static struct shm_ring *ring_map(int fd, size_t *len)
{
	struct shm_ring *r;
	struct stat st;

	if (fstat(fd, &st) || (size_t)st.st_size < sizeof(*r))
		return NULL;
	r = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		 fd, 0);
	if (r == MAP_FAILED)
		return NULL;
	if (atomic_load_explicit(&r->magic, memory_order_acquire) !=
		    SHM_MAGIC ||
	    r->version != SHM_VERSION ||
	    r->stride != SHM_STRIDE || !r->nslots ||
	    r->area_off != ring_area_off(r->nslots) ||
	    ring_size(r->nslots) > (size_t)st.st_size) {
		munmap(r, (size_t)st.st_size);
		return NULL;
	}
	*len = (size_t)st.st_size;
	return r;
}

/* Removes name if it is still the file fd is open on (not a newer one). */
static void unlink_if_same(const char *name, int fd)
{
	struct stat a, b;

	if (!fstat(fd, &a) && !stat(name, &b) && a.st_ino == b.st_ino)
		unlink(name);
}

/* Rings of this user and network namespace whose owners died without
 * closing. */
static void sweep_stale(void)
{
	char prefix[48], path[sizeof(SHM_DIR) + 256];
	unsigned int seen = 0;
	struct dirent *e;
	int32_t owner;
	DIR *d;
	int fd;

	snprintf(prefix, sizeof(prefix), "uroce-%u-%lu-",
		 (unsigned int)getuid(), netns_id());
	d = opendir(SHM_DIR);
	if (!d)
		return;
	while ((e = readdir(d)) && seen < UR_SHM_SWEEP_MAX) {
		if (strncmp(e->d_name, prefix, strlen(prefix)))
			continue;
		seen++;
		snprintf(path, sizeof(path), SHM_DIR "/%.200s", e->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		/* no owner yet: a ring another process is creating (a
		 * creator that died there is replaced by the address's next
		 * owner, own_create) */
		if (pread(fd, &owner, sizeof(owner),
			  offsetof(struct shm_ring, owner)) ==
			    (ssize_t)sizeof(owner) &&
		    owner > 0 && !owner_alive(owner))
			unlink_if_same(path, fd);
		close(fd);
	}
	closedir(d);
}

static int own_create(struct ur_shm *s, const char *name)
{
	pthread_mutexattr_t ma;
	struct shm_ring *r;
	size_t len = ring_size(UR_SHM_SLOTS);
	int fd, rc = 0;

	unlink(name);	/* a dead process's: we hold its address now */
	fd = open(name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0)
		return -errno;
	/* every page now: a tmpfs that fills up later would otherwise turn
	 * a producer's store into a SIGBUS; a full one means no ring (UDP) */
	rc = posix_fallocate(fd, 0, (off_t)len);
	rc = -rc;
	r = rc ? MAP_FAILED :
		 mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (r == MAP_FAILED) {
		unlink(name);
		return rc ? rc : -ENOMEM;
	}
	r->nslots = UR_SHM_SLOTS;
	r->stride = SHM_STRIDE;
	r->area_off = ring_area_off(UR_SHM_SLOTS);
	r->owner = (int32_t)getpid();
	r->id = ur_random_u32();
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&r->plock, &ma);
	pthread_mutexattr_destroy(&ma);
	r->version = SHM_VERSION;
	/* last: a sender that maps it early sees no magic and skips it */
	atomic_store_explicit(&r->magic, SHM_MAGIC, memory_order_release);
	s->own = r;
	s->own_len = len;
	return 0;
}

int ur_shm_open(const union ur_sockaddr *addrs, unsigned int n,
		struct ur_shm **out)
{
	struct ur_shm *s;
	char name[96];
	unsigned int i;

	*out = NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	pthread_rwlock_init(&s->peers_lock, NULL);
	s->pid = getpid();
	for (i = 0; i < n && s->n_names < UR_LINK_MAX_ADDRS; i++) {
		if (!ur_addr_is_loopback(&addrs[i]) ||
		    !ring_name(&addrs[i], name, sizeof(name)))
			continue;
		if (!s->own) {
			sweep_stale();
			if (own_create(s, name))
				break;
		} else {
			unlink(name);
			if (link(s->names[0], name))
				continue;
		}
		snprintf(s->names[s->n_names++], sizeof(s->names[0]), "%s",
			 name);
	}
	if (!s->own) {
		ur_shm_close(s);
		return -ENOENT;
	}
	ur_info("link: same-host ring %s", s->names[0]);
	*out = s;
	return 0;
}

void ur_shm_close(struct ur_shm *s)
{
	unsigned int i;

	if (!s)
		return;
	/* a forked child closing what it inherited leaves the ring to its
	 * owner */
	for (i = 0; i < s->n_names && s->pid == getpid(); i++)
		unlink(s->names[i]);
	if (s->own) {
		if (s->pid == getpid())
			atomic_store(&s->own->closed, 1);
		munmap(s->own, s->own_len);
	}
	for (i = 0; i < s->n_peers; i++)
		if (s->peers[i].ring)
			munmap(s->peers[i].ring, s->peers[i].map_len);
	pthread_rwlock_destroy(&s->peers_lock);
	free(s);
}

/* ------------------------------------------------------------------ */
/* Send                                                                */
/* ------------------------------------------------------------------ */

static bool same_addr(const union ur_sockaddr *a, const union ur_sockaddr *b)
{
	if (!ur_sockaddr_same_host(a, b))
		return false;
	return a->sa.sa_family == AF_INET ? a->in.sin_port == b->in.sin_port :
					    a->in6.sin6_port == b->in6.sin6_port;
}

static struct shm_peer *peer_find(struct ur_shm *s,
				  const union ur_sockaddr *dst)
{
	unsigned int i;

	for (i = 0; i < s->n_peers; i++)
		if (same_addr(&s->peers[i].addr, dst))
			return &s->peers[i];
	return NULL;
}

/* A peer's ring appeared, went or is to be looked up again. */
static void peer_changed(struct ur_shm *s, struct shm_peer *p)
{
	atomic_store(&p->stale, true);
	atomic_fetch_add(&s->gen, 1);
}

/* Write lock held: maps dst's ring into p if there is a live one. */
static void peer_lookup(struct ur_shm *s, struct shm_peer *p, uint64_t now)
{
	char name[96];
	struct shm_ring *r;
	size_t len;
	int fd;

	if (p->ring) {
		munmap(p->ring, p->map_len);
		p->ring = NULL;
	}
	atomic_store(&p->stale, false);
	atomic_fetch_add(&s->gen, 1);
	p->retry_at = now + UR_SHM_ABSENT_NS;
	if (!ring_name(&p->addr, name, sizeof(name)))
		return;
	fd = open(name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return;
	r = ring_map(fd, &len);
	if (r && (atomic_load(&r->closed) || !owner_alive(r->owner))) {
		unlink_if_same(name, fd);
		munmap(r, len);
		r = NULL;
	}
	close(fd);
	if (r) {
		p->ring = r;
		p->map_len = len;
	}
}

/* The peer entry for dst with the read lock held on return, or NULL (no
 * lock held) when dst has no ring. */
static struct shm_peer *peer_get(struct ur_shm *s,
				 const union ur_sockaddr *dst)
{
	struct shm_peer *p;
	uint64_t now;

	pthread_rwlock_rdlock(&s->peers_lock);
	p = peer_find(s, dst);
	if (p && p->ring && !atomic_load_explicit(&p->stale,
						  memory_order_relaxed))
		return p;
	now = ur_now_ns();
	if (p && !p->ring && now < p->retry_at) {
		pthread_rwlock_unlock(&s->peers_lock);
		return NULL;
	}
	pthread_rwlock_unlock(&s->peers_lock);

	pthread_rwlock_wrlock(&s->peers_lock);
	p = peer_find(s, dst);
	if (!p && s->n_peers < UR_SHM_MAX_PEERS) {
		p = &s->peers[s->n_peers++];
		memset(p, 0, sizeof(*p));
		p->addr = *dst;
	}
	if (p && (atomic_load(&p->stale) || (!p->ring && now >= p->retry_at)))
		peer_lookup(s, p, now);
	pthread_rwlock_unlock(&s->peers_lock);
	/* the entry may change between the locks: check it again */
	pthread_rwlock_rdlock(&s->peers_lock);
	p = peer_find(s, dst);
	if (p && p->ring && !atomic_load(&p->stale))
		return p;
	pthread_rwlock_unlock(&s->peers_lock);
	return NULL;
}

/* Copies len bytes from the iovecs, starting at (*i, *off), into dst.
 * The iovecs point into registered memory the application may have
 * unmapped: -EFAULT then. */
static int iov_take(const struct ur_txd *d, unsigned int *i, size_t *off,
		    uint8_t *dst, size_t len)
{
	size_t take;
	int rc = 0;

	while (len && *i < d->iovcnt) {
		take = UR_MIN(len, d->iov[*i].iov_len - *off);
		if (!rc && ur_memguard_copy(dst,
					    (const uint8_t *)d->iov[*i].iov_base +
						    *off,
					    take))
			rc = -EFAULT;
		dst += take;
		len -= take;
		*off += take;
		if (*off == d->iov[*i].iov_len) {
			(*i)++;
			*off = 0;
		}
	}
	return rc;
}

static int ring_lock(struct shm_ring *r)
{
	int rc = pthread_mutex_lock(&r->plock);

	/* a producer died holding it: it published nothing, go on */
	if (rc == EOWNERDEAD)
		rc = pthread_mutex_consistent(&r->plock);
	return rc;
}

/* Read lock held. Puts the datagrams of d (len bytes, cut every seg) into
 * p's ring. */
static enum ur_shm_tx ring_put(struct ur_shm *s, struct shm_peer *p,
			       const struct ur_txd *d, size_t len, size_t seg,
			       const union ur_sockaddr *src)
{
	struct shm_ring *r = p->ring;
	uint64_t head, tail, room, nseg = seg ? (len + seg - 1) / seg : 1;
	uint64_t put = 0, k, faults = 0;
	struct shm_slot_hdr *h;
	unsigned int i = 0;
	size_t off = 0, chunk;

	if (ring_lock(r))
		return UR_SHM_NOT_LOCAL;
	if (atomic_load_explicit(&r->closed, memory_order_relaxed)) {
		pthread_mutex_unlock(&r->plock);
		peer_changed(s, p);
		return UR_SHM_NOT_LOCAL;
	}
	head = atomic_load_explicit(&r->head, memory_order_relaxed);
	tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	tsan_handover_acquire(r);	/* the slots up to tail are free */
	room = r->nslots - (head - tail);
	for (k = 0; k < nseg && put < room; k++) {
		chunk = UR_MIN(seg, len - (size_t)k * seg);
		h = (struct shm_slot_hdr *)(void *)slot_at(r, head + put);
		if (iov_take(d, &i, &off, (uint8_t *)h + SHM_SLOT_HDR,
			     chunk)) {
			faults++;	/* as sendmsg's EFAULT: not sent */
			continue;
		}
		h->len = (uint32_t)chunk;
		h->flags = d->no_icrc ? SHM_SLOT_NO_ICRC : 0;
		h->tos = d->tos;
		h->ttl = d->ttl ? d->ttl : UR_DEFAULT_HOP_LIMIT;
		memcpy(&h->src, src, sizeof(h->src));
		memcpy(&h->dst, d->dst, sizeof(h->dst));
		put++;
	}
	/* seq_cst: ordered before the load of `waiting` below, which pairs
	 * with the owner's store of it and load of head (ur_shm_wait_arm) */
	tsan_handover_release(r);
	atomic_store(&r->head, head + put);
	pthread_mutex_unlock(&r->plock);
	if (k < nseg) {
		/* full: lost, as in a full socket buffer */
		atomic_fetch_add_explicit(&r->full_drops, nseg - k,
					  memory_order_relaxed);
		if (!owner_alive(r->owner))
			peer_changed(s, p);
	}
	if (faults)
		shm_count(&s->tx_faults, faults);
	shm_count(&s->tx_pkts, put);
	/* waiting stays set until the owner's thread is up: another of its
	 * threads may read (and drop) a doorbell first, and the next put
	 * must then ring again */
	if (!put)
		return UR_SHM_SENT_NONE;
	return atomic_load(&r->waiting) ? UR_SHM_SENT_WAKE : UR_SHM_SENT;
}

enum ur_shm_tx ur_shm_send(struct ur_shm *s, const struct ur_txd *d,
			   size_t len, const union ur_sockaddr *src)
{
	size_t seg = d->gso_size && len > d->gso_size ? d->gso_size : len;
	struct shm_peer *p;
	enum ur_shm_tx rc;

	if (!s || seg > UR_SHM_SLOT_DATA)
		return UR_SHM_NOT_LOCAL;
	p = peer_get(s, d->dst);
	if (!p)
		return UR_SHM_NOT_LOCAL;
	rc = ring_put(s, p, d, len, seg, src);
	pthread_rwlock_unlock(&s->peers_lock);
	return rc;
}

bool ur_shm_is_ring(struct ur_shm *s, const union ur_sockaddr *dst)
{
	if (!s || !ur_addr_is_loopback(dst) || !peer_get(s, dst))
		return false;
	pthread_rwlock_unlock(&s->peers_lock);
	return true;
}

uint32_t ur_shm_gen(const struct ur_shm *s)
{
	return s ? atomic_load_explicit(&((struct ur_shm *)s)->gen,
					memory_order_acquire) : 0;
}

/* ------------------------------------------------------------------ */
/* The engine's areas                                                  */
/* ------------------------------------------------------------------ */

void *ur_shm_own_area(struct ur_shm *s)
{
	return s ? (uint8_t *)s->own + s->own->area_off : NULL;
}

void *ur_shm_area_get(struct ur_shm *s, const union ur_sockaddr *dst,
		      int32_t *owner)
{
	struct shm_peer *p;

	if (!s)
		return NULL;
	p = peer_get(s, dst);
	if (!p)
		return NULL;
	*owner = p->ring->owner;
	return (uint8_t *)p->ring + p->ring->area_off;
}

void ur_shm_area_put(struct ur_shm *s)
{
	pthread_rwlock_unlock(&s->peers_lock);
}

/* ------------------------------------------------------------------ */
/* Receive                                                             */
/* ------------------------------------------------------------------ */

unsigned int ur_shm_recv(struct ur_shm *s, struct ur_rxd *d, unsigned int max)
{
	struct shm_ring *r = s->own;
	const struct shm_slot_hdr *h;
	uint64_t head, n, k;
	unsigned int out = 0;

	uint64_t next = atomic_load_explicit(&s->next, memory_order_relaxed);

	/* what the last call handed out is done with: free it */
	tsan_handover_release(r);
	atomic_store_explicit(&r->tail, next, memory_order_release);
	head = atomic_load_explicit(&r->head, memory_order_acquire);
	tsan_handover_acquire(r);
	n = UR_MIN(head - next, (uint64_t)max);
	for (k = 0; k < n; k++) {
		h = (const struct shm_slot_hdr *)(void *)slot_at(r, next + k);
		if (h->len > UR_SHM_SLOT_DATA)
			continue;	/* not ours to trust: drop it */
		d[out].data = (uint8_t *)h + SHM_SLOT_HDR;
		d[out].len = h->len;
		memset(&d[out].src, 0, sizeof(d[out].src));
		memset(&d[out].dst, 0, sizeof(d[out].dst));
		memcpy(&d[out].src, &h->src, sizeof(h->src));
		memcpy(&d[out].dst, &h->dst, sizeof(h->dst));
		d[out].tos = h->tos;
		d[out].ttl = h->ttl;
		d[out].ring = true;
		d[out].no_icrc = h->flags & SHM_SLOT_NO_ICRC;
		out++;
	}
	atomic_store_explicit(&s->next, next + n, memory_order_relaxed);
	if (out)
		shm_count(&s->rx_pkts, out);
	return out;
}

bool ur_shm_rx_maybe(struct ur_shm *s)
{
	return atomic_load_explicit(&s->own->head, memory_order_relaxed) !=
	       atomic_load_explicit(&s->next, memory_order_relaxed);
}

bool ur_shm_wait_arm(struct ur_shm *s)
{
	struct shm_ring *r = s->own;

	atomic_store(&r->waiting, 1);
	if (atomic_load(&r->head) !=
	    atomic_load_explicit(&s->next, memory_order_relaxed)) {
		atomic_store(&r->waiting, 0);
		return true;
	}
	return false;
}

void ur_shm_wait_disarm(struct ur_shm *s)
{
	atomic_store_explicit(&s->own->waiting, 0, memory_order_relaxed);
}

void ur_shm_stats(const struct ur_shm *s, struct ur_link_stats *st)
{
	struct ur_shm *m = (struct ur_shm *)s;

	if (!s)
		return;
	st->shm_tx_pkts = atomic_load(&m->tx_pkts);
	st->shm_rx_pkts = atomic_load(&m->rx_pkts);
	st->shm_doorbells = atomic_load(&m->doorbells);
	st->shm_full_drops = atomic_load(&m->own->full_drops);
	st->tx_errors += atomic_load(&m->tx_faults);
}

void ur_shm_note_doorbell(struct ur_shm *s)
{
	shm_count(&s->doorbells, 1);
}
