// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The local path: a WQE whose destination is a QP of this device is
 * executed as a whole: the requester's and the responder's checks are
 * made, the data is copied and both completions are written in one step.
 *
 * On a reliable QP (RC, XRC) what a wire would add (an unreachable or
 * unready responder, an empty receive queue) becomes the wait the IB spec
 * prescribes: an ACK timeout or an RNR NAK timer, with retry_cnt and
 * rnr_retry counted as on hardware; what the responder refuses is the NAK
 * class rxe gives it, and both QPs go to the error state.  On UC there are
 * no ACKs: a message the responder cannot take is dropped there and the
 * requester completes successfully.  UD is ud.c.
 *
 * Execution in order and to completion makes every WR fenced, so
 * IBV_SEND_FENCE needs nothing more.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "engine/capture.h"
#include "engine/fault.h"
#include "local/local.h"

static bool reliable(const struct rn_qp *qp)
{
	return qp->qp_type != IBV_QPT_UC;
}

/* The QP type a connected QP of this type talks to. */
static enum ibv_qp_type peer_type(enum ibv_qp_type type)
{
	return type == IBV_QPT_XRC_SEND ? IBV_QPT_XRC_RECV : type;
}

/*
 * The connected QP, if it can receive now.  The first request a QP
 * receives in RTR establishes communication (COMM_EST).  A responder takes
 * requests only from the QP it is connected to: a QP naming the QPN of one
 * connected elsewhere reaches nothing (its requests go unanswered, as on a
 * fabric).  Otherwise anyone who learns or guesses a QPN could SEND into
 * that QP's receive queue and use the keys of its PD.
 */
struct rn_qp *rn_local_peer(struct rn_qp *qp)
{
	struct rn_qp *dst = rn_qp_by_qpn(qp->client->dev, qp->attr.dest_qp_num);

	if (!dst || dst->attr.dest_qp_num != qp->qpn ||
	    dst->qp_type != peer_type(qp->qp_type) || !rn_qp_receiving(dst))
		return NULL;
	if (!dst->comm_est && dst->attr.qp_state == IBV_QPS_RTR) {
		dst->comm_est = true;
		rn_qp_event(dst, IBV_EVENT_COMM_EST);
	}
	return dst;
}

uint32_t rn_local_packets(const struct rn_qp *qp, uint64_t len)
{
	uint32_t mtu = 128u << qp->attr.path_mtu;

	return len ? (uint32_t)((len + mtu - 1) / mtu) : 1;
}

void rn_local_advance_psns(struct rn_qp *qp, struct rn_qp *dst, uint64_t len)
{
	uint32_t packets = rn_local_packets(qp, len);

	qp->attr.sq_psn = rn_pkt_psn_add(qp->attr.sq_psn, packets);
	dst->attr.rq_psn = rn_pkt_psn_add(dst->attr.rq_psn, packets);
	dst->local->msn = rn_pkt_psn_add(dst->local->msn, 1);
}

/* ---- execution ----------------------------------------------------------- */

enum outcome {
	DONE,
	WAIT_ACK, /* nobody answered: retry after the ACK timeout */
	WAIT_RNR, /* receiver not ready: retry after its RNR timer */
	/* injected faults (fault.c) */
	WAIT_SEQ, /* a sequence error NAK: retry now */
	WAIT_GAP, /* a gap in the responses (counted): retry now */
	WAIT_LATE, /* the request or its answer is late: try again then */
};

struct result {
	enum outcome outcome;
	enum ibv_wc_status status;
	uint32_t byte_len;
	uint64_t wait_ns; /* WAIT_RNR, WAIT_LATE */
};

static struct result done(enum ibv_wc_status status, uint64_t byte_len)
{
	return (struct result){ .outcome = DONE, .status = status,
				.byte_len = (uint32_t)byte_len };
}

/* Nobody answered: a reliable QP waits; on UC the message was sent. */
static struct result unanswered(struct rn_qp *qp, uint64_t len)
{
	if (!reliable(qp))
		return done(IBV_WC_SUCCESS, len);
	return (struct result){ .outcome = WAIT_ACK };
}

