// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Queue pair objects: creation (RC, UC, UD, XRC initiator and target),
 * ibv_open_qp, modification, queries and destruction.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ringnic.h"

#define RN_SEND_OPS                                                            \
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |                   \
	 IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |       \
	 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |         \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_SEND_WITH_INV |   \
	 IBV_QP_EX_WITH_LOCAL_INV | IBV_QP_EX_WITH_BIND_MW)

static bool mine(struct ibv_context *context, struct ibv_context *of)
{
	return of == context;
}

/* What each QP type needs: see struct rn_ctl_create_qp_req. */
static int check_qp_attr(struct ibv_context *context,
			 const struct ibv_qp_init_attr_ex *attr)
{
	uint64_t mask = attr->comp_mask;
	bool pd = mask & IBV_QP_INIT_ATTR_PD && attr->pd;

	if (mask & ~(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
		     IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_XRCD))
		return EOPNOTSUPP;
	if (mask & IBV_QP_INIT_ATTR_CREATE_FLAGS && attr->create_flags)
		return EOPNOTSUPP;
	if (mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS &&
	    attr->send_ops_flags & ~RN_SEND_OPS)
		return EOPNOTSUPP;
	switch (attr->qp_type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
		if (!pd || !attr->send_cq || !attr->recv_cq ||
		    mask & IBV_QP_INIT_ATTR_XRCD)
			return EINVAL;
		if (!mine(context, attr->pd->context) ||
		    !mine(context, attr->send_cq->context) ||
		    !mine(context, attr->recv_cq->context) ||
		    (attr->srq && !mine(context, attr->srq->context)))
			return EINVAL;
		return 0;
	case IBV_QPT_XRC_SEND:
		if (!pd || !attr->send_cq || attr->srq ||
		    !mine(context, attr->pd->context) ||
		    !mine(context, attr->send_cq->context))
			return EINVAL;
		return 0;
	case IBV_QPT_XRC_RECV:
		if (!(mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd ||
		    !mine(context, attr->xrcd->context))
			return EINVAL;
		return 0;
	default:
		return EOPNOTSUPP;
	}
}

/* The send CQ knows its QPs, to ring for their deferred WRs. */
static void send_qp_add(struct rn_cq *cq, struct rn_qp *qp)
{
	pthread_mutex_lock(&cq->send_qps_lock);
	qp->next_send_qp = cq->send_qps;
	cq->send_qps = qp;
	pthread_mutex_unlock(&cq->send_qps_lock);
}

static void send_qp_del(struct rn_cq *cq, struct rn_qp *qp)
{
	struct rn_qp **p;

	pthread_mutex_lock(&cq->send_qps_lock);
	for (p = &cq->send_qps; *p; p = &(*p)->next_send_qp)
		if (*p == qp) {
			*p = qp->next_send_qp;
			break;
		}
	pthread_mutex_unlock(&cq->send_qps_lock);
}

/* What every QP of this library has, created or opened. */
static void qp_init_common(struct rn_qp *qp, struct ibv_context *context,
			   void *qp_context, enum ibv_qp_type type, uint32_t qpn)
{
	struct ibv_qp *ibqp = &qp->vqp.qp;

	pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);
	ibqp->context = context;
	ibqp->qp_context = qp_context;
	ibqp->qp_num = qpn;
	ibqp->state = IBV_QPS_RESET;
	ibqp->qp_type = type;
	pthread_mutex_init(&ibqp->mutex, NULL);
	pthread_cond_init(&ibqp->cond, NULL);
}

static struct ibv_qp *qp_create(struct ibv_context *context,
				struct ibv_qp_init_attr_ex *attr)
{
	struct rn_ctl_create_qp_req req = { .hdr.op = RN_CTL_CREATE_QP };
	struct rn_ctl_create_qp_resp resp;
	struct ibv_qp *ibqp;
	struct rn_qp *qp;
	int ret, memfd;

