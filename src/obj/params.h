/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * obj/'s tunables, each with why it has its value. What the device
 * reports to the application (ibv_query_device) is in limits.h; these
 * change behaviour only.
 */
#ifndef UR_OBJ_PARAMS_H
#define UR_OBJ_PARAMS_H

/* ---- memory keys (mem.c explains the policy) ---- */

/* A key's slot is its upper 24 bits, as a NIC's MR index; the low 8 are
 * the key byte that changes when a slot is reissued and that ibv_inc_rkey
 * changes on a window (IBA). */
#define UR_KEY_SLOT_BITS 24
/* Deregistrations a retired slot waits out before it is reissued: about
 * a second at the fastest churn measured here (a window allocated and
 * freed in 0.6-1 us), 17 minutes at 1,000 a second; with every live key
 * (UR_MAX_MR + UR_MAX_MW, about 2^20) at most 1/8 of the 2^24 slots are
 * taken, so random draws of a fresh slot rarely miss; memory: the ring's
 * 4 bytes a slot (up to 6 MiB with its growth) and the slot bitmap's 2 MiB. */
#define UR_KEY_QUARANTINE (1u << 20)
/* Random draws of a fresh slot before the oldest retired one is reissued
 * instead: with at most 1/8 of the slots taken, 64 misses never happen. */
#define UR_KEY_TRIES 64

#endif