/* No receive WQE: a reliable QP waits for the responder's RNR timer. */
static struct result receiver_not_ready(struct rn_qp *qp, struct rn_qp *dst,
					uint64_t len)
{
	if (!reliable(qp))
		return done(IBV_WC_SUCCESS, len);
	return (struct result){ .outcome = WAIT_RNR,
				.wait_ns = rn_rnr_timer_ns(dst->attr.min_rnr_timer) };
}

/*
 * The responder refuses the request with a NAK (injected: by a fault rule,
 * counted apart at the responder): on a reliable QP the requester gets
 * the NAK's status and the responder fails with the async event given
 * (0: none); on UC the message is dropped and the requester succeeds.
 */
static struct result nak(struct rn_qp *qp, struct rn_qp *dst,
			 enum ibv_wc_status status, enum ibv_event_type event,
			 uint64_t len, bool injected)
{
	if (!reliable(qp))
		return done(IBV_WC_SUCCESS, len);
	/* Counted as the wire counts the NAK, at both ends. */
	if (!injected)
		rn_count_qp(dst, RN_CNT_NAK_SENT);
	rn_count_qp(qp, status == IBV_WC_REM_INV_REQ_ERR ? RN_CNT_NAK_INV_REQ :
			status == IBV_WC_REM_ACCESS_ERR	 ? RN_CNT_NAK_ACCESS :
							   RN_CNT_NAK_OP);
	if (event)
		rn_qp_fatal(dst, event);
	else
		rn_qp_to_error(dst);
	return done(status, 0);
}

static struct result refused(struct rn_qp *qp, struct rn_qp *dst,
			     enum ibv_wc_status status,
			     enum ibv_event_type event, uint64_t len)
{
	return nak(qp, dst, status, event, len, false);
}

static enum rn_dma_status move_out(struct rn_engine *e, const struct rn_wqe *w,
				   const struct rn_iovs *src,
				   const struct rn_iovs *dst, uint64_t len)
{
	if (w->flags & RN_WQE_INLINE)
		return rn_dma_to(dst, w->inline_data, len);
	return rn_dma_copy(src, dst, len, e->bounce, RN_BOUNCE_SIZE);
}

/* The responder the request of w reaches at dst (XRC names its SRQ). */
static bool responder(struct rn_qp *dst, const struct rn_wqe *w,
		      struct rn_responder *resp)
{
	return rn_responder_of(dst, w->dest.remote_srqn, resp);
}

static enum ibv_wc_opcode recv_opcode(uint8_t op)
{
	return op == RN_OP_WRITE_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
}

static struct result exec_send(struct rn_qp *qp, const struct rn_wqe *w)
{
	struct rn_recv_result res;
	struct rn_responder resp;
	struct rn_iovs src, dsts;
	enum ibv_wc_status st;
	struct rn_qp *dst;
	struct rn_rwqe r;
	uint64_t len;

