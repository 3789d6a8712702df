// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The responder: a request from the wire is checked completely before it
 * touches memory (its QP and the address it came from are netio.c's
 * checks), then executed in PSN order.
 *
 *   PSN           the expected one is executed; a later one means packets
 *                 were lost: one sequence NAK for the expected PSN, then
 *                 silence until it comes; an earlier one is a duplicate.
 *   sequence      FIRST, MIDDLE, LAST of one message, nothing in between.
 *   lengths       FIRST and MIDDLE carry exactly the path MTU, a WRITE's
 *                 packets add up to its RETH length, a SEND fits its
 *                 receive WQE.
 *   access        the QP allows the operation, the rkey names an MR or
 *                 window of the QP's PD covering the range with the right
 *                 (a remote access error either way, as hardware answers
 *                 and the local path does; rxe calls the first an invalid
 *                 request).
 *
 * What fails is answered as rxe answers it (docs/wire.md, "Responder"): a
 * NAK (invalid request, remote access, remote operational error) and the
 * QP to ERR; no receive WQE is an RNR NAK, retried by the requester.  UC
 * answers nothing: what it cannot take is dropped, and so is the rest of
 * its message.
 *
 * Duplicates are never executed twice: a SEND or WRITE is answered with
 * an ACK for the last PSN taken; a READ is served again from memory, from
 * the duplicate's PSN on (MIDDLE ... LAST when that is not its first, as
 * rxe replays); an atomic gets the value it found the first time, from
 * the resource kept for it.  max_dest_rd_atomic resources are kept, the
 * oldest reused first.
 *
 * ACKs (and NAKs) wait in one slot per QP until the receive batch is over
 * (so they are coalesced) and until the READ responses before them are
 * out (so responses leave in PSN order).
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "engine/fault.h"
#include "wire/internal.h"

/* READ response packets one QP sends before the next QP's turn. */
#define RN_WIRE_REPLY_BUDGET RN_WIRE_TX_BATCH

static bool reliable(const struct rn_wire_qp *wq)
{
	return wq->transport != RN_PKT_UC;
}

/* What the reply stage holds of wq was read before its latest request. */
static void forget_reply_stage(struct rn_wire_qp *wq)
{
	struct rn_wire_stage *st = &rn_wire_of(wq)->reply_stage;

	if (st->wq == wq)
		st->wq = NULL;
}

int rn_wire_responder_init(struct rn_wire_qp *wq)
{
	uint32_t n = wq->qp->attr.max_dest_rd_atomic, r = 1;

	while (r < n)
		r <<= 1;
	free(wq->res);
	wq->res = NULL;
	wq->nres = n ? r : 0;
	if (n && !(wq->res = calloc(wq->nres, sizeof(*wq->res))))
		return ENOMEM;
	wq->res_next = 0;
	wq->replying = 0;
	forget_reply_stage(wq);
	wq->epsn = wq->qp->attr.rq_psn & RN_PKT_MASK24;
	wq->msn = 0;
	wq->nak_sent = false;
	wq->in_msg = false;
	wq->drop_msg = false;
	return 0;
}

void rn_wire_responder_free(struct rn_wire_qp *wq)
{
	forget_reply_stage(wq);
	free(wq->res);
	wq->res = NULL;
	wq->nres = 0;
}

/* ---- answers ------------------------------------------------------------------ */

static void send_aeth(struct rn_wire_qp *wq, uint8_t syndrome, uint32_t psn)
{
	struct rn_pkt p = {
		.opcode = wq->transport | RN_PKT_OP_ACK,
		.dqpn = wq->qp->attr.dest_qp_num,
		.psn = psn,
		.aeth = { syndrome, wq->msn },
	};

	rn_wire_send(rn_wire_of(wq), &wq->peer, &p, NULL, NULL);
}

/*
 * Answer psn with an ACK or NAK (once the batch is over).  A NAK is not
 * replaced by an ACK for an earlier PSN (a duplicate's), so that the
 * requester hears about the loss.
 */
static void answer(struct rn_wire_qp *wq, uint8_t syndrome, uint32_t psn)
{
	bool is_ack = rn_pkt_aeth_type(syndrome) == RN_PKT_AETH_ACK;

	if (wq->ack_pending) {
		bool pending_ack = rn_pkt_aeth_type(wq->ack_syndrome) ==
				   RN_PKT_AETH_ACK;

		if (is_ack && !pending_ack &&
		    rn_pkt_psn_cmp(psn, wq->ack_psn) < 0)
			return;
	} else {
		wq->ack_pending = true;
		rn_list_add_tail(&rn_wire_of(wq)->acks, &wq->ack_link);
	}
	wq->ack_syndrome = syndrome;
	wq->ack_psn = psn;
}

static void ack(struct rn_wire_qp *wq, uint32_t psn)
{
	answer(wq, rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT), psn);
}

static void drop_pending_answer(struct rn_wire_qp *wq)
{
	if (wq->ack_pending) {
		wq->ack_pending = false;
		rn_list_del(&wq->ack_link);
	}
}

