// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The engine: finds rung doorbells, executes send WQEs in order, moves the
 * data, writes CQEs, and runs the RNR and ACK-timeout timers.
 *
 * Both ends of a connection live in this device, so a WQE is executed as a
 * whole: the requester's and the responder's checks are made, the data is
 * copied and both completions are written in one step.  What a wire would
 * add (an unreachable or unready responder, an empty receive queue) becomes
 * the wait the IB spec prescribes: an ACK timeout or an RNR NAK timer, with
 * retry_cnt and rnr_retry counted as on hardware.  Execution in order and to
 * completion makes every WR fenced, so IBV_SEND_FENCE needs nothing more.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "memory.h"
#include "qp_rules.h"
#include "ringnicd.h"
#include "table.h"
#include "wqe.h"

/* WQEs one QP may execute before the next QP gets its turn. */
#define RN_QP_BUDGET 16

uint64_t rn_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void rn_engine_schedule(struct rn_qp *qp)
{
	if (!qp->active) {
		qp->active = true;
		rn_list_add_tail(&qp->client->dev->active, &qp->active_link);
	}
}

void rn_engine_unschedule(struct rn_qp *qp)
{
	if (qp->active) {
		qp->active = false;
		rn_list_del(&qp->active_link);
	}
}

static struct rn_mr *mr_lookup(struct rn_device *dev, uint32_t key)
{
	return rn_table_get(&dev->mr_keys, key >> 8);
}

static struct rn_wqe_limits send_limits(const struct rn_qp *qp)
{
	return (struct rn_wqe_limits){
		.max_sge = qp->cap.max_send_sge,
		.max_inline = qp->cap.max_inline_data,
		.max_slots = qp->sq_wqe_slots,
	};
}

static struct rn_wqe_limits recv_limits(const struct rn_qp *qp)
{
	return (struct rn_wqe_limits){
		.max_sge = qp->cap.max_recv_sge,
		.max_slots = qp->rq_wqe_slots,
	};
}

/* ---- completions --------------------------------------------------------- */

static enum ibv_wc_opcode send_wc_opcode(uint8_t op)
{
	switch (op) {
	case RN_OP_WRITE:
	case RN_OP_WRITE_IMM:
		return IBV_WC_RDMA_WRITE;
	case RN_OP_READ:
		return IBV_WC_RDMA_READ;
	case RN_OP_CMP_SWAP:
		return IBV_WC_COMP_SWAP;
	case RN_OP_FETCH_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_SEND;
	}
}

/*
 * Retire the WQE at sq_head, then write its CQE if it was signaled or
 * failed.  The slots are freed first: an application that polls the CQE
 * may post again at once and must find the room its completion implies.
 */
static void complete_send(struct rn_qp *qp, const struct rn_wqe *w,
			  enum ibv_wc_status status, uint32_t byte_len)
{
	qp->ctrl->wqes++;
	qp->sq_head = (qp->sq_head + w->nslots) & RN_DB_SEQ_MASK;
	__atomic_store_n(&qp->ctrl->sq_cons, qp->sq_head, __ATOMIC_RELEASE);
	if (status != IBV_WC_SUCCESS || qp->sq_sig_all ||
	    w->flags & RN_WQE_SIGNALED) {
		struct rn_cqe cqe = {
			.wr_id = w->wr_id,
			.status = status,
			.opcode = send_wc_opcode(w->opcode),
			.byte_len = byte_len,
			.qp_num = qp->qpn,
		};

		if (!rn_cq_push(qp->send_cq, &cqe, false))
			rn_qp_to_error(qp);
	}
}

static void complete_recv(struct rn_qp *qp, const struct rn_rwqe *r,
			  enum ibv_wc_status status, enum ibv_wc_opcode opcode,
			  uint32_t byte_len, const struct rn_wqe *w,
			  uint32_t src_qp)
{
	struct rn_cqe cqe = {
		.wr_id = r->wr_id,
		.status = status,
		.opcode = opcode,
		.byte_len = byte_len,
		.qp_num = qp->qpn,
		.src_qp = src_qp,
	};

	if (w && (w->opcode == RN_OP_SEND_IMM || w->opcode == RN_OP_WRITE_IMM)) {
		cqe.imm_data = w->imm_data;
		cqe.flags = RN_CQE_WITH_IMM;
	}
	qp->rq_head += r->nslots;
	__atomic_store_n(&qp->ctrl->rq_cons, qp->rq_head, __ATOMIC_RELEASE);
	if (!rn_cq_push(qp->recv_cq, &cqe, w && w->flags & RN_WQE_SOLICITED))
		rn_qp_to_error(qp);
}