	st = rn_gather(qp, w, &src, &len);
	if (st)
		return done(st, 0);
	dst = rn_local_peer(qp);
	if (!dst)
		return unanswered(qp, len);
	if (!responder(dst, w, &resp))
		return refused(qp, dst, IBV_WC_REM_INV_REQ_ERR,
			       IBV_EVENT_QP_REQ_ERR, len);
	switch (rn_rq_next(resp.rq, &r)) {
	case RN_RQ_EMPTY:
		return receiver_not_ready(qp, dst, len);
	case RN_RQ_BAD:
		if (resp.srq)
			rn_async_event(resp.srq->client, resp.srq->handle,
				       resp.srq->user_handle, IBV_EVENT_SRQ_ERR);
		rn_qp_fatal(dst, IBV_EVENT_QP_FATAL);
		return done(reliable(qp) ? IBV_WC_REM_OP_ERR : IBV_WC_SUCCESS,
			    len);
	case RN_RQ_OK:
		break;
	}
	st = rn_scatter_resolve(resp.client, resp.buf_pd, r.sge, r.num_sge,
				len, &dsts);
	if (st == IBV_WC_LOC_LEN_ERR) {
		if (!reliable(qp))
			return done(IBV_WC_SUCCESS, len); /* dropped */
		res = rn_recv_result_of(w, IBV_WC_RECV, 0, qp->qpn);
		res.status = IBV_WC_LOC_LEN_ERR;
		rn_recv_complete(&resp, &r, &res);
		rn_qp_to_error(dst);
		return done(IBV_WC_REM_INV_REQ_ERR, 0);
	}
	if (st) {
		/* The responder's own buffer is bad: its fault, its error. */
		res = rn_recv_result_of(w, IBV_WC_RECV, 0, qp->qpn);
		res.status = IBV_WC_LOC_PROT_ERR;
		rn_recv_complete(&resp, &r, &res);
		rn_qp_to_error(dst);
		return done(reliable(qp) ? IBV_WC_REM_OP_ERR : IBV_WC_SUCCESS,
			    len);
	}
	switch (move_out(qp->engine, w, &src, &dsts, len)) {
	case RN_DMA_GONE:
		return unanswered(qp, len);
	case RN_DMA_SRC_FAULT:
		/* The receive WQE was not consumed: the responder never saw it. */
		return done(IBV_WC_LOC_PROT_ERR, 0);
	case RN_DMA_DST_FAULT:
		res = rn_recv_result_of(w, IBV_WC_RECV, 0, qp->qpn);
		res.status = IBV_WC_LOC_PROT_ERR;
		rn_recv_complete(&resp, &r, &res);
		rn_qp_to_error(dst);
		return done(reliable(qp) ? IBV_WC_REM_OP_ERR : IBV_WC_SUCCESS,
			    len);
	case RN_DMA_OK:
		break;
	}
	rn_local_advance_psns(qp, dst, len);
	res = rn_recv_result_of(w, IBV_WC_RECV, len, qp->qpn);
	if (w->opcode == RN_OP_SEND_INV) {
		/*
		 * As rxe: the data is delivered and the requester acked; a key
		 * the responder cannot invalidate fails its receive and QP.
		 */
		res.imm_or_key = w->imm_data;
		res.flags = RN_CQE_WITH_INV;
		if (rn_remote_invalidate(&resp, w->imm_data)) {
			res.status = IBV_WC_REM_INV_REQ_ERR;
			res.flags = 0;
			rn_recv_complete(&resp, &r, &res);
			rn_qp_to_error(dst);
			return done(IBV_WC_SUCCESS, len);
		}
	}
	rn_recv_complete(&resp, &r, &res);
	return done(IBV_WC_SUCCESS, len);
}

static struct result exec_write(struct rn_qp *qp, const struct rn_wqe *w)
{
	bool with_imm = w->opcode == RN_OP_WRITE_IMM;
	struct rn_responder resp;
	struct rn_iovs src, remote;
	enum ibv_wc_status st;
	struct rn_qp *dst;
	struct rn_rwqe r;
	uint64_t len;

