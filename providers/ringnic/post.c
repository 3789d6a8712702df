// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Posting work: WQEs are written into the shared rings and announced with
 * one doorbell per call (ibv_post_send, ibv_post_recv, ibv_wr_complete).
 * A WR is checked completely before any of it is written, so a WR that
 * fails leaves nothing behind, and the WRs before it are posted.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "post.h"

/* The context the QP belongs to. */
struct rn_context *rn_qp_ctx(struct rn_qp *qp)
{
	return to_rn_ctx(qp->vqp.qp.context);
}

/* The state the device holds; ERR may have been set by the device. */
enum ibv_qp_state rn_qp_state(const struct rn_qp *qp)
{
	return __atomic_load_n(&qp->ctrl->state, __ATOMIC_ACQUIRE);
}

/* Ring a doorbell; returns true if the device slept and had to be woken. */
bool rn_ring(struct rn_context *ctx, struct rn_doorbells *db, uint32_t index)
{
	static const uint64_t one = 1;

	/* seq_cst: the pending bits must be visible before we read asleep
	 * (the device sets asleep, then reads the bits: see ringnic-devpage.h).
	 */
	__atomic_fetch_or(&db->pending[index / 64], 1ull << (index % 64),
			  __ATOMIC_SEQ_CST);
	__atomic_fetch_or(&db->summary, 1ull << (index / 64), __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&ctx->dev_page->asleep, __ATOMIC_SEQ_CST))
		return false;
	if (write(ctx->wake_fd, &one, sizeof(one)) < 0)
		rn_dbg(ctx, "wake-up failed: %m\n");
	return true;
}

/* Hand everything written to the device: one doorbell record. sq_lock held. */
static void ring_sq(struct rn_qp *qp)
{
	struct rn_context *ctx = rn_qp_ctx(qp);

	/* Release: the WQEs are in the ring before the doorbell names them. */
	__atomic_store_n(&qp->ctrl->sq_db, RN_DB_RECORD(qp->handle, qp->sq_prod),
			 __ATOMIC_RELEASE);
	qp->sq_rung = qp->sq_prod;
	/* Atomic: ringnicdv_query_qp_counters reads them without the lock. */
	__atomic_fetch_add(&qp->doorbells, 1, __ATOMIC_RELAXED);
	if (rn_ring(ctx, &ctx->dev_page->qp, qp->handle))
		__atomic_fetch_add(&qp->wakeups, 1, __ATOMIC_RELAXED);
}

/*
 * WRs were written but deliberately not rung (RINGNICDV_SEND_DEFER): polling
 * or arming the send CQ will ring for them if nothing else does first.
 */
static void leave_deferred(struct rn_qp *qp)
{
	struct rn_cq *cq = to_rn_cq(qp->vqp.qp.send_cq);

	__atomic_store_n(&cq->deferred, 1, __ATOMIC_RELEASE);
}

/* The end of a posting call: ring, unless all it wrote was deferred. */
void rn_post_done(struct rn_qp *qp, bool ring)
{
	if (qp->sq_prod == qp->sq_rung)
		return;
	if (ring)
		ring_sq(qp);
	else
		leave_deferred(qp);
}

void rn_qp_flush_deferred(struct rn_qp *qp)
{
	pthread_spin_lock(&qp->sq_lock);
	if (qp->sq_prod != qp->sq_rung)
		ring_sq(qp);
	pthread_spin_unlock(&qp->sq_lock);
}

/* Polling or arming a CQ: its QPs' deferred WRs go to the device now. */
void rn_cq_flush_deferred(struct rn_cq *cq)
{
	struct rn_qp *qp;

	if (!__atomic_load_n(&cq->deferred, __ATOMIC_ACQUIRE) ||
	    !__atomic_exchange_n(&cq->deferred, 0, __ATOMIC_ACQ_REL))
		return;
	pthread_mutex_lock(&cq->send_qps_lock);
	for (qp = cq->send_qps; qp; qp = qp->next_send_qp)
		rn_qp_flush_deferred(qp);
	pthread_mutex_unlock(&cq->send_qps_lock);
}

/*
 * Room for one more WQE of nslots slots.  A send queue takes exactly
 * max_send_wr WRs, whatever their size (the ring has room for that many of
 * the largest), so the WR count is what refuses; the slots are checked too,
 * not to trust the device's counters blindly.
 */
bool rn_sq_has_room(const struct rn_qp *qp, uint32_t nslots)
{
	uint32_t wr_cons = __atomic_load_n(&qp->ctrl->sq_wr_cons, __ATOMIC_ACQUIRE);

	return qp->sq_wr_prod - wr_cons < qp->cap.max_send_wr &&
	       nslots <= rn_sq_free_slots(qp);
}