/* The ACKs and NAKs waiting, for QPs with no READ response to send first. */
void rn_wire_send_acks(struct rn_wire *w)
{
	struct rn_list *pos, *tmp;

	rn_list_for_each_safe(pos, tmp, &w->acks) {
		struct rn_wire_qp *wq = rn_container_of(pos, struct rn_wire_qp,
							 ack_link);

		if (wq->replying)
			continue;
		drop_pending_answer(wq);
		send_aeth(wq, wq->ack_syndrome, wq->ack_psn);
	}
}

/* The NAK, now (before the QP's state goes), then the QP to ERR. */
static void nak_and_fail(struct rn_wire_qp *wq, enum rn_pkt_nak code,
			 uint32_t psn)
{
	drop_pending_answer(wq);
	send_aeth(wq, rn_pkt_aeth_nak(code), psn);
	rn_qp_fatal(wq->qp, rn_nak_event(code));
}

/*
 * The request at psn is refused for good: a NAK now (before the QP's
 * state goes), then the QP to ERR with the async event rxe's class
 * gives.  UC answers nothing and drops the message.
 */
static void refuse(struct rn_wire_qp *wq, enum rn_pkt_nak code, uint32_t psn)
{
	if (!reliable(wq)) {
		wq->drop_msg = true;
		wq->in_msg = false;
		return;
	}
	rn_count_qp(wq->qp, RN_CNT_NAK_SENT);
	nak_and_fail(wq, code, psn);
}

/*
 * The request at psn failed on the responder's own receive buffer: its
 * receive completion says so, the QP goes to ERR without an async event
 * (as on the local path), and a reliable requester gets the NAK.
 */
static void refuse_own(struct rn_wire_qp *wq, enum rn_pkt_nak code,
		       uint32_t psn)
{
	if (reliable(wq)) {
		rn_count_qp(wq->qp, RN_CNT_NAK_SENT);
		drop_pending_answer(wq);
		send_aeth(wq, rn_pkt_aeth_nak(code), psn);
	}
	rn_qp_to_error(wq->qp);
}

/* The receive of the message in progress ends with status (an error). */
static void fail_receive(struct rn_wire_qp *wq, const struct rn_responder *r,
			 enum ibv_wc_status status)
{
	struct rn_recv_result res = {
		.status = status,
		.opcode = IBV_WC_RECV,
		.src_qp = wq->qp->attr.dest_qp_num,
	};

	/* What the receive took so far lands, and the receives held before
	 * it complete, before its buffer goes back.  Settled first: one of
	 * them overrunning its CQ fails the QP, which flushes this receive.
	 */
	rn_wire_write_settle(wq);
	if (!wq->have_rwqe)
		return;
	wq->have_rwqe = false;
	rn_recv_finish(r, &wq->rwqe, &res);
}

/* ---- executing requests -------------------------------------------------------- */

enum step {
	TAKEN, /* executed: epsn moves on */
	HELD, /* not executed (RNR, a client going away): epsn stays */
	REFUSED, /* answered with a NAK or dropped */
};

static bool qp_allows(const struct rn_wire_qp *wq, uint32_t access)
{
	return wq->qp->attr.qp_access_flags & access;
}

/* The receive WQE a SEND (or WRITE with immediate) fills. */
static enum step take_receive(struct rn_wire_qp *wq, const struct rn_responder *r,
			      uint32_t psn)
{
	if (wq->have_rwqe)
		return TAKEN; /* UC: kept from a message that was dropped */
	switch (rn_rq_next(r->rq, &wq->rwqe)) {
	case RN_RQ_OK:
		rn_rq_consume(r, &wq->rwqe);
		wq->have_rwqe = true;
		return TAKEN;
	case RN_RQ_EMPTY:
		if (!reliable(wq)) {
			rn_count_qp(wq->qp, RN_CNT_OUT_OF_BUFFER);
			wq->drop_msg = true;
			return REFUSED;
		}
		rn_count_qp(wq->qp, RN_CNT_SEND_RNR);
		answer(wq, rn_pkt_aeth_rnr_nak(wq->qp->attr.min_rnr_timer), psn);
		/* What follows is dropped until the requester comes back. */
		wq->nak_sent = true;
		return HELD;
	default:
		if (r->srq)
			rn_async_event(r->srq->client, r->srq->handle,
				       r->srq->user_handle, IBV_EVENT_SRQ_ERR);
		refuse(wq, RN_PKT_NAK_REM_OP, psn);
		if (!reliable(wq))
			rn_qp_fatal(wq->qp, IBV_EVENT_QP_FATAL);
		return REFUSED;
	}
}

/* The successful receive of the message that ends with packet p. */
static struct rn_recv_result received(const struct rn_wire_qp *wq,
				      const struct rn_pkt *p,
				      enum ibv_wc_opcode opcode, uint32_t byte_len)
{
	struct rn_recv_result res = {
		.status = IBV_WC_SUCCESS,
		.opcode = opcode,
		.byte_len = byte_len,
		.src_qp = wq->qp->attr.dest_qp_num,
		.solicited = p->se,
	};

