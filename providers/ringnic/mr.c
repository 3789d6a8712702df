// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory regions (registration, re-registration, ibv_advise_mr) and
 * memory windows.  The context keeps its MRs by lkey: ibv_advise_mr names
 * them by that alone.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ringnic.h"

static struct rn_mr **mr_bucket(struct rn_context *ctx, uint32_t lkey)
{
	return &ctx->home->mr_hash[(lkey >> 8) & (RN_MR_HASH_SIZE - 1)];
}

static void mr_hash_add(struct rn_context *ctx, struct rn_mr *mr)
{
	struct rn_mr **b;

	pthread_mutex_lock(&ctx->home->mr_lock);
	b = mr_bucket(ctx, mr->vmr.ibv_mr.lkey);
	mr->next_by_key = *b;
	*b = mr;
	pthread_mutex_unlock(&ctx->home->mr_lock);
}

/*
 * The MR is deregistered: its entry goes, found by handle, since an
 * imported MR deregisters the registration whose object is in the index.
 */
static void mr_hash_del(struct rn_context *ctx, struct rn_mr *mr)
{
	struct rn_mr **p;

	pthread_mutex_lock(&ctx->home->mr_lock);
	for (p = mr_bucket(ctx, mr->vmr.ibv_mr.lkey); *p; p = &(*p)->next_by_key)
		if ((*p)->handle == mr->handle) {
			*p = mr->next_by_key;
			break;
		}
	pthread_mutex_unlock(&ctx->home->mr_lock);
}

static uint64_t mr_iova(uint64_t iova, int access)
{
	return access & IBV_ACCESS_ZERO_BASED ? 0 : iova;
}

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
	if (rn_kernel_mode(ibpd->context)) {
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
	mr->iova = mr_iova(iova, access);
	mr->pd_handle = to_rn_pd(ibpd)->handle;
	mr_hash_add(to_rn_ctx(ibpd->context), mr);
	return &mr->vmr.ibv_mr;
}

/*
 * ibv_rereg_mr: the keys stay.  libibverbs has checked the flags against
 * what is given, and updates the MR's addr, length and pd itself.
 */
int rn_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		void *addr, size_t length, int access)
{
	struct rn_mr *mr = to_rn_mr(vmr);
	struct ibv_context *context = vmr->ibv_mr.context;
	struct rn_ctl_rereg_mr_req req = {
		.hdr.op = RN_CTL_REREG_MR,
		.handle = mr->handle,
		.flags = flags,
	};
	struct rn_ctl_rereg_mr_resp resp;
	int ret;

	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		req.addr = (uintptr_t)addr;
		req.length = length;
		req.iova = (uintptr_t)addr;
	}
	if (flags & IBV_REREG_MR_CHANGE_PD)
		req.pd = to_rn_pd(pd)->handle;
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		req.access = access;
	if (rn_kernel_mode(context)) {
		ret = rn_kernel_rereg_mr(mr, flags, pd, addr, length, access, &req);
	} else {
		ret = rn_ctl_call(to_rn_ctx(context), &req, sizeof(req), &resp,
				  sizeof(resp), NULL, 0, NULL, 0);
		if (!ret) {
			vmr->ibv_mr.lkey = resp.lkey;
			vmr->ibv_mr.rkey = resp.rkey;
		}
	}
	if (ret) {
		errno = ret;
		return ret;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		vmr->access = access;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION)
		mr->iova = mr_iova((uintptr_t)addr, vmr->access);
	if (flags & IBV_REREG_MR_CHANGE_PD)
		mr->pd_handle = to_rn_pd(pd)->handle;
	return 0;
}

int rn_dereg_mr(struct verbs_mr *vmr)
{
	struct rn_mr *mr = to_rn_mr(vmr);
	int ret = rn_kernel_mode(vmr->ibv_mr.context) ?
			  ibv_cmd_dereg_mr(vmr) :
			  rn_destroy_result(rn_ctl_handle_call(vmr->ibv_mr.context,
						     RN_CTL_DEREG_MR, mr->handle));

	if (ret)
		return ret;
	mr_hash_del(to_rn_ctx(vmr->ibv_mr.context), mr);
	free(mr);
	return 0;
}

/*
 * ibv_import_mr: an MR of the context, as ringnicd describes it, named
 * through a PD object of the MR's own PD.
 */
struct ibv_mr *rn_import_mr(struct ibv_pd *ibpd, uint32_t handle)
{
	struct rn_ctl_handle_req req = {
		.hdr.op = RN_CTL_QUERY_MR,
		.handle = handle,
	};
	struct rn_ctl_query_mr_resp resp;
	struct rn_mr *mr;
	int ret;

