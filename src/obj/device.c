/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Software devices: creation from the configuration, GID table, and the
 * device/port attributes they report (values from obj/limits.h).
 *
 * Port choices (documented for the README):
 *  - state ACTIVE, phys_state LINK_UP, link layer Ethernet (RoCE);
 *  - active MTU: the largest IB MTU <= interface MTU - 80 (room for the
 *    IP/UDP/BTH/ICRC headers), loopback -> 4096; max MTU 4096;
 *  - speed: 1X EDR = 25 Gb/s, a common RoCE port speed; the real rate is
 *    whatever the host manages;
 *  - one P_Key (0xFFFF), LID 0, CM supported, IP-based GIDs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "obj/device.h"
#include "obj/obj_priv.h"
#include "util/config.h"
#include "util/log.h"
#include "util/netif.h"

/* What only this file needs per device, indexed by ur_device.index. */
struct dev_extra {
	bool auto_gid0;			/* GID 0 is an automatic address */
	unsigned int ifindex[UR_MAX_GID];
};

static struct ur_device *devices;
static struct dev_extra *extras;
static unsigned int num_devices;
static int create_err;
static pthread_once_t create_once = PTHREAD_ONCE_INIT;

void ur_gid_to_mac(const union ibv_gid *gid, uint8_t mac[6])
{
	mac[0] = 0x02;			/* locally administered, unicast */
	mac[1] = 0x00;
	memcpy(mac + 2, gid->raw + 12, 4);
}

static uint64_t guid_from_gid(const union ibv_gid *gid)
{
	uint8_t mac[6], eui[8];
	uint64_t be;

	ur_gid_to_mac(gid, mac);
	eui[0] = mac[0] ^ 0x02;		/* EUI-64: flip the U/L bit */
	eui[1] = mac[1];
	eui[2] = mac[2];
	eui[3] = 0xff;
	eui[4] = 0xfe;
	eui[5] = mac[3];
	eui[6] = mac[4];
	eui[7] = mac[5];
	memcpy(&be, eui, sizeof(be));
	return be;
}

static void set_gid(struct ur_device *dev, unsigned int i,
		    const union ur_sockaddr *a)
{
	struct dev_extra *x = &extras[dev->index];
	uint32_t mtu;

	dev->gids[i].addr = *a;
	ur_sockaddr_to_gid(a, dev->gids[i].gid.raw);
	dev->gids[i].valid = true;
	if (ur_netif_of_addr(a, &mtu, &x->ifindex[i]) &&
	    !ur_addr_is_loopback(a))
		ur_warn("no interface has address of a UROCE_ADDRS entry; assuming MTU %u",
			mtu);
	if (i == 0) {
		dev->link_mtu = mtu;
		dev->active_mtu = (enum ibv_mtu)ur_mtu_for_link(mtu,
				a->sa.sa_family == AF_INET6);
		dev->node_guid = guid_from_gid(&dev->gids[0].gid);
	}
}

static int device_init(struct ur_device *dev, unsigned int index,
		       const struct ur_config *cfg)
{
	union ur_sockaddr a;
	int rc;

	dev->index = index;
	dev->ibdev.node_type = IBV_NODE_CA;
	dev->ibdev.transport_type = IBV_TRANSPORT_IB;
	snprintf(dev->ibdev.name, sizeof(dev->ibdev.name), "uroce%u", index);
	snprintf(dev->ibdev.dev_name, sizeof(dev->ibdev.dev_name),
		 "uverbs-uroce%u", index);
	snprintf(dev->ibdev.dev_path, sizeof(dev->ibdev.dev_path),
		 UR_DEV_FAKE_SYSFS "/class/infiniband_verbs/uverbs-uroce%u",
		 index);
	snprintf(dev->ibdev.ibdev_path, sizeof(dev->ibdev.ibdev_path),
		 UR_DEV_FAKE_SYSFS "/class/infiniband/uroce%u", index);
	pthread_mutex_init(&dev->lock, NULL);
	pthread_rwlock_init(&dev->obj_lock, NULL);
	ur_u32_map_init(&dev->mem_keys);
	ur_u32_map_init(&dev->qpns);
	ur_key_space_init(&dev->keys);
	ur_u32_map_init(&dev->srqns);

	if (index == 0 && cfg->addrs_bad)
		return -EINVAL;	/* reported by util/config.c */
	if (index == 0 && cfg->num_addrs) {
		unsigned int n = UR_MIN(cfg->num_addrs, (unsigned int)UR_MAX_GID);

		/* util/config.c refuses a longer list; both say "16 GIDs" */
		_Static_assert(UR_CONFIG_MAX_ADDRS == UR_MAX_GID,
			       "UROCE_ADDRS holds one address per GID");

		for (unsigned int i = 0; i < n; i++)
			set_gid(dev, i, &cfg->addrs[i]);
		dev->num_gids = n;
		return 0;
	}
	rc = ur_config_auto_addr(&a);
	if (rc)
		return rc;
	extras[index].auto_gid0 = true;
	set_gid(dev, 0, &a);
	dev->num_gids = 1;
	return 0;
}