	ret = check_qp_attr(context, attr);
	if (ret) {
		errno = ret;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	req.user_handle = (uintptr_t)&qp->vqp.qp;
	req.qp_type = attr->qp_type;
	req.sq_sig_all = !!attr->sq_sig_all;
	if (attr->qp_type == IBV_QPT_XRC_RECV) {
		req.xrcd = to_rn_xrcd(attr->xrcd)->handle;
	} else {
		req.pd = to_rn_pd(attr->pd)->handle;
		req.send_cq = to_rn_cq(attr->send_cq)->handle;
	}
	if (attr->qp_type <= IBV_QPT_UD) { /* RC, UC, UD */
		req.recv_cq = to_rn_cq(attr->recv_cq)->handle;
		req.has_srq = !!attr->srq;
		req.srq = attr->srq ? to_rn_srq(attr->srq)->handle : 0;
	}
	req.cap = (struct rn_qp_cap){
		.max_send_wr = attr->cap.max_send_wr,
		.max_recv_wr = attr->cap.max_recv_wr,
		.max_send_sge = attr->cap.max_send_sge,
		.max_recv_sge = attr->cap.max_recv_sge,
		.max_inline_data = attr->cap.max_inline_data,
	};
	if (rn_kernel_mode(context)) {
		ret = rn_kernel_create_qp(context, qp, attr, &req, &resp);
		if (ret)
			goto err_free;
	} else {
		ret = rn_ctl_call(to_rn_ctx(context), &req, sizeof(req), &resp,
				  sizeof(resp), NULL, 0, &memfd, 1);
		if (ret)
			goto err_free;
		ret = ENOMEM;
		qp->mem_size = resp.mmap_size;
		qp->mem = rn_map_fd(memfd, qp->mem_size);
		if (!qp->mem)
			goto err_destroy;
		qp->vqp.qp.handle = resp.handle;
	}
	qp->handle = resp.handle;
	qp->ctrl = qp->mem;
	/* A kernel mode XRC_RECV QP has no memory here (kernel.c). */
	qp->sq = qp->mem ? (uint8_t *)qp->mem + resp.sq_offset : NULL;
	qp->sq_slots = resp.sq_slots;
	qp->cap = resp.cap;
	qp->sq_sig_all = req.sq_sig_all;
	qp->has_dest = attr->qp_type == IBV_QPT_UD ||
		       attr->qp_type == IBV_QPT_XRC_SEND;
	if (qp->mem)
		rn_recv_ring_init(&qp->rq, (uint8_t *)qp->mem + resp.rq_offset,
				  resp.rq_slots, resp.cap.max_recv_wr,
				  resp.cap.max_recv_sge, &qp->ctrl->rq_prod,
				  &qp->ctrl->rq_wr_cons);
	qp_init_common(qp, context, attr->qp_context, attr->qp_type, resp.qpn);

	ibqp = &qp->vqp.qp;
	if (attr->qp_type != IBV_QPT_XRC_RECV) {
		ibqp->pd = attr->pd;
		ibqp->send_cq = attr->send_cq;
	}
	if (attr->qp_type <= IBV_QPT_UD) {
		ibqp->recv_cq = attr->recv_cq;
		ibqp->srq = attr->srq;
	}
	if (attr->qp_type == IBV_QPT_XRC_RECV)
		qp->vqp.xrcd = &to_rn_xrcd(attr->xrcd)->vxrcd;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		qp->vqp.comp_mask |= RN_VERBS_QP_EX;
		rn_qp_init_wr_ops(qp);
	}
	if (ibqp->send_cq)
		send_qp_add(to_rn_cq(ibqp->send_cq), qp);

	/* What the caller asked for is at least what it got. */
	attr->cap.max_send_wr = resp.cap.max_send_wr;
	attr->cap.max_recv_wr = resp.cap.max_recv_wr;
	attr->cap.max_send_sge = resp.cap.max_send_sge;
	attr->cap.max_recv_sge = resp.cap.max_recv_sge;
	attr->cap.max_inline_data = resp.cap.max_inline_data;
	return ibqp;

err_destroy:
	rn_ctl_handle_call(context, RN_CTL_DESTROY_QP, resp.handle);
err_free:
	free(qp);
	errno = ret;
	return NULL;
}

struct ibv_qp *rn_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp *qp = qp_create(pd->context, &ex);

	if (qp)
		attr->cap = ex.cap;
	return qp;
}

struct ibv_qp *rn_create_qp_ex(struct ibv_context *context,
			       struct ibv_qp_init_attr_ex *attr)
{
	return qp_create(context, attr);
}

#define RN_QP_OPEN_NEEDS                                                       \
	(IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE)

/*
 * Another context's XRC_RECV QP, of a domain this one opened too: a handle
 * to it, with no queue of its own.
 */
struct ibv_qp *rn_open_qp(struct ibv_context *context,
			  struct ibv_qp_open_attr *attr)
{
	struct rn_ctl_open_qp_req req = { .hdr.op = RN_CTL_OPEN_QP };
	struct rn_ctl_open_qp_resp resp;
	struct rn_qp *qp;
	int ret;