	if (rn_kernel_mode(ibpd->context)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	ret = rn_ctl_call(to_rn_ctx(ibpd->context), &req, sizeof(req), &resp,
			  sizeof(resp), NULL, 0, NULL, 0);
	if (!ret && resp.pd != to_rn_pd(ibpd)->handle)
		ret = EINVAL;
	if (ret) {
		errno = ret;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	mr->handle = handle;
	mr->iova = resp.iova;
	mr->pd_handle = resp.pd;
	mr->vmr.ibv_mr.context = ibpd->context;
	mr->vmr.ibv_mr.pd = ibpd;
	mr->vmr.ibv_mr.addr = (void *)(uintptr_t)resp.iova;
	mr->vmr.ibv_mr.length = resp.length;
	mr->vmr.ibv_mr.handle = handle;
	mr->vmr.ibv_mr.lkey = resp.lkey;
	mr->vmr.ibv_mr.rkey = resp.rkey;
	mr->vmr.mr_type = RN_IBV_MR_TYPE_IMPORTED_MR;
	mr->vmr.access = resp.access;
	return &mr->vmr.ibv_mr;
}

/* The MR stays registered: only this process's object goes. */
void rn_unimport_mr(struct ibv_mr *ibmr)
{
	free(to_rn_mr(rn_container_of(ibmr, struct verbs_mr, ibv_mr)));
}

/* ---- ibv_advise_mr ---------------------------------------------------- */

/*
 * Where an SGE of an ODP MR of this PD is in our address space, checked as
 * the device would check it; false when it names no such memory.
 */
static bool odp_range(struct rn_context *ctx, struct ibv_pd *pd,
		      const struct ibv_sge *sge, bool write, uintptr_t *va)
{
	struct rn_mr *mr;
	bool ok = false;

	pthread_mutex_lock(&ctx->home->mr_lock);
	for (mr = *mr_bucket(ctx, sge->lkey); mr; mr = mr->next_by_key) {
		const struct ibv_mr *m = &mr->vmr.ibv_mr;

		if (m->lkey != sge->lkey)
			continue;
		/* By handle: an imported PD is another object of the PD. */
		ok = mr->pd_handle == to_rn_pd(pd)->handle &&
		     mr->vmr.access & IBV_ACCESS_ON_DEMAND &&
		     (!write || mr->vmr.access & IBV_ACCESS_LOCAL_WRITE) &&
		     sge->addr >= mr->iova && sge->addr - mr->iova <= m->length &&
		     sge->length <= m->length - (sge->addr - mr->iova);
		*va = (uintptr_t)m->addr + (sge->addr - mr->iova);
		break;
	}
	pthread_mutex_unlock(&ctx->home->mr_lock);
	return ok;
}

/*
 * Prefetching an ODP MR: the pages are ours, so we fault them in ourselves
 * (MADV_POPULATE_READ / _WRITE, or only a hint for NO_FAULT), and the
 * device's later access finds them present.  Without FLUSH the advice is
 * asynchronous in verbs: what cannot be populated is then not an error.
 */
int rn_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		 uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge)
{
	struct rn_context *ctx = to_rn_ctx(pd->context);
	long page = sysconf(_SC_PAGESIZE);
	uintptr_t va, start, end;
	uint32_t i;
	int how;

	switch (advice) {
	case IBV_ADVISE_MR_ADVICE_PREFETCH:
		how = MADV_POPULATE_READ;
		break;
	case IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE:
		how = MADV_POPULATE_WRITE;
		break;
	case IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT:
		how = MADV_WILLNEED;
		break;
	default:
		return EOPNOTSUPP;
	}
	if (flags & ~IBV_ADVISE_MR_FLAG_FLUSH)
		return EOPNOTSUPP;
	if (!num_sge || !sg_list)
		return EINVAL;
	for (i = 0; i < num_sge; i++) {
		if (!odp_range(ctx, pd, &sg_list[i], how == MADV_POPULATE_WRITE,
			       &va))
			return EINVAL;
		if (!sg_list[i].length)
			continue;
		start = va & ~(uintptr_t)(page - 1);
		end = (va + sg_list[i].length + page - 1) & ~(uintptr_t)(page - 1);
		if (madvise((void *)start, end - start, how) &&
		    flags & IBV_ADVISE_MR_FLAG_FLUSH)
			return errno == ENOMEM ? EFAULT : errno;
	}
	return 0;
}

/* ---- memory windows --------------------------------------------------- */

struct ibv_mw *rn_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct rn_ctl_alloc_mw_req req = {
		.hdr.op = RN_CTL_ALLOC_MW,
		.pd = to_rn_pd(pd)->handle,
		.type = type,
	};
	struct rn_ctl_alloc_mw_resp resp;
	struct rn_mw *mw;
	int ret;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	if (rn_kernel_mode(pd->context)) {
		ret = rn_kernel_alloc_mw(pd, type, mw, &req);
	} else {
		ret = rn_ctl_call(to_rn_ctx(pd->context), &req, sizeof(req),
				  &resp, sizeof(resp), NULL, 0, NULL, 0);
		mw->handle = resp.handle;
		mw->ibv_mw.handle = resp.handle;
		mw->ibv_mw.rkey = resp.rkey;
	}
	if (ret) {
		free(mw);
		errno = ret;
		return NULL;
	}
	/* ibv_alloc_mw leaves these to the provider. */
	mw->ibv_mw.context = pd->context;
	mw->ibv_mw.pd = pd;
	mw->ibv_mw.type = type;
	return &mw->ibv_mw;
}

int rn_dealloc_mw(struct ibv_mw *ibmw)
{
	struct rn_mw *mw = to_rn_mw(ibmw);
	int ret = rn_kernel_mode(ibmw->context) ?
			  rn_kernel_dealloc_mw(ibmw) :
			  rn_destroy_result(rn_ctl_handle_call(ibmw->context,
							       RN_CTL_DEALLOC_MW,
							       mw->handle));

	if (!ret)
		free(mw);
	return ret;
}