	st = rn_gather(qp, w, &src, &len);
	if (st)
		return done(st, 0);
	dst = rn_local_peer(qp);
	if (!dst)
		return unanswered(qp, len);
	if (!responder(dst, w, &resp))
		return refused(qp, dst, IBV_WC_REM_INV_REQ_ERR,
			       IBV_EVENT_QP_REQ_ERR, len);
	if (!rn_remote_resolve(&resp.target, w->remote_addr, w->rkey, len,
			       IBV_ACCESS_REMOTE_WRITE, &remote))
		return refused(qp, dst, IBV_WC_REM_ACCESS_ERR,
			       IBV_EVENT_QP_ACCESS_ERR, len);
	/* The immediate needs a receive WQE: wait for one before writing. */
	if (with_imm) {
		switch (rn_rq_next(resp.rq, &r)) {
		case RN_RQ_EMPTY:
			return receiver_not_ready(qp, dst, len);
		case RN_RQ_BAD:
			return refused(qp, dst, IBV_WC_REM_OP_ERR,
				       IBV_EVENT_QP_FATAL, len);
		case RN_RQ_OK:
			break;
		}
	}
	switch (move_out(qp->engine, w, &src, &remote, len)) {
	case RN_DMA_GONE:
		return unanswered(qp, len);
	case RN_DMA_SRC_FAULT:
		return done(IBV_WC_LOC_PROT_ERR, 0);
	case RN_DMA_DST_FAULT:
		/* Unmapped since it was checked, its retirement on its way:
		 * the WRITE goes nowhere, as into a retired MR.
		 */
		if (remote.guarded)
			break;
		return refused(qp, dst, IBV_WC_REM_ACCESS_ERR,
			       IBV_EVENT_QP_ACCESS_ERR, len);
	case RN_DMA_OK:
		break;
	}
	rn_local_advance_psns(qp, dst, len);
	if (with_imm) {
		struct rn_recv_result res =
			rn_recv_result_of(w, recv_opcode(w->opcode), len, qp->qpn);

		rn_recv_complete(&resp, &r, &res);
	}
	return done(IBV_WC_SUCCESS, len);
}

static struct result exec_read(struct rn_qp *qp, const struct rn_wqe *w)
{
	struct rn_responder resp;
	struct rn_iovs local, remote;
	enum ibv_wc_status st;
	struct rn_qp *dst;

	st = rn_sgl_resolve(qp->client, qp->pd, w->sge, w->num_sge,
			    IBV_ACCESS_LOCAL_WRITE, &local);
	if (st)
		return done(st, 0);
	dst = rn_local_peer(qp);
	if (!dst)
		return unanswered(qp, 0);
	if (!responder(dst, w, &resp))
		return refused(qp, dst, IBV_WC_REM_INV_REQ_ERR,
			       IBV_EVENT_QP_REQ_ERR, 0);
	if (!rn_remote_resolve(&resp.target, w->remote_addr, w->rkey, local.len,
			       IBV_ACCESS_REMOTE_READ, &remote))
		return refused(qp, dst, IBV_WC_REM_ACCESS_ERR,
			       IBV_EVENT_QP_ACCESS_ERR, 0);
	switch (rn_dma_copy(&remote, &local, local.len, qp->engine->bounce,
			    RN_BOUNCE_SIZE)) {
	case RN_DMA_GONE:
		return unanswered(qp, 0);
	case RN_DMA_SRC_FAULT:
		return refused(qp, dst, IBV_WC_REM_ACCESS_ERR,
			       IBV_EVENT_QP_ACCESS_ERR, 0);
	case RN_DMA_DST_FAULT:
		return done(IBV_WC_LOC_PROT_ERR, 0);
	case RN_DMA_OK:
		break;
	}
	rn_local_advance_psns(qp, dst, local.len);
	return done(IBV_WC_SUCCESS, local.len);
}

/*
 * Atomics are atomic with respect to every other atomic of this device
 * (rn_atomic_apply), as IBV_ATOMIC_HCA promises; the 64-bit operands are
 * in host byte order.
 */
static struct result exec_atomic(struct rn_qp *qp, const struct rn_wqe *w)
{
	struct rn_responder resp;
	struct rn_iovs local, remote;
	enum rn_dma_status st;
	struct rn_qp *dst;
	uint64_t old;

