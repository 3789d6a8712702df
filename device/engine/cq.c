// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Completions: the device appends CQEs to a CQ's ring (then notify.c). */
#include "engine/engine.h"

/*
 * Append a CQE (solicited: it completes a receive the sender solicited).
 * Returns false when the CQ cannot take it: the CQ is full (overrun, which
 * puts the CQ into error for good, as on hardware) or already in error.
 */
static bool push(struct rn_cq *cq, const struct rn_cqe *cqe, bool solicited)
{
	struct rn_cqe *slot;
	uint32_t cons;

	if (cq->overrun)
		return false;
	/* The consumer index is the client's: a bogus one only makes its own
	 * CQ overrun sooner.
	 */
	cons = __atomic_load_n(&cq->ctrl->cons, __ATOMIC_ACQUIRE);
	if (cq->prod - cons >= cq->entries) {
		cq->overrun = true;
		__atomic_store_n(&cq->ctrl->overrun, 1, __ATOMIC_RELEASE);
		rn_warn("pid %d: CQ %u overrun\n", cq->client->pid, cq->handle);
		rn_async_event(cq->client, cq->handle, cq->user_handle,
			       IBV_EVENT_CQ_ERR);
		return false;
	}

	slot = &cq->ring[cq->prod & (cq->entries - 1)];
	slot->wr_id = cqe->wr_id;
	slot->byte_len = cqe->byte_len;
	slot->imm_data = cqe->imm_data;
	slot->qp_num = cqe->qp_num;
	slot->src_qp = cqe->src_qp;
	slot->sl = cqe->sl;
	slot->opcode = cqe->opcode;
	slot->status = cqe->status;
	slot->flags = cqe->flags;
	/* Publish: every field above is visible before the owner flips. */
	__atomic_store_n(&slot->owner, RN_CQE_PHASE(cq->prod, cq->log2_entries),
			 __ATOMIC_RELEASE);
	cq->prod++;
	rn_cq_note(cq, cqe->status != IBV_WC_SUCCESS, solicited);
	return true;
}

bool rn_cq_push(struct rn_cq *cq, const struct rn_cqe *cqe, bool solicited)
{
	bool ok;

	if (!cq->shared)
		return push(cq, cqe, solicited);
	pthread_mutex_lock(&cq->lock);
	ok = push(cq, cqe, solicited);
	pthread_mutex_unlock(&cq->lock);
	return ok;
}
