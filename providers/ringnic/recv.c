// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Posting receive WQEs: ibv_post_recv into a QP's own receive queue,
 * ibv_post_srq_recv into an SRQ.  Either queue takes exactly max_wr WRs
 * (the ring has room for that many of the largest); the device finds new
 * WQEs when a message needs one, so posting rings no doorbell, except on a
 * QP in ERR, whose new WQEs must be flushed.
 */
#include <errno.h>

#include "post.h"

void rn_recv_ring_init(struct rn_recv_ring *rq, uint8_t *ring, uint32_t slots,
		       uint32_t max_wr, uint32_t max_sge, uint32_t *prod,
		       const uint32_t *wr_cons)
{
	rq->ring = ring;
	rq->slots = slots;
	rq->max_wr = max_wr;
	rq->max_sge = max_sge;
	rq->shared_prod = prod;
	rq->shared_wr_cons = wr_cons;
}

/*
 * Write the WRs of the list into the ring until one fails (*bad_wr).
 * Caller holds rq->lock.  Returns 0 or the errno of the WR that failed;
 * the WRs before it are written and published.
 */
static int recv_write(struct rn_recv_ring *rq, struct ibv_recv_wr *wr,
		      struct ibv_recv_wr **bad_wr)
{
	uint8_t buf[RN_RECV_HDR_SIZE + RN_MAX_SGE * sizeof(struct rn_sge)]
		__attribute__((aligned(8)));
	struct rn_recv_wqe *hdr = (struct rn_recv_wqe *)buf;
	struct rn_sge *sge = (struct rn_sge *)(buf + RN_RECV_HDR_SIZE);
	uint32_t start = rq->prod, wr_cons;
	int ret = 0, i;

	wr_cons = __atomic_load_n(rq->shared_wr_cons, __ATOMIC_ACQUIRE);
	for (; wr; wr = wr->next) {
		uint32_t nslots;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge) {
			ret = EINVAL;
			break;
		}
		if (rq->wr_prod - wr_cons >= rq->max_wr) {
			wr_cons = __atomic_load_n(rq->shared_wr_cons,
						  __ATOMIC_ACQUIRE);
			if (rq->wr_prod - wr_cons >= rq->max_wr) {
				ret = ENOMEM;
				break;
			}
		}
		nslots = RN_RECV_WQE_SLOTS(wr->num_sge);
		memset(hdr, 0, RN_RECV_HDR_SIZE);
		hdr->wr_id = wr->wr_id;
		hdr->num_sge = wr->num_sge;
		hdr->nslots = nslots;
		for (i = 0; i < wr->num_sge; i++)
			sge[i] = (struct rn_sge){ wr->sg_list[i].addr,
						  wr->sg_list[i].length,
						  wr->sg_list[i].lkey };
		rn_ring_write(rq->ring, rq->slots, rq->prod, buf,
			      RN_RECV_HDR_SIZE + wr->num_sge * sizeof(*sge));
		rq->prod += nslots;
		rq->wr_prod++;
	}
	if (ret)
		*bad_wr = wr;
	if (rq->prod != start)
		/* Release: the WQEs are in the ring before the counter says so. */
		__atomic_store_n(rq->shared_prod, rq->prod, __ATOMIC_RELEASE);
	return ret;
}

int rn_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad_wr)
{
	struct rn_qp *qp = to_rn_qp(ibqp);
	struct rn_recv_ring *rq = &qp->rq;
	uint32_t start;
	int ret;

	/* A QP on an SRQ, or without receives, has no queue to post to. */
	if (!rq->slots) {
		*bad_wr = wr;
		return EINVAL;
	}
	pthread_spin_lock(&rq->lock);
	start = rq->prod;
	if (rn_dead(rn_qp_ctx(qp))) {
		ret = ENODEV;
		*bad_wr = wr;
	} else if (rn_qp_state(qp) == IBV_QPS_RESET) {
		ret = EINVAL;
		*bad_wr = wr;
	} else {
		ret = recv_write(rq, wr, bad_wr);
	}
	/*
	 * The device looks at the RQ when a message arrives; only a QP in ERR
	 * needs telling, to flush the new WQEs.  The state is read after the
	 * store of the producer (seq_cst fence, paired with the device's in
	 * rn_qp_to_error): read before, a QP that entered ERR meanwhile would
	 * flush without these WQEs and never hear of them.
	 */
	if (rq->prod != start) {
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (rn_qp_state(qp) == IBV_QPS_ERR)
			rn_ring(rn_qp_ctx(qp), &rn_qp_ctx(qp)->dev_page->qp,
				qp->handle);
	}
	pthread_spin_unlock(&rq->lock);
	return ret;
}

int rn_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr)
{
	struct rn_srq *srq = to_rn_srq(ibsrq);
	int ret;

	pthread_spin_lock(&srq->rq.lock);
	if (rn_dead(to_rn_ctx(ibsrq->context))) {
		ret = ENODEV;
		*bad_wr = wr;
	} else {
		ret = recv_write(&srq->rq, wr, bad_wr);
		/* The device reads it to tell when the SRQ falls below its limit. */
		__atomic_store_n(&srq->ctrl->wr_prod, srq->rq.wr_prod,
				 __ATOMIC_RELEASE);
	}
	pthread_spin_unlock(&srq->rq.lock);
	return ret;
}