	if (p->hdrs & RN_PKT_H_IMMDT) {
		res.imm_or_key = htonl(p->imm);
		res.flags = RN_CQE_WITH_IMM;
	}
	return res;
}

/* Complete the receive of the message that ends with packet p. */
static void finish_receive(struct rn_wire_qp *wq, const struct rn_responder *r,
			   const struct rn_pkt *p, enum ibv_wc_opcode opcode,
			   uint32_t byte_len)
{
	struct rn_recv_result res = received(wq, p, opcode, byte_len);
	bool inv_failed = false;

	if (p->hdrs & RN_PKT_H_IETH) {
		res.imm_or_key = p->ieth_rkey;
		res.flags = RN_CQE_WITH_INV;
		/* As rxe: a key that cannot be invalidated fails the receive
		 * and the QP, and the requester still gets its ACK.
		 */
		if (rn_remote_invalidate(r, p->ieth_rkey)) {
			res.status = IBV_WC_REM_INV_REQ_ERR;
			res.flags = 0;
			inv_failed = true;
		}
	}
	wq->have_rwqe = false;
	rn_recv_finish(r, &wq->rwqe, &res);
	if (inv_failed) {
		if (p->ackreq)
			send_aeth(wq, rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT),
				  p->psn);
		drop_pending_answer(wq);
		rn_qp_to_error(wq->qp);
	}
}

/* A staged SEND's payload could not be written to its receive buffer. */
static void send_failed(struct rn_wire_qp *wq, uint32_t first_psn,
			enum rn_dma_status status)
{
	struct rn_responder r;

	if (status == RN_DMA_GONE) {
		drop_pending_answer(wq);
		return;
	}
	if (rn_responder_of(wq->qp, wq->msg_srqn, &r))
		fail_receive(wq, &r, IBV_WC_LOC_PROT_ERR);
	refuse_own(wq, RN_PKT_NAK_REM_OP, first_psn);
}

static enum step do_send(struct rn_wire_qp *wq, const struct rn_pkt *p,
			 uint8_t place)
{
	bool first = place == RN_PKT_FIRST || place == RN_PKT_ONLY;
	bool last = place == RN_PKT_LAST || place == RN_PKT_ONLY;
	uint32_t srqn = first ? p->xrc_srqn : wq->msg_srqn;
	bool defer, staged = false;
	struct rn_iovs dsts, part;
	struct rn_responder r;
	enum step step;

	if (!rn_responder_of(wq->qp, srqn, &r)) {
		refuse(wq, RN_PKT_NAK_INV_REQ, p->psn);
		return REFUSED;
	}
	if ((!last && p->payload_len != wq->mtu) || p->payload_len > wq->mtu) {
		fail_receive(wq, &r, IBV_WC_REM_INV_REQ_ERR);
		refuse(wq, RN_PKT_NAK_INV_REQ, p->psn);
		return REFUSED;
	}
	if (first) {
		step = take_receive(wq, &r, p->psn);
		if (step != TAKEN)
			return step;
		wq->msg_srqn = srqn;
		wq->msg_off = 0;
	}
	/* Each packet checks the SGEs it reaches, as rxe does. */
	switch (rn_scatter_resolve(r.client, r.buf_pd, wq->rwqe.sge,
				   wq->rwqe.num_sge,
				   wq->msg_off + p->payload_len, &dsts)) {
	case IBV_WC_SUCCESS:
		break;
	case IBV_WC_LOC_LEN_ERR:
		rn_count_qp(wq->qp, RN_CNT_RX_LENGTH_ERRORS);
		if (!reliable(wq)) {
			refuse(wq, RN_PKT_NAK_INV_REQ, p->psn); /* dropped */
			return REFUSED;
		}
		fail_receive(wq, &r, IBV_WC_LOC_LEN_ERR);
		refuse_own(wq, RN_PKT_NAK_INV_REQ, p->psn);
		return REFUSED;
	default:
		/* The responder's own buffer is bad: its fault, its error. */
		fail_receive(wq, &r, IBV_WC_LOC_PROT_ERR);
		refuse_own(wq, RN_PKT_NAK_REM_OP, p->psn);
		return REFUSED;
	}
	rn_iovs_sub(&dsts, wq->msg_off, p->payload_len, &part);
	/* The last packet is staged with its completion, which the stage
	 * pushes once the payload has landed; unless the stage holds all the
	 * completions it can, or the SEND invalidates a key (whose failure
	 * fails the QP here and now): then it is written at once, after what
	 * was staged, and completed.
	 */
	defer = last && !(p->hdrs & RN_PKT_H_IETH) &&
		rn_wire_write_recv_room(wq);
	switch (rn_wire_write_stage(wq, RN_PKT_K_SEND, &part, p, send_failed,
				    !last || defer)) {
	case RN_WIRE_STAGED:
		staged = true;
		goto written;
	case RN_WIRE_STAGE_FAILED:
		return REFUSED;
	case RN_WIRE_NOT_STAGED:
		break;
	}
	switch (rn_dma_to(&part, p->payload, p->payload_len)) {
	case RN_DMA_OK:
		break;
	case RN_DMA_GONE:
		return HELD;
	default:
		fail_receive(wq, &r, IBV_WC_LOC_PROT_ERR);
		refuse_own(wq, RN_PKT_NAK_REM_OP, p->psn);
		return REFUSED;
	}
written:
	wq->msg_off += p->payload_len;
	wq->in_msg = !last;
	wq->msg_kind = RN_PKT_K_SEND;
	if (last && staged) {
		struct rn_recv_result res = received(wq, p, IBV_WC_RECV,
						     (uint32_t)wq->msg_off);

		wq->have_rwqe = false;
		rn_wire_write_stage_recv(wq, &r, wq->rwqe.wr_id, &res);
	} else if (last) {
		finish_receive(wq, &r, p, IBV_WC_RECV, (uint32_t)wq->msg_off);
	}
	return TAKEN;
}