	if (attr->comp_mask >= IBV_QP_OPEN_ATTR_RESERVED) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((attr->comp_mask & RN_QP_OPEN_NEEDS) != RN_QP_OPEN_NEEDS ||
	    attr->qp_type != IBV_QPT_XRC_RECV || !attr->xrcd ||
	    attr->xrcd->context != context) {
		errno = EINVAL;
		return NULL;
	}
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	req.user_handle = (uintptr_t)&qp->vqp.qp;
	req.xrcd = to_rn_xrcd(attr->xrcd)->handle;
	req.qpn = attr->qp_num;
	if (rn_kernel_mode(context)) {
		ret = rn_kernel_open_qp(context, qp, attr);
	} else {
		ret = rn_ctl_call(to_rn_ctx(context), &req, sizeof(req), &resp,
				  sizeof(resp), NULL, 0, NULL, 0);
		qp->handle = resp.handle;
		qp->vqp.qp.handle = resp.handle;
	}
	if (ret) {
		free(qp);
		errno = ret;
		return NULL;
	}
	qp_init_common(qp, context, attr->qp_context, IBV_QPT_XRC_RECV,
		       attr->qp_num);
	qp->vqp.xrcd = &to_rn_xrcd(attr->xrcd)->vxrcd;
	return &qp->vqp.qp;
}

static void attr_to_wire(const struct ibv_qp_attr *a, struct rn_qp_attr *w)
{
	w->qp_state = a->qp_state;
	w->cur_qp_state = a->cur_qp_state;
	w->path_mtu = a->path_mtu;
	w->path_mig_state = a->path_mig_state;
	w->qkey = a->qkey;
	w->rq_psn = a->rq_psn;
	w->sq_psn = a->sq_psn;
	w->dest_qp_num = a->dest_qp_num;
	w->qp_access_flags = a->qp_access_flags;
	w->pkey_index = a->pkey_index;
	w->en_sqd_async_notify = a->en_sqd_async_notify;
	w->max_rd_atomic = a->max_rd_atomic;
	w->max_dest_rd_atomic = a->max_dest_rd_atomic;
	w->min_rnr_timer = a->min_rnr_timer;
	w->port_num = a->port_num;
	w->timeout = a->timeout;
	w->retry_cnt = a->retry_cnt;
	w->rnr_retry = a->rnr_retry;
	memcpy(w->ah_attr.dgid, a->ah_attr.grh.dgid.raw, 16);
	w->ah_attr.flow_label = a->ah_attr.grh.flow_label;
	w->ah_attr.sgid_index = a->ah_attr.grh.sgid_index;
	w->ah_attr.hop_limit = a->ah_attr.grh.hop_limit;
	w->ah_attr.traffic_class = a->ah_attr.grh.traffic_class;
	w->ah_attr.dlid = a->ah_attr.dlid;
	w->ah_attr.sl = a->ah_attr.sl;
	w->ah_attr.src_path_bits = a->ah_attr.src_path_bits;
	w->ah_attr.static_rate = a->ah_attr.static_rate;
	w->ah_attr.is_global = a->ah_attr.is_global;
	w->ah_attr.port_num = a->ah_attr.port_num;
}

static void attr_from_wire(const struct rn_qp_attr *w, struct ibv_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = w->qp_state;
	a->cur_qp_state = w->cur_qp_state;
	a->path_mtu = w->path_mtu;
	a->path_mig_state = w->path_mig_state;
	a->qkey = w->qkey;
	a->rq_psn = w->rq_psn;
	a->sq_psn = w->sq_psn;
	a->dest_qp_num = w->dest_qp_num;
	a->qp_access_flags = w->qp_access_flags;
	a->cap.max_send_wr = w->cap.max_send_wr;
	a->cap.max_recv_wr = w->cap.max_recv_wr;
	a->cap.max_send_sge = w->cap.max_send_sge;
	a->cap.max_recv_sge = w->cap.max_recv_sge;
	a->cap.max_inline_data = w->cap.max_inline_data;
	memcpy(a->ah_attr.grh.dgid.raw, w->ah_attr.dgid, 16);
	a->ah_attr.grh.flow_label = w->ah_attr.flow_label;
	a->ah_attr.grh.sgid_index = w->ah_attr.sgid_index;
	a->ah_attr.grh.hop_limit = w->ah_attr.hop_limit;
	a->ah_attr.grh.traffic_class = w->ah_attr.traffic_class;
	a->ah_attr.dlid = w->ah_attr.dlid;
	a->ah_attr.sl = w->ah_attr.sl;
	a->ah_attr.src_path_bits = w->ah_attr.src_path_bits;
	a->ah_attr.static_rate = w->ah_attr.static_rate;
	a->ah_attr.is_global = w->ah_attr.is_global;
	a->ah_attr.port_num = w->ah_attr.port_num;
	a->pkey_index = w->pkey_index;
	a->en_sqd_async_notify = w->en_sqd_async_notify;
	a->sq_draining = w->sq_draining;
	a->max_rd_atomic = w->max_rd_atomic;
	a->max_dest_rd_atomic = w->max_dest_rd_atomic;
	a->min_rnr_timer = w->min_rnr_timer;
	a->port_num = w->port_num;
	a->timeout = w->timeout;
	a->retry_cnt = w->retry_cnt;
	a->rnr_retry = w->rnr_retry;
}

