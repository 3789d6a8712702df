// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The control verbs: device and port queries, PD, MR, CQ and QP objects. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ringnic.h"

static bool kernel_mode(struct ibv_context *context)
{
	return to_rn_ctx(context)->kernel;
}

/* Destroying an object of a device that is gone frees our side and succeeds. */
static int destroy_result(int ret)
{
	return ret == ENODEV ? 0 : ret;
}

/* ---- device and port ----------------------------------------------------- */

int rn_query_device_ex(struct ibv_context *context,
		       const struct ibv_query_device_ex_input *input,
		       struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct rn_context *ctx = to_rn_ctx(context);
	const struct rn_device_attr *d = &ctx->attr;
	struct ibv_device_attr_ex a = {};

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;

	memcpy(a.orig_attr.fw_ver, d->fw_ver, sizeof(d->fw_ver));
	a.orig_attr.node_guid = d->node_guid;
	a.orig_attr.sys_image_guid = d->sys_image_guid;
	a.orig_attr.max_mr_size = d->max_mr_size;
	a.orig_attr.page_size_cap = d->page_size_cap;
	a.orig_attr.vendor_id = d->vendor_id;
	a.orig_attr.vendor_part_id = d->vendor_part_id;
	a.orig_attr.hw_ver = d->hw_ver;
	a.orig_attr.max_qp = d->max_qp;
	a.orig_attr.max_qp_wr = d->max_qp_wr;
	a.orig_attr.device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN |
				       IBV_DEVICE_SYS_IMAGE_GUID;
	a.orig_attr.max_sge = d->max_sge;
	a.orig_attr.max_sge_rd = d->max_sge;
	a.orig_attr.max_cq = d->max_cq;
	a.orig_attr.max_cqe = d->max_cqe;
	a.orig_attr.max_mr = d->max_mr;
	a.orig_attr.max_pd = d->max_pd;
	a.orig_attr.max_qp_rd_atom = d->max_qp_rd_atom;
	a.orig_attr.max_qp_init_rd_atom = d->max_qp_init_rd_atom;
	a.orig_attr.max_res_rd_atom = d->max_res_rd_atom;
	a.orig_attr.atomic_cap = IBV_ATOMIC_HCA;
	a.orig_attr.max_pkeys = RN_PKEY_TABLE_LEN;
	a.orig_attr.phys_port_cnt = RN_NUM_PORTS;
	/* Memory is never pinned: the device faults pages in as it copies. */
	a.odp_caps.general_caps = IBV_ODP_SUPPORT;
	a.odp_caps.per_transport_caps.rc_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
		IBV_ODP_SUPPORT_ATOMIC;
	a.phys_port_cnt_ex = RN_NUM_PORTS;

	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

int rn_query_port(struct ibv_context *context, uint8_t port,
		  struct ibv_port_attr *attr)
{
	(void)context;
	if (port != 1)
		return EINVAL;
	memset(attr, 0, sizeof(*attr));
	attr->state = IBV_PORT_ACTIVE;
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = IBV_MTU_4096;
	attr->gid_tbl_len = RN_GID_TABLE_LEN;
	attr->max_msg_sz = RN_MAX_MSG_SZ;
	attr->pkey_tbl_len = RN_PKEY_TABLE_LEN;
	attr->max_vl_num = 1;
	attr->active_width = 2; /* 4X */
	attr->active_speed = 32; /* EDR: 4X EDR is 100 Gb/s */
	attr->phys_state = 5; /* LinkUp */
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

/* ---- PD ------------------------------------------------------------------ */

struct ibv_pd *rn_alloc_pd(struct ibv_context *context)
{
	struct rn_ctl_alloc_pd_req req = { .hdr.op = RN_CTL_ALLOC_PD };
	struct rn_ctl_alloc_pd_resp resp;
	struct rn_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	if (kernel_mode(context)) {
		ret = rn_kernel_alloc_pd(context, pd);
	} else {
		ret = rn_ctl_call(to_rn_ctx(context), &req, sizeof(req), &resp,
				  sizeof(resp), NULL, 0, NULL, 0);
		pd->handle = resp.pd;
		pd->ibv_pd.handle = resp.pd;
	}
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	return &pd->ibv_pd;
}

static int handle_call(struct ibv_context *context, enum rn_ctl_op op,
		       uint32_t handle)
{
	struct rn_ctl_handle_req req = { .hdr.op = op, .handle = handle };
	struct rn_ctl_resp_hdr resp;

	return rn_ctl_call(to_rn_ctx(context), &req, sizeof(req), &resp,
			   sizeof(resp), NULL, 0, NULL, 0);
}

int rn_dealloc_pd(struct ibv_pd *ibpd)
{
	struct rn_pd *pd = to_rn_pd(ibpd);
	int ret = kernel_mode(ibpd->context) ?
			  ibv_cmd_dealloc_pd(ibpd) :
			  destroy_result(handle_call(ibpd->context,
						     RN_CTL_DEALLOC_PD, pd->handle));

	if (!ret)
		free(pd);
	return ret;
}

/* ---- MR ------------------------------------------------------------------ */

struct ibv_mr *rn_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
			 uint64_t iova, int access)
{
	struct rn_ctl_reg_mr_req req = {
		.hdr.op = RN_CTL_REG_MR,
		.addr = (uintptr_t)addr,
		.length = length,
		.iova = iova,
		.pd = to_rn_pd(ibpd)->handle,
		.access = access,
	};
	struct rn_ctl_reg_mr_resp resp;
	struct rn_mr *mr;
	int ret;

	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	if (kernel_mode(ibpd->context)) {
		ret = rn_kernel_reg_mr(mr, ibpd, &req);
	} else {
		ret = rn_ctl_call(to_rn_ctx(ibpd->context), &req, sizeof(req),
				  &resp, sizeof(resp), NULL, 0, NULL, 0);
		mr->handle = resp.handle;
		mr->vmr.ibv_mr.handle = resp.handle;
		mr->vmr.ibv_mr.lkey = resp.lkey;
		mr->vmr.ibv_mr.rkey = resp.rkey;
	}
	if (ret) {
		free(mr);
		errno = ret;
		return NULL;
	}
	mr->vmr.mr_type = RN_IBV_MR_TYPE_MR;
	mr->vmr.access = access;
	return &mr->vmr.ibv_mr;
}

int rn_dereg_mr(struct verbs_mr *vmr)
{
	struct rn_mr *mr = to_rn_mr(vmr);
	int ret = kernel_mode(vmr->ibv_mr.context) ?
			  ibv_cmd_dereg_mr(vmr) :
			  destroy_result(handle_call(vmr->ibv_mr.context,
						     RN_CTL_DEREG_MR, mr->handle));

	if (!ret)
		free(mr);
	return ret;
}

/* ---- CQ ------------------------------------------------------------------ */

#define RN_CQ_WC_FLAGS                                                         \
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |   \
	 IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |       \
	 IBV_WC_EX_WITH_DLID_PATH_BITS)

