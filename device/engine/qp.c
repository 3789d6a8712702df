// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A QP as the data path sees it: its state, the errors that change it,
 * its async events, and the transport it runs on.  The control verbs
 * (verbs/qp.c) and the data path (sq.c, rq.c, the transports) both change
 * a QP's state through these, and only here.
 */
#include "engine/datapath.h"

/* ---- the transport --------------------------------------------------------- */

static bool transport_in_flight(const struct rn_qp *qp)
{
	return qp->transport->in_flight && qp->transport->in_flight(qp);
}

void rn_qp_transport_start(struct rn_qp *qp)
{
	if (qp->transport->start)
		qp->transport->start(qp);
}

static void transport_stop(struct rn_qp *qp, bool responder_too)
{
	if (qp->transport->stop)
		qp->transport->stop(qp, responder_too);
}

/* The QP is reset or goes: its transport lets go of its state, and the
 * QP is back on the default transport.
 */
void rn_qp_transport_release(struct rn_qp *qp, const struct rn_transport_ops *next)
{
	if (qp->transport && qp->transport->release)
		qp->transport->release(qp);
	qp->transport = next;
}

struct rn_qp *rn_qp_by_qpn(struct rn_device *dev, uint32_t qpn)
{
	struct rn_qp *qp = rn_table_get(&dev->qpns, qpn & RN_QPN_INDEX_MASK);

	return qp && qp->qpn == qpn ? qp : NULL;
}

/* An async event of the QP, to every context that holds it. */
void rn_qp_event(struct rn_qp *qp, enum ibv_event_type event)
{
	uint32_t i;

	if (!qp->nopeners) {
		rn_async_event(qp->client, qp->handle, qp->user_handle, event);
		return;
	}
	for (i = 0; i < qp->nopeners; i++)
		rn_async_event(qp->openers[i].client, qp->openers[i].handle,
			       qp->openers[i].user_handle, event);
}

void rn_qp_set_state(struct rn_qp *qp, enum ibv_qp_state state)
{
	qp->attr.qp_state = state;
	/* Tells the provider, e.g. that the device moved the QP to ERR. */
	__atomic_store_n(&qp->ctrl->state, state, __ATOMIC_RELEASE);
}

void rn_qp_to_error(struct rn_qp *qp)
{
	if (qp->attr.qp_state == IBV_QPS_ERR)
		return;
	rn_qp_set_state(qp, IBV_QPS_ERR);
	/*
	 * The state store before the flush reads rq_prod; the provider stores
	 * rq_prod before it reads the state (post_recv).  With a fence on both
	 * sides, a receive posted meanwhile is either flushed here or rung for.
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	rn_engine_cancel_wait(qp);
	transport_stop(qp, true);
	rn_engine_flush(qp);
	/* It takes nothing more from its SRQ: the consumer may destroy it. */
	if (qp->srq)
		rn_qp_event(qp, IBV_EVENT_QP_LAST_WQE_REACHED);
}

/* The QP fails for good: an async event, then the error state. */
void rn_qp_fatal(struct rn_qp *qp, enum ibv_event_type event)
{
	rn_qp_event(qp, event);
	rn_qp_to_error(qp);
}

/*
 * A send WQE completed in error.  A reliable QP goes to ERR; on UD and UC
 * only the send queue fails (SQE: its WQEs are flushed, receives go on,
 * modify_qp can bring it back to RTS).
 */
void rn_qp_send_failed(struct rn_qp *qp)
{
	if (qp->qp_type != IBV_QPT_UD && qp->qp_type != IBV_QPT_UC) {
		rn_qp_to_error(qp);
		return;
	}
	if (qp->attr.qp_state == IBV_QPS_ERR || qp->attr.qp_state == IBV_QPS_SQE)
		return;
	rn_qp_set_state(qp, IBV_QPS_SQE);
	rn_engine_cancel_wait(qp);
	transport_stop(qp, false);
	rn_engine_unschedule(qp);
	rn_sq_flush(qp);
}

/* SQ_DRAINED, if it was asked for and nothing is in flight any more. */
void rn_qp_sq_drain_check(struct rn_qp *qp)
{
	if (!qp->sqd_notify || qp->attr.qp_state != IBV_QPS_SQD ||
	    transport_in_flight(qp))
		return;
	qp->sqd_notify = false;
	rn_qp_event(qp, IBV_EVENT_SQ_DRAINED);
}

/* May the QP take requests now?  (SQE still receives: only its SQ failed.) */
bool rn_qp_receiving(const struct rn_qp *qp)
{
	return qp->attr.qp_state >= IBV_QPS_RTR &&
	       qp->attr.qp_state <= IBV_QPS_SQE;
}

/* ---- timers of the IB spec ------------------------------------------------- */

uint64_t rn_rnr_timer_ns(uint8_t code)
{
	/* IB spec table 45, in units of 10 us; code 0 is the longest. */
	static const uint32_t units[32] = {
		65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
		256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
		12288, 16384, 24576, 32768, 49152,
	};

	return (uint64_t)units[code & 31] * 10000;
}

uint64_t rn_ack_timeout_ns(uint8_t timeout)
{
	if (!timeout)
		return UINT64_MAX;
	/* 4.096 us * 2^timeout = 4096 ns << timeout */
	return 4096ull << (timeout & 31);
}

/* An outcome of this QP's: the device's hw_counter and the QP's own. */
void rn_count_qp(struct rn_qp *qp, enum rn_counter c)
{
	rn_engine_count(qp->engine, c);
	switch (c) {
	case RN_CNT_ACK_TIMEOUT:
		rn_qp_count(qp, RN_QPC_ACK_TIMEOUTS);
		break;
	case RN_CNT_RCVD_SEQ:
	case RN_CNT_IMPLIED_NAK:
		rn_qp_count(qp, RN_QPC_SEQ_NAKS);
		break;
	case RN_CNT_RETRIES:
		rn_qp_count(qp, RN_QPC_RETRIES);
		break;
	case RN_CNT_RCVD_RNR:
		rn_qp_count(qp, RN_QPC_RNR_NAKS);
		break;
	case RN_CNT_NAK_INV_REQ:
	case RN_CNT_NAK_ACCESS:
	case RN_CNT_NAK_OP:
		rn_qp_count(qp, RN_QPC_REMOTE_NAKS);
		break;
	case RN_CNT_DUP_REQ:
		rn_qp_count(qp, RN_QPC_DUP_REQUESTS);
		break;
	case RN_CNT_OOS_REQ:
		rn_qp_count(qp, RN_QPC_OOS_REQUESTS);
		break;
	case RN_CNT_NAK_SENT:
	case RN_CNT_SEND_RNR:
		rn_qp_count(qp, RN_QPC_NAKS_SENT);
		break;
	default:
		break;
	}
}