	if (w->num_sge != 1 || w->sge[0].length != sizeof(uint64_t))
		return done(IBV_WC_LOC_LEN_ERR, 0);
	if (rn_sgl_resolve(qp->client, qp->pd, w->sge, 1, IBV_ACCESS_LOCAL_WRITE,
			   &local))
		return done(IBV_WC_LOC_PROT_ERR, 0);
	dst = rn_local_peer(qp);
	if (!dst)
		return unanswered(qp, 0);
	if (!responder(dst, w, &resp))
		return refused(qp, dst, IBV_WC_REM_INV_REQ_ERR,
			       IBV_EVENT_QP_REQ_ERR, 0);
	if (w->remote_addr % sizeof(uint64_t))
		return refused(qp, dst, IBV_WC_REM_INV_REQ_ERR,
			       IBV_EVENT_QP_REQ_ERR, 0);
	if (!rn_remote_resolve(&resp.target, w->remote_addr, w->rkey,
			       sizeof(uint64_t), IBV_ACCESS_REMOTE_ATOMIC, &remote))
		return refused(qp, dst, IBV_WC_REM_ACCESS_ERR,
			       IBV_EVENT_QP_ACCESS_ERR, 0);
	st = rn_atomic_apply(qp->client->dev, &remote,
			     w->opcode == RN_OP_FETCH_ADD, w->compare_add,
			     w->swap, &old);
	if (st == RN_DMA_GONE)
		return unanswered(qp, 0);
	if (st)
		return refused(qp, dst, IBV_WC_REM_ACCESS_ERR,
			       IBV_EVENT_QP_ACCESS_ERR, 0);
	/* The responder's side is done: from here on it is not retried. */
	if (rn_dma_to(&local, &old, sizeof(old)))
		return done(IBV_WC_LOC_PROT_ERR, 0);
	rn_local_advance_psns(qp, dst, sizeof(old));
	return done(IBV_WC_SUCCESS, sizeof(old));
}

/* What each QP type may post; anything else fails as a local QP error. */
static bool op_allowed(const struct rn_qp *qp, uint8_t op)
{
	switch (qp->qp_type) {
	case IBV_QPT_UD:
		return op == RN_OP_SEND || op == RN_OP_SEND_IMM;
	case IBV_QPT_UC:
		return op == RN_OP_SEND || op == RN_OP_SEND_IMM ||
		       op == RN_OP_WRITE || op == RN_OP_WRITE_IMM ||
		       op == RN_OP_LOCAL_INV || op == RN_OP_BIND_MW;
	case IBV_QPT_RC:
	case IBV_QPT_XRC_SEND:
		return true;
	default:
		return false;
	}
}

static struct result execute(struct rn_qp *qp, const struct rn_wqe *w)
{
	uint32_t byte_len = 0;
	enum ibv_wc_status st;

	if (!op_allowed(qp, w->opcode))
		return done(IBV_WC_LOC_QP_OP_ERR, 0);
	switch (w->opcode) {
	case RN_OP_SEND:
	case RN_OP_SEND_IMM:
	case RN_OP_SEND_INV:
		if (qp->qp_type == IBV_QPT_UD) {
			st = rn_ud_send(qp, w, &byte_len);
			return done(st, byte_len);
		}
		return exec_send(qp, w);
	case RN_OP_WRITE:
	case RN_OP_WRITE_IMM:
		return exec_write(qp, w);
	case RN_OP_READ:
		return exec_read(qp, w);
	case RN_OP_LOCAL_INV:
		return done(rn_local_invalidate(qp, w->imm_data), 0);
	case RN_OP_BIND_MW:
		return done(rn_mw_bind(qp, w), 0);
	default:
		return exec_atomic(qp, w);
	}
}

/* What comes later than the ACK timeout is lost to the requester. */
static struct rn_local_fault_result
later_than_timeout(const struct rn_qp *qp, struct rn_local_fault_result f)
{
	if (f.what == RN_LOCAL_FAULT_LATE &&
	    f.ns >= rn_ack_timeout_ns(qp->attr.timeout))
		f.what = RN_LOCAL_FAULT_LOST;
	return f;
}

/*
 * execute() where some QP has fault rules: the try meets what its packets
 * and its answers would have met (fault.c).  An answer lost or late after
 * the responder executed leaves the outcome for the next try, which the
 * responder sees as a duplicate, so that nothing executes twice.
 */
