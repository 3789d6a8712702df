// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The write stage: payload of in-order packets of one QP and one kind
 * (WRITE or SEND requests, READ responses) to adjacent addresses, held and
 * written with one call (a 64-byte write costs the call a 64 KiB one
 * does).  It is written before anything else can see memory or hear of
 * it: before any other packet is executed (netio.c's dispatch), at the end
 * of each received batch, before any packet leaves (rn_wire_flush), and
 * by its owner before a completion says the message is there, or before
 * an error completion hands a buffer back (rn_wire_write_settle).  A
 * write that fails then calls the owner's 'failed' with the first packet's
 * PSN, and the QP fails as one failing at once would.  That PSN may be an
 * earlier WRITE's than the one whose memory is gone (the client unmapped
 * memory it had registered, which a NIC would have pinned).
 */
#include "wire/wire.h"

bool rn_wire_write_joins(const struct rn_device *dev,
			 const struct rn_wire_qp *wq, const struct rn_wire_pkt *pkt)
{
	const struct rn_wire_stage *st = &dev->wire->write_stage;

	return st->wq == wq && pkt->op->kind == st->kind;
}

/*
 * Before packets leave (rn_wire_flush, which runs deep inside the
 * transport, even for the stage's own QP): the payload is written, and
 * when that fails it stays staged for the next rn_wire_write_flush, at a
 * point where failing its QP is safe, which retries it.  Until then, a
 * packet may acknowledge what could not be written: the client unmapped
 * memory it had registered, and a NIC that pinned it would have written.
 */
void rn_wire_write_out(struct rn_device *dev)
{
	struct rn_wire_stage *st = &dev->wire->write_stage;
	struct iovec all = { (void *)(uintptr_t)st->addr, st->len };

	if (st->wq && rn_mem_write(st->mem, &all, 1, st->buf) == RN_DMA_OK)
		st->wq = NULL;
}

void rn_wire_write_settle(struct rn_wire_qp *wq)
{
	struct rn_wire_stage *st = &rn_wire_dev(wq)->wire->write_stage;

	if (st->wq == wq) {
		rn_wire_write_out(rn_wire_dev(wq));
		st->wq = NULL;
	}
}

struct rn_wire_qp *rn_wire_write_flush(struct rn_device *dev)
{
	struct rn_wire_stage *st = &dev->wire->write_stage;
	struct rn_wire_qp *wq = st->wq;
	struct iovec all = { (void *)(uintptr_t)st->addr, st->len };
	enum rn_dma_status status;

	if (!wq)
		return NULL;
	st->wq = NULL;
	status = rn_mem_write(st->mem, &all, 1, st->buf);
	if (status == RN_DMA_OK)
		return NULL;
	st->failed(wq, st->first_psn, status);
	return wq;
}

enum rn_wire_staged rn_wire_write_stage(struct rn_wire_qp *wq, uint8_t kind,
					const struct rn_iovs *dst,
					const struct rn_pkt *p,
					rn_wire_stage_failed_fn failed,
					bool may_stage)
{
	struct rn_wire_stage *st = &rn_wire_dev(wq)->wire->write_stage;
	uint64_t addr = dst->n == 1 ? (uintptr_t)dst->iov[0].iov_base : 0;

	if (!may_stage)
		return rn_wire_write_flush(rn_wire_dev(wq)) == wq ?
			       RN_WIRE_STAGE_FAILED :
			       RN_WIRE_NOT_STAGED;
	if (st->wq && (dst->n != 1 || st->wq != wq || st->kind != kind ||
		       st->mem != dst->mem || st->addr + st->len != addr ||
		       p->payload_len > RN_WIRE_STAGE_SIZE - st->len) &&
	    rn_wire_write_flush(rn_wire_dev(wq)) == wq)
		return RN_WIRE_STAGE_FAILED;
	if (dst->n != 1 || p->payload_len > RN_WIRE_STAGE_SIZE)
		return RN_WIRE_NOT_STAGED;
	if (!st->wq) {
		st->wq = wq;
		st->kind = kind;
		st->mem = dst->mem;
		st->addr = addr;
		st->len = 0;
		st->first_psn = p->psn;
		st->failed = failed;
	}
	memcpy(st->buf + st->len, p->payload, p->payload_len);
	st->len += p->payload_len;
	return RN_WIRE_STAGED;
}