/*
 * The QP's CQEs leave its CQs when it is destroyed or reset, as mlx5 takes
 * them out (rn_cq_discard_qp): a QP brought back from ERR through RESET
 * starts on CQs that hold none of its flushed WRs (rdma-core's own tests
 * poll it so).  A destroyed QP's send completions stay, as on rxe: a
 * consumer may still look for them (libfabric's verbs provider does).
 */
static void discard_cqes(struct ibv_qp *ibqp, bool destroy)
{
	bool keep_recv = ibqp->srq != NULL;

	if (ibqp->send_cq)
		rn_cq_discard_qp(to_rn_cq(ibqp->send_cq), ibqp->qp_num,
				 keep_recv, destroy);
	if (ibqp->recv_cq && ibqp->recv_cq != ibqp->send_cq)
		rn_cq_discard_qp(to_rn_cq(ibqp->recv_cq), ibqp->qp_num,
				 keep_recv, destroy);
}

int rn_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct rn_ctl_modify_qp_req req = {
		.hdr.op = RN_CTL_MODIFY_QP,
		.handle = to_rn_qp(ibqp)->handle,
		.attr_mask = mask,
	};
	struct rn_qp *qp = to_rn_qp(ibqp);
	struct rn_ctl_resp_hdr resp;
	bool reset = mask & IBV_QP_STATE && attr->qp_state == IBV_QPS_RESET;
	int ret;

	attr_to_wire(attr, &req.attr);
	/* The device sees deferred WRs before the QP changes state. */
	rn_qp_flush_deferred(qp);
	/* A reset empties the queues where our producers are: hold posting
	 * off so that they stay there until the device has moved.
	 */
	if (reset) {
		pthread_spin_lock(&qp->sq_lock);
		pthread_spin_lock(&qp->rq.lock);
		req.sq_seq = qp->sq_prod;
		req.rq_seq = qp->rq.prod;
		req.sq_wr_seq = qp->sq_wr_prod;
		req.rq_wr_seq = qp->rq.wr_prod;
	}
	if (rn_kernel_mode(ibqp->context))
		ret = rn_kernel_modify_qp(ibqp, attr, mask, &req);
	else
		ret = rn_ctl_call(to_rn_ctx(ibqp->context), &req, sizeof(req),
				  &resp, sizeof(resp), NULL, 0, NULL, 0);
	if (reset) {
		pthread_spin_unlock(&qp->rq.lock);
		pthread_spin_unlock(&qp->sq_lock);
	}
	if (reset && !ret)
		discard_cqes(ibqp, false);
	return ret;
}

int rn_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		struct ibv_qp_init_attr *init_attr)
{
	struct rn_qp *qp = to_rn_qp(ibqp);
	struct rn_ctl_handle_req req = {
		.hdr.op = RN_CTL_QUERY_QP,
		.handle = qp->handle,
	};
	struct rn_ctl_query_qp_resp resp;
	int ret;

	if (rn_kernel_mode(ibqp->context))
		return rn_kernel_query_qp(ibqp, attr, mask, init_attr);
	ret = rn_ctl_call(to_rn_ctx(ibqp->context), &req, sizeof(req), &resp,
			  sizeof(resp), NULL, 0, NULL, 0);
	if (ret)
		return ret;
	attr_from_wire(&resp.attr, attr);
	memset(init_attr, 0, sizeof(*init_attr));
	init_attr->qp_context = ibqp->qp_context;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->srq = ibqp->srq;
	init_attr->cap = attr->cap;
	init_attr->qp_type = ibqp->qp_type;
	init_attr->sq_sig_all = resp.sq_sig_all;
	return 0;
}

int rn_destroy_qp(struct ibv_qp *ibqp)
{
	struct rn_qp *qp = to_rn_qp(ibqp);
	int ret;

	/* Deferred WRs are handed over, then destroyed with the QP. */
	rn_qp_flush_deferred(qp);
	ret = rn_kernel_mode(ibqp->context) ?
		      ibv_cmd_destroy_qp(ibqp) :
		      rn_destroy_result(rn_ctl_handle_call(ibqp->context,
						 RN_CTL_DESTROY_QP, qp->handle));
	if (ret)
		return ret;
	if (ibqp->send_cq)
		send_qp_del(to_rn_cq(ibqp->send_cq), qp);
	discard_cqes(ibqp, true);
	if (qp->mem)
		munmap(qp->mem, qp->mem_size);
	pthread_spin_destroy(&qp->sq_lock);
	pthread_spin_destroy(&qp->rq.lock);
	free(qp);
	return 0;
}

/*
 * The device writes a message's data in order, in one pass, whatever the
 * operation: a consumer may poll its last byte.  No flags are defined.
 */
int rn_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
			      uint32_t flags)
{
	(void)qp;
	(void)op;
	return !flags;
}
