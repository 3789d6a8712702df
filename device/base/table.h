/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Tables of objects indexed by small integers (handles, key and QPN
 * indices).  A table grows on demand up to a fixed maximum; lookups of any
 * index, including garbage from a client, are bounds-checked.
 */
#ifndef RN_TABLE_H
#define RN_TABLE_H

#include <stdint.h>

/*
 * Which free index an insert takes.  Names that other parties hold on to
 * (keys, QPNs) come back as late as possible, so that a stale one finds
 * nothing; a client's own handles are reused at once, which keeps a
 * client's tables as small as its live objects.
 */
enum rn_table_reuse {
	RN_REUSE_LOWEST, /* the lowest free index */
	RN_REUSE_LATE, /* round robin over [first, max): grow before wrapping */
};

struct rn_table {
	void **slot;
	uint32_t size; /* allocated slots */
	uint32_t used;
	uint32_t max; /* indices are < max */
	uint32_t first; /* lowest index handed out */
	uint32_t hint; /* where the search for a free slot starts */
	enum rn_table_reuse reuse;
};

void rn_table_init(struct rn_table *t, uint32_t first, uint32_t max,
		   enum rn_table_reuse reuse);
void rn_table_destroy(struct rn_table *t);
/* Store obj at a free index; returns the index, or -1 when full (ENOMEM). */
int64_t rn_table_insert(struct rn_table *t, void *obj);
/* The same at an index that is 'residue' modulo 'modulus'. */
int64_t rn_table_insert_class(struct rn_table *t, void *obj, uint32_t modulus,
			      uint32_t residue);
void rn_table_remove(struct rn_table *t, uint32_t index);

static inline void *rn_table_get(const struct rn_table *t, uint64_t index)
{
	return index < t->size ? t->slot[index] : NULL;
}

#endif
