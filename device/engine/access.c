// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A WQE's addresses resolved to another process's memory: local scatter
 * lists against the requester's MRs, remote ranges against the
 * responder's MRs and memory windows, each with its PD, rights and bounds
 * checked (core/memory.c).
 */
#include "engine/datapath.h"
#include "base/table.h"

struct rn_mr *rn_mr_lookup(struct rn_device *dev, uint32_t key)
{
	return key & RN_MW_KEY_BIT ? NULL : rn_table_get(&dev->mr_keys, key >> 8);
}

struct rn_mw *rn_mw_lookup(struct rn_device *dev, uint32_t key)
{
	if (!(key & RN_MW_KEY_BIT))
		return NULL;
	return rn_table_get(&dev->mw_keys, (key & ~RN_MW_KEY_BIT) >> 8);
}

/* A local scatter list: only MRs, never windows, serve local access. */
enum ibv_wc_status rn_sgl_resolve(struct rn_client *client, struct rn_pd *pd,
				  const struct rn_sge *sge, unsigned int n,
				  uint32_t access, struct rn_iovs *out)
{
	struct rn_device *dev = client->dev;
	unsigned int i;

	rn_iovs_init(out);
	for (i = 0; i < n; i++) {
		struct rn_mr *mr = rn_mr_lookup(dev, sge[i].lkey);

		if (rn_mr_check(mr, sge[i].lkey, pd, sge[i].addr,
				sge[i].length, access) ||
		    !rn_iovs_add(out, mr, sge[i].addr, sge[i].length))
			return IBV_WC_LOC_PROT_ERR;
	}
	if (out->len > RN_MAX_MSG_SZ)
		return IBV_WC_LOC_LEN_ERR;
	return IBV_WC_SUCCESS;
}

/*
 * A receive WQE's scatter list as far as a message of reach bytes fills
 * it: each SGE it reaches is checked for the part written into it, the
 * SGEs beyond are not (a zero-length SEND reaches none), as rxe and mlx5
 * check a receive's SGEs only where data lands.  The room of the whole
 * list decides a length error, which comes before any key check.
 */
enum ibv_wc_status rn_scatter_resolve(struct rn_client *client,
				      struct rn_pd *pd,
				      const struct rn_sge *sge, unsigned int n,
				      uint64_t reach, struct rn_iovs *out)
{
	struct rn_device *dev = client->dev;
	uint64_t room = 0, left = reach;
	unsigned int i;

	for (i = 0; i < n; i++)
		room += sge[i].length;
	if (reach > room)
		return IBV_WC_LOC_LEN_ERR;
	rn_iovs_init(out);
	for (i = 0; i < n && left; i++) {
		uint64_t part = sge[i].length < left ? sge[i].length : left;
		struct rn_mr *mr = rn_mr_lookup(dev, sge[i].lkey);

		if (rn_mr_check(mr, sge[i].lkey, pd, sge[i].addr, part,
				IBV_ACCESS_LOCAL_WRITE) ||
		    !rn_iovs_add(out, mr, sge[i].addr, part))
			return IBV_WC_LOC_PROT_ERR;
		left -= part;
	}
	return IBV_WC_SUCCESS;
}

/*
 * A local scatter list that fails only because it lies in memory its
 * owner unmapped under a registered MR: what a NIC would have read from
 * the pages the MR pins, and ringnicd cannot.
 */
bool rn_sgl_gone(struct rn_client *client, struct rn_pd *pd,
		 const struct rn_sge *sge, unsigned int n)
{
	bool gone = false;
	unsigned int i;

	for (i = 0; i < n; i++) {
		switch (rn_mr_check(rn_mr_lookup(client->dev, sge[i].lkey),
				    sge[i].lkey, pd, sge[i].addr,
				    sge[i].length, 0)) {
		case RN_MEM_OK:
			break;
		case RN_MEM_GONE:
			gone = true;
			break;
		default:
			return false;
		}
	}
	return gone;
}

