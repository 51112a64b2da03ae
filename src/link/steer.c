/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The datagram backend's receive queues (link.h, "Receive queues"): each
 * address bound by cfg.rx_queues sockets with SO_REUSEPORT, and a classic
 * BPF program on the group that picks the socket by the BTH's destination
 * QP, so that every datagram of a QP reaches the same queue and the
 * engine receives different QPs on different threads at once.
 *
 * SO_REUSEPORT lets any socket of the same user join the group, so the
 * address is claimed first by binding an abstract unix socket named after
 * it: the second process to open it fails with EADDRINUSE, as a plain
 * bind does (the address is the process's identity, docs/design.md
 * "Addressing", and the same-host ring's name).
 */
#include <errno.h>
#include <stddef.h>
#include <arpa/inet.h>
#include <linux/filter.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "link/udp_priv.h"
#include "util/log.h"

#ifndef SO_ATTACH_REUSEPORT_CBPF
#define SO_ATTACH_REUSEPORT_CBPF 51
#endif

/* The BTH's destination QP: the low 24 bits of the payload's word 1. */
#define STEER_QPN_WORD 4u
#define STEER_QPN_MASK 0x00ffffffu

int ur_udp_steer_claim(struct ur_udp *u, unsigned int i,
		       const union ur_sockaddr *a)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	char ip[INET6_ADDRSTRLEN] = "";
	socklen_t len;
	int fd, n;

	if (u->cfg.rx_queues <= 1 || i >= UR_LINK_MAX_ADDRS)
		return 0;
	if (a->sa.sa_family == AF_INET)
		inet_ntop(AF_INET, &a->in.sin_addr, ip, sizeof(ip));
	else
		inet_ntop(AF_INET6, &a->in6.sin6_addr, ip, sizeof(ip));
	/* sun_path[0] stays 0: the abstract namespace (per network
	 * namespace, gone with the last fd; nothing to clean up) */
	n = snprintf(un.sun_path + 1, sizeof(un.sun_path) - 1,
		     "uroce-udp-%u-%s-%u", getuid(), ip,
		     ntohs(port_of(a)));
	len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			  (size_t)n);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&un, len)) {
		n = errno;
		close(fd);
		return n == EADDRINUSE ? -EADDRINUSE : -n;
	}
	u->claim_fd[i] = fd;
	return 0;
}

/* The program the kernel runs on every datagram for the group: QPN % n;
 * a datagram too short for a BTH ends the program with 0 (queue 0). */
static int steer_attach(int fd, unsigned int n)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, STEER_QPN_WORD),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, STEER_QPN_MASK),
		BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, n),
		BPF_STMT(BPF_RET | BPF_A, 0),
	};
	struct sock_fprog prog = {
		.len = sizeof(code) / sizeof(code[0]),
		.filter = code,
	};

	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog,
		       sizeof(prog)))
		return -errno;
	return 0;
}

/* Queue q's socket for bound address i (the kernel numbers a group's
 * sockets in bind order: the address socket is 0, queue q's is q). */
static int steer_sock(struct ur_udp *u, unsigned int q, unsigned int i)
{
	struct udp_rxq *rq = &u->rxq[q];
	struct epoll_event ev = { .events = EPOLLIN };
	struct ur_sock s;
	int rc;

	rc = ur_sock_open_addr(&u->cfg, &u->socks[i].local, &s);
	if (rc)
		return rc;
	rq->fds[i] = s.fd;
	if (epoll_ctl(rq->ep_fd, EPOLL_CTL_ADD, s.fd, &ev))
		return -errno;
	rq->poll_fd = rq->poll_fd < 0 ? s.fd : rq->ep_fd;
	return 0;
}

static void steer_close_q(struct udp_rxq *rq)
{
	unsigned int i;

	for (i = 0; i < UR_LINK_MAX_ADDRS; i++)
		if (rq->fds[i] >= 0)
			close(rq->fds[i]);
	if (rq->ep_fd >= 0)
		close(rq->ep_fd);
	ur_udp_rx_free(rq);
	memset(rq, 0, sizeof(*rq));
}

/* Queues 1 .. n-1, all or none: a group missing a socket would hand its
 * datagrams to the wrong queue or to the kernel's hash. */
static int steer_open_all(struct ur_udp *u, unsigned int n)
{
	unsigned int q, i;
	int rc = 0;

	for (q = 1; q < n; q++) {
		for (i = 0; i < UR_LINK_MAX_ADDRS; i++)
			u->rxq[q].fds[i] = -1;
		u->rxq[q].poll_fd = u->rxq[q].ep_fd = -1;
	}
	for (q = 1; q < n; q++) {
		struct udp_rxq *rq = &u->rxq[q];

		rq->ep_fd = epoll_create1(EPOLL_CLOEXEC);
		if (rq->ep_fd < 0)
			return -errno;
		for (i = 0; !rc && i < u->n_addr; i++)
			if (u->socks[i].fd >= 0)
				rc = steer_sock(u, q, i);
		rc = rc ?: ur_udp_rx_setup(u, rq);
		if (rc)
			return rc;
	}
	for (i = 0; !rc && i < u->n_addr; i++)
		if (u->socks[i].fd >= 0)
			rc = steer_attach(u->socks[i].fd, n);
	return rc;
}

void ur_udp_steer_open(struct ur_udp *u)
{
	unsigned int n = u->cfg.rx_queues, q;
	int rc;

	if (n <= 1)
		return;
	rc = steer_open_all(u, n);
	if (!rc) {
		u->n_rxq = n;
		return;
	}
	ur_warn("link: %u receive queues refused (%s): one queue", n,
		strerror(-rc));
	/* the address sockets stay in their groups alone: the kernel hands
	 * every datagram to the one socket left */
	for (q = 1; q < n; q++)
		steer_close_q(&u->rxq[q]);
}

void ur_udp_steer_close(struct ur_udp *u)
{
	unsigned int q;

	if (!u->rxq)
		return;
	for (q = 1; q < u->n_rxq; q++)
		steer_close_q(&u->rxq[q]);
	u->n_rxq = 1;
}
