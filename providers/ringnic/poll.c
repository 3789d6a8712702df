// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completions: poll_cq and the ibv_cq_ex poll API read CQEs that the device
 * writes, by their owner (phase) bit, and return ring space by storing the
 * consumer counter.  Arming is a store on the CQ's arm word.
 */
#include <errno.h>
#include <string.h>

#include "ringnic.h"

static void cq_lock(struct rn_cq *cq)
{
	if (!cq->single_threaded)
		pthread_spin_lock(&cq->lock);
}

static void cq_unlock(struct rn_cq *cq)
{
	if (!cq->single_threaded)
		pthread_spin_unlock(&cq->lock);
}

/* The CQE at the consumer counter, or NULL if the device has not written it. */
static const struct rn_cqe *next_cqe(const struct rn_cq *cq)
{
	const struct rn_cqe *cqe = &cq->ring[cq->cons & (cq->entries - 1)];

	/* Acquire: the rest of the CQE is read after its owner byte. */
	if (__atomic_load_n(&cqe->owner, __ATOMIC_ACQUIRE) !=
	    RN_CQE_PHASE(cq->cons, cq->log2_entries))
		return NULL;
	return cqe;
}

static void release_cqes(struct rn_cq *cq)
{
	__atomic_store_n(&cq->ctrl->cons, cq->cons, __ATOMIC_RELEASE);
}

static bool overrun(const struct rn_cq *cq)
{
	return __atomic_load_n(&cq->ctrl->overrun, __ATOMIC_ACQUIRE);
}

static unsigned int wc_flags(const struct rn_cqe *cqe)
{
	return (cqe->flags & RN_CQE_WITH_IMM ? IBV_WC_WITH_IMM : 0) |
	       (cqe->flags & RN_CQE_WITH_INV ? IBV_WC_WITH_INV : 0) |
	       (cqe->flags & RN_CQE_GRH ? IBV_WC_GRH : 0);
}

int rn_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct rn_cq *cq = to_rn_cq(ibcq);
	int n;

	rn_cq_flush_deferred(cq);
	cq_lock(cq);
	for (n = 0; n < ne; n++) {
		const struct rn_cqe *cqe = next_cqe(cq);

		if (!cqe)
			break;
		wc[n] = (struct ibv_wc){
			.wr_id = cqe->wr_id,
			.status = cqe->status,
			.opcode = cqe->opcode,
			.byte_len = cqe->byte_len,
			.imm_data = cqe->imm_data,
			.qp_num = cqe->qp_num,
			.src_qp = cqe->src_qp,
			.wc_flags = wc_flags(cqe),
			.sl = cqe->sl,
		};
		cq->cons++;
	}
	if (n)
		release_cqes(cq);
	cq_unlock(cq);
	/* Once drained, a CQ that overran, or whose device is gone, says so:
	 * completions were lost or will never come.
	 */
	if (!n && overrun(cq))
		return -EOVERFLOW;
	if (!n && rn_dead(to_rn_ctx(ibcq->context)))
		return -ENODEV;
	return n;
}

/*
 * A QP's CQEs leave its CQ (rn_cq_discard_qp), as mlx5 and mlx4 take them
 * out in ibv_destroy_qp and on a modify to RESET, with two exceptions:
 *
 *   keep_recv   the receives of a QP on an SRQ stay: their buffers were
 *               the SRQ's, which lives on.
 *   keep_send   a destroyed QP's send completions stay, as on rxe.
 *               libfabric's verbs provider destroys the QP of an endpoint
 *               it closes, then polls the CQ for that QP's last sends
 *               (vrb_cleanup_cq) and reports every send it did not find
 *               there as flushed (vrb_flush_sq).  RxM closes an endpoint
 *               from its CM thread when the peer disconnects, which under
 *               load can come before the application polled the
 *               completion of a send the peer has long acknowledged: the
 *               send then failed for the application although its message
 *               arrived (fi_rdm_multi_client's last pingpong send).  Sends
 *               own no buffer a consumer hands back to the QP, so keeping
 *               them cannot lead it into the freed QP, which receives did
 *               (RxM reposts a receive buffer to its endpoint).
 *
 * The device writes no more CQEs for the QP; those that stay and those of
 * other QPs that follow are moved up over the gaps, from the newest down,
 * each with the owner bit of its new slot, and the consumer counter moves
 * past the gaps.  The device only writes beyond the CQEs walked here, into
 * slots released by the store of the consumer counter, which comes last.
 */
void rn_cq_discard_qp(struct rn_cq *cq, uint32_t qpn, bool keep_recv,
		      bool keep_send)
{
	uint32_t mask = cq->entries - 1, n, i, gap = 0;

	cq_lock(cq);
	for (n = 0; n < cq->entries; n++) {
		const struct rn_cqe *cqe = &cq->ring[(cq->cons + n) & mask];

		if (__atomic_load_n(&cqe->owner, __ATOMIC_ACQUIRE) !=
		    RN_CQE_PHASE(cq->cons + n, cq->log2_entries))
			break;
	}
	for (i = n; i-- > 0;) {
		uint32_t at = cq->cons + i;
		struct rn_cqe cqe = cq->ring[at & mask];
		bool recv = cqe.opcode & IBV_WC_RECV;

		if (cqe.qp_num == qpn && !(recv ? keep_recv : keep_send)) {
			gap++;
		} else if (gap) {
			cqe.owner = RN_CQE_PHASE(at + gap, cq->log2_entries);
			cq->ring[(at + gap) & mask] = cqe;
		}
	}
	if (gap) {
		cq->cons += gap;
		release_cqes(cq);
	}
	cq_unlock(cq);
}