/* A staged WRITE's payload could not be written. */
static void write_failed(struct rn_wire_qp *wq, uint32_t first_psn,
			 enum rn_dma_status status)
{
	if (status == RN_DMA_GONE) {
		/* Its owner is gone and the QP with it: acknowledge nothing. */
		drop_pending_answer(wq);
		return;
	}
	refuse(wq, RN_PKT_NAK_REM_ACCESS, first_psn);
}

static enum step do_write(struct rn_wire_qp *wq, const struct rn_pkt *p,
			  uint8_t place)
{
	bool first = place == RN_PKT_FIRST || place == RN_PKT_ONLY;
	bool last = place == RN_PKT_LAST || place == RN_PKT_ONLY;
	uint32_t srqn = first ? p->xrc_srqn : wq->msg_srqn;
	struct rn_iovs remote;
	struct rn_responder r;
	enum step step;

	if (!rn_responder_of(wq->qp, srqn, &r)) {
		refuse(wq, RN_PKT_NAK_INV_REQ, p->psn);
		return REFUSED;
	}
	if (!qp_allows(wq, IBV_ACCESS_REMOTE_WRITE)) {
		refuse(wq, RN_PKT_NAK_REM_ACCESS, p->psn);
		return REFUSED;
	}
	if (first) {
		wq->msg_va = p->reth.va;
		wq->msg_rkey = p->reth.rkey;
		wq->msg_len = p->reth.len;
		wq->msg_off = 0;
		wq->msg_srqn = srqn;
		/* The whole range first, so a message is refused at once. */
		if (!rn_remote_resolve(&r.target, wq->msg_va, wq->msg_rkey,
				       wq->msg_len, IBV_ACCESS_REMOTE_WRITE,
				       &remote)) {
			refuse(wq, RN_PKT_NAK_REM_ACCESS, p->psn);
			return REFUSED;
		}
	}
	if (p->payload_len > wq->mtu ||
	    (last ? wq->msg_off + p->payload_len != wq->msg_len :
		    p->payload_len != wq->mtu ||
			    wq->msg_off + p->payload_len > wq->msg_len)) {
		refuse(wq, RN_PKT_NAK_INV_REQ, p->psn);
		return REFUSED;
	}
	/* The immediate needs a receive WQE: wait for one before writing. */
	if (p->hdrs & RN_PKT_H_IMMDT) {
		step = take_receive(wq, &r, p->psn);
		if (step != TAKEN)
			return step;
	}
	if (!rn_remote_resolve(&r.target, wq->msg_va + wq->msg_off, wq->msg_rkey,
			       p->payload_len, IBV_ACCESS_REMOTE_WRITE, &remote)) {
		refuse(wq, RN_PKT_NAK_REM_ACCESS, p->psn);
		return REFUSED;
	}
	/* With an immediate, a completion follows: written at once. */
	switch (rn_wire_write_stage(wq, RN_PKT_K_WRITE, &remote, p, write_failed,
				    !(p->hdrs & RN_PKT_H_IMMDT))) {
	case RN_WIRE_STAGED:
		goto written;
	case RN_WIRE_STAGE_FAILED:
		return REFUSED;
	case RN_WIRE_NOT_STAGED:
		break;
	}
	switch (rn_dma_to(&remote, p->payload, p->payload_len)) {
	case RN_DMA_OK:
		break;
	case RN_DMA_GONE:
		return HELD;
	default:
		/* Unmapped since it was checked: nowhere, as a retired MR. */
		if (remote.guarded)
			break;
		refuse(wq, RN_PKT_NAK_REM_ACCESS, p->psn);
		return REFUSED;
	}
written:
	wq->msg_off += p->payload_len;
	wq->in_msg = !last;
	wq->msg_kind = RN_PKT_K_WRITE;
	if (last && p->hdrs & RN_PKT_H_IMMDT)
		finish_receive(wq, &r, p, IBV_WC_RECV_RDMA_WITH_IMM, wq->msg_len);
	return TAKEN;
}

