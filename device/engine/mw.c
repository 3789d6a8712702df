// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory windows on the data path: binding one (a BIND_MW WQE, which is
 * also how ibv_bind_mw binds type 1 windows), invalidating a type 2 window
 * locally (LOCAL_INV) or at the responder (SEND_WITH_INV).  The rules are
 * the IB spec's, in the order rxe checks them; what breaks one fails the
 * WQE (IBV_WC_MW_BIND_ERR, IBV_WC_LOC_QP_OP_ERR) and leaves the window as
 * it was.
 */
#include "engine/datapath.h"

void rn_mw_unbind(struct rn_mw *mw)
{
	if (mw->mr)
		mw->mr->windows--;
	mw->mr = NULL;
	mw->addr = 0;
	mw->length = 0;
	mw->access = 0;
	mw->qpn = 0;
}

#define RN_MW_ACCESS                                                           \
	(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |                     \
	 IBV_ACCESS_REMOTE_ATOMIC)

/*
 * A bind may name local write among the window's rights (rdma-core's own
 * tests do): rxe and mlx5 take it, and it means nothing for a window,
 * which only grants remote access.
 */
#define RN_MW_ACCESS_IGNORED IBV_ACCESS_LOCAL_WRITE

/* Is [addr, addr + len) of the MR's iova space inside it? */
static bool in_mr(const struct rn_mr *mr, uint64_t addr, uint64_t len)
{
	return addr >= mr->iova && addr - mr->iova <= mr->length &&
	       len <= mr->length - (addr - mr->iova);
}

static enum ibv_wc_status bind_window(struct rn_qp *qp, const struct rn_wqe *w)
{
	struct rn_device *dev = qp->client->dev;
	struct rn_mw *mw = rn_mw_lookup(dev, w->rkey);
	uint64_t len = w->bind.length;
	uint32_t access = w->bind.access & ~RN_MW_ACCESS_IGNORED;
	struct rn_mr *mr = NULL;

	if (!mw || mw->client->ctx != qp->client->ctx || mw->pd != qp->pd)
		return IBV_WC_MW_BIND_ERR;
	if (access & ~RN_MW_ACCESS)
		return IBV_WC_MW_BIND_ERR; /* zero-based windows are not offered */
	/* A type 2 window binds only when free, and never to nothing. */
	if (mw->type == IBV_MW_TYPE_2 && (mw->mr || !len))
		return IBV_WC_MW_BIND_ERR;
	if (len) {
		mr = rn_mr_lookup(dev, w->bind.lkey);
		if (!mr || mr->key != w->bind.lkey || mr->client->ctx != qp->client->ctx ||
		    mr->pd != qp->pd || mr->unmapped)
			return IBV_WC_MW_BIND_ERR;
		if (mr->access & IBV_ACCESS_ZERO_BASED ||
		    !(mr->access & IBV_ACCESS_MW_BIND))
			return IBV_WC_MW_BIND_ERR;
		/* Remote writers change the memory: it must be locally writable. */
		if (access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC) &&
		    !(mr->access & IBV_ACCESS_LOCAL_WRITE))
			return IBV_WC_MW_BIND_ERR;
		if (!in_mr(mr, w->remote_addr, len))
			return IBV_WC_MW_BIND_ERR;
	}
	rn_mw_unbind(mw);
	/* The consumer's key byte becomes the window's: old rkeys now fail. */
	mw->key = (mw->key & ~0xffu) | (w->rkey & 0xffu);
	if (!mr)
		return IBV_WC_SUCCESS;
	mw->mr = mr;
	mr->windows++;
	mw->addr = w->remote_addr;
	mw->length = len;
	mw->access = access;
	if (mw->type == IBV_MW_TYPE_2)
		mw->qpn = qp->qpn;
	return IBV_WC_SUCCESS;
}

enum ibv_wc_status rn_mw_bind(struct rn_qp *qp, const struct rn_wqe *w)
{
	enum ibv_wc_status st;

	rn_windows_lock(qp->client->dev);
	st = bind_window(qp, w);
	rn_windows_unlock(qp->client->dev);
	return st;
}

/* Only a bound type 2 window can be invalidated, by its key. */
static struct rn_mw *invalidatable(struct rn_client *client, struct rn_pd *pd,
				   uint32_t rkey)
{
	struct rn_mw *mw = rn_mw_lookup(client->dev, rkey);

	if (!mw || mw->key != rkey || mw->client->ctx != client->ctx || mw->pd != pd ||
	    mw->type != IBV_MW_TYPE_2 || !mw->mr)
		return NULL;
	return mw;
}

/* Invalidate the window rkey names, if client's in pd may: 0 or -1. */
static int invalidate(struct rn_client *client, struct rn_pd *pd, uint32_t rkey)
{
	struct rn_mw *mw;
	int ret = -1;

	rn_windows_lock(client->dev);
	mw = invalidatable(client, pd, rkey);
	if (mw) {
		rn_mw_unbind(mw);
		ret = 0;
	}
	rn_windows_unlock(client->dev);
	return ret;
}

enum ibv_wc_status rn_local_invalidate(struct rn_qp *qp, uint32_t rkey)
{
	return invalidate(qp->client, qp->pd, rkey) ? IBV_WC_LOC_QP_OP_ERR :
						      IBV_WC_SUCCESS;
}

int rn_remote_invalidate(const struct rn_responder *resp, uint32_t rkey)
{
	return invalidate(resp->target.client, resp->target.pd, rkey);
}
