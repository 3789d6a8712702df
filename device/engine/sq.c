// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Send queues: WQEs are fetched from the shared ring through the stage (a
 * private copy, fetched a group at a time), executed in order and retired
 * in order; retiring writes the CQE a signaled or failed WQE owes.
 */
#include "engine/datapath.h"

static struct rn_wqe_limits send_limits(const struct rn_qp *qp)
{
	return (struct rn_wqe_limits){
		.max_sge = qp->cap.max_send_sge,
		.max_inline = qp->cap.max_inline_data,
		.max_slots = qp->sq_wqe_slots,
		.has_dest = qp->has_dest,
	};
}

/* The stage, holding this QP's slots (the next fetch starts from head). */
static struct rn_stage *stage_for(struct rn_qp *qp)
{
	struct rn_engine *e = qp->engine;

	if (e->stage_qp != qp) {
		e->stage_qp = qp;
		rn_stage_reset(e->stage, qp->sq_head);
	}
	return e->stage;
}

/* The QP's staged slots are no longer its (reset, destroyed). */
void rn_sq_forget(struct rn_qp *qp)
{
	if (qp->engine->stage_qp == qp)
		qp->engine->stage_qp = NULL;
}

/* Fetch the WQE at slot counter pos of the chain, counting the groups. */
int rn_sq_fetch_at(struct rn_qp *qp, uint64_t pos, struct rn_wqe *w)
{
	struct rn_wqe_limits lim = send_limits(qp);
	struct rn_stage *st = stage_for(qp);
	uint64_t groups = st->groups;
	int ret;

	ret = rn_send_wqe_fetch(st, qp->sq, qp->sq_slots, pos, qp->sq_prod,
				&lim, w);
	qp->ctrl->groups += st->groups - groups;
	return ret;
}

int rn_sq_fetch(struct rn_qp *qp, struct rn_wqe *w)
{
	return rn_sq_fetch_at(qp, qp->sq_head, w);
}

static enum ibv_wc_opcode send_wc_opcode(uint8_t op)
{
	switch (op) {
	case RN_OP_WRITE:
	case RN_OP_WRITE_IMM:
		return IBV_WC_RDMA_WRITE;
	case RN_OP_READ:
		return IBV_WC_RDMA_READ;
	case RN_OP_CMP_SWAP:
		return IBV_WC_COMP_SWAP;
	case RN_OP_FETCH_ADD:
		return IBV_WC_FETCH_ADD;
	case RN_OP_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case RN_OP_BIND_MW:
		return IBV_WC_BIND_MW;
	default:
		return IBV_WC_SEND;
	}
}

/*
 * Retire the WQE at sq_head, then write its CQE if it was signaled or
 * failed.  The slots are freed first: an application that polls the CQE
 * may post again at once and must find the room its completion implies.
 */
void rn_sq_complete(struct rn_qp *qp, const struct rn_wqe *w,
		    enum ibv_wc_status status, uint32_t byte_len)
{
	qp->ctrl->wqes++;
	qp->sq_head = (qp->sq_head + w->nslots) & RN_DB_SEQ_MASK;
	qp->sq_wr_cons++;
	__atomic_store_n(&qp->ctrl->sq_cons, qp->sq_head, __ATOMIC_RELEASE);
	__atomic_store_n(&qp->ctrl->sq_wr_cons, qp->sq_wr_cons, __ATOMIC_RELEASE);
	if (status != IBV_WC_SUCCESS || qp->sq_sig_all ||
	    w->flags & RN_WQE_SIGNALED) {
		struct rn_cqe cqe = {
			.wr_id = w->wr_id,
			.status = status,
			.opcode = send_wc_opcode(w->opcode),
			.byte_len = byte_len,
			.qp_num = qp->qpn,
		};

		if (!rn_cq_push(qp->send_cq, &cqe, false))
			rn_qp_to_error(qp);
	}
}

void rn_sq_flush(struct rn_qp *qp)
{
	struct rn_wqe w;

	while (qp->sq_head != qp->sq_prod) {
		/* A malformed WQE ends the flush: nothing after it can be
		 * parsed, and only its own poster is affected.
		 */
		if (rn_sq_fetch(qp, &w))
			break;
		rn_sq_complete(qp, &w, IBV_WC_WR_FLUSH_ERR, 0);
	}
}
