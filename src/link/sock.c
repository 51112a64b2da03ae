/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Opening the link's sockets (sock.h). One socket per address of the
 * device rather than one wildcard socket with IP_PKTINFO: every uroce
 * process of a host binds its own address on port 4791, and a wildcard
 * bind of that port would collide with all of them (and with a kernel
 * RoCE stack's socket); a socket bound to one address also sends from it
 * without a source cmsg per datagram.
 *
 * Multicast: a socket bound to a unicast address never receives a
 * multicast datagram (the kernel matches the bound address against the
 * destination), so each joined group gets a socket bound to the group
 * itself. SO_REUSEADDR on those (and only those) lets every device and
 * process of the host bind the same group; the kernel hands each of them
 * a copy. IP_MULTICAST_LOOP stays on (the default) so that processes of
 * one host hear each other's datagrams, which also brings a device its
 * own (the engine decides what to deliver, engine/mcast.c).
 */
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "link/params.h"
#include "link/sock.h"
#include "util/compiler.h"
#include "util/log.h"
#include "util/netif.h"

static socklen_t sa_len(const union ur_sockaddr *a)
{
	return a->sa.sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					      sizeof(struct sockaddr_in);
}

static int setopt(int fd, int level, int name, int val)
{
	return setsockopt(fd, level, name, &val, sizeof(val)) ? -errno : 0;
}

static void set_buf(int fd, int force_name, int name, unsigned int bytes)
{
	int v = (int)bytes;

	/* FORCE works with CAP_NET_ADMIN only; the plain one is capped by
	 * net.core.[rw]mem_max. */
	if (setopt(fd, SOL_SOCKET, force_name, v))
		setopt(fd, SOL_SOCKET, name, v);
}

uint32_t ur_sock_max_payload(const union ur_sockaddr *a)
{
	uint32_t mtu;

	ur_netif_of_addr(a, &mtu, NULL);	/* an assumed MTU if none */

	/* IP + UDP headers, and the 16-bit length limits: IPv4's total
	 * length counts its header, IPv6's payload length does not */
	if (a->sa.sa_family == AF_INET)
		return UR_MIN(mtu, UR_IP_LEN_MAX) - UR_IPV4_HDR_BYTES -
		       UR_UDP_HDR_BYTES;
	return UR_MIN(mtu - UR_IPV6_HDR_BYTES, UR_IP_LEN_MAX) -
	       UR_UDP_HDR_BYTES;
}

/* The receive cmsgs udp.c parses, path MTU discovery (DF, IPv4 ID 0). */
static int sock_options(int fd, int family)
{
	int rc;

	if (family == AF_INET) {
		rc = setopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO);
		rc = rc ?: setopt(fd, IPPROTO_IP, IP_PKTINFO, 1);
		rc = rc ?: setopt(fd, IPPROTO_IP, IP_RECVTOS, 1);
		rc = rc ?: setopt(fd, IPPROTO_IP, IP_RECVTTL, 1);
	} else {
		rc = setopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
		rc = rc ?: setopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER,
				  IPV6_PMTUDISC_DO);
		rc = rc ?: setopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1);
		rc = rc ?: setopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1);
		rc = rc ?: setopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, 1);
		/* Linux rxe sends RoCEv2 over IPv6 with a zero UDP checksum
		 * (allowed for tunnels, RFC 6936); the ICRC covers the
		 * packet, and without this the kernel drops them all */
		rc = rc ?: setopt(fd, SOL_UDP, UDP_NO_CHECK6_RX, 1);
	}
	if (rc)
		ur_err("link: socket options: %d", rc);
	return rc;
}

static int sock_new(const struct ur_link_config *cfg, int family,
		    bool gro, struct ur_sock *s)
{
	int rc;

	memset(s, 0, sizeof(*s));
	s->fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       IPPROTO_UDP);
	if (s->fd < 0)
		return -errno;
	set_buf(s->fd, SO_RCVBUFFORCE, SO_RCVBUF,
		cfg->rcvbuf ? cfg->rcvbuf : UR_LINK_RCVBUF);
	set_buf(s->fd, SO_SNDBUFFORCE, SO_SNDBUF,
		cfg->sndbuf ? cfg->sndbuf : UR_LINK_SNDBUF);
	rc = sock_options(s->fd, family);
	/* the class most datagrams leave with, so they need no cmsg */
	if (!rc && cfg->tos)
		rc = family == AF_INET ?
			     setopt(s->fd, IPPROTO_IP, IP_TOS, cfg->tos) :
			     setopt(s->fd, IPPROTO_IPV6, IPV6_TCLASS, cfg->tos);
	if (rc)
		return rc;
	/* GSO: probe by setting a socket-wide segment size, then clear it
	 * (udp.c passes the size per message as a cmsg). */
	if (cfg->use_gso && !setopt(s->fd, SOL_UDP, UDP_SEGMENT, 1024)) {
		s->gso_ok = true;
		setopt(s->fd, SOL_UDP, UDP_SEGMENT, 0);
	}
	if (gro && !setopt(s->fd, SOL_UDP, UDP_GRO, 1))
		s->gro_on = true;
	return 0;
}

