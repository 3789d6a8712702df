// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Kernel mode: the device is an ib_device of ringnic.ko.  The same control
 * requests as over the socket travel as the driver data of the uverbs
 * commands (kernel-abi/ringnic-kdev.h); memory comes back as mmap offsets of
 * the uverbs file.  Completion channels and async events are the kernel's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ringnic.h"
#include "kernel-abi/ringnic-kdev.h"

/*
 * A command: libibverbs' part, then ours (4-byte aligned, see the ABI).
 * The kernel's structs end in flexible arrays, so theirs is kept as bytes.
 */
#define RN_KCMD(name, ibv_t, req_t)                                            \
	struct name {                                                          \
		unsigned char ibv[sizeof(struct ibv_t)];                       \
		struct rn_kdev_cmd k;                                          \
		struct req_t req;                                              \
	}
#define RN_KRESP(name, ibv_t, resp_t)                                          \
	struct name {                                                          \
		unsigned char ibv[sizeof(struct ibv_t)];                       \
		struct rn_kdev_cmd_resp k;                                     \
		struct resp_t resp;                                            \
	}

RN_KCMD(kcmd_open, ibv_get_context, rn_ctl_open_req);
RN_KRESP(kresp_open, ib_uverbs_get_context_resp, rn_ctl_open_resp);
RN_KCMD(kcmd_pd, ibv_alloc_pd, rn_ctl_alloc_pd_req);
RN_KRESP(kresp_pd, ib_uverbs_alloc_pd_resp, rn_ctl_alloc_pd_resp);
RN_KCMD(kcmd_mr, ibv_reg_mr, rn_ctl_reg_mr_req);
RN_KRESP(kresp_mr, ib_uverbs_reg_mr_resp, rn_ctl_reg_mr_resp);
RN_KCMD(kcmd_cq, ibv_create_cq, rn_ctl_create_cq_req);
RN_KRESP(kresp_cq, ib_uverbs_create_cq_resp, rn_ctl_create_cq_resp);
RN_KCMD(kcmd_qp, ibv_create_qp, rn_ctl_create_qp_req);
RN_KRESP(kresp_qp, ib_uverbs_create_qp_resp, rn_ctl_create_qp_resp);
RN_KCMD(kcmd_modify, ibv_modify_qp, rn_ctl_modify_qp_req);

/* Driver data starts right where the kernel's part ends. */
static_assert(offsetof(struct kresp_pd, k) ==
		      sizeof(struct ib_uverbs_alloc_pd_resp), "pd resp layout");
static_assert(offsetof(struct kresp_mr, k) ==
		      sizeof(struct ib_uverbs_reg_mr_resp), "mr resp layout");
static_assert(offsetof(struct kresp_open, k) ==
		      sizeof(struct ib_uverbs_get_context_resp), "open resp layout");
static_assert(offsetof(struct kresp_cq, k) ==
		      sizeof(struct ib_uverbs_create_cq_resp), "cq resp layout");
static_assert(offsetof(struct kresp_qp, k) ==
		      sizeof(struct ib_uverbs_create_qp_resp), "qp resp layout");
static_assert(offsetof(struct kcmd_mr, k) == sizeof(struct ibv_reg_mr),
	      "mr cmd layout");
static_assert(offsetof(struct kcmd_modify, k) == sizeof(struct ibv_modify_qp),
	      "modify cmd layout");

static uint64_t u64_of(const struct rn_kdev_u64 *w)
{
	return (uint64_t)w->hi << 32 | w->lo;
}

#define SET_REQ_LEN(cmd) ((cmd)->req.hdr.len = sizeof((cmd)->req))

