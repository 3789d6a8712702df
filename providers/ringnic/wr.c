// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The ibv_wr_* API.  Each opcode call starts a WQE in qp->wr.buf; the
 * setters it needs fill the rest (the data: set_sge, set_sge_list,
 * set_inline_data[_list]; on UD the address, set_ud_addr; on XRC the SRQ,
 * set_xrc_srqn), in any order, and the last of them writes it into the
 * ring.  LOCAL_INV and BIND_MW need no setter.  Nothing is visible to the
 * device before ibv_wr_complete, which rings once for the whole batch
 * (unless all of it is deferred); on any error it rolls the batch back,
 * rings for what was deferred before it, and returns the error.
 * ibv_wr_abort rolls back and returns.
 */
#include <errno.h>
#include <string.h>

#include "post.h"

/* The setters a WQE still waits for. */
enum {
	RN_WR_NEED_DATA = 1 << 0,
	RN_WR_NEED_DEST = 1 << 1,
};

static void wr_fail(struct rn_qp *qp, int err)
{
	if (!qp->wr.err)
		qp->wr.err = err;
}

static struct rn_send_wqe *wr_hdr(struct rn_qp *qp)
{
	return (struct rn_send_wqe *)qp->wr.buf;
}

/* All its setters were called: check the WQE and write it. */
static void wr_write(struct rn_qp *qp)
{
	int nslots;

	if (qp->wr.err)
		return;
	nslots = rn_wqe_check(qp, qp->wr.buf, qp->wr.sge);
	if (nslots < 0) {
		wr_fail(qp, -nslots);
		return;
	}
	if (!rn_sq_has_room(qp, nslots)) {
		wr_fail(qp, ENOMEM);
		return;
	}
	rn_wqe_write(qp, qp->wr.buf, nslots);
	if (!qp->wr.deferred)
		qp->wr.ring = true;
}

/* A setter did its part: the WQE is written after the last one. */
static void wr_done(struct rn_qp *qp, unsigned int part)
{
	if (!(qp->wr.need & part)) {
		wr_fail(qp, EINVAL); /* no WQE waits for it */
		return;
	}
	qp->wr.need &= ~part;
	if (!qp->wr.need)
		wr_write(qp);
}

static void wr_begin(struct ibv_qp_ex *qpx, uint8_t opcode, bool data)
{
	struct rn_qp *qp = to_rn_qp_ex(qpx);
	struct rn_send_wqe *hdr = wr_hdr(qp);

	if (qp->wr.need)
		wr_fail(qp, EINVAL); /* the previous WR was not finished */
	if (qpx->wr_flags & ~RN_SEND_FLAGS)
		wr_fail(qp, EINVAL);
	memset(qp->wr.buf, 0, RN_SEND_HDR_SIZE + sizeof(struct rn_wqe_dest));
	hdr->wr_id = qpx->wr_id;
	hdr->opcode = opcode;
	hdr->flags = rn_wqe_flags(qpx->wr_flags);
	qp->wr.deferred = qpx->wr_flags & RINGNICDV_SEND_DEFER;
	qp->wr.need = (data ? RN_WR_NEED_DATA : 0) |
		      (qp->has_dest && data ? RN_WR_NEED_DEST : 0);
	qp->wr.sge[0] = (struct ibv_sge){ 0 };
}

static void wr_send(struct ibv_qp_ex *qpx)
{
	wr_begin(qpx, RN_OP_SEND, true);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	wr_begin(qpx, RN_OP_SEND_IMM, true);
	wr_hdr(to_rn_qp_ex(qpx))->imm_data = imm;
}

static void wr_send_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	wr_begin(qpx, RN_OP_SEND_INV, true);
	wr_hdr(to_rn_qp_ex(qpx))->invalidate_rkey = invalidate_rkey;
}

