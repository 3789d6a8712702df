// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Receive queues, a QP's own or an SRQ shared by several QPs: a message
 * that needs a receive WQE takes the next one (copied out of the ring and
 * validated), and completing the receive retires it.  The provider's
 * producer counter is read, never trusted: a count beyond the ring makes
 * the queue bad, not the device confused.
 */
#include "engine/datapath.h"
#include "base/table.h"

bool rn_responder_of(struct rn_qp *dst, uint32_t srqn, struct rn_responder *r)
{
	struct rn_srq *srq = dst->srq;

	if (dst->qp_type == IBV_QPT_XRC_RECV) {
		/* XRC: the sender names an SRQ of the QP's domain. */
		srq = rn_table_get(&dst->client->dev->srqns, srqn);
		if (!srq || srq->type != IBV_SRQT_XRC || srq->xrcd != dst->xrcd)
			return false;
		*r = (struct rn_responder){
			.qp = dst,
			.srq = srq,
			.rq = &srq->rq,
			.cq = srq->cq,
			.client = srq->client,
			.buf_pd = srq->pd,
			.target = { srq->client, srq->pd,
				    dst->attr.qp_access_flags, dst->qpn },
		};
		return true;
	}
	*r = (struct rn_responder){
		.qp = dst,
		.srq = srq,
		.rq = srq ? &srq->rq : &dst->rq,
		.cq = dst->recv_cq,
		.client = dst->client,
		.buf_pd = srq ? srq->pd : dst->pd,
		.target = { dst->client, dst->pd, dst->attr.qp_access_flags,
			    dst->qpn },
	};
	return true;
}

/* The receive WQE at slot counter pos (rq->head or after it). */
enum rn_rq_status rn_rq_at(const struct rn_rq *rq, uint32_t pos,
			   struct rn_rwqe *r)
{
	struct rn_wqe_limits lim = {
		.max_sge = rq->max_sge,
		.max_slots = rq->wqe_slots,
	};
	uint32_t prod, avail;

	if (!rq->slots)
		return RN_RQ_EMPTY;
	prod = __atomic_load_n(rq->prod, __ATOMIC_ACQUIRE);
	avail = prod - pos;
	if (prod - rq->head > rq->slots)
		return RN_RQ_BAD;
	if (!avail || avail > prod - rq->head)
		return RN_RQ_EMPTY;
	if (rn_recv_wqe_fetch(rq->ring, rq->slots, pos, avail, &lim, r))
		return RN_RQ_BAD;
	return RN_RQ_OK;
}

enum rn_rq_status rn_rq_next(const struct rn_rq *rq, struct rn_rwqe *r)
{
	return rn_rq_at(rq, rq->head, r);
}

static void rq_retire(struct rn_rq *rq, const struct rn_rwqe *r)
{
	rq->head += r->nslots;
	rq->wr_cons++;
	__atomic_store_n(rq->shared_cons, rq->head, __ATOMIC_RELEASE);
	__atomic_store_n(rq->shared_wr_cons, rq->wr_cons, __ATOMIC_RELEASE);
}

/*
 * An SRQ armed with a limit fires IBV_EVENT_SRQ_LIMIT_REACHED once when
 * fewer WRs than the limit remain, and is disarmed.  The WR count is the
 * provider's: a wrong one only misleads its own events.
 */
static void srq_check_limit(struct rn_srq *srq)
{
	uint32_t posted, left;

	if (!srq->limit)
		return;
	posted = __atomic_load_n(&srq->ctrl->wr_prod, __ATOMIC_ACQUIRE);
	left = posted - srq->rq.wr_cons;
	if (left >= srq->limit && left <= srq->max_wr)
		return;
	srq->limit = 0;
	rn_async_event(srq->client, srq->handle, srq->user_handle,
		       IBV_EVENT_SRQ_LIMIT_REACHED);
}

struct rn_recv_result rn_recv_result_of(const struct rn_wqe *w,
					enum ibv_wc_opcode opcode,
					uint32_t byte_len, uint32_t src_qp)
{
	struct rn_recv_result res = {
		.status = IBV_WC_SUCCESS,
		.opcode = opcode,
		.byte_len = byte_len,
		.src_qp = src_qp,
		.solicited = w->flags & RN_WQE_SOLICITED,
	};

	if (w->opcode == RN_OP_SEND_IMM || w->opcode == RN_OP_WRITE_IMM) {
		res.imm_or_key = w->imm_data;
		res.flags = RN_CQE_WITH_IMM;
	}
	return res;
}

void rn_rq_consume(const struct rn_responder *resp, const struct rn_rwqe *r)
{
	rq_retire(resp->rq, r);
	if (resp->srq)
		srq_check_limit(resp->srq);
}

void rn_recv_finish(const struct rn_responder *resp, const struct rn_rwqe *r,
		    const struct rn_recv_result *res)
{
	struct rn_cqe cqe = {
		.wr_id = r->wr_id,
		.status = res->status,
		.opcode = res->opcode,
		.byte_len = res->byte_len,
		.imm_data = res->imm_or_key,
		.qp_num = resp->qp->qpn,
		.src_qp = res->src_qp,
		.flags = res->flags,
		.sl = res->sl,
	};

	if (!rn_cq_push(resp->cq, &cqe, res->solicited))
		rn_qp_to_error(resp->qp);
}

void rn_recv_complete(const struct rn_responder *resp, const struct rn_rwqe *r,
		      const struct rn_recv_result *res)
{
	rn_rq_consume(resp, r);
	rn_recv_finish(resp, r, res);
}

/* A QP in error: its own receive WQEs are flushed, never an SRQ's. */
void rn_rq_flush(struct rn_qp *qp)
{
	struct rn_responder resp;
	struct rn_rwqe r;
	struct rn_recv_result flushed = {
		.status = IBV_WC_WR_FLUSH_ERR,
		.opcode = IBV_WC_RECV,
	};

	if (qp->srq || !qp->rq.slots || !rn_responder_of(qp, 0, &resp))
		return;
	while (rn_rq_next(&qp->rq, &r) == RN_RQ_OK)
		rn_recv_complete(&resp, &r, &flushed);
}