bool rn_kernel_device(const struct verbs_sysfs_dev *sysfs)
{
	char path[IBV_SYSFS_PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/" RN_SYSFS_KERNEL, sysfs->ibdev_path);
	return !access(path, F_OK);
}

void *rn_kernel_map(struct rn_context *ctx, const struct rn_kdev_u64 *offset,
		    size_t size, int prot)
{
	void *mem = mmap(NULL, size, prot, MAP_SHARED,
			 ctx->ibv_ctx.context.cmd_fd, u64_of(offset));

	return mem == MAP_FAILED ? NULL : mem;
}

int rn_kernel_open(struct rn_context *ctx, int uffd)
{
	struct kcmd_open cmd = {
		.req.hdr.op = RN_CTL_OPEN,
		.req.version = RN_CTL_VERSION,
	};
	struct kresp_open resp = {};
	int ret;

	SET_REQ_LEN(&cmd);
	if (uffd >= 0) {
		cmd.k.fds[0] = uffd;
		cmd.k.nfds = 1;
	}
	ret = ibv_cmd_get_context(&ctx->ibv_ctx, (void *)cmd.ibv, sizeof(cmd),
				  (void *)resp.ibv, sizeof(resp));
	if (ret)
		return ret;
	if (resp.k.nfds != 2)
		return EPROTO;
	ctx->wake_fd = resp.k.fds[1].lo;
	ctx->dev_page = rn_kernel_map(ctx, &resp.k.fds[0], RN_DEV_PAGE_SIZE,
				      PROT_READ | PROT_WRITE);
	ctx->kstatus = rn_kernel_map(ctx, &resp.k.status, 4096, PROT_READ);
	if (!ctx->dev_page || !ctx->kstatus) {
		if (ctx->dev_page)
			munmap(ctx->dev_page, RN_DEV_PAGE_SIZE);
		if (ctx->kstatus)
			munmap((void *)ctx->kstatus, 4096);
		close(ctx->wake_fd);
		return ENOMEM;
	}
	ctx->attr = resp.resp.attr;
	return 0;
}

int rn_kernel_alloc_pd(struct ibv_context *context, struct rn_pd *pd)
{
	struct kcmd_pd cmd = { .req.hdr.op = RN_CTL_ALLOC_PD };
	struct kresp_pd resp = {};
	int ret;

	SET_REQ_LEN(&cmd);
	ret = ibv_cmd_alloc_pd(context, &pd->ibv_pd, (void *)cmd.ibv, sizeof(cmd),
			       (void *)resp.ibv, sizeof(resp));
	if (!ret)
		pd->handle = resp.resp.pd;
	return ret;
}

int rn_kernel_reg_mr(struct rn_mr *mr, struct ibv_pd *pd,
		     const struct rn_ctl_reg_mr_req *req)
{
	struct kcmd_mr cmd = { .req = *req };
	struct kresp_mr resp = {};
	int ret;

	SET_REQ_LEN(&cmd);
	ret = ibv_cmd_reg_mr(pd, (void *)(uintptr_t)req->addr, req->length,
			     req->iova, req->access, &mr->vmr, (void *)cmd.ibv,
			     sizeof(cmd), (void *)resp.ibv, sizeof(resp));
	if (!ret)
		mr->handle = resp.resp.handle;
	return ret;
}

int rn_kernel_create_cq(struct ibv_context *context, struct rn_cq *cq,
			const struct ibv_cq_init_attr_ex *attr,
			const struct rn_ctl_create_cq_req *req,
			struct rn_ctl_create_cq_resp *out)
{
	struct kcmd_cq cmd = { .req = *req };
	struct kresp_cq resp = {};
	int ret;

	SET_REQ_LEN(&cmd);
	ret = ibv_cmd_create_cq(context, attr->cqe, attr->channel,
				attr->comp_vector, ibv_cq_ex_to_cq(&cq->ibv_cq),
				(void *)cmd.ibv, sizeof(cmd), (void *)resp.ibv,
				sizeof(resp));
	if (ret)
		return ret;
	*out = resp.resp;
	cq->mem_size = out->mmap_size;
	cq->mem = resp.k.nfds == 1 ?
			  rn_kernel_map(to_rn_ctx(context), &resp.k.fds[0],
					cq->mem_size, PROT_READ | PROT_WRITE) :
			  NULL;
	if (!cq->mem) {
		ibv_cmd_destroy_cq(ibv_cq_ex_to_cq(&cq->ibv_cq));
		return ENOMEM;
	}
	return 0;
}

int rn_kernel_create_qp(struct ibv_context *context, struct rn_qp *qp,
			struct ibv_qp_init_attr_ex *attr,
			const struct rn_ctl_create_qp_req *req,
			struct rn_ctl_create_qp_resp *out)
{
	struct kcmd_qp cmd = { .req = *req };
	struct kresp_qp resp = {};
	struct ibv_qp_init_attr_ex kattr = *attr;
	int ret;

	SET_REQ_LEN(&cmd);
	/* Create flags, if any, are zero (checked): the kernel takes none. */
	kattr.comp_mask &= ~IBV_QP_INIT_ATTR_CREATE_FLAGS;
	ret = ibv_cmd_create_qp_ex(context, &qp->vqp, &kattr, (void *)cmd.ibv,
				   sizeof(cmd), (void *)resp.ibv, sizeof(resp));
	if (ret)
		return ret;
	*out = resp.resp;
	qp->mem_size = out->mmap_size;
	qp->mem = resp.k.nfds == 1 ?
			  rn_kernel_map(to_rn_ctx(context), &resp.k.fds[0],
					qp->mem_size, PROT_READ | PROT_WRITE) :
			  NULL;
	if (!qp->mem) {
		ibv_cmd_destroy_qp(&qp->vqp.qp);
		return ENOMEM;
	}
	return 0;
}

int rn_kernel_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
			const struct rn_ctl_modify_qp_req *req)
{
	struct kcmd_modify cmd = { .req = *req };

	SET_REQ_LEN(&cmd);
	return ibv_cmd_modify_qp(qp, attr, mask, (void *)cmd.ibv, sizeof(cmd));
}

int rn_kernel_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		       struct ibv_qp_init_attr *init_attr)
{
	struct ibv_query_qp cmd;

	return ibv_cmd_query_qp(qp, attr, mask, init_attr, &cmd, sizeof(cmd));
}
