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

#include <infiniband/ringnicdv.h>

#include "kernel-abi/ringnic-ring.h"
#include "ringnic.h"

#define RN_SEND_FLAGS                                                          \
	(IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_FENCE |              \
	 IBV_SEND_INLINE | RINGNICDV_SEND_DEFER)

/* The largest send WQE: header plus the largest payload. */
#define RN_WQE_BUF (RN_SEND_HDR_SIZE + RN_MAX_INLINE)

/* The context the QP belongs to. */
static struct rn_context *qp_ctx(struct rn_qp *qp)
{
	return to_rn_ctx(qp->vqp.qp.context);
}

/* The state the device holds; ERR may have been set by the device. */
static enum ibv_qp_state qp_state(const struct rn_qp *qp)
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
	struct rn_context *ctx = qp_ctx(qp);

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
static void post_done(struct rn_qp *qp, bool ring)
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

uint32_t rn_sq_free_slots(const struct rn_qp *qp)
{
	uint64_t cons = __atomic_load_n(&qp->ctrl->sq_cons, __ATOMIC_ACQUIRE);
	uint64_t prod = __atomic_load_n(&qp->sq_prod, __ATOMIC_RELAXED);

	return qp->sq_slots - ((prod - cons) & RN_DB_SEQ_MASK);
}

/* ---- send WQEs ------------------------------------------------------------ */

static int wqe_opcode(enum ibv_wr_opcode op, uint8_t *out)
{
	switch (op) {
	case IBV_WR_SEND:
		*out = RN_OP_SEND;
		return 0;
	case IBV_WR_SEND_WITH_IMM:
		*out = RN_OP_SEND_IMM;
		return 0;
	case IBV_WR_RDMA_WRITE:
		*out = RN_OP_WRITE;
		return 0;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		*out = RN_OP_WRITE_IMM;
		return 0;
	case IBV_WR_RDMA_READ:
		*out = RN_OP_READ;
		return 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		*out = RN_OP_CMP_SWAP;
		return 0;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		*out = RN_OP_FETCH_ADD;
		return 0;
	default:
		return EINVAL;
	}
}

static uint8_t wqe_flags(unsigned int send_flags)
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

/*
 * Check a finished header against the QP; its payload (nsge SGEs or
 * inline_len bytes) follows it in buf.  Returns the WQE's size in slots, or
 * a negative errno.
 */
static int wqe_check(const struct rn_qp *qp, const struct rn_send_wqe *hdr,
		     const struct ibv_sge *sge)
{
	if (hdr->flags & RN_WQE_INLINE) {
		if (hdr->opcode != RN_OP_SEND && hdr->opcode != RN_OP_SEND_IMM &&
		    hdr->opcode != RN_OP_WRITE && hdr->opcode != RN_OP_WRITE_IMM)
			return -EINVAL;
		if (hdr->inline_len > qp->cap.max_inline_data)
			return -EINVAL;
		return RN_SEND_WQE_SLOTS(hdr->inline_len);
	}
	if (hdr->num_sge > qp->cap.max_send_sge)
		return -EINVAL;
	/* An atomic returns 8 bytes into exactly one local buffer. */
	if (is_atomic(hdr->opcode) &&
	    (hdr->num_sge != 1 || sge[0].length != sizeof(uint64_t)))
		return -EINVAL;
	return RN_SEND_WQE_SLOTS(hdr->num_sge * sizeof(struct rn_sge));
}

