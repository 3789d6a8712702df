// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Queue pairs: creation, the state machine, queries and destruction.
 *
 * RC, UC and UD QPs have a send queue and either a receive queue of their
 * own or an SRQ.  An XRC_SEND (initiator) QP has only a send queue; each of
 * its messages names an SRQ of the target's XRC domain.  An XRC_RECV
 * (target) QP has no queue at all: it belongs to its domain, any context
 * that opened the domain may open it (ibv_open_qp), and it lives until the
 * last context holding it lets go.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/util.h"
#include "engine/fault.h"
#include "local/local.h"
#include "verbs/qp_rules.h"
#include "wire/wire.h"

static bool has_sq(uint8_t type)
{
	return type != IBV_QPT_XRC_RECV;
}

/*
 * Ring sizes from the requested caps: a send WQE of the largest allowed
 * size takes sq_wqe_slots slots and the ring holds max_send_wr of them; the
 * caps returned are what that geometry really allows (>= the request).
 * Queues the QP does not have are 0.
 */
static int size_queues(struct rn_qp *qp, const struct rn_qp_cap *req,
		       bool own_rq)
{
	uint32_t dest = qp->has_dest ? sizeof(struct rn_wqe_dest) : 0;
	uint32_t s_sge, s_inl, room;

	if (req->max_send_wr > RN_MAX_QP_WR || req->max_recv_wr > RN_MAX_QP_WR ||
	    req->max_send_sge > RN_MAX_SGE || req->max_recv_sge > RN_MAX_SGE ||
	    req->max_inline_data > RN_MAX_INLINE)
		return EINVAL;
	memset(&qp->cap, 0, sizeof(qp->cap));
	if (has_sq(qp->qp_type)) {
		s_sge = RN_SEND_WQE_SLOTS(dest + req->max_send_sge *
						 sizeof(struct rn_sge));
		s_inl = RN_SEND_WQE_SLOTS(dest + req->max_inline_data);
		qp->sq_wqe_slots = s_sge > s_inl ? s_sge : s_inl;
		qp->sq_slots = rn_roundup_pow2((uint64_t)(req->max_send_wr ?: 1) *
					    qp->sq_wqe_slots);
		room = qp->sq_wqe_slots * RN_SLOT_SIZE - RN_SEND_HDR_SIZE - dest;
		qp->cap.max_send_wr = qp->sq_slots / qp->sq_wqe_slots;
		qp->cap.max_inline_data = rn_min_u32(RN_MAX_INLINE, room);
		qp->cap.max_send_sge =
			rn_min_u32(RN_MAX_SGE, room / sizeof(struct rn_sge));
	}
	if (own_rq) {
		qp->rq.wqe_slots = RN_RECV_WQE_SLOTS(req->max_recv_sge);
		qp->rq.slots = rn_roundup_pow2((uint64_t)(req->max_recv_wr ?: 1) *
					    qp->rq.wqe_slots);
		room = qp->rq.wqe_slots * RN_SLOT_SIZE - RN_RECV_HDR_SIZE;
		qp->rq.max_sge = rn_min_u32(RN_MAX_SGE, room / sizeof(struct rn_sge));
		qp->cap.max_recv_wr = qp->rq.slots / qp->rq.wqe_slots;
		qp->cap.max_recv_sge = qp->rq.max_sge;
	}
	return 0;
}

/*
 * Its QPN, whose index tells its engine (the index mod the engines): the
 * wire's sockets send each packet to the engine of the QP it names
 * (wire/netio.c).
 */