/*
 * A completion channel of userspace mode is a pipe (from ringnic-run's
 * shim): the device gets a write end of it and writes events into it
 * itself.  Reopening the read end through /proc gives that write end.
 */
static int channel_write_end(struct ibv_comp_channel *channel)
{
	char path[32];
	struct stat st;

	if (fstat(channel->fd, &st) || !S_ISFIFO(st.st_mode)) {
		errno = EINVAL;
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", channel->fd);
	return open(path, O_WRONLY | O_CLOEXEC | O_NONBLOCK);
}

static void channel_cq_add(struct rn_context *ctx, struct rn_cq *cq)
{
	pthread_mutex_lock(&ctx->channel_lock);
	cq->next_channel_cq = ctx->channel_cqs;
	ctx->channel_cqs = cq;
	pthread_mutex_unlock(&ctx->channel_lock);
}

static void channel_cq_del(struct rn_context *ctx, struct rn_cq *cq)
{
	struct rn_cq **p;

	pthread_mutex_lock(&ctx->channel_lock);
	for (p = &ctx->channel_cqs; *p; p = &(*p)->next_channel_cq)
		if (*p == cq) {
			*p = cq->next_channel_cq;
			break;
		}
	pthread_mutex_unlock(&ctx->channel_lock);
}

static struct rn_cq *cq_create(struct ibv_context *context,
			       const struct ibv_cq_init_attr_ex *attr)
{
	struct rn_ctl_create_cq_req req = { .hdr.op = RN_CTL_CREATE_CQ };
	struct rn_ctl_create_cq_resp resp;
	struct rn_cq *cq;
	int ret, memfd;

	if (attr->comp_mask & ~IBV_CQ_INIT_ATTR_MASK_FLAGS ||
	    attr->wc_flags & ~RN_CQ_WC_FLAGS ||
	    (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS &&
	     attr->flags & ~IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!attr->cqe || attr->cqe > to_rn_ctx(context)->attr.max_cqe ||
	    attr->comp_vector >= (uint32_t)context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->channel_wfd = -1;
	/* Events carry the handle ibv_get_cq_event turns back into the CQ. */
	req.user_handle = (uintptr_t)ibv_cq_ex_to_cq(&cq->ibv_cq);
	req.cqe = attr->cqe;
	if (kernel_mode(context)) {
		/* The channel is the kernel's; it signals it itself. */
		ret = rn_kernel_create_cq(context, cq, attr, &req, &resp);
		if (ret)
			goto err_free;
		goto mapped;
	}
	if (attr->channel) {
		cq->channel_wfd = channel_write_end(attr->channel);
		if (cq->channel_wfd < 0) {
			ret = errno;
			goto err_free;
		}
	}
	ret = rn_ctl_call(to_rn_ctx(context), &req, sizeof(req), &resp,
			  sizeof(resp), &cq->channel_wfd, attr->channel ? 1 : 0,
			  &memfd, 1);
	if (ret)
		goto err_channel;
	ret = ENOMEM;
	cq->mem_size = resp.mmap_size;
	cq->mem = rn_map_fd(memfd, cq->mem_size);
	if (!cq->mem)
		goto err_destroy;
	cq->ibv_cq.handle = resp.handle;
mapped:
	cq->handle = resp.handle;
	cq->ctrl = cq->mem;
	cq->ring = (struct rn_cqe *)((uint8_t *)cq->mem + RN_CQ_RING_OFFSET);
	cq->entries = resp.ring_entries;
	while ((1u << cq->log2_entries) < cq->entries)
		cq->log2_entries++;
	cq->single_threaded = attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS &&
			      attr->flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	pthread_mutex_init(&cq->send_qps_lock, NULL);
	cq->ibv_cq.cqe = cq->entries;
	rn_cq_init_poll_ops(cq);
	if (cq->channel_wfd >= 0)
		channel_cq_add(to_rn_ctx(context), cq);
	return cq;

err_destroy:
	handle_call(context, RN_CTL_DESTROY_CQ, resp.handle);
err_channel:
	if (cq->channel_wfd >= 0)
		close(cq->channel_wfd);
err_free:
	free(cq);
	errno = ret;
	return NULL;
}

struct ibv_cq *rn_create_cq(struct ibv_context *context, int cqe,
			    struct ibv_comp_channel *channel, int comp_vector)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = cqe > 0 ? cqe : 0,
		.channel = channel,
		.comp_vector = comp_vector >= 0 ? (uint32_t)comp_vector : UINT32_MAX,
	};
	struct rn_cq *cq = cq_create(context, &attr);

	return cq ? ibv_cq_ex_to_cq(&cq->ibv_cq) : NULL;
}

struct ibv_cq_ex *rn_create_cq_ex(struct ibv_context *context,
				  struct ibv_cq_init_attr_ex *attr)
{
	struct rn_cq *cq = cq_create(context, attr);

	return cq ? &cq->ibv_cq : NULL;
}

int rn_destroy_cq(struct ibv_cq *ibcq)
{
	struct rn_cq *cq = to_rn_cq(ibcq);
	int ret = kernel_mode(ibcq->context) ?
			  ibv_cmd_destroy_cq(ibcq) :
			  destroy_result(handle_call(ibcq->context,
						     RN_CTL_DESTROY_CQ, cq->handle));

	if (ret)
		return ret;
	if (cq->channel_wfd >= 0) {
		channel_cq_del(to_rn_ctx(ibcq->context), cq);
		close(cq->channel_wfd);
	}
	munmap(cq->mem, cq->mem_size);
	pthread_spin_destroy(&cq->lock);
	pthread_mutex_destroy(&cq->send_qps_lock);
	free(cq);
	return 0;
}

/* ---- QP ------------------------------------------------------------------ */

#define RN_SEND_OPS                                                            \
	(IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |                   \
	 IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |       \
	 IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |         \
	 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)

static int check_qp_attr(struct ibv_context *context,
			 const struct ibv_qp_init_attr_ex *attr)
{
	uint64_t mask = attr->comp_mask;

	if (mask & ~(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
		     IBV_QP_INIT_ATTR_CREATE_FLAGS))
		return EOPNOTSUPP;
	if (mask & IBV_QP_INIT_ATTR_CREATE_FLAGS && attr->create_flags)
		return EOPNOTSUPP;
	if (mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS &&
	    attr->send_ops_flags & ~RN_SEND_OPS)
		return EOPNOTSUPP;
	if (attr->qp_type != IBV_QPT_RC)
		return EOPNOTSUPP;
	if (!(mask & IBV_QP_INIT_ATTR_PD) || !attr->pd || attr->srq ||
	    !attr->send_cq || !attr->recv_cq)
		return EINVAL;
	if (attr->pd->context != context || attr->send_cq->context != context ||
	    attr->recv_cq->context != context)
		return EINVAL;
	return 0;
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
	req.pd = to_rn_pd(attr->pd)->handle;
	req.send_cq = to_rn_cq(attr->send_cq)->handle;
	req.recv_cq = to_rn_cq(attr->recv_cq)->handle;
	req.qp_type = attr->qp_type;
	req.sq_sig_all = !!attr->sq_sig_all;
	req.cap = (struct rn_qp_cap){
		.max_send_wr = attr->cap.max_send_wr,
		.max_recv_wr = attr->cap.max_recv_wr,
		.max_send_sge = attr->cap.max_send_sge,
		.max_recv_sge = attr->cap.max_recv_sge,
		.max_inline_data = attr->cap.max_inline_data,
	};
	if (kernel_mode(context)) {
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
	qp->sq = (uint8_t *)qp->mem + resp.sq_offset;
	qp->rq = (uint8_t *)qp->mem + resp.rq_offset;
	qp->sq_slots = resp.sq_slots;
	qp->rq_slots = resp.rq_slots;
	qp->cap = resp.cap;
	qp->sq_sig_all = req.sq_sig_all;
	pthread_spin_init(&qp->sq_lock, PTHREAD_PROCESS_PRIVATE);
	pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);

	ibqp = &qp->vqp.qp;
	ibqp->context = context;
	ibqp->qp_context = attr->qp_context;
	ibqp->pd = attr->pd;
	ibqp->send_cq = attr->send_cq;
	ibqp->recv_cq = attr->recv_cq;
	ibqp->qp_num = resp.qpn;
	ibqp->state = IBV_QPS_RESET;
	ibqp->qp_type = attr->qp_type;
	pthread_mutex_init(&ibqp->mutex, NULL);
	pthread_cond_init(&ibqp->cond, NULL);
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		qp->vqp.comp_mask |= RN_VERBS_QP_EX;
		rn_qp_init_wr_ops(qp);
	}
	send_qp_add(to_rn_cq(attr->send_cq), qp);

	/* What the caller asked for is at least what it got. */
	attr->cap.max_send_wr = resp.cap.max_send_wr;
	attr->cap.max_recv_wr = resp.cap.max_recv_wr;
	attr->cap.max_send_sge = resp.cap.max_send_sge;
	attr->cap.max_recv_sge = resp.cap.max_recv_sge;
	attr->cap.max_inline_data = resp.cap.max_inline_data;
	return ibqp;

err_destroy:
	handle_call(context, RN_CTL_DESTROY_QP, resp.handle);
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
		pthread_spin_lock(&qp->rq_lock);
		req.sq_seq = qp->sq_prod;
		req.rq_seq = qp->rq_prod;
	}
	if (kernel_mode(ibqp->context))
		ret = rn_kernel_modify_qp(ibqp, attr, mask, &req);
	else
		ret = rn_ctl_call(to_rn_ctx(ibqp->context), &req, sizeof(req),
				  &resp, sizeof(resp), NULL, 0, NULL, 0);
	if (reset) {
		pthread_spin_unlock(&qp->rq_lock);
		pthread_spin_unlock(&qp->sq_lock);
	}
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

	if (kernel_mode(ibqp->context))
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
	ret = kernel_mode(ibqp->context) ?
		      ibv_cmd_destroy_qp(ibqp) :
		      destroy_result(handle_call(ibqp->context,
						 RN_CTL_DESTROY_QP, qp->handle));
	if (ret)
		return ret;
	send_qp_del(to_rn_cq(ibqp->send_cq), qp);
	munmap(qp->mem, qp->mem_size);
	pthread_spin_destroy(&qp->sq_lock);
	pthread_spin_destroy(&qp->rq_lock);
	free(qp);
	return 0;
}