static void ring_cq(struct rn_cq *cq)
{
	struct rn_context *ctx = to_rn_ctx(cq->ibv_cq.context);

	rn_ring(ctx, &ctx->dev_page->cq, cq->handle);
}

/*
 * Arming is a store.  The device looks at the arm whenever it writes a
 * CQE; CQEs already waiting are the one case it must be told about, so
 * that arming over them fires at once.
 */
int rn_arm_cq(struct rn_cq *cq, uint32_t level)
{
	const struct rn_cqe *waiting;
	uint32_t old, cons;

	if (rn_dead(to_rn_ctx(cq->ibv_cq.context)))
		return ENODEV;
	rn_cq_flush_deferred(cq);
	/* Under the lock: a resize moves the arm word with the CQ. */
	cq_lock(cq);
	old = __atomic_load_n(&cq->ctrl->arm, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&cq->ctrl->arm, &old,
					    rn_arm_raise(old, level), false,
					    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
	/* seq_cst after the arm: pairs with the device's fence between
	 * writing a CQE and reading the arm (notify.c), so one of us sees
	 * the other.
	 */
	cons = __atomic_load_n(&cq->ctrl->cons, __ATOMIC_SEQ_CST);
	waiting = &cq->ring[cons & (cq->entries - 1)];
	if (__atomic_load_n(&waiting->owner, __ATOMIC_SEQ_CST) ==
	    RN_CQE_PHASE(cons, cq->log2_entries))
		ring_cq(cq);
	cq_unlock(cq);
	return 0;
}

int rn_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	return rn_arm_cq(to_rn_cq(ibcq),
			 solicited_only ? RN_ARM_SOLICITED : RN_ARM_ANY);
}

/* ibv_get_cq_event read an event of this CQ: the next one may come. */
void rn_cq_event(struct ibv_cq *ibcq)
{
	struct rn_cq *cq = to_rn_cq(ibcq);

	__atomic_fetch_add(&cq->ctrl->events_consumed, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&cq->ctrl->deferred, __ATOMIC_SEQ_CST))
		ring_cq(cq);
}

/* ---- the ibv_cq_ex poll API -------------------------------------------- */

static void load_current(struct rn_cq *cq, const struct rn_cqe *cqe)
{
	cq->cur = cqe;
	cq->ibv_cq.wr_id = cqe->wr_id;
	cq->ibv_cq.status = cqe->status;
}

static int start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct rn_cq *cq = to_rn_cq_ex(ibcq);
	const struct rn_cqe *cqe;

	if (attr->comp_mask)
		return EINVAL;
	rn_cq_flush_deferred(cq);
	cq_lock(cq);
	cqe = next_cqe(cq);
	if (!cqe) {
		/* No end_poll follows an ENOENT start_poll. */
		cq_unlock(cq);
		return ENOENT;
	}
	load_current(cq, cqe);
	return 0;
}

static int next_poll(struct ibv_cq_ex *ibcq)
{
	struct rn_cq *cq = to_rn_cq_ex(ibcq);
	const struct rn_cqe *cqe;

	if (!cq->cur)
		return ENOENT;
	cq->cons++;
	cq->cur = NULL;
	cqe = next_cqe(cq);
	if (!cqe)
		return ENOENT;
	load_current(cq, cqe);
	return 0;
}

static void end_poll(struct ibv_cq_ex *ibcq)
{
	struct rn_cq *cq = to_rn_cq_ex(ibcq);

	if (cq->cur)
		cq->cons++;
	cq->cur = NULL;
	release_cqes(cq);
	cq_unlock(cq);
}

static enum ibv_wc_opcode read_opcode(struct ibv_cq_ex *ibcq)
{
	return to_rn_cq_ex(ibcq)->cur->opcode;
}

static uint32_t read_byte_len(struct ibv_cq_ex *ibcq)
{
	return to_rn_cq_ex(ibcq)->cur->byte_len;
}

/* Also what ibv_wc_read_invalidated_rkey reads. */
static __be32 read_imm_data(struct ibv_cq_ex *ibcq)
{
	return to_rn_cq_ex(ibcq)->cur->imm_data;
}

static uint32_t read_qp_num(struct ibv_cq_ex *ibcq)
{
	return to_rn_cq_ex(ibcq)->cur->qp_num;
}

static uint32_t read_src_qp(struct ibv_cq_ex *ibcq)
{
	return to_rn_cq_ex(ibcq)->cur->src_qp;
}

static unsigned int read_wc_flags(struct ibv_cq_ex *ibcq)
{
	return wc_flags(to_rn_cq_ex(ibcq)->cur);
}

/* RoCE's "service level" is the packet type of a UD receive (mlx5's use). */
static uint8_t read_sl(struct ibv_cq_ex *ibcq)
{
	return to_rn_cq_ex(ibcq)->cur->sl;
}

/* RoCE has no LIDs, and the device no vendor errors. */
static uint32_t read_zero32(struct ibv_cq_ex *ibcq)
{
	(void)ibcq;
	return 0;
}

static uint8_t read_zero8(struct ibv_cq_ex *ibcq)
{
	(void)ibcq;
	return 0;
}

void rn_cq_init_poll_ops(struct rn_cq *cq)
{
	struct ibv_cq_ex *c = &cq->ibv_cq;

	c->start_poll = start_poll;
	c->next_poll = next_poll;
	c->end_poll = end_poll;
	c->read_opcode = read_opcode;
	c->read_vendor_err = read_zero32;
	c->read_byte_len = read_byte_len;
	c->read_imm_data = read_imm_data;
	c->read_qp_num = read_qp_num;
	c->read_src_qp = read_src_qp;
	c->read_wc_flags = read_wc_flags;
	c->read_slid = read_zero32;
	c->read_sl = read_sl;
	c->read_dlid_path_bits = read_zero8;
}
