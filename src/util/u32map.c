/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <stdlib.h>

#include "util/u32map.h"

void ur_u32_map_init(struct ur_u32_map *m)
{
	m->keys = NULL;
	m->vals = NULL;
	m->cap = m->used = m->live = 0;
}

void ur_u32_map_fini(struct ur_u32_map *m)
{
	free(m->keys);
	free(m->vals);
	ur_u32_map_init(m);
}

/* Fibonacci hashing spreads sequential and random keys alike. */
static uint32_t slot_of(const struct ur_u32_map *m, uint32_t key)
{
	return (uint32_t)((key * 2654435769u) & (m->cap - 1));
}

static int find_slot(const struct ur_u32_map *m, uint32_t key, uint32_t *slot)
{
	uint32_t i;

	if (!m->cap)
		return -ENOENT;
	for (i = slot_of(m, key);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == key) {
			*slot = i;
			return 0;
		}
		if (!m->keys[i])
			return -ENOENT;
	}
}

static int grow(struct ur_u32_map *m)
{
	uint32_t cap = m->cap ? m->cap : 16;
	struct ur_u32_map n;

	/* Rehash into twice the size only when live entries need it;
	 * otherwise the same size clears tombstones. */
	if (m->live * 2 >= cap / 2 || !m->cap)
		cap = m->cap ? m->cap * 2 : 16;
	n.cap = cap;
	n.used = n.live = 0;
	n.keys = calloc(cap, sizeof(*n.keys));
	n.vals = calloc(cap, sizeof(*n.vals));
	if (!n.keys || !n.vals) {
		free(n.keys);
		free(n.vals);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < m->cap; i++) {
		uint32_t k = m->keys[i], j;

		if (!k || k == UR_U32_TOMB)
			continue;
		for (j = slot_of(&n, k); n.keys[j]; j = (j + 1) & (cap - 1))
			;
		n.keys[j] = k;
		n.vals[j] = m->vals[i];
		n.used++;
		n.live++;
	}
	free(m->keys);
	free(m->vals);
	*m = n;
	return 0;
}

int ur_u32_map_insert(struct ur_u32_map *m, uint32_t key, void *val)
{
	uint32_t i;

	if (!key || key == UR_U32_TOMB)
		return -EINVAL;
	if (!find_slot(m, key, &i))
		return -EEXIST;
	/* Keep load (with tombstones) under 3/4 so probes stay short. */
	if ((m->used + 1) * 4 > m->cap * 3) {
		int ret = grow(m);

		if (ret)
			return ret;
	}
	for (i = slot_of(m, key);; i = (i + 1) & (m->cap - 1)) {
		if (!m->keys[i] || m->keys[i] == UR_U32_TOMB)
			break;
	}
	if (!m->keys[i])
		m->used++;
	m->keys[i] = key;
	m->vals[i] = val;
	m->live++;
	return 0;
}

void *ur_u32_map_find(const struct ur_u32_map *m, uint32_t key)
{
	uint32_t i;

	if (!key || key == UR_U32_TOMB || find_slot(m, key, &i))
		return NULL;
	return m->vals[i];
}

bool ur_u32_map_contains(const struct ur_u32_map *m, uint32_t key)
{
	uint32_t i;

	return key && key != UR_U32_TOMB && !find_slot(m, key, &i);
}

void *ur_u32_map_remove(struct ur_u32_map *m, uint32_t key)
{
	uint32_t i;
	void *v;

	if (!key || key == UR_U32_TOMB || find_slot(m, key, &i))
		return NULL;
	v = m->vals[i];
	m->keys[i] = UR_U32_TOMB;
	m->vals[i] = NULL;
	m->live--;
	return v;
}