static int sock_bind(struct ur_sock *s, const union ur_sockaddr *addr)
{
	socklen_t sl = sizeof(s->local);

	if (bind(s->fd, &addr->sa, sa_len(addr)))
		return -errno;
	s->local = *addr;
	/* learn the port when the caller asked for an ephemeral one */
	getsockname(s->fd, &s->local.sa, &sl);
	return 0;
}

/*
 * Multicast datagrams sent from this socket leave through addr's
 * interface (without it the kernel follows the routing table, which has
 * no multicast route on lo or in a fresh namespace), with the TTL the
 * kernel's rdma_cm gives a RoCEv2 group's address vector: the unicast
 * default, 64.
 */
static void sock_mcast_tx(const struct ur_sock *s)
{
	unsigned int ifindex = 0;
	uint32_t mtu;

	if (ur_netif_of_addr(&s->local, &mtu, &ifindex) || !ifindex)
		return;
	if (s->local.sa.sa_family == AF_INET) {
		struct ip_mreqn m = {
			.imr_address = s->local.in.sin_addr,
			.imr_ifindex = (int)ifindex,
		};

		if (setsockopt(s->fd, IPPROTO_IP, IP_MULTICAST_IF, &m,
			       sizeof(m)))
			ur_dbg("link: IP_MULTICAST_IF: %s", strerror(errno));
		setopt(s->fd, IPPROTO_IP, IP_MULTICAST_TTL,
		       UR_DEFAULT_HOP_LIMIT);
	} else {
		setopt(s->fd, IPPROTO_IPV6, IPV6_MULTICAST_IF, (int)ifindex);
		setopt(s->fd, IPPROTO_IPV6, IPV6_MULTICAST_HOPS,
		       UR_DEFAULT_HOP_LIMIT);
	}
}

int ur_sock_open_addr(const struct ur_link_config *cfg,
		      const union ur_sockaddr *addr, struct ur_sock *s)
{
	int family = addr->sa.sa_family;
	int rc;

	if (family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	rc = sock_new(cfg, family, cfg->use_gro, s);
	/* link.h's receive queues: the address's sockets share its port */
	if (!rc && cfg->rx_queues > 1)
		rc = setopt(s->fd, SOL_SOCKET, SO_REUSEPORT, 1);
	rc = rc ?: sock_bind(s, addr);
	if (rc) {
		if (rc != -EADDRINUSE)
			ur_err("link: bind: %s", strerror(-rc));
		ur_sock_close(s);
		return rc;
	}
	sock_mcast_tx(s);
	return 0;
}

/* Joins group on ifindex; joining one interface twice is not an error. */
static int sock_member(int fd, const union ur_sockaddr *group,
		       unsigned int ifindex)
{
	int rc;

	if (group->sa.sa_family == AF_INET) {
		struct ip_mreqn m = {
			.imr_multiaddr = group->in.sin_addr,
			.imr_ifindex = (int)ifindex,
		};

		rc = setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m,
				sizeof(m));
	} else {
		struct ipv6_mreq m = {
			.ipv6mr_multiaddr = group->in6.sin6_addr,
			.ipv6mr_interface = ifindex,
		};

		rc = setsockopt(fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &m,
				sizeof(m));
	}
	return rc && errno != EADDRINUSE ? -errno : 0;
}

int ur_sock_open_group(const struct ur_link_config *cfg, bool gro,
		       const union ur_sockaddr *group,
		       const union ur_sockaddr *addrs, unsigned int n,
		       struct ur_sock *s)
{
	int family = group->sa.sa_family;
	union ur_sockaddr where = *group;
	unsigned int i, ifindex, joined = 0;
	uint32_t mtu;
	int rc;

	rc = sock_new(cfg, family, gro, s);
	rc = rc ?: setopt(s->fd, SOL_SOCKET, SO_REUSEADDR, 1);
	for (i = 0; !rc && i < n; i++) {
		if (addrs[i].sa.sa_family != family ||
		    ur_netif_of_addr(&addrs[i], &mtu, &ifindex) || !ifindex)
			continue;
		/* a link-scope IPv6 group is bound with its interface */
		if (family == AF_INET6 && !joined &&
		    IN6_IS_ADDR_MC_LINKLOCAL(&group->in6.sin6_addr))
			where.in6.sin6_scope_id = ifindex;
		rc = sock_member(s->fd, group, ifindex);
		joined += !rc;
	}
	if (!rc && !joined)
		rc = -EAFNOSUPPORT;
	rc = rc ?: sock_bind(s, &where);
	if (rc) {
		ur_warn("link: cannot join a multicast group: %s",
			strerror(-rc));
		ur_sock_close(s);
	}
	return rc;
}

void ur_sock_close(struct ur_sock *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}