/* The resource the next READ or atomic takes (the oldest). */
static struct rn_wire_res *new_resource(struct rn_wire_qp *wq)
{
	struct rn_wire_res *res = &wq->res[wq->res_next];

	wq->res_next = (wq->res_next + 1) & (wq->nres - 1);
	if (res->replying)
		wq->replying--;
	memset(res, 0, sizeof(*res));
	return res;
}

static void reply(struct rn_wire_qp *wq, struct rn_wire_res *res, uint32_t psn)
{
	forget_reply_stage(wq);
	res->start_psn = res->next_psn = psn;
	if (!res->replying) {
		res->replying = true;
		wq->replying++;
	}
	if (!wq->on_work) {
		wq->on_work = true;
		rn_list_add_tail(&rn_wire_of(wq)->work, &wq->work_link);
	}
}

static enum step do_read(struct rn_wire_qp *wq, const struct rn_pkt *p,
			 uint32_t *npsn)
{
	struct rn_wire_res *res;
	struct rn_iovs remote;
	struct rn_responder r;

	if (!wq->nres || !rn_responder_of(wq->qp, p->xrc_srqn, &r)) {
		refuse(wq, RN_PKT_NAK_INV_REQ, p->psn);
		return REFUSED;
	}
	if (!qp_allows(wq, IBV_ACCESS_REMOTE_READ)) {
		refuse(wq, RN_PKT_NAK_REM_ACCESS, p->psn);
		return REFUSED;
	}
	if (!rn_remote_resolve(&r.target, p->reth.va, p->reth.rkey, p->reth.len,
			       IBV_ACCESS_REMOTE_READ, &remote)) {
		refuse(wq, RN_PKT_NAK_REM_ACCESS, p->psn);
		return REFUSED;
	}
	res = new_resource(wq);
	res->kind = RN_PKT_K_READ_REQ;
	res->first_psn = p->psn;
	res->npsn = p->reth.len ? (p->reth.len + wq->mtu - 1) / wq->mtu : 1;
	res->va = p->reth.va;
	res->rkey = p->reth.rkey;
	res->len = p->reth.len;
	res->srqn = p->xrc_srqn;
	reply(wq, res, p->psn);
	*npsn = res->npsn;
	return TAKEN;
}

/*
 * Atomics are atomic with respect to everything this device does (one
 * thread does it all); the operands are in the responder's byte order.
 */
static enum step do_atomic(struct rn_wire_qp *wq, const struct rn_pkt *p)
{
	const struct rn_pkt_atomiceth *a = &p->atomic;
	struct rn_wire_res *res;
	struct rn_iovs remote;
	struct rn_responder r;
	enum rn_dma_status st;
	uint64_t old;

	if (!wq->nres || !rn_responder_of(wq->qp, p->xrc_srqn, &r) ||
	    a->va % sizeof(old)) {
		refuse(wq, RN_PKT_NAK_INV_REQ, p->psn);
		return REFUSED;
	}
	if (!qp_allows(wq, IBV_ACCESS_REMOTE_ATOMIC)) {
		refuse(wq, RN_PKT_NAK_REM_ACCESS, p->psn);
		return REFUSED;
	}
	if (!rn_remote_resolve(&r.target, a->va, a->rkey, sizeof(old),
			       IBV_ACCESS_REMOTE_ATOMIC, &remote)) {
		refuse(wq, RN_PKT_NAK_REM_ACCESS, p->psn);
		return REFUSED;
	}
	if ((p->opcode & 0x1F) == RN_PKT_OP_FETCH_ADD)
		st = rn_atomic_apply(rn_wire_dev(wq), &remote, true,
				     a->swap_add, 0, &old);
	else
		st = rn_atomic_apply(rn_wire_dev(wq), &remote, false,
				     a->compare, a->swap_add, &old);
	if (st == RN_DMA_GONE)
		return HELD;
	if (st) {
		refuse(wq, RN_PKT_NAK_REM_ACCESS, p->psn);
		return REFUSED;
	}
	res = new_resource(wq);
	res->kind = RN_PKT_K_ATOMIC;
	res->first_psn = p->psn;
	res->npsn = 1;
	res->va = a->va;
	res->rkey = a->rkey;
	res->srqn = p->xrc_srqn;
	res->orig = old;
	reply(wq, res, p->psn);
	return TAKEN;
}

/* Is the opcode where the message in progress (or none) allows it? */
static bool in_sequence(const struct rn_wire_qp *wq, uint8_t kind, uint8_t place)
{
	bool continues = place == RN_PKT_MIDDLE || place == RN_PKT_LAST;

	if (wq->in_msg)
		return kind == wq->msg_kind && continues;
	return !continues;
}

