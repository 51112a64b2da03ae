/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Software devices uroce0..uroce<n-1>, created once per process from the
 * configuration (util/config.h), and what they report.
 *
 * No kernel support is needed: the ibv_device paths point to a fake
 * location (UR_DEV_FAKE_SYSFS) that does not exist, dev_name is
 * "uverbs-uroce<i>", node type CA, transport IB (RoCE is IB transport).
 *
 * GID table: entry i is the RoCEv2 GID of address i (IPv4 as ::ffff:a.b.c.d,
 * IPv6 itself); dev->gids[i].addr is the address the engine binds (port 0
 * in the struct; the engine sets 4791). Every GID's address is bound.
 */
#ifndef UR_OBJ_DEVICE_H
#define UR_OBJ_DEVICE_H

#include <stdbool.h>
#include <infiniband/verbs.h>

#include "obj/obj.h"

#define UR_DEV_FAKE_SYSFS "/nonexistent/uroce"

/*
 * All devices, created on the first call (thread-safe; later calls return
 * the same array). *n receives the count. NULL with errno set if creation
 * failed (then every later call fails the same way).
 */
struct ur_device *ur_device_get_all(unsigned int *n);

/*
 * Called by the engine when binding GID 0 failed with EADDRINUSE: picks a
 * new random loopback address for an automatic GID 0 and updates the GID.
 * Returns 0, or -EADDRNOTAVAIL when GID 0 was configured (UROCE_ADDRS).
 * Caller holds dev->lock.
 */
int ur_device_reroll_auto_addr(struct ur_device *dev);

/* Device and port attributes (port_num must be 1; -EINVAL otherwise). */
void ur_device_query(const struct ur_device *dev, struct ibv_device_attr *attr);
void ur_device_query_ex(const struct ur_device *dev,
			struct ibv_device_attr_ex *attr);
int ur_device_query_port(const struct ur_device *dev, unsigned int port_num,
			 struct ibv_port_attr *attr);

/*
 * GID entry index of port 1: 0 and the entry, -EINVAL for a bad port or an
 * index >= UR_MAX_GID, -ENODATA for an unused entry. Takes dev->lock.
 */
int ur_device_gid_entry(struct ur_device *dev, unsigned int port_num,
			unsigned int index, struct ibv_gid_entry *entry);

/* Interface index of the network interface carrying GID i (0 if none). */
unsigned int ur_device_gid_ifindex(const struct ur_device *dev,
				   unsigned int index);

/*
 * The Ethernet MAC that stands for a GID: we have no Ethernet, so it is
 * derived (locally administered 02:00 + the last 4 bytes of the address).
 */
void ur_gid_to_mac(const union ibv_gid *gid, uint8_t mac[6]);

#endif
