// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the descriptor decoder and validator.  The input is a
 * ring's contents plus the counters a client controls (head, producer,
 * ring size, limits); whatever they are, fetching must stay inside the
 * ring and the stage, and what it accepts must be consistent.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel-abi/ringnic-ring.h"
#include "engine/wqe.h"

#define MAX_RING 512

struct params {
	uint8_t log2_slots; /* ring of 1 << (x % 10) slots; bit 7: UD (has_dest) */
	uint8_t max_sge;
	uint16_t max_inline;
	uint64_t head;
	uint64_t prod;
	uint64_t db_record;
};

static void check_send(const struct rn_wqe *w, const struct rn_wqe_limits *lim)
{
	/* A UD WQE's destination comes first. */
	uint64_t payload = (lim->has_dest ? sizeof(struct rn_wqe_dest) : 0) +
			   (w->flags & RN_WQE_INLINE ?
				    w->inline_len :
				    w->num_sge * sizeof(struct rn_sge));

	if (w->opcode < RN_OP_SEND || w->opcode > RN_OP_MAX ||
	    w->flags & ~RN_WQE_FLAGS_ALL || w->num_sge > lim->max_sge ||
	    w->inline_len > lim->max_inline ||
	    w->nslots != RN_SEND_WQE_SLOTS(payload) || w->nslots > lim->max_slots)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t ring[MAX_RING * RN_SLOT_SIZE];
	static struct rn_stage st;
	struct rn_wqe_limits lim;
	struct params p;
	struct rn_wqe w;
	struct rn_rwqe r;
	uint32_t slots;
	uint64_t pos;
	int i;

	if (size < sizeof(p))
		return 0;
	memcpy(&p, data, sizeof(p));
	slots = 1u << (p.log2_slots % 10);
	memset(ring, 0, slots * RN_SLOT_SIZE);
	memcpy(ring, data + sizeof(p),
	       size - sizeof(p) < slots * RN_SLOT_SIZE ? size - sizeof(p) :
							 slots * RN_SLOT_SIZE);
	lim.max_sge = p.max_sge % (RN_MAX_SGE + 1);
	lim.max_inline = p.max_inline % (RN_MAX_INLINE + 1);
	lim.max_slots = RN_SEND_WQE_MAX_SLOTS;
	lim.has_dest = p.log2_slots & 0x80;
	p.head &= RN_DB_SEQ_MASK;
	p.prod &= RN_DB_SEQ_MASK;

	(void)rn_db_classify(p.db_record, p.log2_slots, p.head, slots);
	if (rn_chain_group(p.head, p.prod, slots) > RN_GROUP_SLOTS)
		abort();

	/* Walk the chain as the engine does, only where it is within a ring. */
	if (((p.prod - p.head) & RN_DB_SEQ_MASK) <= slots) {
		rn_stage_reset(&st, p.head);
		for (pos = p.head, i = 0; pos != p.prod && i < MAX_RING; i++) {
			if (rn_send_wqe_fetch(&st, ring, slots, pos, p.prod, &lim, &w))
				break;
			check_send(&w, &lim);
			pos = (pos + w.nslots) & RN_DB_SEQ_MASK;
		}
	}
	for (pos = p.head, i = 0; i < 8; i++) {
		if (rn_recv_wqe_fetch(ring, slots, pos, slots, &lim, &r))
			break;
		if (r.num_sge > lim.max_sge || r.nslots != RN_RECV_WQE_SLOTS(r.num_sge))
			abort();
		pos += r.nslots;
	}
	return 0;
}