static void execute(struct rn_wire_qp *wq, const struct rn_wire_pkt *pkt)
{
	const struct rn_pkt *p = &pkt->p;
	uint8_t kind = pkt->op->kind, place = pkt->op->place;
	uint32_t npsn = 1;
	enum step step;

	if (!in_sequence(wq, kind, place)) {
		struct rn_responder r;

		if (wq->have_rwqe && rn_responder_of(wq->qp, wq->msg_srqn, &r))
			fail_receive(wq, &r, IBV_WC_REM_INV_REQ_ERR);
		refuse(wq, RN_PKT_NAK_INV_REQ, p->psn);
		return;
	}
	switch (kind) {
	case RN_PKT_K_SEND:
		step = do_send(wq, p, place);
		break;
	case RN_PKT_K_WRITE:
		step = do_write(wq, p, place);
		break;
	case RN_PKT_K_READ_REQ:
		step = do_read(wq, p, &npsn);
		break;
	default:
		step = do_atomic(wq, p);
		break;
	}
	if (step != TAKEN)
		return;
	wq->epsn = rn_pkt_psn_add(wq->epsn, npsn);
	if (kind == RN_PKT_K_READ_REQ || kind == RN_PKT_K_ATOMIC ||
	    place == RN_PKT_LAST || place == RN_PKT_ONLY)
		wq->msn = (wq->msn + 1) & RN_PKT_MASK24;
	if (p->ackreq && reliable(wq) && kind != RN_PKT_K_READ_REQ &&
	    kind != RN_PKT_K_ATOMIC)
		ack(wq, p->psn);
}

/* ---- duplicates ------------------------------------------------------------------ */

static struct rn_wire_res *resource_of(struct rn_wire_qp *wq, uint8_t kind,
				       uint32_t psn)
{
	uint32_t i;

	for (i = 0; i < wq->nres; i++) {
		struct rn_wire_res *res = &wq->res[i];

		if (res->kind == kind &&
		    rn_pkt_psn_sub(psn, res->first_psn) < res->npsn)
			return res;
	}
	return NULL;
}

static void duplicate(struct rn_wire_qp *wq, const struct rn_wire_pkt *pkt)
{
	const struct rn_pkt *p = &pkt->p;
	struct rn_wire_res *res;
	uint64_t off;

	rn_count_qp(wq->qp, RN_CNT_DUP_REQ);
	switch (pkt->op->kind) {
	case RN_PKT_K_READ_REQ:
		/* Served again if it asks for the rest of what it asked. */
		res = resource_of(wq, RN_PKT_K_READ_REQ, p->psn);
		if (!res)
			return;
		off = (uint64_t)rn_pkt_psn_sub(p->psn, res->first_psn) * wq->mtu;
		if (p->reth.rkey != res->rkey || p->reth.va != res->va + off ||
		    p->reth.len != res->len - off)
			return;
		reply(wq, res, p->psn);
		return;
	case RN_PKT_K_ATOMIC:
		res = resource_of(wq, RN_PKT_K_ATOMIC, p->psn);
		if (res && res->first_psn == p->psn)
			reply(wq, res, p->psn);
		return;
	default:
		ack(wq, rn_pkt_psn_sub(wq->epsn, 1));
		return;
	}
}

/* ---- UC: no ACKs, no NAKs, lost packets lose their message ---------------------------- */

static void uc_recv(struct rn_wire_qp *wq, const struct rn_wire_pkt *pkt)
{
	const struct rn_pkt *p = &pkt->p;
	uint8_t place = pkt->op->place;
	bool starts = place == RN_PKT_FIRST || place == RN_PKT_ONLY;

	if (p->psn != wq->epsn) {
		if (rn_pkt_psn_cmp(p->psn, wq->epsn) < 0) {
			rn_count_qp(wq->qp, RN_CNT_DUP_REQ);
			return;
		}
		rn_count_qp(wq->qp, RN_CNT_OOS_REQ);
		/* The message in progress lost a packet: it is dropped; its
		 * receive WQE, if it took one, is kept for the next one.
		 */
		wq->epsn = p->psn;
		wq->in_msg = false;
		wq->drop_msg = !starts;
	}
	wq->epsn = rn_pkt_psn_add(p->psn, 1);
	if (wq->drop_msg) {
		if (!starts)
			return;
		wq->drop_msg = false;
	}
	if (!in_sequence(wq, pkt->op->kind, place)) {
		wq->in_msg = false;
		wq->drop_msg = !starts;
		if (!starts)
			return;
	}
	if (pkt->op->kind == RN_PKT_K_SEND)
		do_send(wq, p, place);
	else
		do_write(wq, p, place);
}

/*
 * An injected fault (engine/fault.h) answers the request that starts a
 * message in place of executing it: an RNR NAK, as for a receive queue
 * with nothing posted, a sequence error NAK, which makes the requester go
 * back to it, or a NAK that refuses it.  True if one did.
 */