/* ---- the responder's receive queue ---------------------------------------- */

enum rq_status { RQ_OK, RQ_EMPTY, RQ_BAD };

/* The receive WQE at slot counter pos (rq_head or after it). */
static enum rq_status rq_at(struct rn_qp *qp, uint32_t pos, struct rn_rwqe *r)
{
	uint32_t prod = __atomic_load_n(&qp->ctrl->rq_prod, __ATOMIC_ACQUIRE);
	uint32_t avail = prod - pos;
	struct rn_wqe_limits lim = recv_limits(qp);

	if (prod - qp->rq_head > qp->rq_slots)
		return RQ_BAD;
	if (!avail || avail > prod - qp->rq_head)
		return RQ_EMPTY;
	if (rn_recv_wqe_fetch(qp->rq, qp->rq_slots, pos, avail, &lim, r))
		return RQ_BAD;
	return RQ_OK;
}

static enum rq_status rq_next(struct rn_qp *qp, struct rn_rwqe *r)
{
	return rq_at(qp, qp->rq_head, r);
}

/* The QP fails for good: an async event, then the error state. */
static void qp_fatal(struct rn_qp *qp, enum ibv_event_type event)
{
	rn_async_event(qp->client, qp->handle, qp->user_handle, event);
	rn_qp_to_error(qp);
}

/* ---- addresses --------------------------------------------------------- */

static enum ibv_wc_status local_sgl(struct rn_qp *qp, const struct rn_sge *sge,
				    unsigned int n, uint32_t access,
				    struct rn_iovs *out)
{
	struct rn_device *dev = qp->client->dev;
	unsigned int i;

	out->pid = qp->client->pid;
	out->n = 0;
	out->len = 0;
	for (i = 0; i < n; i++) {
		struct rn_mr *mr = mr_lookup(dev, sge[i].lkey);

		if (rn_mr_check(mr, sge[i].lkey, qp->client, qp->pd, sge[i].addr,
				sge[i].length, access))
			return IBV_WC_LOC_PROT_ERR;
		rn_iovs_add(out, mr, sge[i].addr, sge[i].length);
	}
	if (out->len > RN_MAX_MSG_SZ)
		return IBV_WC_LOC_LEN_ERR;
	return IBV_WC_SUCCESS;
}

/* The responder's side of an RDMA access: QP rights, then the MR. */
static bool remote_range(struct rn_qp *dst, uint64_t addr, uint32_t rkey,
			 uint64_t len, uint32_t access, struct rn_iovs *out)
{
	struct rn_mr *mr = mr_lookup(dst->client->dev, rkey);

	out->pid = dst->client->pid;
	out->n = 0;
	out->len = 0;
	if (!(dst->attr.qp_access_flags & access))
		return false;
	if (rn_mr_check(mr, rkey, dst->client, dst->pd, addr, len, access))
		return false;
	rn_iovs_add(out, mr, addr, len);
	return true;
}

/*
 * The connected QP, if it can receive now (RTR, RTS or SQD).  The first
 * request a QP receives in RTR establishes communication (COMM_EST).
 * An RC responder takes requests only from the QP it is connected to: a
 * QP naming the QPN of one connected elsewhere reaches nothing (its
 * requests go unanswered, as on a fabric).  Otherwise anyone who learns
 * or guesses a QPN could SEND into that QP's receive queue and use the
 * keys of its PD.
 */
static struct rn_qp *peer_of(struct rn_qp *qp)
{
	struct rn_qp *dst = rn_qp_by_qpn(qp->client->dev, qp->attr.dest_qp_num);

	if (!dst || dst->attr.dest_qp_num != qp->qpn ||
	    dst->attr.qp_state < IBV_QPS_RTR ||
	    dst->attr.qp_state > IBV_QPS_SQD)
		return NULL;
	if (!dst->comm_est && dst->attr.qp_state == IBV_QPS_RTR) {
		dst->comm_est = true;
		rn_async_event(dst->client, dst->handle, dst->user_handle,
			       IBV_EVENT_COMM_EST);
	}
	return dst;
}

static void advance_psns(struct rn_qp *qp, struct rn_qp *dst, uint64_t len)
{
	uint32_t mtu = 128u << qp->attr.path_mtu;
	uint32_t packets = len ? (len + mtu - 1) / mtu : 1;

	qp->attr.sq_psn = (qp->attr.sq_psn + packets) & 0xffffff;
	dst->attr.rq_psn = (dst->attr.rq_psn + packets) & 0xffffff;
}

/* ---- execution ----------------------------------------------------------- */

