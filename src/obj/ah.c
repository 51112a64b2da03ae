/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Address handles. On RoCEv2 an address is a GID, i.e. an IP address: an
 * AH must be global (is_global, GRH), name our port 1 and one of our valid
 * GIDs as source, and a destination of the same IP family.
 *
 * ibv_init_ah_from_wc reads the 40 bytes a UD receive places before the
 * payload. For RoCEv2 over IPv4 they hold 20 zero bytes then the IPv4
 * header (accepted only with a correct header checksum); otherwise they
 * hold the IPv6 header.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "obj/obj_priv.h"

static int gid_index_valid(const struct ur_device *dev, unsigned int idx)
{
	return idx < UR_MAX_GID && idx < dev->num_gids && dev->gids[idx].valid;
}

int ur_ah_create(struct ur_pd *pd, const struct ibv_ah_attr *attr,
		 struct ur_ah **out)
{
	struct ur_device *dev = ur_ctx_dev(pd->ibpd.context);
	const struct ibv_global_route *g = &attr->grh;
	struct ur_ah *ah;

	if (attr->port_num != 1 || !attr->is_global)
		return -EINVAL;
	if (!gid_index_valid(dev, g->sgid_index) || ur_gid_is_zero(g->dgid.raw))
		return -EINVAL;
	if (ur_gid_is_v4mapped(g->dgid.raw) !=
	    ur_gid_is_v4mapped(dev->gids[g->sgid_index].gid.raw))
		return -EINVAL;		/* cannot cross IP families */

	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return -ENOMEM;
	ah->av.attr = *attr;
	ur_gid_to_sockaddr(g->dgid.raw, UR_ROCEV2_PORT, &ah->av.dest);
	ah->av.src = dev->gids[g->sgid_index].addr;
	ah->av.sgid_index = g->sgid_index;
	ah->av.traffic_class = g->traffic_class;
	ah->av.hop_limit = g->hop_limit;
	ah->av.flow_label = g->flow_label & 0xFFFFF;
	ah->pd = ur_pd_prot(pd);	/* a parent domain stands for its PD */
	ah->ibah.context = pd->ibpd.context;
	ah->ibah.pd = &pd->ibpd;
	ah->ibah.handle = ur_obj_handle();
	atomic_fetch_add(&ah->pd->usecnt, 1);
	*out = ah;
	return 0;
}

void ur_ah_destroy(struct ur_ah *ah)
{
	atomic_fetch_sub(&ah->pd->usecnt, 1);
	free(ah);
}

static bool ipv4_csum_ok(const uint8_t *h)
{
	uint32_t sum = 0;
	unsigned int i, ihl = (h[0] & 0xF) * 4u;

	if (ihl != 20)
		return false;	/* RoCEv2 never carries IPv4 options */
	for (i = 0; i < ihl; i += 2)
		sum += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xFFFF) + (sum >> 16);
	return sum == 0xFFFF;
}

static bool zero_bytes(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

static int find_sgid(const struct ur_device *dev, const uint8_t gid[16])
{
	unsigned int i;

	for (i = 0; i < dev->num_gids && i < UR_MAX_GID; i++)
		if (dev->gids[i].valid && !memcmp(dev->gids[i].gid.raw, gid, 16))
			return (int)i;
	return -1;
}

int ur_ah_attr_from_grh(struct ur_device *dev, uint8_t port_num,
			const struct ibv_wc *wc, const void *grh,
			struct ibv_ah_attr *attr)
{
	const uint8_t *b = grh;
	uint8_t src[16], dst[16], tc;
	uint32_t flow = 0;
	int idx;

	if (port_num != 1 || !(wc->wc_flags & IBV_WC_GRH) || !grh)
		return -EINVAL;
	if (zero_bytes(b, UR_GRH_IPV4_OFF) && (b[UR_GRH_IPV4_OFF] >> 4) == 4) {
		const uint8_t *h = b + UR_GRH_IPV4_OFF;

		if (!ipv4_csum_ok(h))
			return -EINVAL;
		tc = h[1];
		ur_gid_from_ipv4(h + 12, src);	/* source address */
		ur_gid_from_ipv4(h + 16, dst);
	} else if ((b[0] >> 4) == 6) {
		tc = (uint8_t)((b[0] & 0xF) << 4 | b[1] >> 4);
		flow = (uint32_t)(b[1] & 0xF) << 16 | (uint32_t)b[2] << 8 | b[3];
		memcpy(src, b + 8, 16);
		memcpy(dst, b + 24, 16);
	} else {
		return -EINVAL;
	}
	idx = find_sgid(dev, dst);
	if (idx < 0)
		return -EINVAL;		/* not addressed to one of our GIDs */

	memset(attr, 0, sizeof(*attr));
	attr->dlid = wc->slid;
	attr->sl = wc->sl;
	attr->src_path_bits = wc->dlid_path_bits;
	attr->port_num = port_num;
	attr->is_global = 1;
	memcpy(attr->grh.dgid.raw, src, 16);	/* reply to the sender */
	attr->grh.sgid_index = (uint8_t)idx;
	attr->grh.flow_label = flow;
	attr->grh.hop_limit = 0xFF;
	/* the class to answer with: its ECN bits were this packet's on its
	 * path (ECT(0), or CE where a queue marked it), the NIC's to set on
	 * the reply, never the application's (the GRH image keeps them) */
	attr->grh.traffic_class = tc & (uint8_t)~UR_IP_ECN_MASK;
	return 0;
}