static void devices_create(void)
{
	const struct ur_config *cfg = ur_config_get();
	unsigned int n = cfg->num_devices;

	devices = calloc(n, sizeof(*devices));
	extras = calloc(n, sizeof(*extras));
	if (!devices || !extras) {
		create_err = ENOMEM;
		goto fail;
	}
	for (unsigned int i = 0; i < n; i++) {
		int rc = device_init(&devices[i], i, cfg);

		if (rc) {
			create_err = -rc;
			goto fail;
		}
	}
	num_devices = n;
	return;
fail:
	/* Devices may be partly initialised; they are never freed anyway. */
	free(extras);
	free(devices);
	extras = NULL;
	devices = NULL;
}

struct ur_device *ur_device_get_all(unsigned int *n)
{
	pthread_once(&create_once, devices_create);
	*n = num_devices;
	if (!devices)
		errno = create_err;
	return devices;
}

int ur_device_reroll_auto_addr(struct ur_device *dev)
{
	union ur_sockaddr a;
	int rc;

	if (!extras[dev->index].auto_gid0)
		return -EADDRNOTAVAIL;
	rc = ur_config_auto_addr(&a);
	if (rc)
		return rc;
	set_gid(dev, 0, &a);
	ur_info("%s: automatic address in use, trying another",
		dev->ibdev.name);
	return 0;
}

unsigned int ur_device_gid_ifindex(const struct ur_device *dev,
				   unsigned int index)
{
	return index < UR_MAX_GID ? extras[dev->index].ifindex[index] : 0;
}

void ur_device_query(const struct ur_device *dev, struct ibv_device_attr *attr)
{
	memset(attr, 0, sizeof(*attr));
	snprintf(attr->fw_ver, sizeof(attr->fw_ver), "uroce");
	attr->node_guid = dev->node_guid;
	attr->sys_image_guid = dev->node_guid;
	attr->max_mr_size = UR_MAX_MR_SIZE;
	attr->page_size_cap = UR_PAGE_SIZE_CAP;
	attr->vendor_id = UR_VENDOR_ID;
	attr->vendor_part_id = UR_VENDOR_PART_ID;
	attr->hw_ver = UR_HW_VER;
	attr->max_qp = UR_MAX_QP;
	attr->max_qp_wr = UR_MAX_QP_WR;
	attr->device_cap_flags = UR_DEVICE_CAP_FLAGS;
	attr->max_sge = UR_MAX_SGE;
	attr->max_sge_rd = UR_MAX_SGE_RD;
	attr->max_cq = UR_MAX_CQ;
	attr->max_cqe = UR_MAX_CQE;
	attr->max_mr = UR_MAX_MR;
	attr->max_pd = UR_MAX_PD;
	attr->max_qp_rd_atom = UR_MAX_QP_RD_ATOM;
	attr->max_qp_init_rd_atom = UR_MAX_QP_INIT_RD_ATOM;
	attr->max_res_rd_atom = UR_MAX_RES_RD_ATOM;
	attr->atomic_cap = IBV_ATOMIC_HCA;
	attr->max_mw = UR_MAX_MW;
	attr->max_ah = UR_MAX_AH;
	attr->max_mcast_grp = UR_MAX_MCAST_GRP;
	attr->max_mcast_qp_attach = UR_MAX_MCAST_QP_ATTACH;
	attr->max_total_mcast_qp_attach = UR_MAX_TOTAL_MCAST_QP_ATTACH;
	attr->max_srq = UR_MAX_SRQ;
	attr->max_srq_wr = UR_MAX_SRQ_WR;
	attr->max_srq_sge = UR_MAX_SRQ_SGE;
	attr->max_pkeys = UR_PKEY_TBL_LEN;
	attr->local_ca_ack_delay = UR_LOCAL_CA_ACK_DELAY;
	attr->phys_port_cnt = UR_NUM_PORTS;
}

