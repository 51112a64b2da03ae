/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * UD multicast groups of one NIC: which QPs are attached to which
 * multicast GID, and the link's membership of the IP group that GID names
 * on RoCEv2 (::ffff:224.x.y.z is the IPv4 group, an ff00::/8 GID the IPv6
 * one), joined with the first QP and left with the last. There is no SA on
 * RoCE: attaching is all it takes to receive. The receive path (recv.c)
 * finds a group's QPs here and delivers to each. Everything runs under
 * receive shard 0's lock, which receives the groups' sockets (link.h,
 * "Receive queues"), so neither the table nor the link's socket set
 * changes under its receive burst.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_priv.h"
#include "obj/limits.h"
#include "util/lock_assert.h"
#include "util/log.h"

_Static_assert(UR_MAX_MCAST_GRP <= UR_LINK_MAX_GROUPS,
	       "every group the device reports needs a link socket");

struct ur_mcg *ur_mcast_find(struct ur_nic *nic, const uint8_t gid[16])
{
	unsigned int i;

	UR_ASSERT_HELD(&nic->shard[0].lock);
	for (i = 0; i < nic->n_mcg; i++)
		if (!memcmp(nic->mcg[i]->gid, gid, 16))
			return nic->mcg[i];
	return NULL;
}

static int mcg_index_of(const struct ur_mcg *g, const struct ur_qp *qp)
{
	unsigned int i;

	for (i = 0; i < g->n; i++)
		if (g->qps[i] == qp)
			return (int)i;
	return -1;
}

/* A new group: the link joins its IP group first. 0 or -errno. */
static int mcg_create(struct ur_nic *nic, const uint8_t gid[16],
		      struct ur_mcg **out)
{
	struct ur_mcg *g;
	int rc;

	if (nic->n_mcg >= UR_MAX_MCAST_GRP)
		return -ENOMEM;
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	memcpy(g->gid, gid, 16);
	ur_gid_to_sockaddr(gid, UR_ROCEV2_PORT, &g->group);
	rc = ur_link_join(nic->link, &g->group);
	if (rc) {
		free(g);
		/* no address of the group's IP family to receive it on */
		return rc == -EAFNOSUPPORT ? -EINVAL : rc;
	}
	nic->mcg[nic->n_mcg++] = g;
	/* the link's fd may have become an epoll set: poll the new one */
	ur_nic_wake(nic);
	*out = g;
	return 0;
}

static void mcg_drop_qp(struct ur_nic *nic, struct ur_mcg *g, int idx)
{
	unsigned int i;

	g->qps[idx] = g->qps[--g->n];
	nic->n_attach--;
	if (g->n)
		return;
	ur_link_leave(nic->link, &g->group);
	for (i = 0; i < nic->n_mcg; i++)
		if (nic->mcg[i] == g)
			nic->mcg[i] = nic->mcg[--nic->n_mcg];
	free(g);
}

int ur_engine_mcast_attach(struct ur_qp *qp, const uint8_t gid[16])
{
	struct ur_nic *nic = qp->xp ? qp->xp->nic : NULL;
	struct ur_mcg *g;
	int rc = 0;

	if (!nic)
		return -ENODEV;
	pthread_mutex_lock(&nic->shard[0].lock);
	g = ur_mcast_find(nic, gid);
	if (g && mcg_index_of(g, qp) >= 0)
		goto out;		/* attached once, receives once */
	if ((g && g->n >= UR_MAX_MCAST_QP_ATTACH) ||
	    nic->n_attach >= UR_MAX_TOTAL_MCAST_QP_ATTACH) {
		rc = -ENOMEM;
		goto out;
	}
	if (!g)
		rc = mcg_create(nic, gid, &g);
	if (!rc) {
		g->qps[g->n++] = qp;
		nic->n_attach++;
	}
out:
	pthread_mutex_unlock(&nic->shard[0].lock);
	return rc;
}

int ur_engine_mcast_detach(struct ur_qp *qp, const uint8_t gid[16])
{
	struct ur_nic *nic = qp->xp ? qp->xp->nic : NULL;
	struct ur_mcg *g;
	int idx = -1;

	if (!nic)
		return -ENODEV;
	pthread_mutex_lock(&nic->shard[0].lock);
	g = ur_mcast_find(nic, gid);
	if (g)
		idx = mcg_index_of(g, qp);
	if (idx >= 0)
		mcg_drop_qp(nic, g, idx);
	pthread_mutex_unlock(&nic->shard[0].lock);
	return idx >= 0 ? 0 : -EINVAL;
}

void ur_mcast_qp_gone(struct ur_qp *qp)
{
	struct ur_nic *nic = qp->xp->nic;
	unsigned int i = 0;
	int idx;

	pthread_mutex_lock(&nic->shard[0].lock);
	/* mcg_drop_qp() may free a group and move the last one to i */
	while (i < nic->n_mcg) {
		struct ur_mcg *g = nic->mcg[i];
		unsigned int before = nic->n_mcg;

		idx = mcg_index_of(g, qp);
		if (idx >= 0)
			mcg_drop_qp(nic, g, idx);
		if (nic->n_mcg == before)
			i++;
	}
	pthread_mutex_unlock(&nic->shard[0].lock);
}

void ur_mcast_fini(struct ur_nic *nic)
{
	while (nic->n_mcg)
		free(nic->mcg[--nic->n_mcg]);
}