uint32_t rn_sq_free_slots(const struct rn_qp *qp)
{
	uint64_t cons = __atomic_load_n(&qp->ctrl->sq_cons, __ATOMIC_ACQUIRE);
	uint64_t prod = __atomic_load_n(&qp->sq_prod, __ATOMIC_RELAXED);

	return qp->sq_slots - ((prod - cons) & RN_DB_SEQ_MASK);
}

/* ---- send WQEs ------------------------------------------------------------ */

static int wqe_opcode(enum ibv_wr_opcode op, uint8_t *out)
{
	static const uint8_t map[] = {
		[IBV_WR_SEND] = RN_OP_SEND,
		[IBV_WR_SEND_WITH_IMM] = RN_OP_SEND_IMM,
		[IBV_WR_RDMA_WRITE] = RN_OP_WRITE,
		[IBV_WR_RDMA_WRITE_WITH_IMM] = RN_OP_WRITE_IMM,
		[IBV_WR_RDMA_READ] = RN_OP_READ,
		[IBV_WR_ATOMIC_CMP_AND_SWP] = RN_OP_CMP_SWAP,
		[IBV_WR_ATOMIC_FETCH_AND_ADD] = RN_OP_FETCH_ADD,
		[IBV_WR_SEND_WITH_INV] = RN_OP_SEND_INV,
		[IBV_WR_LOCAL_INV] = RN_OP_LOCAL_INV,
		[IBV_WR_BIND_MW] = RN_OP_BIND_MW,
	};

	if ((unsigned int)op >= sizeof(map) || !map[op])
		return EINVAL;
	*out = map[op];
	return 0;
}

/*
 * What each QP type may post (the IB spec's): UC has no READ, atomics or
 * SEND_WITH_INV, UD only SENDs; an XRC_RECV QP has no send queue.
 */