/*
 * The target of a remote access, [addr, addr + len) of mr, goes on the
 * list.  A NIC pins an MR's pages, and a WRITE into memory its owner has
 * unmapped under the MR since lands in them, where nobody sees it; so here
 * it goes nowhere and succeeds.  (UCX, for one, frees a buffer while a
 * WRITE into it may still be on its way, and deregisters only later.)  A
 * READ or an atomic would need what those pages held, and an access that
 * reaches pages of a retired MR that are still mapped would be seen: they
 * fail, as before.
 */
static bool remote_add(const struct rn_target *t, struct rn_mr *mr,
		       uint32_t key, uint64_t addr, uint64_t len,
		       uint32_t need, uint32_t access, struct rn_iovs *out)
{
	switch (rn_mr_check(mr, key, t->pd, addr, len, need)) {
	case RN_MEM_OK:
		return rn_iovs_add(out, mr, addr, len);
	case RN_MEM_GONE:
		if (access != IBV_ACCESS_REMOTE_WRITE)
			return false;
		rn_iovs_add_gone(out, len);
		return true;
	default:
		return false;
	}
}

/*
 * Through a window: it must be bound, of this owner and PD, bound through
 * this QP if it is of type 2, and grant the right for the whole range;
 * the MR behind it is then checked as any other.
 */
static bool window_resolve(const struct rn_target *t, struct rn_mw *mw,
			   uint64_t addr, uint32_t rkey, uint64_t len,
			   uint32_t access, struct rn_iovs *out)
{
	if (!mw || mw->key != rkey || mw->client->ctx != t->client->ctx ||
	    mw->pd != t->pd || !mw->mr)
		return false;
	if (mw->type == IBV_MW_TYPE_2 && mw->qpn != t->qpn)
		return false;
	if ((mw->access & access) != access)
		return false;
	if (addr < mw->addr || addr - mw->addr > mw->length ||
	    len > mw->length - (addr - mw->addr))
		return false;
	/* The window granted the right: the MR needs none of its own. */
	return remote_add(t, mw->mr, mw->mr->key, addr, len, 0, access, out);
}

/* The responder's side of an RDMA access: QP rights, then the MR or window. */
bool rn_remote_resolve(const struct rn_target *t, uint64_t addr, uint32_t rkey,
		       uint64_t len, uint32_t access, struct rn_iovs *out)
{
	struct rn_device *dev = t->client->dev;

	rn_iovs_init(out);
	if (!(t->qp_access & access))
		return false;
	if (!len)
		return true;
	if (rkey & RN_MW_KEY_BIT) {
		bool ok;

		rn_windows_lock(dev);
		ok = window_resolve(t, rn_mw_lookup(dev, rkey), addr, rkey, len,
				    access, out);
		rn_windows_unlock(dev);
		return ok;
	}
	return remote_add(t, rn_mr_lookup(dev, rkey), rkey, addr, len, access,
			  access, out);
}

/* The data a SEND or WRITE carries: inline bytes or a gather list. */
enum ibv_wc_status rn_gather(struct rn_qp *qp, const struct rn_wqe *w,
			     struct rn_iovs *src, uint64_t *len)
{
	enum ibv_wc_status st;

	if (w->flags & RN_WQE_INLINE) {
		rn_iovs_init(src); /* the data is in the WQE */
		*len = w->inline_len;
		return IBV_WC_SUCCESS;
	}
	st = rn_sgl_resolve(qp->client, qp->pd, w->sge, w->num_sge, 0, src);
	*len = src->len;
	return st;
}

enum rn_dma_status rn_atomic_apply(struct rn_device *dev,
				   const struct rn_iovs *remote, bool fetch_add,
				   uint64_t operand, uint64_t swap, uint64_t *old)
{
	/* One engine executes them one at a time already. */
	bool lock = dev->nengines > 1;
	enum rn_dma_status st;
	uint64_t new;

	if (lock)
		pthread_mutex_lock(&dev->atomic_lock);
	st = rn_dma_from(remote, old, sizeof(*old));
	if (st == RN_DMA_OK) {
		new = fetch_add ? *old + operand : *old == operand ? swap : *old;
		if (new != *old)
			st = rn_dma_to(remote, &new, sizeof(new));
	}
	if (lock)
		pthread_mutex_unlock(&dev->atomic_lock);
	return st;
}
