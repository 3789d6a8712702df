// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory regions and memory windows as objects: registration,
 * re-registration, allocation and release.  How keys are checked on the
 * data path is in core/memory.c and engine/access.c, how windows are bound
 * in engine/mw.c.
 *
 * ringnicd never pins memory: it reaches a region by address when it
 * copies, and pages not present are faulted in by that access.  So
 * on-demand paging is what every MR does anyway; an ODP MR differs only in
 * that it need not be mapped when registered (an unmapped page at the time
 * of an access is a protection error), and an implicit ODP MR (address 0,
 * length SIZE_MAX) covers the whole address space.
 */
#include <errno.h>
#include <stdlib.h>

#include "verbs/verbs.h"
#include "base/random.h"
#include "base/table.h"

#define RN_MR_ACCESS_SUPPORTED                                                 \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                     \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |                    \
	 IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND |    \
	 IBV_ACCESS_HUGETLB | IBV_ACCESS_RELAXED_ORDERING)

static bool implicit_odp(uint64_t addr, uint64_t length, uint32_t access)
{
	return access & IBV_ACCESS_ON_DEMAND && !addr && length == UINT64_MAX;
}

/*
 * What a registration (or re-registration) to these values must satisfy.
 * Returns 0, EINVAL for a request no device could satisfy, EFAULT for
 * memory that is not there.
 */
static int check_region(struct rn_client *client, uint64_t addr,
			uint64_t length, uint64_t iova, uint32_t access)
{
	bool writable;

	if (access & ~RN_MR_ACCESS_SUPPORTED)
		return EINVAL;
	/* Remote writes and atomics imply that the memory changes locally. */
	if (access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	if (implicit_odp(addr, length, access))
		return access & IBV_ACCESS_ZERO_BASED ? EINVAL : 0;
	if (!length || length > client->dev->attr.max_mr_size ||
	    addr + length < addr)
		return EINVAL;
	if (!(access & IBV_ACCESS_ZERO_BASED) && iova + length < iova)
		return EINVAL;
	if (access & IBV_ACCESS_ON_DEMAND)
		return 0;
	writable = access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_ATOMIC);
	return rn_client_mapped(client, addr, length, writable) ? 0 : EFAULT;
}

static void set_region(struct rn_mr *mr, uint64_t addr, uint64_t length,
		       uint64_t iova, uint32_t access)
{
	mr->addr = addr;
	mr->length = length;
	mr->iova = access & IBV_ACCESS_ZERO_BASED ? 0 : iova;
	mr->access = access;
}

int rn_mr_reg(struct rn_client *client, const struct rn_ctl_reg_mr_req *req,
	      struct rn_ctl_reg_mr_resp *resp)
{
	struct rn_device *dev = client->dev;
	struct rn_pd *pd = rn_table_get(&client->ctx->pds, req->pd);
	struct rn_mr *mr;
	int64_t h, k;
	int ret;

	if (!pd)
		return EINVAL;
	ret = check_region(client, req->addr, req->length, req->iova,
			   req->access);
	if (ret)
		return ret;

	ret = ENOMEM;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return ENOMEM;
	h = rn_table_insert(&client->ctx->mrs, mr);
	if (h < 0)
		goto err_free;
	k = rn_table_insert(&dev->mr_keys, mr);
	if (k < 0)
		goto err_handle;

	mr->client = client;
	mr->pd = pd;
	mr->handle = h;
	/* The low byte is new and random each time an index is used: a
	 * stale key does not reach the next MR at the same index, and a peer
	 * cannot tell the key of the next MR from this one's (as rxe).
	 */
	dev->mr_tags[k] = rn_random_key_byte(dev->mr_tags[k]);
	mr->key = (uint32_t)k << 8 | dev->mr_tags[k];
	set_region(mr, req->addr, req->length, req->iova, req->access);
	ret = rn_guard_mr(mr);
	if (ret)
		goto err_key;
	pd->refs++;

	resp->handle = h;
	resp->lkey = mr->key;
	resp->rkey = mr->key;
	return 0;

err_key:
	rn_table_remove(&dev->mr_keys, k);
err_handle:
	rn_table_remove(&client->ctx->mrs, h);
err_free:
	free(mr);
	return ret;
}

/*
 * ibv_rereg_mr: the region moves, changes PD or rights, keeping its keys.
 * What does not change is taken from the MR.  A region windows are bound
 * to stays as it is (EBUSY), as the windows promise its memory.
 */
int rn_mr_rereg(struct rn_client *client, const struct rn_ctl_rereg_mr_req *req,
		struct rn_ctl_rereg_mr_resp *resp)
{
	struct rn_mr *mr = rn_table_get(&client->ctx->mrs, req->handle);
	uint32_t known = IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD |
			 IBV_REREG_MR_CHANGE_ACCESS;
	/* Whose address space the region is in: a new translation is the
	 * caller's (a member of the context other than the MR's maker, too).
	 */
	struct rn_client *owner = mr ? mr->client : NULL;
	uint64_t addr, length, iova;
	struct rn_pd *pd;
	uint32_t access;
	int ret;