static struct result execute_faulty(struct rn_qp *qp, const struct rn_wqe *w)
{
	struct rn_local_qp *l = qp->local;
	bool arrived = l->request_late;
	struct rn_local_fault_result f;
	struct result res;
	struct rn_qp *dst;

	if (qp->qp_type == IBV_QPT_UD || w->opcode == RN_OP_LOCAL_INV ||
	    w->opcode == RN_OP_BIND_MW || !op_allowed(qp, w->opcode))
		return execute(qp, w);
	dst = rn_local_peer(qp);
	if (l->late) {
		l->late = false;
		if (l->late_duplicate && dst)
			rn_count_qp(dst, RN_CNT_DUP_REQ);
		return done(l->late_status, l->late_len);
	}
	l->request_late = false;
	f = later_than_timeout(qp, rn_local_request_faults(qp, dst, w, arrived));
	switch (f.what) {
	case RN_LOCAL_FAULT_NONE:
		break;
	case RN_LOCAL_FAULT_LOST:
		return unanswered(qp, 0);
	case RN_LOCAL_FAULT_SEQ:
		/* UC: the message lost a packet and is dropped there. */
		return reliable(qp) ? (struct result){ .outcome = WAIT_SEQ } :
				      done(IBV_WC_SUCCESS, 0);
	case RN_LOCAL_FAULT_LATE:
		l->request_late = true;
		return (struct result){ .outcome = WAIT_LATE, .wait_ns = f.ns };
	case RN_LOCAL_FAULT_RNR:
		return receiver_not_ready(qp, dst, 0);
	case RN_LOCAL_FAULT_NAK:
		return nak(qp, dst, rn_nak_status(f.nak),
			   rn_nak_event(f.nak), 0, true);
	}
	res = execute(qp, w);
	if (res.outcome != DONE || res.status != IBV_WC_SUCCESS ||
	    !reliable(qp) || !dst)
		return res;
	f = later_than_timeout(qp, rn_local_answer_faults(qp, dst, w,
							  res.byte_len));
	if (f.what == RN_LOCAL_FAULT_NONE)
		return res;
	l->late = true;
	l->late_duplicate = f.what != RN_LOCAL_FAULT_LATE;
	l->late_status = (uint8_t)res.status;
	l->late_len = res.byte_len;
	switch (f.what) {
	case RN_LOCAL_FAULT_LATE:
		return (struct result){ .outcome = WAIT_LATE, .wait_ns = f.ns };
	case RN_LOCAL_FAULT_SEQ:
		return (struct result){ .outcome = WAIT_GAP };
	default:
		return (struct result){ .outcome = WAIT_ACK };
	}
}

/*
 * A WQE could not be delivered: arm the timer for the next try, or fail it
 * when its retries are used up (rnr_retry 7 retries forever; an ACK timeout
 * of 0 never expires).
 */
static bool retry_or_fail(struct rn_qp *qp, const struct result *res,
			  uint64_t now, enum ibv_wc_status *fail)
{
	uint64_t wait;

	if (!qp->local->wqe_started) {
		qp->local->wqe_started = true;
		qp->local->retry_left = qp->attr.retry_cnt;
		qp->local->rnr_left = qp->attr.rnr_retry;
	}
	/*
	 * Counted as the wire counts them: an RNR NAK, a lost request, a
	 * sequence error NAK, a gap in the responses (counted already); all
	 * but the RNR spend retry_cnt; a late one spends none.
	 */
	if (res->outcome == WAIT_RNR) {
		rn_count_qp(qp, RN_CNT_RCVD_RNR);
		if (qp->attr.rnr_retry != 7 && !qp->local->rnr_left--) {
			rn_count_qp(qp, RN_CNT_RNR_RETRY_EXC);
			*fail = IBV_WC_RNR_RETRY_EXC_ERR;
			return false;
		}
		wait = res->wait_ns;
	} else if (res->outcome == WAIT_LATE) {
		wait = res->wait_ns;
	} else {
		if (res->outcome != WAIT_GAP)
			rn_count_qp(qp, res->outcome == WAIT_SEQ ?
						RN_CNT_RCVD_SEQ :
						RN_CNT_ACK_TIMEOUT);
		if (!qp->local->retry_left--) {
			rn_count_qp(qp, RN_CNT_RETRY_EXC);
			*fail = IBV_WC_RETRY_EXC_ERR;
			return false;
		}
		rn_count_qp(qp, RN_CNT_RETRIES);
		wait = res->outcome == WAIT_ACK ?
			       rn_ack_timeout_ns(qp->attr.timeout) : 0;
	}
	rn_engine_wait(qp, wait == UINT64_MAX ? UINT64_MAX : now + wait);
	return true;
}

