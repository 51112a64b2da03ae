/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Open-addressing hash map from a non-zero 32-bit key to a pointer (memory
 * keys, QP numbers). Linear probing, tombstones, power-of-two capacity.
 * Not thread safe: the owner's lock protects it.
 */
#ifndef UR_UTIL_U32MAP_H
#define UR_UTIL_U32MAP_H

#include <stdbool.h>
#include <stdint.h>

struct ur_u32_map {
	uint32_t *keys;			/* 0 = empty, UR_U32_TOMB = deleted */
	void **vals;
	uint32_t cap;			/* power of two, 0 before first insert */
	uint32_t used;			/* live + tombstones */
	uint32_t live;
};

#define UR_U32_TOMB 0xFFFFFFFFu

void ur_u32_map_init(struct ur_u32_map *m);
void ur_u32_map_fini(struct ur_u32_map *m);
/* Key must not be 0 or UR_U32_TOMB. Returns 0, -EEXIST or -ENOMEM. */
int ur_u32_map_insert(struct ur_u32_map *m, uint32_t key, void *val);
/* NULL when absent. */
void *ur_u32_map_find(const struct ur_u32_map *m, uint32_t key);
bool ur_u32_map_contains(const struct ur_u32_map *m, uint32_t key);
/* Returns the removed value or NULL. */
void *ur_u32_map_remove(struct ur_u32_map *m, uint32_t key);

#endif