	if (!mr || !req->flags || req->flags & ~known)
		return EINVAL;
	if (mr->windows)
		return EBUSY;
	pd = mr->pd;
	if (req->flags & IBV_REREG_MR_CHANGE_PD) {
		pd = rn_table_get(&client->ctx->pds, req->pd);
		if (!pd)
			return EINVAL;
	}
	addr = mr->addr;
	length = mr->length;
	iova = mr->iova;
	access = mr->access;
	if (req->flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		addr = req->addr;
		length = req->length;
		iova = req->iova;
		owner = client;
	}
	if (req->flags & IBV_REREG_MR_CHANGE_ACCESS)
		access = req->access;
	ret = check_region(owner, addr, length, iova, access);
	if (ret)
		return ret;

	rn_unguard_mr(mr);
	mr->client = owner;
	mr->unmapped = false;
	set_region(mr, addr, length, iova, access);
	ret = rn_guard_mr(mr);
	if (ret) {
		/* Unmapped since it was checked: the MR is no longer usable. */
		mr->unmapped = true;
		return ret;
	}
	mr->pd->refs--;
	mr->pd = pd;
	pd->refs++;
	resp->lkey = mr->key;
	resp->rkey = mr->key;
	return 0;
}

static void mr_free(struct rn_mr *mr)
{
	rn_unguard_mr(mr);
	rn_table_remove(&mr->client->dev->mr_keys, mr->key >> 8);
	rn_table_remove(&mr->client->ctx->mrs, mr->handle);
	mr->pd->refs--;
	free(mr);
}

int rn_mr_dereg(struct rn_client *client, uint32_t handle)
{
	struct rn_mr *mr = rn_table_get(&client->ctx->mrs, handle);

	if (!mr)
		return EINVAL;
	if (mr->windows)
		return EBUSY;
	mr_free(mr);
	return 0;
}

int rn_mr_query(struct rn_client *client, uint32_t handle,
		struct rn_ctl_query_mr_resp *resp)
{
	const struct rn_mr *mr = rn_table_get(&client->ctx->mrs, handle);

	if (!mr)
		return EINVAL;
	resp->iova = mr->iova;
	resp->length = mr->length;
	resp->pd = mr->pd->handle;
	resp->access = mr->access;
	resp->lkey = mr->key;
	resp->rkey = mr->key;
	return 0;
}

/* The client goes: its windows went first, so none is bound to the MR. */
void rn_mr_release(struct rn_mr *mr)
{
	mr_free(mr);
}

/* ---- memory windows --------------------------------------------------- */

int rn_mw_alloc(struct rn_client *client, const struct rn_ctl_alloc_mw_req *req,
		struct rn_ctl_alloc_mw_resp *resp)
{
	struct rn_device *dev = client->dev;
	struct rn_pd *pd = rn_table_get(&client->ctx->pds, req->pd);
	struct rn_mw *mw;
	int64_t h, k;

	if (!pd)
		return EINVAL;
	if (req->type != IBV_MW_TYPE_1 && req->type != IBV_MW_TYPE_2)
		return EINVAL;
	if (dev->nmws >= dev->attr.max_mw)
		return ENOMEM;
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return ENOMEM;
	h = rn_table_insert(&client->ctx->mws, mw);
	if (h < 0)
		goto err_free;
	k = rn_table_insert(&dev->mw_keys, mw);
	if (k < 0)
		goto err_handle;
	mw->client = client;
	mw->pd = pd;
	mw->handle = h;
	mw->type = req->type;
	dev->mw_tags[k] = rn_random_key_byte(dev->mw_tags[k]);
	mw->key = RN_MW_KEY_BIT | (uint32_t)k << 8 | dev->mw_tags[k];
	pd->refs++;
	dev->nmws++;
	resp->handle = h;
	resp->rkey = mw->key;
	return 0;

err_handle:
	rn_table_remove(&client->ctx->mws, h);
err_free:
	free(mw);
	return ENOMEM;
}

static void mw_free(struct rn_mw *mw)
{
	struct rn_device *dev = mw->client->dev;

	rn_mw_unbind(mw);
	rn_table_remove(&dev->mw_keys, (mw->key & ~RN_MW_KEY_BIT) >> 8);
	rn_table_remove(&mw->client->ctx->mws, mw->handle);
	mw->pd->refs--;
	dev->nmws--;
	free(mw);
}

/* A window goes bound or not: its rkey fails from now on. */
int rn_mw_dealloc(struct rn_client *client, uint32_t handle)
{
	struct rn_mw *mw = rn_table_get(&client->ctx->mws, handle);

	if (!mw)
		return EINVAL;
	mw_free(mw);
	return 0;
}

void rn_mw_release(struct rn_mw *mw)
{
	mw_free(mw);
}