/*
 * An injected WR_ERROR for the WQE at sq_head, drawn before its first try:
 * true, and its completion in *res, if one fails it.
 */
static bool injected_wr_error(struct rn_qp *qp, const struct rn_wqe *w,
			      struct result *res)
{
	struct rn_fault f;

	if (!qp->faults || !op_allowed(qp, w->opcode))
		return false;
	f = rn_fault_draw(qp, RN_FAULT_EV_WR);
	if (f.kind != RN_FAULT_WR_ERROR)
		return false;
	*res = done(f.value, 0);
	return true;
}

/*
 * Whether a try of the QP's WQEs meets faults (fault.c): while it or its
 * peer has rules, and while a try the faults held back is pending.
 */
static bool meets_faults(struct rn_qp *qp)
{
	struct rn_qp *peer;

	if (qp->local->late || qp->local->request_late)
		return true;
	if (!qp->client->dev->faulty_qps)
		return false;
	peer = rn_qp_by_qpn(qp->client->dev, qp->attr.dest_qp_num);
	return qp->faults || (peer && peer->faults);
}

/*
 * A try of w from PSN psn ended in res: the packets it would have been go
 * to the captures (capture.c), unless it sent none (a local error, a
 * WQE that stays in the device, UD: ud.c).
 */
static void capture_try(struct rn_qp *qp, const struct rn_wqe *w,
			uint32_t psn, const struct result *res)
{
	struct rn_local_try t = { .psn = psn };
	struct rn_qp *dst;

	if (qp->qp_type == IBV_QPT_UD || w->opcode == RN_OP_LOCAL_INV ||
	    w->opcode == RN_OP_BIND_MW)
		return;
	switch (res->outcome) {
	case DONE:
		t.answered = true;
		switch (res->status) {
		case IBV_WC_SUCCESS:
			t.syndrome = rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT);
			break;
		case IBV_WC_REM_INV_REQ_ERR:
			t.syndrome = rn_pkt_aeth_nak(RN_PKT_NAK_INV_REQ);
			break;
		case IBV_WC_REM_ACCESS_ERR:
			t.syndrome = rn_pkt_aeth_nak(RN_PKT_NAK_REM_ACCESS);
			break;
		case IBV_WC_REM_OP_ERR:
			t.syndrome = rn_pkt_aeth_nak(RN_PKT_NAK_REM_OP);
			break;
		default:
			return;
		}
		break;
	case WAIT_RNR:
		dst = rn_qp_by_qpn(qp->client->dev, qp->attr.dest_qp_num);
		t.answered = dst != NULL;
		t.syndrome = rn_pkt_aeth_rnr_nak(dst ? dst->attr.min_rnr_timer : 0);
		break;
	case WAIT_SEQ:
		t.answered = true;
		t.syndrome = rn_pkt_aeth_nak(RN_PKT_NAK_PSN_SEQ);
		break;
	default:
		break;
	}
	rn_local_capture(qp, w, &t);
}

/*
 * May qp's turn go on to the QP qpn names, if it is one of ours: where it
 * is another engine's, the turn waits for its engine to hold them all
 * (rn_engine_reaches).  Looked up before anything touches it.
 */