bool rn_op_allowed(const struct rn_qp *qp, uint8_t op)
{
	switch (qp->vqp.qp.qp_type) {
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

uint8_t rn_wqe_flags(unsigned int send_flags)
{
	return (send_flags & IBV_SEND_SIGNALED ? RN_WQE_SIGNALED : 0) |
	       (send_flags & IBV_SEND_SOLICITED ? RN_WQE_SOLICITED : 0) |
	       (send_flags & IBV_SEND_FENCE ? RN_WQE_FENCE : 0) |
	       (send_flags & IBV_SEND_INLINE ? RN_WQE_INLINE : 0);
}

static bool is_atomic(uint8_t op)
{
	return op == RN_OP_CMP_SWAP || op == RN_OP_FETCH_ADD;
}

/* Operations on the device's own state carry no data. */
static bool has_data(uint8_t op)
{
	return op != RN_OP_LOCAL_INV && op != RN_OP_BIND_MW;
}

static uint32_t dest_size(const struct rn_qp *qp)
{
	return qp->has_dest ? sizeof(struct rn_wqe_dest) : 0;
}

/* Where the payload of a WQE being built in buf goes. */
uint8_t *rn_wqe_payload(const struct rn_qp *qp, uint8_t *buf)
{
	return buf + RN_SEND_HDR_SIZE + dest_size(qp);
}

/*
 * Check a finished WQE in buf (header, destination, payload: nsge SGEs or
 * inline_len bytes) against the QP.  Returns its size in slots, or a
 * negative errno.
 */
int rn_wqe_check(const struct rn_qp *qp, const uint8_t *buf,
		 const struct ibv_sge *sge)
{
	const struct rn_send_wqe *hdr = (const void *)buf;

	if (!rn_op_allowed(qp, hdr->opcode))
		return -EINVAL;
	if (hdr->flags & RN_WQE_INLINE) {
		if (hdr->opcode != RN_OP_SEND && hdr->opcode != RN_OP_SEND_IMM &&
		    hdr->opcode != RN_OP_WRITE && hdr->opcode != RN_OP_WRITE_IMM &&
		    hdr->opcode != RN_OP_SEND_INV)
			return -EINVAL;
		if (hdr->inline_len > qp->cap.max_inline_data)
			return -EINVAL;
		return RN_SEND_WQE_SLOTS(dest_size(qp) + hdr->inline_len);
	}
	if (hdr->num_sge > qp->cap.max_send_sge ||
	    (hdr->num_sge && !has_data(hdr->opcode)))
		return -EINVAL;
	/* An atomic returns 8 bytes into exactly one local buffer. */
	if (is_atomic(hdr->opcode) &&
	    (hdr->num_sge != 1 || sge[0].length != sizeof(uint64_t)))
		return -EINVAL;
	return RN_SEND_WQE_SLOTS(dest_size(qp) +
				 hdr->num_sge * sizeof(struct rn_sge));
}

/* Payload from an SGE list: either the SGEs or the bytes they point to. */
int rn_fill_payload(struct rn_send_wqe *hdr, uint8_t *payload,
		    const struct ibv_sge *sge, int num_sge)
{
	uint64_t len = 0;
	int i;

	if (num_sge < 0)
		return EINVAL;
	if (!(hdr->flags & RN_WQE_INLINE)) {
		struct rn_sge *out = (struct rn_sge *)payload;

		if (num_sge > RN_MAX_SGE)
			return EINVAL;
		for (i = 0; i < num_sge; i++)
			out[i] = (struct rn_sge){ sge[i].addr, sge[i].length,
						  sge[i].lkey };
		hdr->num_sge = num_sge;
		return 0;
	}
	for (i = 0; i < num_sge; i++) {
		if (len + sge[i].length > RN_MAX_INLINE)
			return EINVAL;
		memcpy(payload + len, (void *)(uintptr_t)sge[i].addr, sge[i].length);
		len += sge[i].length;
	}
	hdr->inline_len = len;
	return 0;
}

/* Copy a checked WQE (header, destination, payload in buf) into the ring. */
void rn_wqe_write(struct rn_qp *qp, uint8_t *buf, unsigned int nslots)
{
	struct rn_send_wqe *hdr = (struct rn_send_wqe *)buf;
	uint64_t payload = hdr->flags & RN_WQE_INLINE ?
				   hdr->inline_len :
				   hdr->num_sge * sizeof(struct rn_sge);

	hdr->nslots = nslots;
	rn_ring_write(qp->sq, qp->sq_slots, qp->sq_prod, buf,
		      RN_SEND_HDR_SIZE + dest_size(qp) + payload);
	__atomic_store_n(&qp->sq_prod, (qp->sq_prod + nslots) & RN_DB_SEQ_MASK,
			 __ATOMIC_RELAXED);
	qp->sq_wr_prod++;
}

/* BIND_MW: the window (by the index its key has), the MR, the range, rights. */
void rn_wqe_set_bind(struct rn_send_wqe *hdr, uint32_t new_rkey,
		     const struct ibv_mw_bind_info *info)
{
	hdr->rkey = new_rkey;
	hdr->remote_addr = info->addr;
	hdr->bind.length = info->length;
	hdr->bind.lkey = info->mr ? info->mr->lkey : 0;
	hdr->bind.access = info->mw_access_flags;
}

/* Build the WQE for one ibv_send_wr in buf; returns slots or -errno. */
static int build_send(struct rn_qp *qp, const struct ibv_send_wr *wr,
		      uint8_t *buf)
{
	struct rn_send_wqe *hdr = (struct rn_send_wqe *)buf;
	struct rn_wqe_dest *dest = (struct rn_wqe_dest *)(buf + RN_SEND_HDR_SIZE);
	int ret;

	memset(hdr, 0, RN_SEND_HDR_SIZE);
	if (wr->send_flags & ~RN_SEND_FLAGS || wqe_opcode(wr->opcode, &hdr->opcode))
		return -EINVAL;
	hdr->wr_id = wr->wr_id;
	hdr->flags = rn_wqe_flags(wr->send_flags);
	switch (hdr->opcode) {
	case RN_OP_SEND_IMM:
		hdr->imm_data = wr->imm_data;
		break;
	case RN_OP_SEND_INV:
	case RN_OP_LOCAL_INV:
		hdr->invalidate_rkey = wr->invalidate_rkey;
		break;
	case RN_OP_WRITE_IMM:
		hdr->imm_data = wr->imm_data;
		/* fall through */
	case RN_OP_WRITE:
	case RN_OP_READ:
		hdr->remote_addr = wr->wr.rdma.remote_addr;
		hdr->rkey = wr->wr.rdma.rkey;
		break;
	case RN_OP_CMP_SWAP:
	case RN_OP_FETCH_ADD:
		hdr->remote_addr = wr->wr.atomic.remote_addr;
		hdr->rkey = wr->wr.atomic.rkey;
		hdr->compare_add = wr->wr.atomic.compare_add;
		hdr->swap = wr->wr.atomic.swap;
		break;
	case RN_OP_BIND_MW:
		/* ibv_bind_mw binds type 1 windows; a WR binds type 2 ones. */
		if (!wr->bind_mw.mw || wr->bind_mw.mw->type != IBV_MW_TYPE_2)
			return -EINVAL;
		rn_wqe_set_bind(hdr, wr->bind_mw.rkey, &wr->bind_mw.bind_info);
		break;
	}
	switch (qp->vqp.qp.qp_type) {
	case IBV_QPT_UD:
		if (!wr->wr.ud.ah || wr->wr.ud.ah->context != qp->vqp.qp.context)
			return -EINVAL;
		*dest = (struct rn_wqe_dest){
			.ah = to_rn_ah(wr->wr.ud.ah)->handle,
			.remote_qpn = wr->wr.ud.remote_qpn,
			.remote_qkey = wr->wr.ud.remote_qkey,
		};
		break;
	case IBV_QPT_XRC_SEND:
		*dest = (struct rn_wqe_dest){
			.remote_srqn = wr->qp_type.xrc.remote_srqn,
		};
		break;
	default:
		break;
	}
	ret = rn_fill_payload(hdr, rn_wqe_payload(qp, buf), wr->sg_list,
			      has_data(hdr->opcode) ? wr->num_sge : 0);
	if (ret)
		return -ret;
	return rn_wqe_check(qp, buf, wr->sg_list);
}

/*
 * Posting is allowed in RTS and SQD, and in ERR and SQE (where WRs are
 * flushed).
 */
bool rn_sq_open(enum ibv_qp_state s)
{
	return s == IBV_QPS_RTS || s == IBV_QPS_SQD || s == IBV_QPS_ERR ||
	       s == IBV_QPS_SQE;
}

/*
 * One doorbell for the whole list, unless every WR in it is deferred.  A
 * failure rings too: whatever was deferred before it must not wait for a
 * terminating post the application will not make.
 */
int rn_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		 struct ibv_send_wr **bad_wr)
{
	struct rn_qp *qp = to_rn_qp(ibqp);
	uint8_t buf[RN_WQE_BUF] __attribute__((aligned(8)));
	bool ring = false;
	int ret = 0;

	pthread_spin_lock(&qp->sq_lock);
	if (rn_dead(rn_qp_ctx(qp))) {
		ret = ENODEV;
		goto out;
	}
	if (!qp->sq_slots || !rn_sq_open(rn_qp_state(qp))) {
		ret = EINVAL;
		rn_post_done(qp, true);
		goto out;
	}
	for (; wr; wr = wr->next) {
		int nslots = build_send(qp, wr, buf);

		if (nslots < 0) {
			ret = -nslots;
			break;
		}
		if (!rn_sq_has_room(qp, nslots)) {
			ret = ENOMEM;
			break;
		}
		rn_wqe_write(qp, buf, nslots);
		if (!(wr->send_flags & RINGNICDV_SEND_DEFER))
			ring = true;
	}
	rn_post_done(qp, ring || ret);
out:
	pthread_spin_unlock(&qp->sq_lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

/*
 * ibv_bind_mw: a type 1 window is bound through the QP's send queue, with
 * a new key byte; the window takes its new rkey once the bind is posted.
 */
int rn_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	struct rn_qp *qp = to_rn_qp(ibqp);
	uint8_t buf[RN_WQE_BUF] __attribute__((aligned(8)));
	struct rn_send_wqe *hdr = (struct rn_send_wqe *)buf;
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	int ret = 0, nslots;

	if (bind->send_flags & ~RN_SEND_FLAGS ||
	    bind->send_flags & IBV_SEND_INLINE)
		return EINVAL;
	memset(hdr, 0, RN_SEND_HDR_SIZE);
	hdr->wr_id = bind->wr_id;
	hdr->opcode = RN_OP_BIND_MW;
	hdr->flags = rn_wqe_flags(bind->send_flags);
	rn_wqe_set_bind(hdr, rkey, &bind->bind_info);
	pthread_spin_lock(&qp->sq_lock);
	nslots = rn_wqe_check(qp, buf, NULL);
	if (rn_dead(rn_qp_ctx(qp)))
		ret = ENODEV;
	else if (!qp->sq_slots || !rn_sq_open(rn_qp_state(qp)) || nslots < 0)
		ret = EINVAL;
	else if (!rn_sq_has_room(qp, nslots))
		ret = ENOMEM;
	if (!ret) {
		rn_wqe_write(qp, buf, nslots);
		mw->rkey = rkey;
	}
	if (ret != ENODEV)
		rn_post_done(qp, !(bind->send_flags & RINGNICDV_SEND_DEFER) || ret);
	pthread_spin_unlock(&qp->sq_lock);
	return ret;
}
