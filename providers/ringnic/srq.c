// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Shared receive queues (basic and XRC) and XRC domains. */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "ringnic.h"

/* Point the SRQ at its memory (at creation, and after a resize). */
static void srq_attach(struct rn_srq *srq, void *mem, size_t size,
		       uint32_t slots, uint32_t max_wr)
{
	srq->mem = mem;
	srq->mem_size = size;
	srq->ctrl = mem;
	rn_recv_ring_init(&srq->rq, (uint8_t *)mem + RN_SRQ_RING_OFFSET, slots,
			  max_wr, srq->rq.max_sge, &srq->ctrl->prod,
			  &srq->ctrl->wr_cons);
}

static struct ibv_srq *srq_create(struct ibv_context *context,
				  struct ibv_srq_init_attr_ex *attr)
{
	struct rn_ctl_create_srq_req req = {
		.hdr.op = RN_CTL_CREATE_SRQ,
		.srq_type = IBV_SRQT_BASIC,
		.max_wr = attr->attr.max_wr,
		.max_sge = attr->attr.max_sge,
		.srq_limit = attr->attr.srq_limit,
	};
	uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			 IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	struct rn_ctl_create_srq_resp resp;
	struct rn_srq *srq;
	struct ibv_srq *ibsrq;
	int ret, memfd;
	void *mem = NULL;

	if (attr->comp_mask & ~known)
		goto unsupported;
	if (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE)
		req.srq_type = attr->srq_type;
	if (req.srq_type != IBV_SRQT_BASIC && req.srq_type != IBV_SRQT_XRC)
		goto unsupported;
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd ||
	    attr->pd->context != context)
		goto invalid;
	if (req.srq_type == IBV_SRQT_XRC) {
		if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) ||
		    !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) || !attr->xrcd ||
		    !attr->cq || attr->xrcd->context != context ||
		    attr->cq->context != context)
			goto invalid;
		req.xrcd = to_rn_xrcd(attr->xrcd)->handle;
		req.cq = to_rn_cq(attr->cq)->handle;
	}
	req.pd = to_rn_pd(attr->pd)->handle;
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	req.user_handle = (uintptr_t)&srq->vsrq.srq;
	if (rn_kernel_mode(context)) {
		ret = rn_kernel_create_srq(context, srq, attr, &req, &resp, &mem);
		if (ret)
			goto err_free;
	} else {
		ret = rn_ctl_call(to_rn_ctx(context), &req, sizeof(req), &resp,
				  sizeof(resp), NULL, 0, &memfd, 1);
		if (ret)
			goto err_free;
		mem = rn_map_fd(memfd, resp.mmap_size);
		if (!mem) {
			rn_ctl_handle_call(context, RN_CTL_DESTROY_SRQ,
					   resp.handle);
			ret = ENOMEM;
			goto err_free;
		}
		srq->vsrq.srq.handle = resp.handle;
	}
	srq->handle = resp.handle;
	srq->rq.max_sge = resp.max_sge;
	srq_attach(srq, mem, resp.mmap_size, resp.ring_slots, resp.max_wr);
	pthread_spin_init(&srq->rq.lock, PTHREAD_PROCESS_PRIVATE);

	ibsrq = &srq->vsrq.srq;
	ibsrq->context = context;
	ibsrq->srq_context = attr->srq_context;
	ibsrq->pd = attr->pd;
	pthread_mutex_init(&ibsrq->mutex, NULL);
	pthread_cond_init(&ibsrq->cond, NULL);
	srq->vsrq.srq_type = req.srq_type;
	srq->vsrq.srq_num = resp.srqn;
	if (req.srq_type == IBV_SRQT_XRC) {
		srq->vsrq.xrcd = &to_rn_xrcd(attr->xrcd)->vxrcd;
		srq->vsrq.cq = attr->cq;
	}
	attr->attr.max_wr = resp.max_wr;
	attr->attr.max_sge = resp.max_sge;
	return ibsrq;

err_free:
	free(srq);
	errno = ret;
	return NULL;
unsupported:
	errno = EOPNOTSUPP;
	return NULL;
invalid:
	errno = EINVAL;
	return NULL;
}

struct ibv_srq *rn_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	struct ibv_srq_init_attr_ex ex = {
		.srq_context = attr->srq_context,
		.attr = attr->attr,
		.comp_mask = IBV_SRQ_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_srq *srq = srq_create(pd->context, &ex);

	if (srq)
		attr->attr = ex.attr;
	return srq;
}

struct ibv_srq *rn_create_srq_ex(struct ibv_context *context,
				 struct ibv_srq_init_attr_ex *attr)
{
	return srq_create(context, attr);
}

/*
 * A resize moves the SRQ to new memory that holds the same WQEs: posting
 * waits (the ring's lock) until the old ring is replaced.
 */