/* Payload from an SGE list: either the SGEs or the bytes they point to. */
static int fill_payload(struct rn_send_wqe *hdr, uint8_t *payload,
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

/* Copy a checked WQE (header + payload in buf) into the ring. */
static void wqe_write(struct rn_qp *qp, uint8_t *buf, unsigned int nslots)
{
	struct rn_send_wqe *hdr = (struct rn_send_wqe *)buf;
	uint64_t payload = hdr->flags & RN_WQE_INLINE ?
				   hdr->inline_len :
				   hdr->num_sge * sizeof(struct rn_sge);

	hdr->nslots = nslots;
	rn_ring_write(qp->sq, qp->sq_slots, qp->sq_prod, buf,
		      RN_SEND_HDR_SIZE + payload);
	__atomic_store_n(&qp->sq_prod, (qp->sq_prod + nslots) & RN_DB_SEQ_MASK,
			 __ATOMIC_RELAXED);
}

/* Build the WQE for one ibv_send_wr in buf; returns slots or -errno. */
static int build_send(struct rn_qp *qp, const struct ibv_send_wr *wr,
		      uint8_t *buf)
{
	struct rn_send_wqe *hdr = (struct rn_send_wqe *)buf;
	int ret;

	memset(hdr, 0, RN_SEND_HDR_SIZE);
	if (wr->send_flags & ~RN_SEND_FLAGS || wqe_opcode(wr->opcode, &hdr->opcode))
		return -EINVAL;
	hdr->wr_id = wr->wr_id;
	hdr->flags = wqe_flags(wr->send_flags);
	switch (hdr->opcode) {
	case RN_OP_SEND_IMM:
		hdr->imm_data = wr->imm_data;
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
	}
	ret = fill_payload(hdr, buf + RN_SEND_HDR_SIZE, wr->sg_list, wr->num_sge);
	if (ret)
		return -ret;
	return wqe_check(qp, hdr, wr->sg_list);
}

/* Posting is allowed in RTS and SQD, and in ERR (where WRs are flushed). */
static bool sq_open(enum ibv_qp_state s)
{
	return s == IBV_QPS_RTS || s == IBV_QPS_SQD || s == IBV_QPS_ERR;
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
	uint32_t free_slots;
	int ret = 0;

	pthread_spin_lock(&qp->sq_lock);
	if (rn_dead(qp_ctx(qp))) {
		ret = ENODEV;
		goto out;
	}
	if (!sq_open(qp_state(qp))) {
		ret = EINVAL;
		post_done(qp, true);
		goto out;
	}
	free_slots = rn_sq_free_slots(qp);
	for (; wr; wr = wr->next) {
		int nslots = build_send(qp, wr, buf);

		if (nslots < 0) {
			ret = -nslots;
			break;
		}
		if ((uint32_t)nslots > free_slots) {
			free_slots = rn_sq_free_slots(qp);
			if ((uint32_t)nslots > free_slots) {
				ret = ENOMEM;
				break;
			}
		}
		wqe_write(qp, buf, nslots);
		free_slots -= nslots;
		if (!(wr->send_flags & RINGNICDV_SEND_DEFER))
			ring = true;
	}
	post_done(qp, ring || ret);
out:
	pthread_spin_unlock(&qp->sq_lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

/* ---- receive WQEs ----------------------------------------------------------- */

int rn_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad_wr)
{
	struct rn_qp *qp = to_rn_qp(ibqp);
	uint8_t buf[RN_RECV_HDR_SIZE + RN_MAX_SGE * sizeof(struct rn_sge)]
		__attribute__((aligned(8)));
	struct rn_recv_wqe *hdr = (struct rn_recv_wqe *)buf;
	struct rn_sge *sge = (struct rn_sge *)(buf + RN_RECV_HDR_SIZE);
	enum ibv_qp_state state = qp_state(qp);
	uint32_t start, cons;
	int ret = 0, i;

	pthread_spin_lock(&qp->rq_lock);
	start = qp->rq_prod;
	if (rn_dead(qp_ctx(qp))) {
		ret = ENODEV;
		goto out;
	}
	if (state == IBV_QPS_RESET) {
		ret = EINVAL;
		goto out;
	}
	cons = __atomic_load_n(&qp->ctrl->rq_cons, __ATOMIC_ACQUIRE);
	for (; wr; wr = wr->next) {
		uint32_t nslots;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_recv_sge) {
			ret = EINVAL;
			break;
		}
		nslots = RN_RECV_WQE_SLOTS(wr->num_sge);
		if (qp->rq_prod - cons + nslots > qp->rq_slots) {
			cons = __atomic_load_n(&qp->ctrl->rq_cons, __ATOMIC_ACQUIRE);
			if (qp->rq_prod - cons + nslots > qp->rq_slots) {
				ret = ENOMEM;
				break;
			}
		}
		memset(hdr, 0, RN_RECV_HDR_SIZE);
		hdr->wr_id = wr->wr_id;
		hdr->num_sge = wr->num_sge;
		hdr->nslots = nslots;
		for (i = 0; i < wr->num_sge; i++)
			sge[i] = (struct rn_sge){ wr->sg_list[i].addr,
						  wr->sg_list[i].length,
						  wr->sg_list[i].lkey };
		rn_ring_write(qp->rq, qp->rq_slots, qp->rq_prod, buf,
			      RN_RECV_HDR_SIZE + wr->num_sge * sizeof(*sge));
		qp->rq_prod += nslots;
	}
	if (qp->rq_prod != start) {
		/* Release: the WQEs are in the ring before the counter says so.
		 * The device looks at the RQ when a message arrives; only a QP
		 * in ERR needs telling, to flush the new WQEs.  The state is read
		 * after the store (seq_cst fence, paired with the device's in
		 * rn_qp_to_error): read before, a QP that entered ERR meanwhile
		 * would flush without these WQEs and never hear of them.
		 */
		__atomic_store_n(&qp->ctrl->rq_prod, qp->rq_prod, __ATOMIC_RELEASE);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (qp_state(qp) == IBV_QPS_ERR)
			rn_ring(qp_ctx(qp), &qp_ctx(qp)->dev_page->qp, qp->handle);
	}
out:
	pthread_spin_unlock(&qp->rq_lock);
	if (ret)
		*bad_wr = wr;
	return ret;
}

/* ---- the ibv_wr_* API ----------------------------------------------------------- */

/*
 * Each opcode call starts a WQE header in qp->wr; the following data call
 * (set_sge, set_sge_list, set_inline_data[_list]) completes it and writes it
 * into the ring.  Nothing is visible to the device before ibv_wr_complete,
 * which rings once for the whole batch (unless all of it is deferred); on
 * any error it rolls the batch back, rings for what was deferred before
 * it, and returns the error.  ibv_wr_abort rolls back and returns.
 */

static void wr_fail(struct rn_qp *qp, int err)
{
	if (!qp->wr.err)
		qp->wr.err = err;
}

static void wr_begin(struct ibv_qp_ex *qpx, uint8_t opcode)
{
	struct rn_qp *qp = to_rn_qp_ex(qpx);
	struct rn_send_wqe *hdr = &qp->wr.hdr;

	if (qp->wr.open)
		wr_fail(qp, EINVAL); /* the previous WR got no data */
	if (qpx->wr_flags & ~RN_SEND_FLAGS)
		wr_fail(qp, EINVAL);
	memset(hdr, 0, sizeof(*hdr));
	hdr->wr_id = qpx->wr_id;
	hdr->opcode = opcode;
	hdr->flags = wqe_flags(qpx->wr_flags);
	qp->wr.open = true;
	qp->wr.deferred = qpx->wr_flags & RINGNICDV_SEND_DEFER;
}

static void wr_send(struct ibv_qp_ex *qpx)
{
	wr_begin(qpx, RN_OP_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	wr_begin(qpx, RN_OP_SEND_IMM);
	to_rn_qp_ex(qpx)->wr.hdr.imm_data = imm;
}

static void wr_rdma(struct ibv_qp_ex *qpx, uint8_t op, uint32_t rkey,
		    uint64_t addr)
{
	struct rn_send_wqe *hdr = &to_rn_qp_ex(qpx)->wr.hdr;

	wr_begin(qpx, op);
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
	to_rn_qp_ex(qpx)->wr.hdr.imm_data = imm;
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey, uint64_t addr)
{
	wr_rdma(qpx, RN_OP_READ, rkey, addr);
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t addr, uint64_t compare, uint64_t swap)
{
	struct rn_send_wqe *hdr = &to_rn_qp_ex(qpx)->wr.hdr;

	wr_rdma(qpx, RN_OP_CMP_SWAP, rkey, addr);
	hdr->compare_add = compare;
	hdr->swap = swap;
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t addr, uint64_t add)
{
	wr_rdma(qpx, RN_OP_FETCH_ADD, rkey, addr);
	to_rn_qp_ex(qpx)->wr.hdr.compare_add = add;
}

/* The data call: complete the open WQE from an SGE list and write it. */
static void wr_finish(struct rn_qp *qp, const struct ibv_sge *sge, int num_sge,
		      bool inline_data)
{
	uint8_t buf[RN_WQE_BUF] __attribute__((aligned(8)));
	struct rn_send_wqe *hdr = (struct rn_send_wqe *)buf;
	int nslots;

	if (!qp->wr.open) {
		wr_fail(qp, EINVAL);
		return;
	}
	qp->wr.open = false;
	if (qp->wr.err)
		return;
	memcpy(hdr, &qp->wr.hdr, RN_SEND_HDR_SIZE);
	if (inline_data)
		hdr->flags |= RN_WQE_INLINE;
	if (fill_payload(hdr, buf + RN_SEND_HDR_SIZE, sge, num_sge)) {
		wr_fail(qp, EINVAL);
		return;
	}
	nslots = wqe_check(qp, hdr, sge);
	if (nslots < 0) {
		wr_fail(qp, -nslots);
		return;
	}
	if ((uint32_t)nslots > rn_sq_free_slots(qp)) {
		wr_fail(qp, ENOMEM);
		return;
	}
	wqe_write(qp, buf, nslots);
	if (!qp->wr.deferred)
		qp->wr.ring = true;
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
		       uint32_t length)
{
	struct ibv_sge sge = { addr, length, lkey };

	wr_finish(to_rn_qp_ex(qpx), &sge, 1, false);
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num_sge,
			    const struct ibv_sge *sg_list)
{
	wr_finish(to_rn_qp_ex(qpx), sg_list,
		  num_sge > RN_MAX_SGE ? -1 : (int)num_sge, false);
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr, size_t length)
{
	struct ibv_sge sge = { (uintptr_t)addr, (uint32_t)length, 0 };

	wr_finish(to_rn_qp_ex(qpx), &sge, length > RN_MAX_INLINE ? -1 : 1, true);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num_buf,
				    const struct ibv_data_buf *buf_list)
{
	struct ibv_sge sge[RN_MAX_SGE];
	size_t i;

	if (num_buf > RN_MAX_SGE) {
		wr_finish(to_rn_qp_ex(qpx), NULL, -1, true);
		return;
	}
	for (i = 0; i < num_buf; i++)
		sge[i] = (struct ibv_sge){ (uintptr_t)buf_list[i].addr,
					   (uint32_t)buf_list[i].length, 0 };
	wr_finish(to_rn_qp_ex(qpx), sge, (int)num_buf, true);
}

static void wr_start(struct ibv_qp_ex *qpx)
{
	struct rn_qp *qp = to_rn_qp_ex(qpx);

	pthread_spin_lock(&qp->sq_lock);
	qp->wr.start_prod = qp->sq_prod;
	qp->wr.open = false;
	qp->wr.ring = false;
	if (rn_dead(qp_ctx(qp)))
		qp->wr.err = ENODEV;
	else
		qp->wr.err = sq_open(qp_state(qp)) ? 0 : EINVAL;
}

static int wr_complete(struct ibv_qp_ex *qpx)
{
	struct rn_qp *qp = to_rn_qp_ex(qpx);
	int ret;

	if (qp->wr.open)
		wr_fail(qp, EINVAL);
	ret = qp->wr.err;
	if (ret)
		qp->sq_prod = qp->wr.start_prod;
	if (ret != ENODEV)
		post_done(qp, qp->wr.ring || ret);
	pthread_spin_unlock(&qp->sq_lock);
	return ret;
}

static void wr_abort(struct ibv_qp_ex *qpx)
{
	struct rn_qp *qp = to_rn_qp_ex(qpx);

	qp->sq_prod = qp->wr.start_prod;
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
	qpx->wr_rdma_write = wr_rdma_write;
	qpx->wr_rdma_write_imm = wr_rdma_write_imm;
	qpx->wr_rdma_read = wr_rdma_read;
	qpx->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	qpx->wr_atomic_fetch_add = wr_atomic_fetch_add;
	qpx->wr_set_sge = wr_set_sge;
	qpx->wr_set_sge_list = wr_set_sge_list;
	qpx->wr_set_inline_data = wr_set_inline_data;
	qpx->wr_set_inline_data_list = wr_set_inline_data_list;
}
