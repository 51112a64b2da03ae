/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Intrusive doubly linked list (the kernel's shape). Not thread safe: the
 * owner of the list holds whatever lock protects it.
 */
#ifndef UR_UTIL_LIST_H
#define UR_UTIL_LIST_H

#include <stdbool.h>
#include "util/compiler.h"

struct ur_list {
	struct ur_list *next, *prev;
};

#define UR_LIST_INIT(name) { &(name), &(name) }

static inline void ur_list_init(struct ur_list *h)
{
	h->next = h->prev = h;
}

static inline bool ur_list_empty(const struct ur_list *h)
{
	return h->next == h;
}

static inline void ur_list_add_tail(struct ur_list *h, struct ur_list *n)
{
	n->prev = h->prev;
	n->next = h;
	h->prev->next = n;
	h->prev = n;
}

static inline void ur_list_del(struct ur_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

#define ur_list_entry(ptr, type, member) container_of(ptr, type, member)
#define ur_list_first(h, type, member) ur_list_entry((h)->next, type, member)
#define ur_list_for_each(pos, h) for (pos = (h)->next; pos != (h); pos = pos->next)
#define ur_list_for_each_safe(pos, tmp, h)                                      \
	for (pos = (h)->next, tmp = pos->next; pos != (h); pos = tmp, tmp = pos->next)

#endif