int rn_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct rn_srq *srq = to_rn_srq(ibsrq);
	struct rn_ctl_modify_srq_req req = {
		.hdr.op = RN_CTL_MODIFY_SRQ,
		.handle = srq->handle,
		.attr_mask = mask,
		.max_wr = attr->max_wr,
		.srq_limit = attr->srq_limit,
	};
	struct rn_ctl_modify_srq_resp resp;
	void *mem = NULL;
	int ret, memfd;

	if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	pthread_spin_lock(&srq->rq.lock);
	if (rn_kernel_mode(ibsrq->context)) {
		ret = rn_kernel_modify_srq(ibsrq, attr, mask, &req, &resp, &mem);
	} else {
		ret = rn_ctl_call(to_rn_ctx(ibsrq->context), &req, sizeof(req),
				  &resp, sizeof(resp), NULL, 0, &memfd,
				  mask & IBV_SRQ_MAX_WR ? 1 : 0);
		if (!ret && mask & IBV_SRQ_MAX_WR) {
			mem = rn_map_fd(memfd, resp.mmap_size);
			if (!mem)
				ret = ENOMEM; /* the device moved: this SRQ is lost */
		}
	}
	if (!ret && mem) {
		munmap(srq->mem, srq->mem_size);
		srq_attach(srq, mem, resp.mmap_size, resp.ring_slots,
			   resp.max_wr);
	}
	pthread_spin_unlock(&srq->rq.lock);
	if (!ret && mask & IBV_SRQ_MAX_WR)
		attr->max_wr = resp.max_wr;
	return ret;
}

int rn_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct rn_ctl_handle_req req = {
		.hdr.op = RN_CTL_QUERY_SRQ,
		.handle = to_rn_srq(ibsrq)->handle,
	};
	struct rn_ctl_query_srq_resp resp;
	int ret;

	if (rn_kernel_mode(ibsrq->context))
		return rn_kernel_query_srq(ibsrq, attr);
	ret = rn_ctl_call(to_rn_ctx(ibsrq->context), &req, sizeof(req), &resp,
			  sizeof(resp), NULL, 0, NULL, 0);
	if (ret)
		return ret;
	attr->max_wr = resp.max_wr;
	attr->max_sge = resp.max_sge;
	attr->srq_limit = resp.srq_limit;
	return 0;
}

/* EBUSY, from the device, while a QP uses it. */
int rn_destroy_srq(struct ibv_srq *ibsrq)
{
	struct rn_srq *srq = to_rn_srq(ibsrq);
	int ret = rn_kernel_mode(ibsrq->context) ?
			  rn_kernel_destroy_srq(ibsrq) :
			  rn_destroy_result(rn_ctl_handle_call(ibsrq->context,
							       RN_CTL_DESTROY_SRQ,
							       srq->handle));

	if (ret)
		return ret;
	munmap(srq->mem, srq->mem_size);
	pthread_spin_destroy(&srq->rq.lock);
	free(srq);
	return 0;
}

int rn_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct rn_srq *srq = to_rn_srq(ibsrq);

	if (srq->vsrq.srq_type != IBV_SRQT_XRC)
		return EINVAL;
	*srq_num = srq->vsrq.srq_num;
	return 0;
}

/* ---- XRC domains ------------------------------------------------------- */

struct ibv_xrcd *rn_open_xrcd(struct ibv_context *context,
			      struct ibv_xrcd_init_attr *attr)
{
	struct rn_ctl_open_xrcd_req req = { .hdr.op = RN_CTL_OPEN_XRCD };
	uint32_t known = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	struct rn_ctl_open_xrcd_resp resp;
	struct rn_xrcd *xrcd;
	int fd = -1, ret;

	if (attr->comp_mask & ~known) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->comp_mask & IBV_XRCD_INIT_ATTR_FD)
		fd = attr->fd;
	if (attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS)
		req.oflags = attr->oflags;
	xrcd = calloc(1, sizeof(*xrcd));
	if (!xrcd) {
		errno = ENOMEM;
		return NULL;
	}
	if (rn_kernel_mode(context))
		ret = rn_kernel_open_xrcd(context, xrcd, attr);
	else
		ret = rn_ctl_call(to_rn_ctx(context), &req, sizeof(req), &resp,
				  sizeof(resp), &fd, fd >= 0 ? 1 : 0, NULL, 0);
	if (ret) {
		free(xrcd);
		errno = ret;
		return NULL;
	}
	if (!rn_kernel_mode(context)) {
		xrcd->handle = resp.handle;
		xrcd->vxrcd.handle = resp.handle;
	}
	xrcd->vxrcd.xrcd.context = context;
	return &xrcd->vxrcd.xrcd;
}

int rn_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct rn_xrcd *xrcd = to_rn_xrcd(ibxrcd);
	int ret = rn_kernel_mode(ibxrcd->context) ?
			  rn_kernel_close_xrcd(ibxrcd) :
			  rn_destroy_result(rn_ctl_handle_call(ibxrcd->context,
							       RN_CTL_CLOSE_XRCD,
							       xrcd->handle));

	if (!ret)
		free(xrcd);
	return ret;
}