enum outcome {
	DONE,
	WAIT_ACK, /* nobody answered: retry after the ACK timeout */
	WAIT_RNR, /* receiver not ready: retry after its RNR timer */
};

struct result {
	enum outcome outcome;
	enum ibv_wc_status status;
	uint32_t byte_len;
	uint64_t rnr_ns;
};

static struct result done(enum ibv_wc_status status, uint64_t byte_len)
{
	return (struct result){ .outcome = DONE, .status = status,
				.byte_len = (uint32_t)byte_len };
}

static struct result wait_ack(void)
{
	return (struct result){ .outcome = WAIT_ACK };
}

static struct result wait_rnr(struct rn_qp *dst)
{
	return (struct result){ .outcome = WAIT_RNR,
				.rnr_ns = rn_rnr_timer_ns(dst->attr.min_rnr_timer) };
}

/* The data a SEND or WRITE carries: inline bytes or a gather list. */
static enum ibv_wc_status gather(struct rn_qp *qp, const struct rn_wqe *w,
				 struct rn_iovs *src, uint64_t *len)
{
	enum ibv_wc_status st;

	if (w->flags & RN_WQE_INLINE) {
		*len = w->inline_len;
		return IBV_WC_SUCCESS;
	}
	st = local_sgl(qp, w->sge, w->num_sge, 0, src);
	*len = src->len;
	return st;
}

static enum rn_dma_status move_out(struct rn_device *dev, const struct rn_wqe *w,
				   const struct rn_iovs *src,
				   const struct rn_iovs *dst, uint64_t len)
{
	if (w->flags & RN_WQE_INLINE)
		return rn_dma_to(dst, w->inline_data, len);
	return rn_dma_copy(src, dst, len, dev->bounce, RN_BOUNCE_SIZE);
}

static struct result exec_send(struct rn_qp *qp, const struct rn_wqe *w)
{
	struct rn_device *dev = qp->client->dev;
	struct rn_iovs src, dsts;
	enum ibv_wc_status st;
	struct rn_qp *dst;
	struct rn_rwqe r;
	uint64_t len;

	st = gather(qp, w, &src, &len);
	if (st)
		return done(st, 0);
	dst = peer_of(qp);
	if (!dst)
		return wait_ack();
	switch (rq_next(dst, &r)) {
	case RQ_EMPTY:
		return wait_rnr(dst);
	case RQ_BAD:
		qp_fatal(dst, IBV_EVENT_QP_FATAL);
		return done(IBV_WC_REM_OP_ERR, 0);
	case RQ_OK:
		break;
	}
	st = local_sgl(dst, r.sge, r.num_sge, IBV_ACCESS_LOCAL_WRITE, &dsts);
	if (st || len > dsts.len) {
		st = st ? IBV_WC_LOC_PROT_ERR : IBV_WC_LOC_LEN_ERR;
		complete_recv(dst, &r, st, IBV_WC_RECV, 0, NULL, qp->qpn);
		rn_qp_to_error(dst);
		return done(st == IBV_WC_LOC_LEN_ERR ? IBV_WC_REM_INV_REQ_ERR :
						       IBV_WC_REM_OP_ERR, 0);
	}
	switch (move_out(dev, w, &src, &dsts, len)) {
	case RN_DMA_GONE:
		return wait_ack();
	case RN_DMA_SRC_FAULT:
		/* The receive WQE was not consumed: the responder never saw it. */
		return done(IBV_WC_LOC_PROT_ERR, 0);
	case RN_DMA_DST_FAULT:
		complete_recv(dst, &r, IBV_WC_LOC_PROT_ERR, IBV_WC_RECV, 0, NULL,
			      qp->qpn);
		rn_qp_to_error(dst);
		return done(IBV_WC_REM_OP_ERR, 0);
	case RN_DMA_OK:
		break;
	}
	advance_psns(qp, dst, len);
	complete_recv(dst, &r, IBV_WC_SUCCESS, IBV_WC_RECV, len, w, qp->qpn);
	return done(IBV_WC_SUCCESS, len);
}

static struct result exec_write(struct rn_qp *qp, const struct rn_wqe *w)
{
	struct rn_device *dev = qp->client->dev;
	bool with_imm = w->opcode == RN_OP_WRITE_IMM;
	struct rn_iovs src, remote;
	enum ibv_wc_status st;
	struct rn_qp *dst;
	struct rn_rwqe r;
	uint64_t len;