void ur_device_query_ex(const struct ur_device *dev,
			struct ibv_device_attr_ex *attr)
{
	memset(attr, 0, sizeof(*attr));
	ur_device_query(dev, &attr->orig_attr);
	attr->device_cap_flags_ex = UR_DEVICE_CAP_FLAGS_EX;
	attr->completion_timestamp_mask = UR_TIMESTAMP_MASK;
	attr->hca_core_clock = UR_HCA_CORE_CLOCK_KHZ;
	attr->phys_port_cnt_ex = UR_NUM_PORTS;
	attr->max_dm_size = UR_MAX_DM_SIZE;
	/* Registered memory is never pinned: every access goes through the
	 * page tables at the moment it happens, which is what ODP promises,
	 * implicit (whole address space) registration included. */
	attr->odp_caps.general_caps =
		IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	attr->odp_caps.per_transport_caps.rc_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
		IBV_ODP_SUPPORT_ATOMIC | IBV_ODP_SUPPORT_SRQ_RECV |
		UR_ODP_SUPPORT_FLUSH | UR_ODP_SUPPORT_ATOMIC_WRITE;
	attr->odp_caps.per_transport_caps.uc_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_SRQ_RECV;
	attr->odp_caps.per_transport_caps.ud_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		IBV_ODP_SUPPORT_SRQ_RECV;
	/* XRC: RC's operations, receives only from XRC SRQs */
	attr->xrc_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_WRITE |
		IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC |
		IBV_ODP_SUPPORT_SRQ_RECV;
}

int ur_device_query_port(const struct ur_device *dev, unsigned int port_num,
			 struct ibv_port_attr *attr)
{
	if (port_num != 1)
		return -EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->state = IBV_PORT_ACTIVE;
	attr->max_mtu = UR_MAX_MTU;
	attr->active_mtu = dev->active_mtu;
	attr->gid_tbl_len = UR_MAX_GID;
	attr->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_IP_BASED_GIDS;
	attr->max_msg_sz = UR_MAX_MSG_SZ;
	attr->pkey_tbl_len = UR_PKEY_TBL_LEN;
	attr->lid = 0;
	attr->sm_lid = 0;
	attr->max_vl_num = 1;		/* VL0 only */
	attr->active_width = UR_PORT_WIDTH;
	attr->active_speed = UR_PORT_SPEED;
	attr->phys_state = UR_PORT_PHYS_LINK_UP;
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

int ur_device_gid_entry(struct ur_device *dev, unsigned int port_num,
			unsigned int index, struct ibv_gid_entry *entry)
{
	int rc = 0;

	if (port_num != 1 || index >= UR_MAX_GID)
		return -EINVAL;
	memset(entry, 0, sizeof(*entry));
	pthread_mutex_lock(&dev->lock);
	if (!dev->gids[index].valid) {
		rc = -ENODATA;
	} else {
		entry->gid = dev->gids[index].gid;
		entry->gid_index = index;
		entry->port_num = port_num;
		entry->gid_type = IBV_GID_TYPE_ROCE_V2;
		entry->ndev_ifindex = extras[dev->index].ifindex[index];
	}
	pthread_mutex_unlock(&dev->lock);
	return rc;
}
