// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <string.h>

#include "kernel-abi/ringnic-ring.h"
#include "engine/wqe.h"

static bool inline_allowed(uint8_t opcode)
{
	return opcode == RN_OP_SEND || opcode == RN_OP_SEND_IMM ||
	       opcode == RN_OP_WRITE || opcode == RN_OP_WRITE_IMM ||
	       opcode == RN_OP_SEND_INV;
}

/* Operations on the device's own state: no data, no SGEs. */
static bool has_data(uint8_t opcode)
{
	return opcode != RN_OP_LOCAL_INV && opcode != RN_OP_BIND_MW;
}

uint32_t rn_chain_group(uint64_t head, uint64_t prod, uint32_t ring_slots)
{
	uint64_t avail = (prod - head) & RN_DB_SEQ_MASK;
	uint32_t idx = head & (ring_slots - 1);
	uint32_t n = ring_slots - idx;

	if (n > RN_GROUP_SLOTS - (idx % RN_GROUP_SLOTS))
		n = RN_GROUP_SLOTS - (idx % RN_GROUP_SLOTS);
	return avail < n ? avail : n;
}

enum rn_db_class rn_db_classify(uint64_t rec, uint32_t qp_index, uint64_t head,
				uint32_t ring_slots)
{
	uint64_t seq = RN_DB_SEQ(rec);

	if (RN_DB_QP_INDEX(rec) != qp_index)
		return RN_DB_BAD;
	if (((seq - head) & RN_DB_SEQ_MASK) <= ring_slots)
		return RN_DB_VALID;
	/* Behind the head (by less than half the sequence space). */
	if (((head - seq) & RN_DB_SEQ_MASK) < (RN_DB_SEQ_MASK >> 1))
		return RN_DB_STALE;
	return RN_DB_BAD;
}

void rn_stage_reset(struct rn_stage *st, uint64_t head)
{
	st->start = head;
	st->nslots = 0;
}

/*
 * Make slots [head, head + n) of the chain staged, fetching whole groups
 * from the ring.  Returns them, or NULL when the chain has fewer slots.
 */
static const uint8_t *stage_get(struct rn_stage *st, const uint8_t *ring,
				uint32_t ring_slots, uint64_t head, uint32_t n,
				uint64_t prod)
{
	uint64_t off = (head - st->start) & RN_DB_SEQ_MASK;

	if (off > st->nslots) {
		rn_stage_reset(st, head);
		off = 0;
	}
	while (st->nslots < off + n) {
		uint64_t pos = (st->start + st->nslots) & RN_DB_SEQ_MASK;
		uint32_t g = rn_chain_group(pos, prod, ring_slots);

		if (!g)
			return NULL;
		if (st->nslots + g > RN_STAGE_SLOTS) {
			/* Drop what was consumed; a group cut short here still
			 * ends inside its page.
			 */
			memmove(st->buf, st->buf + off * RN_SLOT_SIZE,
				(st->nslots - off) * RN_SLOT_SIZE);
			st->start = head;
			st->nslots -= off;
			off = 0;
			if (st->nslots + g > RN_STAGE_SLOTS)
				g = RN_STAGE_SLOTS - st->nslots;
		}
		memcpy(st->buf + st->nslots * RN_SLOT_SIZE,
		       ring + (pos & (ring_slots - 1)) * RN_SLOT_SIZE,
		       (size_t)g * RN_SLOT_SIZE);
		st->nslots += g;
		st->groups++;
	}
	return st->buf + off * RN_SLOT_SIZE;
}

int rn_send_wqe_fetch(struct rn_stage *st, const uint8_t *ring,
		      uint32_t ring_slots, uint64_t head, uint64_t prod,
		      const struct rn_wqe_limits *lim, struct rn_wqe *wqe)
{
	uint64_t dest = lim->has_dest ? sizeof(struct rn_wqe_dest) : 0;
	const struct rn_send_wqe *hdr;
	const uint8_t *slots;
	uint64_t payload;

	/* The header says how many slots the WQE has: stage those. */
	hdr = (const void *)stage_get(st, ring, ring_slots, head, 1, prod);
	if (!hdr || !hdr->nslots || hdr->nslots > lim->max_slots)
		return EINVAL;
	slots = stage_get(st, ring, ring_slots, head, hdr->nslots, prod);
	if (!slots)
		return EINVAL;
	hdr = (const void *)slots; /* the stage may have moved */

	if (hdr->opcode < RN_OP_SEND || hdr->opcode > RN_OP_MAX ||
	    hdr->flags & ~RN_WQE_FLAGS_ALL)
		return EINVAL;
	if (hdr->flags & RN_WQE_INLINE) {
		if (!inline_allowed(hdr->opcode) || hdr->num_sge ||
		    hdr->inline_len > lim->max_inline)
			return EINVAL;
		payload = hdr->inline_len;
	} else {
		if (hdr->num_sge > lim->max_sge || hdr->inline_len ||
		    (hdr->num_sge && !has_data(hdr->opcode)))
			return EINVAL;
		payload = (uint64_t)hdr->num_sge * sizeof(struct rn_sge);
	}
	if (hdr->nslots != RN_SEND_WQE_SLOTS(dest + payload))
		return EINVAL;

	wqe->wr_id = hdr->wr_id;
	wqe->opcode = hdr->opcode;
	wqe->flags = hdr->flags;
	wqe->num_sge = hdr->num_sge;
	wqe->nslots = hdr->nslots;
	wqe->imm_data = hdr->imm_data;
	wqe->remote_addr = hdr->remote_addr;
	wqe->rkey = hdr->rkey;
	wqe->inline_len = hdr->inline_len;
	wqe->compare_add = hdr->compare_add;
	wqe->swap = hdr->swap;
	if (dest)
		memcpy(&wqe->dest, slots + RN_SEND_HDR_SIZE, dest);
	memcpy(wqe->sge, slots + RN_SEND_HDR_SIZE + dest, payload);
	return 0;
}

int rn_recv_wqe_fetch(uint8_t *ring, uint32_t nslots, uint64_t head,
		      uint64_t avail, const struct rn_wqe_limits *lim,
		      struct rn_rwqe *wqe)
{
	struct rn_recv_wqe hdr;
	uint64_t payload;

	if (!avail)
		return EINVAL;
	rn_ring_read(ring, nslots, head, &hdr, sizeof(hdr));

	payload = (uint64_t)hdr.num_sge * sizeof(struct rn_sge);
	if (hdr.num_sge > lim->max_sge ||
	    hdr.nslots != RN_RECV_WQE_SLOTS(hdr.num_sge) ||
	    hdr.nslots > lim->max_slots || hdr.nslots > avail)
		return EINVAL;

	wqe->wr_id = hdr.wr_id;
	wqe->num_sge = hdr.num_sge;
	wqe->nslots = hdr.nslots;
	if (payload <= sizeof(hdr.payload)) {
		memcpy(wqe->sge, hdr.payload, payload);
	} else {
		memcpy(wqe->sge, hdr.payload, sizeof(hdr.payload));
		rn_ring_read(ring, nslots, head + 1,
			     (uint8_t *)wqe->sge + sizeof(hdr.payload),
			     payload - sizeof(hdr.payload));
	}
	return 0;
}