	st = gather(qp, w, &src, &len);
	if (st)
		return done(st, 0);
	dst = peer_of(qp);
	if (!dst)
		return wait_ack();
	if (!remote_range(dst, w->remote_addr, w->rkey, len,
			  IBV_ACCESS_REMOTE_WRITE, &remote)) {
		qp_fatal(dst, IBV_EVENT_QP_ACCESS_ERR);
		return done(IBV_WC_REM_ACCESS_ERR, 0);
	}
	/* The immediate needs a receive WQE: wait for one before writing. */
	if (with_imm) {
		switch (rq_next(dst, &r)) {
		case RQ_EMPTY:
			return wait_rnr(dst);
		case RQ_BAD:
			qp_fatal(dst, IBV_EVENT_QP_FATAL);
			return done(IBV_WC_REM_OP_ERR, 0);
		case RQ_OK:
			break;
		}
	}
	switch (move_out(dev, w, &src, &remote, len)) {
	case RN_DMA_GONE:
		return wait_ack();
	case RN_DMA_SRC_FAULT:
		return done(IBV_WC_LOC_PROT_ERR, 0);
	case RN_DMA_DST_FAULT:
		qp_fatal(dst, IBV_EVENT_QP_ACCESS_ERR);
		return done(IBV_WC_REM_ACCESS_ERR, 0);
	case RN_DMA_OK:
		break;
	}
	advance_psns(qp, dst, len);
	if (with_imm)
		complete_recv(dst, &r, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
			      len, w, qp->qpn);
	return done(IBV_WC_SUCCESS, len);
}

static struct result exec_read(struct rn_qp *qp, const struct rn_wqe *w)
{
	struct rn_device *dev = qp->client->dev;
	struct rn_iovs local, remote;
	enum ibv_wc_status st;
	struct rn_qp *dst;

	st = local_sgl(qp, w->sge, w->num_sge, IBV_ACCESS_LOCAL_WRITE, &local);
	if (st)
		return done(st, 0);
	dst = peer_of(qp);
	if (!dst)
		return wait_ack();
	if (!remote_range(dst, w->remote_addr, w->rkey, local.len,
			  IBV_ACCESS_REMOTE_READ, &remote)) {
		qp_fatal(dst, IBV_EVENT_QP_ACCESS_ERR);
		return done(IBV_WC_REM_ACCESS_ERR, 0);
	}
	switch (rn_dma_copy(&remote, &local, local.len, dev->bounce,
			    RN_BOUNCE_SIZE)) {
	case RN_DMA_GONE:
		return wait_ack();
	case RN_DMA_SRC_FAULT:
		qp_fatal(dst, IBV_EVENT_QP_ACCESS_ERR);
		return done(IBV_WC_REM_ACCESS_ERR, 0);
	case RN_DMA_DST_FAULT:
		return done(IBV_WC_LOC_PROT_ERR, 0);
	case RN_DMA_OK:
		break;
	}
	advance_psns(qp, dst, local.len);
	return done(IBV_WC_SUCCESS, local.len);
}

/*
 * Atomics are atomic with respect to every other access made by this
 * device (one thread executes them all), as IBV_ATOMIC_HCA promises; the
 * 64-bit operands are in host byte order.
 */
static struct result exec_atomic(struct rn_qp *qp, const struct rn_wqe *w)
{
	struct rn_iovs local, remote;
	enum rn_dma_status st;
	uint64_t old, new;
	struct rn_qp *dst;

	if (w->num_sge != 1 || w->sge[0].length != sizeof(uint64_t))
		return done(IBV_WC_LOC_LEN_ERR, 0);
	if (local_sgl(qp, w->sge, 1, IBV_ACCESS_LOCAL_WRITE, &local))
		return done(IBV_WC_LOC_PROT_ERR, 0);
	dst = peer_of(qp);
	if (!dst)
		return wait_ack();
	if (w->remote_addr % sizeof(uint64_t)) {
		qp_fatal(dst, IBV_EVENT_QP_REQ_ERR);
		return done(IBV_WC_REM_INV_REQ_ERR, 0);
	}
	if (!remote_range(dst, w->remote_addr, w->rkey, sizeof(uint64_t),
			  IBV_ACCESS_REMOTE_ATOMIC, &remote)) {
		qp_fatal(dst, IBV_EVENT_QP_ACCESS_ERR);
		return done(IBV_WC_REM_ACCESS_ERR, 0);
	}
	st = rn_dma_from(&remote, &old, sizeof(old));
	if (st == RN_DMA_OK) {
		if (w->opcode == RN_OP_FETCH_ADD)
			new = old + w->compare_add;
		else
			new = old == w->compare_add ? w->swap : old;
		if (new != old)
			st = rn_dma_to(&remote, &new, sizeof(new));
	}
	if (st == RN_DMA_GONE)
		return wait_ack();
	if (st) {
		qp_fatal(dst, IBV_EVENT_QP_ACCESS_ERR);
		return done(IBV_WC_REM_ACCESS_ERR, 0);
	}
	/* The responder's side is done: from here on it is not retried. */
	if (rn_dma_to(&local, &old, sizeof(old)))
		return done(IBV_WC_LOC_PROT_ERR, 0);
	advance_psns(qp, dst, sizeof(old));
	return done(IBV_WC_SUCCESS, sizeof(old));
}