static void wr_rdma(struct ibv_qp_ex *qpx, uint8_t op, uint32_t rkey,
		    uint64_t addr)
{
	struct rn_send_wqe *hdr = wr_hdr(to_rn_qp_ex(qpx));

	wr_begin(qpx, op, true);
	hdr->rkey = rkey;
	hdr->remote_addr = addr;
}

static void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr)
{
	wr_rdma(qpx, RN_OP_WRITE, rkey, addr);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t addr, __be32 imm)
{
	wr_rdma(qpx, RN_OP_WRITE_IMM, rkey, addr);
	wr_hdr(to_rn_qp_ex(qpx))->imm_data = imm;
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr)
{
	wr_rdma(qpx, RN_OP_READ, rkey, addr);
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t addr, uint64_t compare, uint64_t swap)
{
	struct rn_send_wqe *hdr = wr_hdr(to_rn_qp_ex(qpx));

	wr_rdma(qpx, RN_OP_CMP_SWAP, rkey, addr);
	hdr->compare_add = compare;
	hdr->swap = swap;
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t addr, uint64_t add)
{
	wr_rdma(qpx, RN_OP_FETCH_ADD, rkey, addr);
	wr_hdr(to_rn_qp_ex(qpx))->compare_add = add;
}

/* Complete WRs of their own: written at once. */
static void wr_local_inv(struct ibv_qp_ex *qpx, uint32_t invalidate_rkey)
{
	struct rn_qp *qp = to_rn_qp_ex(qpx);

	wr_begin(qpx, RN_OP_LOCAL_INV, false);
	wr_hdr(qp)->invalidate_rkey = invalidate_rkey;
	wr_write(qp);
}

static void wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info)
{
	struct rn_qp *qp = to_rn_qp_ex(qpx);

	wr_begin(qpx, RN_OP_BIND_MW, false);
	if (!mw || mw->type != IBV_MW_TYPE_2) {
		wr_fail(qp, EINVAL);
		return;
	}
	rn_wqe_set_bind(wr_hdr(qp), rkey, info);
	wr_write(qp);
}

/* ---- setters ---------------------------------------------------------- */

/* The data: the WQE's payload from an SGE list. */
static void wr_set_data(struct rn_qp *qp, const struct ibv_sge *sge,
			int num_sge, bool inline_data)
{
	struct rn_send_wqe *hdr = wr_hdr(qp);

	if (!(qp->wr.need & RN_WR_NEED_DATA)) {
		wr_fail(qp, EINVAL);
		return;
	}
	if (inline_data)
		hdr->flags |= RN_WQE_INLINE;
	if (rn_fill_payload(hdr, rn_wqe_payload(qp, qp->wr.buf), sge, num_sge)) {
		wr_fail(qp, EINVAL);
		qp->wr.need = 0;
		return;
	}
	/* Atomics are checked against their one SGE when written. */
	if (num_sge > 0 && !inline_data)
		qp->wr.sge[0] = sge[0];
	wr_done(qp, RN_WR_NEED_DATA);
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
		       uint32_t length)
{
	struct ibv_sge sge = { addr, length, lkey };

	wr_set_data(to_rn_qp_ex(qpx), &sge, 1, false);
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
			    const struct ibv_sge *sg_list)
{
	wr_set_data(to_rn_qp_ex(qpx), sg_list,
		    num_sge > RN_MAX_SGE ? -1 : (int)num_sge, false);
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_sge sge = { (uintptr_t)addr, (uint32_t)length, 0 };

	wr_set_data(to_rn_qp_ex(qpx), &sge, length > RN_MAX_INLINE ? -1 : 1,
		    true);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
				    const struct ibv_data_buf *buf_list)
{
	struct ibv_sge sge[RN_MAX_SGE];
	size_t i;

	if (num_buf > RN_MAX_SGE) {
		wr_set_data(to_rn_qp_ex(qpx), NULL, -1, true);
		return;
	}
	for (i = 0; i < num_buf; i++)
		sge[i] = (struct ibv_sge){ (uintptr_t)buf_list[i].addr,
					   (uint32_t)buf_list[i].length, 0 };
	wr_set_data(to_rn_qp_ex(qpx), sge, (int)num_buf, true);
}

