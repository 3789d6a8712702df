/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Fetching WQEs: copy a WQE out of a shared ring into private memory, then
 * validate the copy.  Nothing is read from the ring twice.
 */
#ifndef RN_WQE_H
#define RN_WQE_H

#include "engine/engine.h"

/* Limits a WQE of one QP must respect, from the QP's actual caps. */
struct rn_wqe_limits {
	uint32_t max_sge;
	uint32_t max_inline;
	uint32_t max_slots; /* largest WQE, in slots */
	bool has_dest; /* send WQEs carry a struct rn_wqe_dest */
};

/* The largest send WQE, in slots. */
#define RN_SEND_WQE_MAX_SLOTS                                                  \
	RN_SEND_WQE_SLOTS(sizeof(struct rn_wqe_dest) + RN_MAX_INLINE)

/*
 * Slots in the group that starts at slot counter 'head' of a chain ending
 * at 'prod', in a ring of 'ring_slots' slots (see RN_DB_RECORD).
 */
uint32_t rn_chain_group(uint64_t head, uint64_t prod, uint32_t ring_slots);

enum rn_db_class {
	RN_DB_VALID, /* names a chain from head on (possibly empty) */
	RN_DB_STALE, /* written before the head moved past it: drop it */
	RN_DB_BAD, /* another QP's index, or a chain longer than the ring */
};

enum rn_db_class rn_db_classify(uint64_t rec, uint32_t qp_index, uint64_t head,
				uint32_t ring_slots);

/*
 * Private copies of a chain's slots, fetched a group at a time.  It holds a
 * page of slots plus the largest WQE, so a WQE that continues past a page
 * is completed by the next group.
 */
#define RN_STAGE_SLOTS (RN_GROUP_SLOTS + RN_SEND_WQE_MAX_SLOTS)

struct rn_stage {
	uint8_t buf[RN_STAGE_SLOTS * RN_SLOT_SIZE];
	uint64_t start; /* slot counter of buf[0] */
	uint32_t nslots; /* slots copied */
	uint64_t groups; /* groups copied, ever */
};

void rn_stage_reset(struct rn_stage *st, uint64_t head);

/*
 * Copy the send WQE at slot counter 'head' of the chain [head, prod) of
 * 'ring' into *wqe, through the stage.  Returns 0, or EINVAL when the WQE
 * is malformed: unknown opcode or flag, too many SGEs or inline bytes,
 * inline data or SGEs where the opcode takes none, a slot count that does
 * not match its size or runs past the chain.  Whether the QP may post the
 * opcode at all is for the execution to say (an error completion).
 */
int rn_send_wqe_fetch(struct rn_stage *st, const uint8_t *ring,
		      uint32_t ring_slots, uint64_t head, uint64_t prod,
		      const struct rn_wqe_limits *lim, struct rn_wqe *wqe);

/* The same for a receive WQE. */
int rn_recv_wqe_fetch(uint8_t *ring, uint32_t nslots, uint64_t head,
		      uint64_t avail, const struct rn_wqe_limits *lim,
		      struct rn_rwqe *wqe);

#endif