static struct result execute(struct rn_qp *qp, const struct rn_wqe *w)
{
	switch (w->opcode) {
	case RN_OP_SEND:
	case RN_OP_SEND_IMM:
		return exec_send(qp, w);
	case RN_OP_WRITE:
	case RN_OP_WRITE_IMM:
		return exec_write(qp, w);
	case RN_OP_READ:
		return exec_read(qp, w);
	default:
		return exec_atomic(qp, w);
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

	if (!qp->wqe_started) {
		qp->wqe_started = true;
		qp->retry_left = qp->attr.retry_cnt;
		qp->rnr_left = qp->attr.rnr_retry;
	}
	if (res->outcome == WAIT_RNR) {
		if (qp->attr.rnr_retry != 7 && !qp->rnr_left--) {
			*fail = IBV_WC_RNR_RETRY_EXC_ERR;
			return false;
		}
		wait = res->rnr_ns;
	} else {
		if (!qp->retry_left--) {
			*fail = IBV_WC_RETRY_EXC_ERR;
			return false;
		}
		wait = rn_ack_timeout_ns(qp->attr.timeout);
	}
	qp->wait_until_ns = wait == UINT64_MAX ? UINT64_MAX : now + wait;
	return true;
}

/* The stage, holding this QP's slots (the next fetch starts from head). */
static struct rn_stage *stage_for(struct rn_qp *qp)
{
	struct rn_device *dev = qp->client->dev;

	if (dev->stage_qp != qp) {
		dev->stage_qp = qp;
		rn_stage_reset(dev->stage, qp->sq_head);
	}
	return dev->stage;
}

/* The QP's staged slots are no longer its (reset, destroyed). */
void rn_engine_forget(struct rn_qp *qp)
{
	if (qp->client->dev->stage_qp == qp)
		qp->client->dev->stage_qp = NULL;
}

/* Fetch the WQE at slot counter pos of the chain, counting the groups. */
static int fetch_at(struct rn_qp *qp, uint64_t pos, struct rn_wqe *w)
{
	struct rn_wqe_limits lim = send_limits(qp);
	struct rn_stage *st = stage_for(qp);
	uint64_t groups = st->groups;
	int ret;

	ret = rn_send_wqe_fetch(st, qp->sq, qp->sq_slots, pos, qp->sq_prod,
				&lim, w);
	qp->ctrl->groups += st->groups - groups;
	return ret;
}

static int fetch(struct rn_qp *qp, struct rn_wqe *w)
{
	return fetch_at(qp, qp->sq_head, w);
}

/* ---- batches of SENDs and WRITEs ---------------------------------------- */

/*
 * Moving a small message costs two system calls, whatever its size.  A run
 * of SENDs and WRITEs of one QP (to one peer) is moved with two calls in
 * all: their sources gathered by one process_vm_readv, their destinations
 * (remote ranges, or the receive WQEs SENDs and immediates consume)
 * scattered by one process_vm_writev, adjacent ranges merged.  Only runs
 * where every WQE is valid, every receive WQE is there and the copy
 * succeeds whole are done this way; anything else goes through execute()
 * one WQE at a time, which gives each error its exact completion.  Nothing
 * is consumed or completed before the copy succeeded, and a copy can be
 * redone, so falling back after a failed batch copy is safe.
 */
#define RN_BATCH_WQES 64
#define RN_BATCH_IOVS 1024 /* IOV_MAX */

struct batch {
	struct rn_wqe w[RN_BATCH_WQES];
	struct rn_rwqe r[RN_BATCH_WQES]; /* the receive WQE a WQE consumes */
	uint64_t len[RN_BATCH_WQES];
	struct iovec src[RN_BATCH_IOVS];
	struct iovec dst[RN_BATCH_IOVS];
	unsigned int n, nsrc, ndst;
	uint64_t bytes;
	uint32_t rq_pos; /* the responder's next receive WQE */
	bool inline_data;
};

/* The engine's working memory. */
int rn_engine_init(struct rn_device *dev)
{
	dev->bounce = aligned_alloc(4096, RN_BOUNCE_SIZE);
	/* aligned_alloc wants a size that is a multiple of the alignment. */
	dev->stage = aligned_alloc(64, (sizeof(*dev->stage) + 63) & ~(size_t)63);
	dev->batch = malloc(sizeof(*dev->batch));
	return dev->bounce && dev->stage && dev->batch ? 0 : ENOMEM;
}

/* Append to an iovec list, merging with the last entry when adjacent. */
static bool iov_append(struct iovec *v, unsigned int *n, void *base, size_t len)
{
	if (!len)
		return true;
	if (*n && (char *)v[*n - 1].iov_base + v[*n - 1].iov_len == base) {
		v[*n - 1].iov_len += len;
		return true;
	}
	if (*n == RN_BATCH_IOVS)
		return false;
	v[*n].iov_base = base;
	v[*n].iov_len = len;
	(*n)++;
	return true;
}

/* Append the first len bytes of a resolved list. */
static bool iovs_append(struct iovec *v, unsigned int *n,
			const struct rn_iovs *from, uint64_t len)
{
	unsigned int i;

	for (i = 0; i < from->n && len; i++) {
		size_t part = from->iov[i].iov_len < len ? from->iov[i].iov_len : len;

		if (!iov_append(v, n, from->iov[i].iov_base, part))
			return false;
		len -= part;
	}
	return true;
}

static bool consumes_receive(uint8_t op)
{
	return op == RN_OP_SEND || op == RN_OP_SEND_IMM || op == RN_OP_WRITE_IMM;
}

/* Where the data of w goes at the responder, if every check would pass. */
static bool batch_destination(struct batch *b, struct rn_qp *dst,
			      const struct rn_wqe *w, uint64_t len,
			      struct rn_iovs *to)
{
	struct rn_rwqe *r = &b->r[b->n];

