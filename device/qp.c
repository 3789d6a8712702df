// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Queue pairs: creation, the state machine, queries and destruction. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "qp_rules.h"
#include "ringnicd.h"

static uint32_t roundup_pow2(uint64_t v)
{
	uint32_t r = 1;

	while (r < v)
		r <<= 1;
	return r;
}

static uint32_t min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

struct rn_qp *rn_qp_by_qpn(struct rn_device *dev, uint32_t qpn)
{
	struct rn_qp *qp = rn_table_get(&dev->qpns, qpn & RN_QPN_INDEX_MASK);

	return qp && qp->qpn == qpn ? qp : NULL;
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
	qp->wait_until_ns = 0;
	rn_engine_flush(qp);
}

/*
 * Ring sizes from the requested caps: a send WQE of the largest allowed
 * size takes sq_wqe_slots slots and the ring holds max_send_wr of them; the
 * caps returned are what that geometry really allows (>= the request).
 */
static int size_queues(struct rn_qp *qp, const struct rn_qp_cap *req)
{
	uint32_t s_sge, s_inl, r_bytes;

	if (req->max_send_wr > RN_MAX_QP_WR || req->max_recv_wr > RN_MAX_QP_WR ||
	    req->max_send_sge > RN_MAX_SGE || req->max_recv_sge > RN_MAX_SGE ||
	    req->max_inline_data > RN_MAX_INLINE)
		return EINVAL;

	s_sge = RN_SEND_WQE_SLOTS(req->max_send_sge * sizeof(struct rn_sge));
	s_inl = RN_SEND_WQE_SLOTS(req->max_inline_data);
	qp->sq_wqe_slots = s_sge > s_inl ? s_sge : s_inl;
	qp->rq_wqe_slots = RN_RECV_WQE_SLOTS(req->max_recv_sge);
	qp->sq_slots = roundup_pow2((uint64_t)(req->max_send_wr ? req->max_send_wr : 1) *
				    qp->sq_wqe_slots);
	qp->rq_slots = roundup_pow2((uint64_t)(req->max_recv_wr ? req->max_recv_wr : 1) *
				    qp->rq_wqe_slots);

	qp->cap.max_send_wr = qp->sq_slots / qp->sq_wqe_slots;
	qp->cap.max_recv_wr = qp->rq_slots / qp->rq_wqe_slots;
	qp->cap.max_inline_data = min_u32(RN_MAX_INLINE, qp->sq_wqe_slots *
					  RN_SLOT_SIZE - RN_SEND_HDR_SIZE);
	qp->cap.max_send_sge = min_u32(RN_MAX_SGE, (qp->sq_wqe_slots * RN_SLOT_SIZE -
				       RN_SEND_HDR_SIZE) / sizeof(struct rn_sge));
	r_bytes = qp->rq_wqe_slots * RN_SLOT_SIZE - RN_RECV_HDR_SIZE;
	qp->cap.max_recv_sge = min_u32(RN_MAX_SGE, r_bytes / sizeof(struct rn_sge));
	return 0;
}

static int qpn_assign(struct rn_qp *qp)
{
	struct rn_device *dev = qp->client->dev;
	int64_t index = rn_table_insert(&dev->qpns, qp);
	uint16_t gen;

	if (index < 0)
		return ENOMEM;
	/* Generation 0 is skipped so that no QPN is 0 or 1. */
	gen = (dev->qpn_gens[index] + 1) % RN_QPN_GENS;
	if (!gen)
		gen = 1;
	dev->qpn_gens[index] = gen;
	qp->qpn = (uint32_t)gen << RN_QPN_INDEX_BITS | (uint32_t)index;
	return 0;
}

