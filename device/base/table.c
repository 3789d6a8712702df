// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/table.h"

void rn_table_init(struct rn_table *t, uint32_t first, uint32_t max,
		   enum rn_table_reuse reuse)
{
	memset(t, 0, sizeof(*t));
	t->first = first;
	t->hint = first;
	t->max = max;
	t->reuse = reuse;
}

void rn_table_destroy(struct rn_table *t)
{
	free(t->slot);
	memset(t, 0, sizeof(*t));
}

static int grow(struct rn_table *t)
{
	uint32_t size = t->size ? t->size * 2 : 64;
	void **slot;

	if (size > t->max)
		size = t->max;
	if (size <= t->size)
		return -1;
	slot = realloc(t->slot, size * sizeof(*slot));
	if (!slot)
		return -1;
	memset(slot + t->size, 0, (size - t->size) * sizeof(*slot));
	t->slot = slot;
	t->size = size;
	return 0;
}

/* The first index from 'from' on that is residue modulo modulus. */
static uint32_t class_from(uint32_t from, uint32_t modulus, uint32_t residue)
{
	return from + (residue + modulus - from % modulus) % modulus;
}

int64_t rn_table_insert(struct rn_table *t, void *obj)
{
	return rn_table_insert_class(t, obj, 1, 0);
}

int64_t rn_table_insert_class(struct rn_table *t, void *obj, uint32_t modulus,
			      uint32_t residue)
{
	uint32_t i;

	if (t->used + t->first >= t->max)
		return -1;
	/* From the hint on (LOWEST keeps it at the lowest free index). */
	i = class_from(t->hint, modulus, residue);
	for (;;) {
		for (; i < t->size; i += modulus)
			if (!t->slot[i])
				goto found;
		if (t->size == t->max || grow(t))
			break;
	}
	/* LATE only: everything past the hint is taken, wrap around. */
	for (i = class_from(t->first, modulus, residue);
	     i < t->hint && i < t->size; i += modulus)
		if (!t->slot[i])
			goto found;
	return -1;
found:
	t->slot[i] = obj;
	t->used++;
	t->hint = i + 1 < t->max ? i + 1 : t->first;
	return i;
}

void rn_table_remove(struct rn_table *t, uint32_t index)
{
	if (index < t->size && t->slot[index]) {
		t->slot[index] = NULL;
		t->used--;
		if (t->reuse == RN_REUSE_LOWEST && index < t->hint)
			t->hint = index;
	}
}