static int qpn_assign(struct rn_qp *qp)
{
	struct rn_device *dev = qp->client->dev;
	int64_t index = rn_table_insert_class(&dev->qpns, qp, dev->nengines,
					      qp->engine->index);
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

/* The objects a QP of this type needs, all of this client's. */
static int resolve_objects(struct rn_client *client, struct rn_qp *qp,
			   const struct rn_ctl_create_qp_req *req)
{
	switch (req->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
		qp->recv_cq = rn_table_get(&client->ctx->cqs, req->recv_cq);
		if (req->has_srq) {
			qp->srq = rn_table_get(&client->ctx->srqs, req->srq);
			if (!qp->srq || qp->srq->type != IBV_SRQT_BASIC)
				return EINVAL;
		}
		if (!qp->recv_cq || req->xrcd)
			return EINVAL;
		/* fall through */
	case IBV_QPT_XRC_SEND:
		qp->pd = rn_table_get(&client->ctx->pds, req->pd);
		qp->send_cq = rn_table_get(&client->ctx->cqs, req->send_cq);
		if (!qp->pd || !qp->send_cq)
			return EINVAL;
		if (req->qp_type == IBV_QPT_XRC_SEND &&
		    (req->recv_cq || req->has_srq || req->xrcd))
			return EINVAL;
		return 0;
	case IBV_QPT_XRC_RECV:
		qp->xrcd = rn_xrcd_of(client, req->xrcd);
		if (!qp->xrcd || req->pd || req->send_cq || req->recv_cq ||
		    req->has_srq)
			return EINVAL;
		return 0;
	default:
		return EOPNOTSUPP;
	}
}

static void hold_objects(struct rn_qp *qp)
{
	if (qp->pd)
		qp->pd->refs++;
	if (qp->send_cq)
		qp->send_cq->refs++;
	if (qp->recv_cq)
		qp->recv_cq->refs++;
	if (qp->srq)
		qp->srq->refs++;
	if (qp->xrcd)
		rn_xrcd_get(qp->xrcd);
}

static void release_objects(struct rn_qp *qp)
{
	if (qp->pd)
		qp->pd->refs--;
	if (qp->send_cq)
		qp->send_cq->refs--;
	if (qp->recv_cq)
		qp->recv_cq->refs--;
	if (qp->srq)
		qp->srq->refs--;
	if (qp->xrcd)
		rn_xrcd_put(qp->client->dev, qp->xrcd);
}

/* Record a context holding an XRC_RECV QP. */
static int opener_add(struct rn_qp *qp, struct rn_client *client,
		      uint32_t handle, uint64_t user_handle)
{
	struct rn_qp_opener *o;

	o = realloc(qp->openers, (qp->nopeners + 1) * sizeof(*o));
	if (!o)
		return ENOMEM;
	qp->openers = o;
	o[qp->nopeners++] = (struct rn_qp_opener){ client, handle, user_handle };
	return 0;
}

int rn_qp_create(struct rn_client *client, const struct rn_ctl_create_qp_req *req,
		 struct rn_ctl_create_qp_resp *resp, int *memfd)
{
	uint64_t sq_bytes, rq_offset;
	struct rn_qp *qp;
	int64_t h;
	int ret;

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return ENOMEM;
	qp->sgid = -1;
	qp->client = client;
	qp->qp_type = req->qp_type;
	qp->has_dest = req->qp_type == IBV_QPT_UD ||
		       req->qp_type == IBV_QPT_XRC_SEND;
	ret = resolve_objects(client, qp, req);
	if (ret)
		goto err_free;
	ret = size_queues(qp, &req->cap,
			  has_sq(qp->qp_type) && qp->qp_type != IBV_QPT_XRC_SEND &&
				  !qp->srq);
	if (ret)
		goto err_free;

	sq_bytes = (uint64_t)qp->sq_slots * RN_SLOT_SIZE;
	rq_offset = (4096 + sq_bytes + 4095) & ~4095ull;
	qp->mem_size = (rq_offset + (uint64_t)qp->rq.slots * RN_SLOT_SIZE + 4095) &
		       ~4095ull;
	ret = ENOMEM;
	if (rn_charge(client, qp->mem_size))
		goto err_free;
	qp->mem = rn_shared_alloc(qp->mem_size, memfd);
	if (!qp->mem)
		goto err_charge;
	h = rn_table_insert(&client->ctx->qps, qp);
	if (h < 0)
		goto err_unmap;
	qp->handle = h;
	/* An XRC target takes from the domain's SRQs, which may be of any
	 * context: engine 0 runs them all (verbs/srq.c).
	 */
	qp->engine = qp->qp_type == IBV_QPT_XRC_RECV ? client->dev->engines[0] :
						       client->ctx->engine;
	ret = qpn_assign(qp);
	if (ret)
		goto err_handle;
	qp->transport = &rn_local_transport;
	ret = rn_local_qp_add(qp);
	if (ret)
		goto err_qpn;
	ret = rn_engine_qp_add(qp);
	if (ret)
		goto err_local;
	if (qp->qp_type == IBV_QPT_XRC_RECV) {
		ret = opener_add(qp, client, qp->handle, req->user_handle);
		if (ret)
			goto err_engine;
	}

	qp->user_handle = req->user_handle;
	qp->sq_sig_all = req->sq_sig_all;
	qp->ctrl = qp->mem;
	qp->sq = (uint8_t *)qp->mem + 4096;
	qp->rq.ring = (uint8_t *)qp->mem + rq_offset;
	qp->rq.prod = &qp->ctrl->rq_prod;
	qp->rq.shared_cons = &qp->ctrl->rq_cons;
	qp->rq.shared_wr_cons = &qp->ctrl->rq_wr_cons;
	qp->attr.port_num = 1;
	qp->attr.path_mig_state = IBV_MIG_MIGRATED;
	/* A doorbell bit left by an earlier QP with this handle must find a
	 * valid, empty record here.
	 */
	qp->ctrl->sq_db = RN_DB_RECORD(qp->handle, 0);
	rn_qp_set_state(qp, IBV_QPS_RESET);
	hold_objects(qp);

	resp->handle = qp->handle;
	resp->qpn = qp->qpn;
	resp->cap = qp->cap;
	resp->sq_slots = qp->sq_slots;
	resp->rq_slots = qp->rq.slots;
	resp->sq_offset = 4096;
	resp->rq_offset = rq_offset;
	resp->mmap_size = qp->mem_size;
	return 0;

err_engine:
	rn_engine_qp_remove(qp);
err_local:
	rn_local_qp_remove(qp);
err_qpn:
	rn_table_remove(&client->dev->qpns, qp->qpn & RN_QPN_INDEX_MASK);
err_handle:
	rn_table_remove(&client->ctx->qps, h);
err_unmap:
	munmap(qp->mem, qp->mem_size);
	close(*memfd);
err_charge:
	rn_uncharge(client, qp->mem_size);
err_free:
	free(qp);
	return ret;
}

/*
 * Another context's hold on an XRC_RECV QP of a domain it opened; its
 * handle has no queues behind it, so it needs no memory.
 */
int rn_qp_open(struct rn_client *client, const struct rn_ctl_open_qp_req *req,
	       struct rn_ctl_open_qp_resp *resp)
{
	struct rn_xrcd *xrcd = rn_xrcd_of(client, req->xrcd);
	struct rn_qp *qp = rn_qp_by_qpn(client->dev, req->qpn);
	uint32_t i;
	int64_t h;

	if (!xrcd || !qp || qp->qp_type != IBV_QPT_XRC_RECV || qp->xrcd != xrcd)
		return EINVAL;
	for (i = 0; i < qp->nopeners; i++)
		if (qp->openers[i].client->ctx == client->ctx)
			return EEXIST;
	h = rn_table_insert(&client->ctx->qps, qp);
	if (h < 0)
		return ENOMEM;
	if (opener_add(qp, client, h, req->user_handle)) {
		rn_table_remove(&client->ctx->qps, h);
		return ENOMEM;
	}
	resp->handle = h;
	return 0;
}

/*
 * The GID entry the QP's address vector names, held so that the entry is
 * not given to another address while the QP may still use it.
 */
static void set_sgid(struct rn_qp *qp, int index)
{
	struct rn_device *dev = qp->client->dev;

	rn_port_gid_put(dev, qp->sgid);
	rn_port_gid_hold(dev, index);
	qp->sgid = index;
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
	if (mask & IBV_QP_QKEY)
		q->qkey = a->qkey;
	if (mask & IBV_QP_AV) {
		q->ah_attr = a->ah_attr;
		set_sgid(qp, a->ah_attr.is_global ? a->ah_attr.sgid_index : -1);
	}
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
static void qp_reset(struct rn_qp *qp, const struct rn_ctl_modify_qp_req *req)
{
	rn_engine_unschedule(qp);
	rn_qp_transport_release(qp, &rn_local_transport);
	rn_sq_forget(qp);
	memset(&qp->attr, 0, sizeof(qp->attr));
	set_sgid(qp, -1);
	qp->attr.port_num = 1;
	qp->attr.path_mig_state = IBV_MIG_MIGRATED;
	qp->sq_prod = req->sq_seq & RN_DB_SEQ_MASK;
	qp->sq_head = qp->sq_prod;
	qp->sq_wr_cons = req->sq_wr_seq;
	qp->rq.head = req->rq_seq;
	qp->rq.wr_cons = req->rq_wr_seq;
	rn_engine_cancel_wait(qp);
	rn_local_qp_reset(qp);
	qp->comm_est = false;
	__atomic_store_n(&qp->ctrl->sq_cons, qp->sq_head, __ATOMIC_RELEASE);
	__atomic_store_n(&qp->ctrl->sq_wr_cons, qp->sq_wr_cons, __ATOMIC_RELEASE);
	__atomic_store_n(&qp->ctrl->rq_cons, qp->rq.head, __ATOMIC_RELEASE);
	__atomic_store_n(&qp->ctrl->rq_wr_cons, qp->rq.wr_cons, __ATOMIC_RELEASE);
}

/*
 * The attributes of a modify_qp that apply to the QP's type.  As the
 * kernel's uverbs do, those an XRC QP has no use for are dropped rather
 * than refused: applications (perftest) set them for every connected QP.
 */
static uint32_t applicable(uint8_t type, uint32_t mask)
{
	switch (type) {
	case IBV_QPT_XRC_SEND:
		return mask & ~(IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	case IBV_QPT_XRC_RECV:
		return mask & ~(IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY);
	default:
		return mask;
	}
}

static bool connected(uint8_t type)
{
	return type != IBV_QPT_UD;
}

/*
 * RTR: the address vector picks the QP's transport: the local path when
 * it names one of this device's GIDs (unless --local-on-wire), else the
 * wire.  Returns 0, or EINVAL when its GIDs cannot make a path, or ENOMEM.
 */
static int connect_path(struct rn_qp *qp)
{
	struct rn_device *dev = qp->client->dev;
	const struct rn_ah_attr *av = &qp->attr.ah_attr;
	int sgid_index = av->is_global ? av->sgid_index : rn_port_gid_first(dev);
	const uint8_t *dgid;

	if (sgid_index < 0)
		return EINVAL;
	dgid = av->is_global ? av->dgid : dev->port.gids[sgid_index].raw;
	if (!dev->local_on_wire && rn_port_gid_index(dev, dgid) >= 0) {
		rn_qp_transport_release(qp, &rn_local_transport);
		return 0;
	}
	return rn_wire_qp_connect(qp, sgid_index, dgid);
}

int rn_qp_modify(struct rn_client *client, const struct rn_ctl_modify_qp_req *req)
{
	struct rn_qp *qp = rn_table_get(&client->ctx->qps, req->handle);
	enum ibv_qp_state cur, next;
	struct rn_qp_attr saved;
	uint32_t mask;
	int ret;

	if (!qp)
		return EINVAL;
	cur = qp->attr.qp_state;
	mask = applicable(qp->qp_type, req->attr_mask);
	ret = rn_qp_check_modify(qp->qp_type, cur, &req->attr, mask,
				 rn_port_gid_mask(client->dev), &next);
	if (ret)
		return ret;

	if (next == IBV_QPS_RESET) {
		qp_reset(qp, req);
		rn_qp_set_state(qp, IBV_QPS_RESET);
		return 0;
	}
	if (next == IBV_QPS_ERR) {
		/* WQEs posted before the call run first, as a NIC has started
		 * them when the doorbell rang: rdma_disconnect right after a
		 * SEND must not flush it (libfabric's ofi_rxm does that).
		 */
		if (cur == IBV_QPS_RTS)
			rn_engine_drain(qp);
		apply_attrs(qp, &req->attr, mask);
		rn_qp_to_error(qp);
		return 0;
	}
	saved = qp->attr;
	apply_attrs(qp, &req->attr, mask);
	/* The address vector is set at RTR: the wire, or the local path. */
	if (next == IBV_QPS_RTR && cur == IBV_QPS_INIT && connected(qp->qp_type)) {
		ret = connect_path(qp);
		if (ret) {
			qp->attr = saved;
			return ret;
		}
	}
	rn_qp_set_state(qp, next);
	if (cur == IBV_QPS_RESET)
		rn_qp_counter_qp_ready(qp);
	if (next == IBV_QPS_RTS && (cur == IBV_QPS_RTR || cur == IBV_QPS_SQE))
		rn_qp_transport_start(qp);
	if (next == IBV_QPS_RTS && qp->sq_head != qp->sq_prod)
		rn_engine_schedule(qp);
	/* SQD starts no WQE.  On the local path WQEs execute whole, between
	 * two modify calls: the SQ is drained the moment the QP enters SQD;
	 * on the wire, once the WQEs in flight have completed.
	 */
	if (next == IBV_QPS_SQD && cur == IBV_QPS_RTS)
		qp->sqd_notify = qp->attr.en_sqd_async_notify;
	else if (next != IBV_QPS_SQD)
		qp->sqd_notify = false;
	rn_qp_sq_drain_check(qp);
	return 0;
}

int rn_qp_query(struct rn_client *client, uint32_t handle,
		struct rn_ctl_query_qp_resp *resp)
{
	struct rn_qp *qp = rn_table_get(&client->ctx->qps, handle);

	if (!qp)
		return EINVAL;
	resp->attr = qp->attr;
	resp->attr.cur_qp_state = qp->attr.qp_state;
	resp->attr.cap = qp->cap;
	resp->sq_sig_all = qp->sq_sig_all;
	return 0;
}

static void qp_free(struct rn_qp *qp)
{
	struct rn_client *client = qp->client;

	rn_engine_qp_remove(qp);
	rn_faults_free(qp);
	rn_qp_counter_qp_gone(qp);
	rn_qp_transport_release(qp, NULL);
	rn_local_qp_remove(qp);
	rn_sq_forget(qp);
	rn_table_remove(&client->dev->qpns, qp->qpn & RN_QPN_INDEX_MASK);
	set_sgid(qp, -1);
	release_objects(qp);
	munmap(qp->mem, qp->mem_size);
	rn_uncharge(client, qp->mem_size);
	free(qp->openers);
	free(qp);
}

/*
 * A context lets go of the QP it holds as 'handle'.  An XRC_RECV QP lives
 * on while another context holds it; the memory stays charged to the one
 * it is moved to.
 */
void rn_qp_release(struct rn_client *client, uint32_t handle)
{
	struct rn_qp *qp = rn_table_get(&client->ctx->qps, handle);
	uint32_t i;

	rn_table_remove(&client->ctx->qps, handle);
	if (qp->qp_type != IBV_QPT_XRC_RECV) {
		qp_free(qp);
		return;
	}
	for (i = 0; i < qp->nopeners; i++)
		if (qp->openers[i].client->ctx == client->ctx)
			break;
	qp->openers[i] = qp->openers[--qp->nopeners];
	if (!qp->nopeners) {
		qp_free(qp);
		return;
	}
	if (qp->client->ctx == client->ctx) {
		rn_uncharge(client, qp->mem_size);
		qp->client = qp->openers[0].client;
		qp->handle = qp->openers[0].handle;
		qp->user_handle = qp->openers[0].user_handle;
		/* Over the limit is better than a QP nobody pays for. */
		qp->client->ctx->shared_bytes += qp->mem_size;
		qp->client->dev->shared_bytes += qp->mem_size;
	}
}

int rn_qp_destroy(struct rn_client *client, uint32_t handle)
{
	struct rn_qp *qp = rn_table_get(&client->ctx->qps, handle);

	if (!qp)
		return EINVAL;
	rn_engine_drain(qp);
	rn_qp_release(client, handle);
	return 0;
}