int rn_qp_create(struct rn_client *client, const struct rn_ctl_create_qp_req *req,
		 struct rn_ctl_create_qp_resp *resp, int *memfd)
{
	struct rn_pd *pd = rn_table_get(&client->pds, req->pd);
	struct rn_cq *scq = rn_table_get(&client->cqs, req->send_cq);
	struct rn_cq *rcq = rn_table_get(&client->cqs, req->recv_cq);
	uint64_t sq_bytes, rq_offset;
	struct rn_qp *qp;
	int64_t h;
	int ret;

	if (req->qp_type != IBV_QPT_RC)
		return EOPNOTSUPP;
	if (!pd || !scq || !rcq)
		return EINVAL;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return ENOMEM;
	qp->client = client;
	rn_list_init(&qp->active_link);
	ret = size_queues(qp, &req->cap);
	if (ret)
		goto err_free;

	sq_bytes = (uint64_t)qp->sq_slots * RN_SLOT_SIZE;
	rq_offset = (4096 + sq_bytes + 4095) & ~4095ull;
	qp->mem_size = (rq_offset + (uint64_t)qp->rq_slots * RN_SLOT_SIZE + 4095) &
		       ~4095ull;
	ret = ENOMEM;
	if (rn_charge(client, qp->mem_size))
		goto err_free;
	qp->mem = rn_shared_alloc(qp->mem_size, memfd);
	if (!qp->mem)
		goto err_charge;
	h = rn_table_insert(&client->qps, qp);
	if (h < 0)
		goto err_unmap;
	qp->handle = h;
	ret = qpn_assign(qp);
	if (ret)
		goto err_handle;

	qp->user_handle = req->user_handle;
	qp->pd = pd;
	qp->send_cq = scq;
	qp->recv_cq = rcq;
	qp->sq_sig_all = req->sq_sig_all;
	qp->ctrl = qp->mem;
	qp->sq = (uint8_t *)qp->mem + 4096;
	qp->rq = (uint8_t *)qp->mem + rq_offset;
	qp->attr.port_num = 1;
	qp->attr.path_mig_state = IBV_MIG_MIGRATED;
	/* A doorbell bit left by an earlier QP with this handle must find a
	 * valid, empty record here.
	 */
	qp->ctrl->sq_db = RN_DB_RECORD(qp->handle, 0);
	rn_qp_set_state(qp, IBV_QPS_RESET);
	pd->refs++;
	scq->refs++;
	rcq->refs++;

	resp->handle = qp->handle;
	resp->qpn = qp->qpn;
	resp->cap = qp->cap;
	resp->sq_slots = qp->sq_slots;
	resp->rq_slots = qp->rq_slots;
	resp->sq_offset = 4096;
	resp->rq_offset = rq_offset;
	resp->mmap_size = qp->mem_size;
	return 0;

err_handle:
	rn_table_remove(&client->qps, h);
err_unmap:
	munmap(qp->mem, qp->mem_size);
	close(*memfd);
err_charge:
	rn_uncharge(client, qp->mem_size);
err_free:
	free(qp);
	return ret;
}

static void apply_attrs(struct rn_qp *qp, const struct rn_qp_attr *a,
			uint32_t mask)
{
	struct rn_qp_attr *q = &qp->attr;

	if (mask & IBV_QP_ACCESS_FLAGS)
		q->qp_access_flags = a->qp_access_flags;
	if (mask & IBV_QP_PKEY_INDEX)
		q->pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT)
		q->port_num = a->port_num;
	if (mask & IBV_QP_AV)
		q->ah_attr = a->ah_attr;
	if (mask & IBV_QP_PATH_MTU)
		q->path_mtu = a->path_mtu;
	if (mask & IBV_QP_DEST_QPN)
		q->dest_qp_num = a->dest_qp_num;
	if (mask & IBV_QP_RQ_PSN)
		q->rq_psn = a->rq_psn;
	if (mask & IBV_QP_SQ_PSN)
		q->sq_psn = a->sq_psn;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		q->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		q->max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_MIN_RNR_TIMER)
		q->min_rnr_timer = a->min_rnr_timer;
	if (mask & IBV_QP_TIMEOUT)
		q->timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		q->retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		q->rnr_retry = a->rnr_retry;
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		q->en_sqd_async_notify = a->en_sqd_async_notify;
}