	if (consumes_receive(w->opcode) && rq_at(dst, b->rq_pos, r) != RQ_OK)
		return false;
	if (w->opcode == RN_OP_SEND || w->opcode == RN_OP_SEND_IMM)
		return !local_sgl(dst, r->sge, r->num_sge, IBV_ACCESS_LOCAL_WRITE,
				  to) && len <= to->len;
	return remote_range(dst, w->remote_addr, w->rkey, len,
			    IBV_ACCESS_REMOTE_WRITE, to);
}

/* Add w (fetched into b->w[b->n]) if it fits and every check would pass. */
static bool batch_add(struct batch *b, struct rn_qp *qp, struct rn_qp *dst,
		      const struct rn_wqe *w)
{
	unsigned int nsrc = b->nsrc, ndst = b->ndst;
	struct rn_iovs src, to;
	uint64_t len;

	if (w->opcode > RN_OP_WRITE_IMM ||
	    (b->n && !(w->flags & RN_WQE_INLINE) != !b->inline_data))
		return false;
	if (gather(qp, w, &src, &len) || b->bytes + len > RN_BOUNCE_SIZE ||
	    !batch_destination(b, dst, w, len, &to))
		return false;
	if (!(w->flags & RN_WQE_INLINE) && !iovs_append(b->src, &nsrc, &src, len))
		return false;
	if (!iovs_append(b->dst, &ndst, &to, len))
		return false;
	b->nsrc = nsrc;
	b->ndst = ndst;
	b->inline_data = w->flags & RN_WQE_INLINE;
	b->len[b->n] = len;
	b->bytes += len;
	if (consumes_receive(w->opcode))
		b->rq_pos += b->r[b->n].nslots;
	b->n++;
	return true;
}

/* Gather everything into the bounce buffer, scatter it out. */
static bool batch_copy(struct batch *b, struct rn_qp *qp, struct rn_qp *dst)
{
	uint8_t *bounce = qp->client->dev->bounce;
	struct iovec local = { bounce, b->bytes };
	uint64_t off = 0;
	unsigned int i;

	if (!b->bytes)
		return true;
	if (b->inline_data) {
		for (i = 0; i < b->n; i++) {
			memcpy(bounce + off, b->w[i].inline_data, b->len[i]);
			off += b->len[i];
		}
	} else if (process_vm_readv(qp->client->pid, &local, 1, b->src, b->nsrc,
				    0) != (ssize_t)b->bytes) {
		return false;
	}
	return process_vm_writev(dst->client->pid, &local, 1, b->dst, b->ndst,
				 0) == (ssize_t)b->bytes;
}

static bool batchable(const struct rn_wqe *w)
{
	return w->opcode <= RN_OP_WRITE_IMM;
}

/*
 * Execute the run of SENDs and WRITEs at sq_head as one batch, up to
 * 'budget' WQEs.  Returns how many were completed; 0 leaves them to
 * execute().  Completions come in the order execute() would give them.
 */
static unsigned int run_batch(struct rn_qp *qp, unsigned int budget)
{
	struct batch *b = qp->client->dev->batch;
	struct rn_qp *dst = peer_of(qp);
	uint64_t pos = qp->sq_head;
	unsigned int i;

	if (!dst)
		return 0;
	b->n = b->nsrc = b->ndst = 0;
	b->bytes = 0;
	b->rq_pos = dst->rq_head;
	while (b->n < RN_BATCH_WQES && b->n < budget && pos != qp->sq_prod) {
		struct rn_wqe *w = &b->w[b->n];

		if (fetch_at(qp, pos, w) || !batch_add(b, qp, dst, w))
			break;
		pos = (pos + w->nslots) & RN_DB_SEQ_MASK;
	}
	if (b->n < 2 || !batch_copy(b, qp, dst))
		return 0;
	for (i = 0; i < b->n; i++) {
		const struct rn_wqe *w = &b->w[i];

		advance_psns(qp, dst, b->len[i]);
		if (consumes_receive(w->opcode))
			complete_recv(dst, &b->r[i], IBV_WC_SUCCESS,
				      w->opcode == RN_OP_WRITE_IMM ?
					      IBV_WC_RECV_RDMA_WITH_IMM :
					      IBV_WC_RECV,
				      b->len[i], w, qp->qpn);
		complete_send(qp, w, IBV_WC_SUCCESS, b->len[i]);
	}
	return b->n;
}

/* Execute up to 'budget' WQEs of the QP's send queue. */
static bool run_sq(struct rn_qp *qp, uint64_t now, unsigned int budget)
{
	bool progress = false;
	struct rn_wqe w;

	while (budget-- && qp->attr.qp_state == IBV_QPS_RTS &&
	       qp->sq_head != qp->sq_prod) {
		enum ibv_wc_status fail;
		struct result res;

		if (fetch(qp, &w)) {
			rn_warn("pid %d: QP %u: malformed send WQE\n",
				qp->client->pid, qp->qpn);
			qp_fatal(qp, IBV_EVENT_QP_FATAL);
			return true;
		}
		if (batchable(&w) && !qp->wqe_started) {
			unsigned int n = run_batch(qp, budget + 1);

			if (n) {
				budget -= n - 1;
				progress = true;
				continue;
			}
		}
		res = execute(qp, &w);
		if (res.outcome != DONE) {
			if (retry_or_fail(qp, &res, now, &fail))
				return progress;
			res = done(fail, 0);
		}
		qp->wqe_started = false;
		complete_send(qp, &w, res.status, res.byte_len);
		progress = true;
		if (res.status != IBV_WC_SUCCESS)
			rn_qp_to_error(qp);
	}
	return progress;
}

/* ---- flushing -------------------------------------------------------------- */

void rn_engine_flush(struct rn_qp *qp)
{
	struct rn_wqe w;
	struct rn_rwqe r;

	rn_engine_unschedule(qp);
	while (qp->sq_head != qp->sq_prod) {
		/* A malformed WQE ends the flush: nothing after it can be
		 * parsed, and only its own poster is affected.
		 */
		if (fetch(qp, &w))
			break;
		complete_send(qp, &w, IBV_WC_WR_FLUSH_ERR, 0);
	}
	while (rq_next(qp, &r) == RQ_OK)
		complete_recv(qp, &r, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, NULL, 0);
}

/* ---- doorbells ------------------------------------------------------------- */

void rn_engine_doorbell(struct rn_qp *qp)
{
	uint64_t rec = __atomic_load_n(&qp->ctrl->sq_db, __ATOMIC_ACQUIRE);
	enum ibv_qp_state state = qp->attr.qp_state;

	/* Only a QP that may send (or flushes, in ERR) listens to doorbells. */
	if (state != IBV_QPS_RTS && state != IBV_QPS_SQD && state != IBV_QPS_ERR)
		return;
	qp->ctrl->doorbells++;
	switch (rn_db_classify(rec, qp->handle, qp->sq_head, qp->sq_slots)) {
	case RN_DB_STALE:
		qp->ctrl->stale++;
		return;
	case RN_DB_BAD:
		rn_warn("pid %d: QP %u: bad doorbell record %#llx\n",
			qp->client->pid, qp->qpn, (unsigned long long)rec);
		qp_fatal(qp, IBV_EVENT_QP_FATAL);
		return;
	case RN_DB_VALID:
		break;
	}
	qp->sq_prod = RN_DB_SEQ(rec);
	if (state == IBV_QPS_ERR)
		rn_engine_flush(qp);
	else if (state == IBV_QPS_RTS)
		rn_engine_schedule(qp);
}

/* Take the rung doorbells of one bitmap; calls ring(table entry) for each. */
static bool scan(struct rn_doorbells *db, struct rn_table *objs,
		 void (*ring)(void *obj))
{
	uint64_t summary;

	/* A plain load first: the common idle case must not bounce the line. */
	if (!__atomic_load_n(&db->summary, __ATOMIC_RELAXED))
		return false;
	summary = __atomic_exchange_n(&db->summary, 0, __ATOMIC_SEQ_CST);
	while (summary) {
		unsigned int word = __builtin_ctzll(summary);
		uint64_t bits;

		summary &= summary - 1;
		if (word >= RN_PENDING_WORDS)
			continue;
		bits = __atomic_exchange_n(&db->pending[word], 0, __ATOMIC_SEQ_CST);
		while (bits) {
			void *obj = rn_table_get(objs, word * 64 + __builtin_ctzll(bits));

			bits &= bits - 1;
			if (obj)
				ring(obj);
		}
	}
	return true;
}

static void ring_qp(void *qp)
{
	rn_engine_doorbell(qp);
}

static void ring_cq(void *cq)
{
	rn_cq_ring(cq);
}

static bool scan_doorbells(struct rn_client *client)
{
	bool qps = scan(&client->dev_page->qp, &client->qps, ring_qp);
	bool cqs = scan(&client->dev_page->cq, &client->cqs, ring_cq);

	return qps || cqs;
}

/* ---- the pass ----------------------------------------------------------------- */

bool rn_engine_pass(struct rn_device *dev, uint64_t now)
{
	struct rn_list *pos, *tmp;
	bool progress = false;

	rn_list_for_each_safe(pos, tmp, &dev->clients) {
		struct rn_client *client = rn_container_of(pos, struct rn_client, link);

		if (client->opened)
			progress |= scan_doorbells(client);
	}
	rn_list_for_each_safe(pos, tmp, &dev->active) {
		struct rn_qp *qp = rn_container_of(pos, struct rn_qp, active_link);

		if (qp->wait_until_ns) {
			if (now < qp->wait_until_ns)
				continue;
			qp->wait_until_ns = 0;
		}
		progress |= run_sq(qp, now, RN_QP_BUDGET);
		if (qp->active && !qp->wait_until_ns &&
		    (qp->sq_head == qp->sq_prod || qp->attr.qp_state != IBV_QPS_RTS))
			rn_engine_unschedule(qp);
		/* run_sq may have moved the responder into ERR, taking it off
		 * the list; if that was the next node, end this walk here.
		 */
		if (tmp != &dev->active &&
		    !rn_container_of(tmp, struct rn_qp, active_link)->active)
			break;
	}
	return progress;
}

uint64_t rn_engine_next_timer(struct rn_device *dev)
{
	uint64_t next = UINT64_MAX;
	struct rn_list *pos, *tmp;

	rn_list_for_each_safe(pos, tmp, &dev->active) {
		struct rn_qp *qp = rn_container_of(pos, struct rn_qp, active_link);

		if (!qp->wait_until_ns)
			return 0; /* runnable now */
		if (qp->wait_until_ns < next)
			next = qp->wait_until_ns;
	}
	return next;
}

/*
 * Announce sleep in every device page, then look once more for doorbells
 * rung before the announcement became visible.  Returns false (and does not
 * sleep) if there are some.
 */
bool rn_engine_sleep_prepare(struct rn_device *dev)
{
	struct rn_list *pos, *tmp;

	rn_list_for_each_safe(pos, tmp, &dev->clients) {
		struct rn_client *c = rn_container_of(pos, struct rn_client, link);

		if (c->opened)
			__atomic_store_n(&c->dev_page->asleep, 1, __ATOMIC_SEQ_CST);
	}
	rn_list_for_each_safe(pos, tmp, &dev->clients) {
		struct rn_client *c = rn_container_of(pos, struct rn_client, link);

		if (c->opened &&
		    (__atomic_load_n(&c->dev_page->qp.summary, __ATOMIC_SEQ_CST) ||
		     __atomic_load_n(&c->dev_page->cq.summary, __ATOMIC_SEQ_CST))) {
			rn_engine_wake(dev);
			return false;
		}
	}
	return true;
}

void rn_engine_wake(struct rn_device *dev)
{
	struct rn_list *pos, *tmp;

	rn_list_for_each_safe(pos, tmp, &dev->clients) {
		struct rn_client *c = rn_container_of(pos, struct rn_client, link);

		if (c->opened)
			__atomic_store_n(&c->dev_page->asleep, 0, __ATOMIC_RELAXED);
	}
}