static bool injected_answer(struct rn_wire_qp *wq, const struct rn_wire_pkt *pkt)
{
	uint8_t place = pkt->op->place;
	struct rn_fault f;

	if (wq->in_msg || place == RN_PKT_MIDDLE || place == RN_PKT_LAST)
		return false;
	f = rn_fault_draw(wq->qp, RN_FAULT_EV_REQUEST);
	switch (f.kind) {
	case RN_FAULT_RNR:
		/* As a real one: nothing after it is taken until it comes again. */
		wq->nak_sent = true;
		answer(wq, rn_pkt_aeth_rnr_nak(wq->qp->attr.min_rnr_timer),
		       pkt->p.psn);
		return true;
	case RN_FAULT_NAK:
		if (f.value == RN_PKT_NAK_PSN_SEQ) {
			/* Nothing after it is taken until it comes again. */
			wq->nak_sent = true;
			answer(wq, rn_pkt_aeth_nak(RN_PKT_NAK_PSN_SEQ),
			       pkt->p.psn);
		} else {
			/* Counted apart: not as resp_naks_sent. */
			nak_and_fail(wq, (enum rn_pkt_nak)f.value, pkt->p.psn);
		}
		return true;
	default:
		return false;
	}
}

void rn_wire_responder_recv(struct rn_wire_qp *wq, const struct rn_wire_pkt *pkt)
{
	struct rn_qp *qp = wq->qp;
	int32_t d;

	if (!rn_qp_receiving(qp)) {
		rn_count_qp(wq->qp, RN_CNT_NO_QP);
		return;
	}
	if (!qp->comm_est && qp->attr.qp_state == IBV_QPS_RTR) {
		qp->comm_est = true;
		rn_qp_event(qp, IBV_EVENT_COMM_EST);
	}
	if (!reliable(wq)) {
		uc_recv(wq, pkt);
		return;
	}
	d = rn_pkt_psn_cmp(pkt->p.psn, wq->epsn);
	if (d > 0) {
		rn_count_qp(wq->qp, RN_CNT_OOS_REQ);
		if (!wq->nak_sent) {
			wq->nak_sent = true;
			answer(wq, rn_pkt_aeth_nak(RN_PKT_NAK_PSN_SEQ), wq->epsn);
		}
		return;
	}
	if (d < 0) {
		duplicate(wq, pkt);
		return;
	}
	wq->nak_sent = false;
	if (qp->faults && injected_answer(wq, pkt))
		return;
	execute(wq, pkt);
}

/* ---- READ responses and atomic ACKs ---------------------------------------------- */

static uint8_t read_opcode(const struct rn_wire_qp *wq,
			   const struct rn_wire_res *res, uint32_t i)
{
	bool final = i == res->npsn - 1;
	bool from_start = res->next_psn == res->start_psn;

	/* A replay from a later PSN has no FIRST (docs/wire.md, Responder). */
	if (from_start && res->start_psn == res->first_psn)
		return wq->transport | (final ? RN_PKT_OP_READ_RESP_ONLY :
						RN_PKT_OP_READ_RESP_FIRST);
	return wq->transport | (final ? RN_PKT_OP_READ_RESP_LAST :
					RN_PKT_OP_READ_RESP_MIDDLE);
}

struct read_src {
	struct rn_wire_qp *wq;
	const struct rn_wire_res *res;
	uint64_t off;
};

/*
 * READ data from the reply stage, which is filled with one call from the
 * packet's address to the end of the READ (at most the stage's size);
 * false when the packet must be read alone (the read failed: its failure
 * then gets its exact NAK).
 */
static bool staged_read(const struct read_src *src, const struct rn_responder *r,
			const struct rn_iovs *packet, uint8_t *dst, uint32_t len)
{
	struct rn_wire_stage *st = &rn_wire_of(src->wq)->reply_stage;
	uint64_t addr = (uintptr_t)packet->iov[0].iov_base;
	uint64_t rest = src->res->len - src->off;
	struct rn_iovs all;

	if (st->wq != src->wq || st->mem != packet->mem || addr < st->addr ||
	    addr - st->addr > st->len || len > st->len - (addr - st->addr)) {
		st->wq = NULL;
		if (rest <= len)
			return false;
		/* Paced, at most what a turn of the QP sends. */
		if (src->wq->cc.rate &&
		    rest > (uint64_t)RN_WIRE_REPLY_BUDGET * src->wq->mtu)
			rest = (uint64_t)RN_WIRE_REPLY_BUDGET * src->wq->mtu;
		if (rest > RN_WIRE_STAGE_SIZE)
			rest = RN_WIRE_STAGE_SIZE;
		if (!rn_remote_resolve(&r->target, src->res->va + src->off,
				       src->res->rkey, rest,
				       IBV_ACCESS_REMOTE_READ, &all) ||
		    all.n != 1 || rn_mem_read(all.mem, all.iov, 1, st->buf))
			return false;
		st->wq = src->wq;
		st->mem = all.mem;
		st->addr = addr;
		st->len = (uint32_t)rest;
	}
	memcpy(dst, st->buf + (addr - st->addr), len);
	return true;
}

