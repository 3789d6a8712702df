// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared receive queues: a ring of receive WQEs that the QPs attached to
 * it (or, for an XRC SRQ, the XRC_RECV QPs of its domain that senders
 * direct to it) take from in order.  An SRQ goes only when no QP uses it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/util.h"
#include "verbs/verbs.h"
#include "base/table.h"

static size_t srq_mem_size(uint32_t slots)
{
	return (RN_SRQ_RING_OFFSET + (size_t)slots * RN_SLOT_SIZE + 4095) &
	       ~(size_t)4095;
}

/* Point the queue at memory mem of a ring of 'slots' slots. */
static void srq_attach_mem(struct rn_srq *srq, void *mem, size_t size,
			   uint32_t slots)
{
	srq->mem = mem;
	srq->mem_size = size;
	srq->ctrl = mem;
	srq->rq.ring = (uint8_t *)mem + RN_SRQ_RING_OFFSET;
	srq->rq.slots = slots;
	srq->rq.prod = &srq->ctrl->prod;
	srq->rq.shared_cons = &srq->ctrl->cons;
	srq->rq.shared_wr_cons = &srq->ctrl->wr_cons;
	srq->max_wr = slots / srq->rq.wqe_slots;
}

int rn_srq_create(struct rn_client *client, const struct rn_ctl_create_srq_req *req,
		  struct rn_ctl_create_srq_resp *resp, int *memfd)
{
	struct rn_device *dev = client->dev;
	struct rn_pd *pd = rn_table_get(&client->ctx->pds, req->pd);
	struct rn_xrcd *xrcd = NULL;
	struct rn_cq *cq = NULL;
	struct rn_srq *srq;
	uint32_t slots;
	size_t size;
	void *mem;
	int64_t h, n;
	int ret = ENOMEM;

	if (!pd || !req->max_wr || req->max_wr > RN_MAX_SRQ_WR ||
	    req->max_sge > RN_MAX_SGE)
		return EINVAL;
	if (req->srq_type == IBV_SRQT_XRC) {
		xrcd = rn_xrcd_of(client, req->xrcd);
		cq = rn_table_get(&client->ctx->cqs, req->cq);
		if (!xrcd || !cq)
			return EINVAL;
	} else if (req->srq_type != IBV_SRQT_BASIC) {
		return EOPNOTSUPP;
	} else if (req->xrcd || req->cq) {
		return EINVAL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return ENOMEM;
	srq->rq.wqe_slots = RN_RECV_WQE_SLOTS(req->max_sge ?: 1);
	srq->rq.max_sge = (srq->rq.wqe_slots * RN_SLOT_SIZE - RN_RECV_HDR_SIZE) /
			  sizeof(struct rn_sge);
	if (srq->rq.max_sge > RN_MAX_SGE)
		srq->rq.max_sge = RN_MAX_SGE;
	slots = rn_roundup_pow2((uint64_t)req->max_wr * srq->rq.wqe_slots);
	size = srq_mem_size(slots);
	if (rn_charge(client, size))
		goto err_free;
	mem = rn_shared_alloc(size, memfd);
	if (!mem)
		goto err_charge;
	h = rn_table_insert(&client->ctx->srqs, srq);
	if (h < 0)
		goto err_unmap;
	n = rn_table_insert(&dev->srqns, srq);
	if (n < 0)
		goto err_handle;

	srq_attach_mem(srq, mem, size, slots);
	srq->client = client;
	srq->handle = h;
	srq->srqn = n;
	srq->user_handle = req->user_handle;
	srq->type = req->srq_type;
	srq->pd = pd;
	srq->cq = cq;
	srq->xrcd = xrcd;
	pd->refs++;
	if (cq) {
		cq->refs++;
		/* Engine 0 runs the XRC targets that complete into it
		 * (verbs/qp.c); the context's engine runs its other QPs.
		 */
		if (client->ctx->engine != client->dev->engines[0])
			cq->shared = true;
	}
	if (xrcd)
		rn_xrcd_get(xrcd);

	resp->handle = h;
	resp->srqn = srq->srqn;
	resp->max_wr = srq->max_wr;
	resp->max_sge = srq->rq.max_sge;
	resp->ring_slots = slots;
	resp->mmap_size = size;
	return 0;

err_handle:
	rn_table_remove(&client->ctx->srqs, h);
err_unmap:
	munmap(mem, size);
	close(*memfd);
err_charge:
	rn_uncharge(client, size);
err_free:
	free(srq);
	return ret;
}

/*
 * Move the queue to a ring of 'slots' slots.  The WQEs waiting keep their
 * counters (the ring is indexed by counter modulo its size), and so do the
 * provider's fields: it waits for the answer and posts nothing meanwhile.
 */
static int srq_resize(struct rn_srq *srq, uint32_t max_wr, int *memfd,
		      struct rn_ctl_modify_srq_resp *resp)
{
	uint32_t prod = __atomic_load_n(&srq->ctrl->prod, __ATOMIC_ACQUIRE);
	uint32_t wr_prod = __atomic_load_n(&srq->ctrl->wr_prod, __ATOMIC_ACQUIRE);
	uint32_t slots = rn_roundup_pow2((uint64_t)max_wr * srq->rq.wqe_slots);
	uint32_t used = prod - srq->rq.head, c;
	struct rn_srq_ctrl *ctrl;
	size_t size;
	void *mem;