static bool reaches(struct rn_qp *qp, uint32_t qpn)
{
	struct rn_qp *dst = rn_qp_by_qpn(qp->client->dev, qpn);

	return !dst || rn_engine_reaches(qp, dst);
}

/* Execute up to 'budget' WQEs of the QP's send queue. */
static bool local_run(struct rn_qp *qp, uint64_t now, unsigned int budget)
{
	bool progress = false;
	struct rn_wqe w;

	if (qp->qp_type != IBV_QPT_UD && !reaches(qp, qp->attr.dest_qp_num))
		return false;
	while (budget-- && qp->attr.qp_state == IBV_QPS_RTS &&
	       qp->sq_head != qp->sq_prod) {
		enum ibv_wc_status fail;
		struct result res;

		if (rn_sq_fetch(qp, &w)) {
			rn_warn("pid %d: QP %u: malformed send WQE\n",
				qp->client->pid, qp->qpn);
			rn_qp_fatal(qp, IBV_EVENT_QP_FATAL);
			return true;
		}
		/* A datagram names its QP in each WQE. */
		if (qp->qp_type == IBV_QPT_UD && !reaches(qp, w.dest.remote_qpn))
			return progress;
		bool faulty = meets_faults(qp);
		bool capturing = rn_capturing(qp->client->dev) &&
				 rn_capture_wanted(qp->client->dev, qp->qpn,
						   qp->attr.dest_qp_num);

		/* Where faults are injected, each WQE meets them alone; a
		 * capture gets each message's packets.
		 */
		if (!faulty && !capturing && rn_batchable(qp, &w) &&
		    !qp->local->wqe_started) {
			unsigned int n = rn_batch_run(qp, budget + 1);

			if (n) {
				budget -= n - 1;
				progress = true;
				continue;
			}
		}
		/* An injected WR error fails it before it is sent. */
		if (!faulty || qp->local->wqe_started ||
		    !injected_wr_error(qp, &w, &res)) {
			/* A try after one whose answer was lost executed
			 * already: its PSNs are the first try's.
			 */
			if (!qp->local->wqe_started)
				qp->local->try_psn = qp->attr.sq_psn;
			res = faulty ? execute_faulty(qp, &w) : execute(qp, &w);
			if (capturing)
				capture_try(qp, &w, qp->local->try_psn, &res);
		}
		if (res.outcome != DONE) {
			if (retry_or_fail(qp, &res, now, &fail))
				return progress;
			res = done(fail, 0);
		}
		qp->local->wqe_started = false;
		qp->local->late = false;
		qp->local->request_late = false;
		/* The execution failed the QP itself (connected to itself, its
		 * receive overran its CQ): ERR's flush retired this WQE.
		 */
		if (qp->attr.qp_state != IBV_QPS_RTS)
			return true;
		rn_sq_complete(qp, &w, res.status, res.byte_len);
		progress = true;
		if (res.status != IBV_WC_SUCCESS)
			rn_qp_send_failed(qp);
	}
	return progress;
}

int rn_local_qp_add(struct rn_qp *qp)
{
	qp->local = calloc(1, sizeof(*qp->local));
	return qp->local ? 0 : ENOMEM;
}

/* Back to RESET: no WQE has started, no message was taken. */
void rn_local_qp_reset(struct rn_qp *qp)
{
	qp->local->msn = 0;
	qp->local->wqe_started = false;
	qp->local->late = false;
	qp->local->request_late = false;
}

void rn_local_qp_remove(struct rn_qp *qp)
{
	free(qp->local);
	qp->local = NULL;
}

/* After a turn: WQEs are left, and the QP may still start them. */
static bool local_busy(const struct rn_qp *qp)
{
	return qp->sq_head != qp->sq_prod && qp->attr.qp_state == IBV_QPS_RTS;
}

/* WQEs one QP may execute before the next QP gets its turn. */
#define RN_LOCAL_QP_BUDGET 16

const struct rn_transport_ops rn_local_transport = {
	.run = local_run,
	.busy = local_busy,
	.budget = RN_LOCAL_QP_BUDGET,
};