static struct rn_wqe_dest *wr_dest(struct rn_qp *qp)
{
	return (struct rn_wqe_dest *)(qp->wr.buf + RN_SEND_HDR_SIZE);
}

static void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
			   uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct rn_qp *qp = to_rn_qp_ex(qpx);

	if (qp->vqp.qp.qp_type != IBV_QPT_UD || !ah ||
	    ah->context != qp->vqp.qp.context) {
		wr_fail(qp, EINVAL);
		return;
	}
	*wr_dest(qp) = (struct rn_wqe_dest){
		.ah = to_rn_ah(ah)->handle,
		.remote_qpn = remote_qpn,
		.remote_qkey = remote_qkey,
	};
	wr_done(qp, RN_WR_NEED_DEST);
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t remote_srqn)
{
	struct rn_qp *qp = to_rn_qp_ex(qpx);

	if (qp->vqp.qp.qp_type != IBV_QPT_XRC_SEND) {
		wr_fail(qp, EINVAL);
		return;
	}
	wr_dest(qp)->remote_srqn = remote_srqn;
	wr_done(qp, RN_WR_NEED_DEST);
}

/* ---- the batch ------------------------------------------------------- */

static void wr_start(struct ibv_qp_ex *qpx)
{
	struct rn_qp *qp = to_rn_qp_ex(qpx);

	pthread_spin_lock(&qp->sq_lock);
	qp->wr.start_prod = qp->sq_prod;
	qp->wr.start_wr_prod = qp->sq_wr_prod;
	qp->wr.need = 0;
	qp->wr.ring = false;
	if (rn_dead(rn_qp_ctx(qp)))
		qp->wr.err = ENODEV;
	else
		qp->wr.err = qp->sq_slots && rn_sq_open(rn_qp_state(qp)) ?
				     0 : EINVAL;
}

static void wr_rollback(struct rn_qp *qp)
{
	qp->sq_prod = qp->wr.start_prod;
	qp->sq_wr_prod = qp->wr.start_wr_prod;
}

static int wr_complete(struct ibv_qp_ex *qpx)
{
	struct rn_qp *qp = to_rn_qp_ex(qpx);
	int ret;

	if (qp->wr.need)
		wr_fail(qp, EINVAL);
	ret = qp->wr.err;
	if (ret)
		wr_rollback(qp);
	if (ret != ENODEV)
		rn_post_done(qp, qp->wr.ring || ret);
	pthread_spin_unlock(&qp->sq_lock);
	return ret;
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
	struct rn_qp *qp = to_rn_qp_ex(qpx);

	wr_rollback(qp);
	pthread_spin_unlock(&qp->sq_lock);
}

void rn_qp_init_wr_ops(struct rn_qp *qp)
{
	struct ibv_qp_ex *qpx = &qp->vqp.qp_ex;

	qpx->wr_start = wr_start;
	qpx->wr_complete = wr_complete;
	qpx->wr_abort = wr_abort;
	qpx->wr_send = wr_send;
	qpx->wr_send_imm = wr_send_imm;
	qpx->wr_send_inv = wr_send_inv;
	qpx->wr_rdma_write = wr_rdma_write;
	qpx->wr_rdma_write_imm = wr_rdma_write_imm;
	qpx->wr_rdma_read = wr_rdma_read;
	qpx->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = wr_atomic_fetch_add;
	qpx->wr_local_inv = wr_local_inv;
	qpx->wr_bind_mw = wr_bind_mw;
	qpx->wr_set_sge = wr_set_sge;
	qpx->wr_set_sge_list = wr_set_sge_list;
	qpx->wr_set_inline_data = wr_set_inline_data;
	qpx->wr_set_inline_data_list = wr_set_inline_data_list;
	qpx->wr_set_ud_addr = wr_set_ud_addr;
	qpx->wr_set_xrc_srqn = wr_set_xrc_srqn;
}