	if (used > srq->rq.slots || wr_prod - srq->rq.wr_cons > srq->max_wr)
		return EINVAL; /* the provider's counters are broken */
	if (wr_prod - srq->rq.wr_cons > max_wr || used > slots)
		return EINVAL; /* would not hold what waits */
	size = srq_mem_size(slots);
	if (rn_charge(srq->client, size))
		return ENOMEM;
	mem = rn_shared_alloc(size, memfd);
	if (!mem) {
		rn_uncharge(srq->client, size);
		return ENOMEM;
	}
	ctrl = mem;
	for (c = srq->rq.head; c != prod; c++)
		memcpy((uint8_t *)mem + RN_SRQ_RING_OFFSET +
			       (size_t)(c & (slots - 1)) * RN_SLOT_SIZE,
		       srq->rq.ring + (size_t)(c & (srq->rq.slots - 1)) * RN_SLOT_SIZE,
		       RN_SLOT_SIZE);
	ctrl->prod = prod;
	ctrl->wr_prod = wr_prod;
	ctrl->cons = srq->rq.head;
	ctrl->wr_cons = srq->rq.wr_cons;
	munmap(srq->mem, srq->mem_size);
	rn_uncharge(srq->client, srq->mem_size);
	srq_attach_mem(srq, mem, size, slots);
	resp->mmap_size = size;
	return 0;
}

int rn_srq_modify(struct rn_client *client, const struct rn_ctl_modify_srq_req *req,
		  struct rn_ctl_modify_srq_resp *resp, int *memfd)
{
	struct rn_srq *srq = rn_table_get(&client->ctx->srqs, req->handle);
	int ret;

	if (!srq || req->attr_mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	if (req->attr_mask & IBV_SRQ_MAX_WR &&
	    (!req->max_wr || req->max_wr > RN_MAX_SRQ_WR))
		return EINVAL;
	if (req->attr_mask & IBV_SRQ_LIMIT &&
	    req->srq_limit > (req->attr_mask & IBV_SRQ_MAX_WR ? req->max_wr :
								 srq->max_wr))
		return EINVAL;
	if (req->attr_mask & IBV_SRQ_MAX_WR) {
		ret = srq_resize(srq, req->max_wr, memfd, resp);
		if (ret)
			return ret;
	}
	if (req->attr_mask & IBV_SRQ_LIMIT)
		srq->limit = req->srq_limit;
	resp->max_wr = srq->max_wr;
	resp->ring_slots = srq->rq.slots;
	return 0;
}

int rn_srq_query(struct rn_client *client, uint32_t handle,
		 struct rn_ctl_query_srq_resp *resp)
{
	struct rn_srq *srq = rn_table_get(&client->ctx->srqs, handle);

	if (!srq)
		return EINVAL;
	resp->max_wr = srq->max_wr;
	resp->max_sge = srq->rq.max_sge;
	resp->srq_limit = srq->limit;
	return 0;
}

static void srq_free(struct rn_srq *srq)
{
	struct rn_client *client = srq->client;

	rn_table_remove(&client->dev->srqns, srq->srqn);
	rn_table_remove(&client->ctx->srqs, srq->handle);
	srq->pd->refs--;
	if (srq->cq)
		srq->cq->refs--;
	if (srq->xrcd)
		rn_xrcd_put(client->dev, srq->xrcd);
	munmap(srq->mem, srq->mem_size);
	rn_uncharge(client, srq->mem_size);
	free(srq);
}

int rn_srq_destroy(struct rn_client *client, uint32_t handle)
{
	struct rn_srq *srq = rn_table_get(&client->ctx->srqs, handle);

	if (!srq)
		return EINVAL;
	if (srq->refs)
		return EBUSY;
	srq_free(srq);
	return 0;
}

/* The client goes: its QPs went first, so nothing uses the SRQ. */
void rn_srq_release(struct rn_srq *srq)
{
	srq_free(srq);
}