static enum rn_dma_status fill_read(void *arg, uint8_t *dst, uint32_t len)
{
	struct read_src *src = arg;
	struct rn_responder r;
	struct rn_iovs remote;

	/* Checked again for each packet: the MR may be gone since. */
	if (!rn_responder_of(src->wq->qp, src->res->srqn, &r) ||
	    !rn_remote_resolve(&r.target, src->res->va + src->off,
			       src->res->rkey, len, IBV_ACCESS_REMOTE_READ,
			       &remote))
		return RN_DMA_SRC_FAULT;
	if (remote.n == 1 && staged_read(src, &r, &remote, dst, len))
		return RN_DMA_OK;
	return rn_dma_from(&remote, dst, len);
}

/* Send up to budget responses of res; returns how many went. */
static unsigned int send_responses(struct rn_wire_qp *wq,
				   struct rn_wire_res *res, unsigned int budget,
				   uint64_t now)
{
	unsigned int sent = 0;

	while (res->replying && sent < budget) {
		uint32_t i = rn_pkt_psn_sub(res->next_psn, res->first_psn);
		struct rn_pkt p = {
			.dqpn = wq->qp->attr.dest_qp_num,
			.psn = res->next_psn,
			.aeth = { rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT), wq->msn },
		};
		struct read_src src = { wq, res, (uint64_t)i * wq->mtu };

		if (res->kind == RN_PKT_K_ATOMIC) {
			p.opcode = wq->transport | RN_PKT_OP_ATOMIC_ACK;
			p.atomic_ack = res->orig;
			rn_wire_send(rn_wire_of(wq), &wq->peer, &p, NULL, NULL);
		} else {
			/* READ data is paced as a requester's (congestion.c). */
			if (!rn_wire_cc_may_send(wq, now))
				return sent;
			p.opcode = read_opcode(wq, res, i);
			p.payload_len = res->len - src.off < wq->mtu ?
						(uint32_t)(res->len - src.off) :
						wq->mtu;
			switch (rn_wire_send(rn_wire_of(wq), &wq->peer, &p,
					     fill_read, &src)) {
			case RN_DMA_OK:
				break;
			case RN_DMA_GONE:
				return sent;
			default:
				res->replying = false;
				wq->replying--;
				refuse(wq, RN_PKT_NAK_REM_ACCESS, res->next_psn);
				return sent;
			}
			rn_wire_cc_sent(wq, (uint32_t)rn_pkt_len(p.opcode,
								 p.payload_len),
					now);
		}
		sent++;
		res->next_psn = rn_pkt_psn_add(res->next_psn, 1);
		if (rn_pkt_psn_sub(res->next_psn, res->first_psn) >= res->npsn) {
			res->replying = false;
			wq->replying--;
		}
	}
	return sent;
}

/* The QP's turn at sending responses, oldest resource first. */
static bool responder_run(struct rn_wire_qp *wq, unsigned int budget,
			  uint64_t now)
{
	unsigned int k;

	for (k = 0; k < wq->nres && wq->replying && budget; k++) {
		struct rn_wire_res *res = &wq->res[(wq->res_next + k) & (wq->nres - 1)];

		if (res->replying)
			budget -= send_responses(wq, res, budget, now);
		if (res->replying)
			break; /* its next turn comes first */
		if (wq->qp->attr.qp_state == IBV_QPS_ERR)
			return true;
	}
	if (!wq->replying && wq->ack_pending) {
		drop_pending_answer(wq);
		send_aeth(wq, wq->ack_syndrome, wq->ack_psn);
	}
	return !wq->replying;
}

/* Every QP's READ responses and atomic ACKs, a budget at a time. */
bool rn_wire_reply(struct rn_wire *w, uint64_t now)
{
	struct rn_list *pos, *tmp;
	bool progress = false;

	rn_list_for_each_safe(pos, tmp, &w->work) {
		struct rn_wire_qp *wq = rn_container_of(pos, struct rn_wire_qp,
							 work_link);

		/* Held by the pacer: its timer schedules the next turn. */
		if (wq->cc.paced)
			continue;
		progress = true;
		if (responder_run(wq, RN_WIRE_REPLY_BUDGET, now) && wq->on_work) {
			wq->on_work = false;
			rn_list_del(&wq->work_link);
		}
	}
	return progress;
}

/* The QP went to ERR or RESET: what the responder held goes. */
void rn_wire_responder_stop(struct rn_wire_qp *wq)
{
	struct rn_responder r;
	uint32_t i;

	drop_pending_answer(wq);
	if (wq->on_work) {
		wq->on_work = false;
		rn_list_del(&wq->work_link);
	}
	for (i = 0; i < wq->nres; i++)
		wq->res[i].replying = false;
	wq->replying = 0;
	wq->in_msg = false;
	if (wq->have_rwqe && rn_responder_of(wq->qp, wq->msg_srqn, &r))
		fail_receive(wq, &r, IBV_WC_WR_FLUSH_ERR);
	wq->have_rwqe = false;
}
