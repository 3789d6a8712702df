// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <string.h>

#include "kernel-abi/ringnic-ring.h"
#include "wqe.h"

static bool inline_allowed(uint8_t opcode)
{
	return opcode == RN_OP_SEND || opcode == RN_OP_SEND_IMM ||
	       opcode == RN_OP_WRITE || opcode == RN_OP_WRITE_IMM;
}

int rn_send_wqe_fetch(uint8_t *ring, uint32_t nslots, uint64_t head,
		      uint64_t avail, const struct rn_wqe_limits *lim,
		      struct rn_wqe *wqe)
{
	struct rn_send_wqe hdr;
	uint64_t payload;

	if (!avail)
		return EINVAL;
	rn_ring_read(ring, nslots, head, &hdr, sizeof(hdr));

	if (hdr.opcode < RN_OP_SEND || hdr.opcode > RN_OP_MAX ||
	    hdr.flags & ~RN_WQE_FLAGS_ALL)
		return EINVAL;
	if (hdr.flags & RN_WQE_INLINE) {
		if (!inline_allowed(hdr.opcode) || hdr.num_sge ||
		    hdr.inline_len > lim->max_inline)
			return EINVAL;
		payload = hdr.inline_len;
	} else {
		if (hdr.num_sge > lim->max_sge || hdr.inline_len)
			return EINVAL;
		payload = (uint64_t)hdr.num_sge * sizeof(struct rn_sge);
	}
	if (hdr.nslots != RN_SEND_WQE_SLOTS(payload) ||
	    hdr.nslots > lim->max_slots || hdr.nslots > avail)
		return EINVAL;

	wqe->wr_id = hdr.wr_id;
	wqe->opcode = hdr.opcode;
	wqe->flags = hdr.flags;
	wqe->num_sge = hdr.num_sge;
	wqe->nslots = hdr.nslots;
	wqe->imm_data = hdr.imm_data;
	wqe->remote_addr = hdr.remote_addr;
	wqe->rkey = hdr.rkey;
	wqe->inline_len = hdr.inline_len;
	wqe->compare_add = hdr.compare_add;
	wqe->swap = hdr.swap;

	/* The payload begins inside the header slot: read it from there. */
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
