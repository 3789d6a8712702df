// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The write stage: payload of in-order packets of one QP and one kind
 * (WRITE or SEND requests, READ responses) to adjacent addresses, held and
 * written with one call (a 64-byte write costs the call a 64 KiB one
 * does).  It is written before anything else can see memory or hear of
 * it: before any other packet is executed (netio.c's dispatch), at the end
 * of each received batch, before any packet leaves (rn_wire_flush), and
 * by its owner before a completion says the message is there (a SEND's
 * receive completion: below), or before an error completion hands a
 * buffer back (rn_wire_write_settle).  A flush that fails calls the
 * owner's 'failed' with the first unwritten packet's PSN, and the QP
 * fails as one failing at once would.  That PSN may be an earlier
 * WRITE's than the one whose memory is gone (the client unmapped memory
 * it had registered, which a NIC would have pinned).  A settle that fails
 * calls nothing (its QP is failing already): what it could not write may
 * have been acknowledged by then.
 *
 * A SEND's last packet joins too, and the stage holds its receive
 * completion until the payload has landed: small SENDs then share a write
 * as WRITEs do.  Those completions are pushed by rn_wire_write_flush and
 * rn_wire_write_settle, never by rn_wire_write_out, which runs where a
 * completion queue that overflows could not fail its QP safely; the end
 * of every received batch flushes, so none waits past it.  A payload that
 * cannot land completes its receive with LOC_PROT_ERR, or with nothing
 * when its owner is gone.
 */
#include "wire/internal.h"

bool rn_wire_write_joins(const struct rn_wire *w,
			 const struct rn_wire_qp *wq, const struct rn_wire_pkt *pkt)
{
	const struct rn_wire_stage *st = &w->write_stage;

	return st->wq == wq && pkt->op->kind == st->kind;
}

/* The staged payload to memory; what it held of receives has landed. */
static enum rn_dma_status land(struct rn_wire *w)
{
	struct rn_wire_stage *st = &w->write_stage;
	struct iovec all = { (void *)(uintptr_t)st->addr, st->len };
	enum rn_dma_status status = RN_DMA_OK;

	if (st->len)
		status = rn_mem_write(st->mem, &all, 1, st->buf);
	if (status == RN_DMA_DST_FAULT && st->vanish)
		status = RN_DMA_OK;
	if (status == RN_DMA_OK) {
		st->addr += st->len;
		st->len = 0;
		w->write_recvs.nlanded = w->write_recvs.n;
	}
	return status;
}

/*
 * The receive completions held, in order: a success for each whose
 * payload landed, LOC_PROT_ERR for the others (none if their owner is
 * gone, status RN_DMA_GONE).  The stage lets go of them first: a
 * completion queue that overflows fails its QP, which settles its stage.
 */
static void complete_recvs(struct rn_wire_stage_recvs *rs,
			   enum rn_dma_status status)
{
	unsigned int n = rs->n, landed = rs->nlanded, i;

	rs->n = 0;
	rs->nlanded = 0;
	for (i = 0; i < n; i++) {
		struct rn_wire_stage_recv *e = &rs->held[i];
		struct rn_rwqe w = { .wr_id = e->wr_id };

		if (i >= landed) {
			if (status == RN_DMA_GONE)
				break;
			e->res.status = IBV_WC_LOC_PROT_ERR;
			e->res.flags = 0;
		}
		rn_recv_finish(&e->r, &w, &e->res);
	}
}

void rn_wire_write_out(struct rn_wire *w)
{

	if (w->write_stage.wq && land(w) == RN_DMA_OK && !w->write_recvs.n)
		w->write_stage.wq = NULL;
}

void rn_wire_write_settle(struct rn_wire_qp *wq)
{
	struct rn_wire *w = rn_wire_of(wq);

	if (w->write_stage.wq == wq) {
		w->write_stage.wq = NULL;
		complete_recvs(&w->write_recvs, land(w));
	}
}

struct rn_wire_qp *rn_wire_write_flush(struct rn_wire *w)
{
	struct rn_wire_qp *wq = w->write_stage.wq;
	enum rn_dma_status status;

	if (!wq)
		return NULL;
	w->write_stage.wq = NULL;
	status = land(w);
	complete_recvs(&w->write_recvs, status);
	if (status != RN_DMA_OK)
		w->write_stage.failed(wq, w->write_stage.first_psn, status);
	else if (wq->qp->attr.qp_state != IBV_QPS_ERR)
		return NULL;
	return wq;
}

enum rn_wire_staged rn_wire_write_stage(struct rn_wire_qp *wq, uint8_t kind,
					const struct rn_iovs *dst,
					const struct rn_pkt *p,
					rn_wire_stage_failed_fn failed,
					bool may_stage)
{
	struct rn_wire_stage *st = &rn_wire_of(wq)->write_stage;
	uint64_t addr = dst->n == 1 ? (uintptr_t)dst->iov[0].iov_base : 0;

	if (!may_stage)
		return rn_wire_write_flush(rn_wire_of(wq)) == wq ?
			       RN_WIRE_STAGE_FAILED :
			       RN_WIRE_NOT_STAGED;
	if (st->wq && (dst->n != 1 || st->wq != wq || st->kind != kind ||
		       st->mem != dst->mem || st->addr + st->len != addr ||
		       p->payload_len > RN_WIRE_STAGE_SIZE - st->len) &&
	    rn_wire_write_flush(rn_wire_of(wq)) == wq)
		return RN_WIRE_STAGE_FAILED;
	if (dst->n != 1 || p->payload_len > RN_WIRE_STAGE_SIZE)
		return RN_WIRE_NOT_STAGED;
	if (!st->wq) {
		st->wq = wq;
		st->kind = kind;
		st->mem = dst->mem;
		st->addr = addr;
		st->len = 0;
		st->failed = failed;
		st->vanish = true;
	}
	st->vanish = st->vanish && kind == RN_PKT_K_WRITE && dst->guarded;
	/* The first packet not yet written, for a write that fails. */
	if (!st->len)
		st->first_psn = p->psn;
	memcpy(st->buf + st->len, p->payload, p->payload_len);
	st->len += p->payload_len;
	return RN_WIRE_STAGED;
}

bool rn_wire_write_recv_room(const struct rn_wire_qp *wq)
{
	const struct rn_wire *w = rn_wire_of(wq);

	return w->write_stage.wq != wq ||
	       w->write_recvs.n < RN_WIRE_STAGE_RECVS;
}

void rn_wire_write_stage_recv(struct rn_wire_qp *wq,
			      const struct rn_responder *r, uint64_t wr_id,
			      const struct rn_recv_result *res)
{
	struct rn_wire_stage_recvs *rs = &rn_wire_of(wq)->write_recvs;

	rs->held[rs->n++] = (struct rn_wire_stage_recv){
		.r = *r,
		.wr_id = wr_id,
		.res = *res,
	};
}