/*
 * Back to RESET: queues emptied without completions, attributes cleared.
 * The queues restart where the provider's producers are, so that whatever
 * was posted before is behind the head: never executed.
 */
static void qp_reset(struct rn_qp *qp, uint64_t sq_seq, uint32_t rq_seq)
{
	rn_engine_unschedule(qp);
	rn_engine_forget(qp);
	memset(&qp->attr, 0, sizeof(qp->attr));
	qp->attr.port_num = 1;
	qp->attr.path_mig_state = IBV_MIG_MIGRATED;
	qp->sq_prod = sq_seq & RN_DB_SEQ_MASK;
	qp->sq_head = qp->sq_prod;
	qp->rq_head = rq_seq;
	qp->wait_until_ns = 0;
	qp->wqe_started = false;
	qp->comm_est = false;
	__atomic_store_n(&qp->ctrl->sq_cons, qp->sq_head, __ATOMIC_RELEASE);
	__atomic_store_n(&qp->ctrl->rq_cons, qp->rq_head, __ATOMIC_RELEASE);
}

int rn_qp_modify(struct rn_client *client, const struct rn_ctl_modify_qp_req *req)
{
	struct rn_qp *qp = rn_table_get(&client->qps, req->handle);
	enum ibv_qp_state cur, next;
	int ret;

	if (!qp)
		return EINVAL;
	cur = qp->attr.qp_state;
	ret = rn_qp_check_modify(cur, &req->attr, req->attr_mask,
				 RN_GID_TABLE_LEN, &next);
	if (ret)
		return ret;

	if (next == IBV_QPS_RESET) {
		qp_reset(qp, req->sq_seq, req->rq_seq);
		rn_qp_set_state(qp, IBV_QPS_RESET);
		return 0;
	}
	apply_attrs(qp, &req->attr, req->attr_mask);
	if (next == IBV_QPS_ERR) {
		rn_qp_to_error(qp);
		return 0;
	}
	rn_qp_set_state(qp, next);
	if (next == IBV_QPS_RTS && qp->sq_head != qp->sq_prod)
		rn_engine_schedule(qp);
	/* WQEs execute whole, between two modify calls: the SQ is drained
	 * the moment the QP enters SQD.
	 */
	if (next == IBV_QPS_SQD && cur == IBV_QPS_RTS &&
	    qp->attr.en_sqd_async_notify)
		rn_async_event(client, qp->handle, qp->user_handle,
			       IBV_EVENT_SQ_DRAINED);
	return 0;
}

int rn_qp_query(struct rn_client *client, uint32_t handle,
		struct rn_ctl_query_qp_resp *resp)
{
	struct rn_qp *qp = rn_table_get(&client->qps, handle);

	if (!qp)
		return EINVAL;
	resp->attr = qp->attr;
	resp->attr.cur_qp_state = qp->attr.qp_state;
	resp->attr.cap = qp->cap;
	resp->sq_sig_all = qp->sq_sig_all;
	return 0;
}

void rn_qp_free(struct rn_qp *qp)
{
	struct rn_client *client = qp->client;

	rn_engine_unschedule(qp);
	rn_engine_forget(qp);
	rn_table_remove(&client->dev->qpns, qp->qpn & RN_QPN_INDEX_MASK);
	rn_table_remove(&client->qps, qp->handle);
	qp->pd->refs--;
	qp->send_cq->refs--;
	qp->recv_cq->refs--;
	munmap(qp->mem, qp->mem_size);
	rn_uncharge(client, qp->mem_size);
	free(qp);
}

int rn_qp_destroy(struct rn_client *client, uint32_t handle)
{
	struct rn_qp *qp = rn_table_get(&client->qps, handle);

	if (!qp)
		return EINVAL;
	rn_qp_free(qp);
	return 0;
}
