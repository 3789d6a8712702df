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
RN_KRESP(kresp_ah, ib_uverbs_create_ah_resp, rn_ctl_create_ah_resp);
RN_KCMD(kcmd_srq, ibv_create_xsrq, rn_ctl_create_srq_req);
RN_KRESP(kresp_srq, ib_uverbs_create_srq_resp, rn_ctl_create_srq_resp);
RN_KCMD(kcmd_xrcd, ibv_open_xrcd, rn_ctl_open_xrcd_req);
RN_KRESP(kresp_xrcd, ib_uverbs_open_xrcd_resp, rn_ctl_open_xrcd_resp);
RN_KCMD(kcmd_mw, ibv_alloc_mw, rn_ctl_alloc_mw_req);
RN_KRESP(kresp_mw, ib_uverbs_alloc_mw_resp, rn_ctl_alloc_mw_resp);
RN_KCMD(kcmd_rereg, ibv_rereg_mr, rn_ctl_rereg_mr_req);
RN_KRESP(kresp_rereg, ib_uverbs_rereg_mr_resp, rn_ctl_rereg_mr_resp);
RN_KCMD(kcmd_resize, ibv_resize_cq, rn_ctl_resize_cq_req);
RN_KRESP(kresp_resize, ib_uverbs_resize_cq_resp, rn_ctl_resize_cq_resp);

/* MODIFY_SRQ has no response: its command says where the answer goes. */
struct kcmd_modify_srq {
	unsigned char ibv[sizeof(struct ibv_modify_srq)];
	struct rn_kdev_cmd k;
	struct rn_ctl_modify_srq_req req;
	struct rn_kdev_resp_at at;
};

struct kanswer_modify_srq {
	struct rn_kdev_cmd_resp k;
	struct rn_ctl_modify_srq_resp resp;
};

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
/* ... and the control response right after ours, no padding between. */
#define RN_KRESP_LAYOUT(name, ibv_t)                                           \
	static_assert(offsetof(struct name, k) == sizeof(struct ibv_t) &&       \
			      offsetof(struct name, resp) ==                   \
				      sizeof(struct ibv_t) +                   \
					      sizeof(struct rn_kdev_cmd_resp), \
		      #name " layout")
#define RN_KCMD_LAYOUT(name, ibv_t)                                            \
	static_assert(offsetof(struct name, k) == sizeof(struct ibv_t) &&       \
			      offsetof(struct name, req) ==                    \
				      sizeof(struct ibv_t) +                   \
					      sizeof(struct rn_kdev_cmd),      \
		      #name " layout")
RN_KRESP_LAYOUT(kresp_ah, ib_uverbs_create_ah_resp);
RN_KRESP_LAYOUT(kresp_srq, ib_uverbs_create_srq_resp);
RN_KRESP_LAYOUT(kresp_xrcd, ib_uverbs_open_xrcd_resp);
RN_KRESP_LAYOUT(kresp_mw, ib_uverbs_alloc_mw_resp);
RN_KRESP_LAYOUT(kresp_rereg, ib_uverbs_rereg_mr_resp);
RN_KRESP_LAYOUT(kresp_resize, ib_uverbs_resize_cq_resp);
RN_KCMD_LAYOUT(kcmd_srq, ibv_create_xsrq);
RN_KCMD_LAYOUT(kcmd_xrcd, ibv_open_xrcd);
RN_KCMD_LAYOUT(kcmd_mw, ibv_alloc_mw);
RN_KCMD_LAYOUT(kcmd_rereg, ibv_rereg_mr);
RN_KCMD_LAYOUT(kcmd_resize, ibv_resize_cq);
RN_KCMD_LAYOUT(kcmd_modify_srq, ibv_modify_srq);
static_assert(offsetof(struct kcmd_modify_srq, at) ==
		      sizeof(struct ibv_modify_srq) + sizeof(struct rn_kdev_cmd) +
			      sizeof(struct rn_ctl_modify_srq_req),
	      "modify srq cmd layout");
static_assert(offsetof(struct kanswer_modify_srq, resp) ==
		      sizeof(struct rn_kdev_cmd_resp), "modify srq answer layout");

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
	ret = rn_ibv_cmd_get_context(&ctx->ibv_ctx, (void *)cmd.ibv,
				     sizeof(cmd), (void *)resp.ibv, sizeof(resp));
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

/*
 * A target QP gets no driver data through: the kernel creates it for the
 * domain without udata, and ringnic.ko asks ringnicd for it on its own
 * (kernel/ringnic.h, struct rn_devctx).  It has no queues here, and no
 * handle of ringnicd's this context would use.
 */
static int create_xrc_recv(struct rn_qp *qp, struct rn_ctl_create_qp_resp *out)
{
	memset(out, 0, sizeof(*out));
	out->qpn = qp->vqp.qp.qp_num;
	qp->mem = NULL;
	qp->mem_size = 0;
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
	if (attr->qp_type == IBV_QPT_XRC_RECV)
		return create_xrc_recv(qp, out);
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

/*
 * The kernel answers from the port as ringnic.ko sees it (state from the
 * attached ringnicd and the netdev; GIDs and link layer its own): the
 * kernel's query_port has no context to ask ringnicd through.
 */
int rn_kernel_query_port(struct ibv_context *context, uint8_t port,
			 struct ibv_port_attr *attr)
{
	struct ibv_query_port cmd;

	return ibv_cmd_query_port(context, port, attr, &cmd, sizeof(cmd));
}

/*
 * libibverbs' command sends no driver data: ringnic.ko makes the request
 * of the address the kernel resolved, so req is ours alone.  ringnicd's
 * handle, which the UD sends name, comes back as the driver response.
 */
int rn_kernel_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr,
			struct rn_ah *ah, const struct rn_ctl_create_ah_req *req)
{
	struct kresp_ah resp = {};
	int ret;

	(void)req;
	ret = ibv_cmd_create_ah(pd, &ah->ibv_ah, attr, (void *)resp.ibv,
				sizeof(resp));
	if (!ret)
		ah->handle = resp.resp.handle;
	return ret;
}

int rn_kernel_destroy_ah(struct ibv_ah *ah)
{
	return ibv_cmd_destroy_ah(ah);
}

/* Memory ringnicd answered with: fds[0], size bytes. */
static void *answer_map(struct ibv_context *context,
			const struct rn_kdev_cmd_resp *k, size_t size)
{
	return k->nfds == 1 ? rn_kernel_map(to_rn_ctx(context), &k->fds[0], size,
					    PROT_READ | PROT_WRITE) :
			      NULL;
}

int rn_kernel_create_srq(struct ibv_context *context, struct rn_srq *srq,
			 struct ibv_srq_init_attr_ex *attr,
			 const struct rn_ctl_create_srq_req *req,
			 struct rn_ctl_create_srq_resp *out, void **mem)
{
	struct kcmd_srq cmd = { .req = *req };
	struct kresp_srq resp = {};
	int ret;

	SET_REQ_LEN(&cmd);
	ret = ibv_cmd_create_srq_ex(context, &srq->vsrq, attr, (void *)cmd.ibv,
				    sizeof(cmd), (void *)resp.ibv, sizeof(resp));
	if (ret)
		return ret;
	*out = resp.resp;
	*mem = answer_map(context, &resp.k, out->mmap_size);
	if (!*mem) {
		ibv_cmd_destroy_srq(&srq->vsrq.srq);
		return ENOMEM;
	}
	return 0;
}

/*
 * The uverbs command has no response: ringnic.ko writes the answer where
 * the command says (struct rn_kdev_resp_at).  A resize answers with the
 * SRQ's new memory.
 */
int rn_kernel_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			 int mask, const struct rn_ctl_modify_srq_req *req,
			 struct rn_ctl_modify_srq_resp *out, void **mem)
{
	struct kanswer_modify_srq answer = {};
	struct kcmd_modify_srq cmd = {
		.req = *req,
		.at = {
			.addr = {
				.lo = (uint32_t)(uintptr_t)&answer,
				.hi = (uint32_t)((uintptr_t)&answer >> 32),
			},
			.len = sizeof(answer),
		},
	};
	int ret;

	SET_REQ_LEN(&cmd);
	ret = ibv_cmd_modify_srq(srq, attr, mask, (void *)cmd.ibv, sizeof(cmd));
	if (ret)
		return ret;
	*out = answer.resp;
	if (!(req->attr_mask & IBV_SRQ_MAX_WR))
		return 0;
	*mem = answer_map(srq->context, &answer.k, out->mmap_size);
	return *mem ? 0 : ENOMEM; /* the device moved: this SRQ is lost */
}

int rn_kernel_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	struct ibv_query_srq cmd;

	return ibv_cmd_query_srq(srq, attr, &cmd, sizeof(cmd));
}

int rn_kernel_destroy_srq(struct ibv_srq *srq)
{
	return ibv_cmd_destroy_srq(srq);
}

/*
 * The kernel keeps domains by the file's inode and shares them between
 * processes itself: ringnicd only hears of a domain new to the kernel, and
 * the request carries no file.  A process that opens an existing one gets
 * no driver response (handle 0): ringnic.ko names the domain in every
 * request, whatever the provider writes there.
 */
int rn_kernel_open_xrcd(struct ibv_context *context, struct rn_xrcd *xrcd,
			struct ibv_xrcd_init_attr *attr)
{
	struct kcmd_xrcd cmd = { .req.hdr.op = RN_CTL_OPEN_XRCD };
	struct kresp_xrcd resp = {};
	struct ibv_xrcd_init_attr kattr = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = attr->comp_mask & IBV_XRCD_INIT_ATTR_FD ? attr->fd : -1,
		.oflags = attr->comp_mask & IBV_XRCD_INIT_ATTR_OFLAGS ?
				  attr->oflags : 0,
	};
	int ret;

	SET_REQ_LEN(&cmd);
	ret = ibv_cmd_open_xrcd(context, &xrcd->vxrcd, sizeof(xrcd->vxrcd),
				&kattr, (void *)cmd.ibv, sizeof(cmd),
				(void *)resp.ibv, sizeof(resp));
	if (!ret)
		xrcd->handle = resp.resp.handle;
	return ret;
}

int rn_kernel_close_xrcd(struct ibv_xrcd *xrcd)
{
	return ibv_cmd_close_xrcd(&to_rn_xrcd(xrcd)->vxrcd);
}

/*
 * The kernel opens a target QP itself (ib_open_qp): ringnic.ko is not
 * called, and the QP stays the one ringnic.ko holds for the domain.
 */
int rn_kernel_open_qp(struct ibv_context *context, struct rn_qp *qp,
		      struct ibv_qp_open_attr *attr)
{
	struct ib_uverbs_create_qp_resp resp;
	struct ibv_open_qp cmd;

	return ibv_cmd_open_qp(context, &qp->vqp, sizeof(qp->vqp), attr, &cmd,
			       sizeof(cmd), &resp, sizeof(resp));
}

int rn_kernel_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		       struct rn_mw *mw, const struct rn_ctl_alloc_mw_req *req)
{
	struct kcmd_mw cmd = { .req = *req };
	struct kresp_mw resp = {};
	int ret;

	SET_REQ_LEN(&cmd);
	ret = ibv_cmd_alloc_mw(pd, type, &mw->ibv_mw, (void *)cmd.ibv,
			       sizeof(cmd), (void *)resp.ibv, sizeof(resp));
	if (!ret)
		mw->handle = resp.resp.handle;
	return ret;
}

int rn_kernel_dealloc_mw(struct ibv_mw *mw)
{
	return ibv_cmd_dealloc_mw(mw);
}

/* The keys stay; libibverbs copies the kernel's (ringnicd's) back. */
int rn_kernel_rereg_mr(struct rn_mr *mr, int flags, struct ibv_pd *pd,
		       void *addr, size_t length, int access,
		       const struct rn_ctl_rereg_mr_req *req)
{
	struct kcmd_rereg cmd = { .req = *req };
	struct kresp_rereg resp = {};

	SET_REQ_LEN(&cmd);
	return ibv_cmd_rereg_mr(&mr->vmr, flags, addr, length, req->iova,
				access, pd, (void *)cmd.ibv, sizeof(cmd),
				(void *)resp.ibv, sizeof(resp));
}

int rn_kernel_resize_cq(struct ibv_cq *cq, const struct rn_ctl_resize_cq_req *req,
			struct rn_ctl_resize_cq_resp *out, void **mem)
{
	struct kcmd_resize cmd = { .req = *req };
	struct kresp_resize resp = {};
	int ret;

	SET_REQ_LEN(&cmd);
	ret = ibv_cmd_resize_cq(cq, req->cqe, (void *)cmd.ibv, sizeof(cmd),
				(void *)resp.ibv, sizeof(resp));
	if (ret)
		return ret;
	*out = resp.resp;
	*mem = answer_map(cq->context, &resp.k, out->mmap_size);
	return *mem ? 0 : ENOMEM; /* the device moved: this CQ is lost */
}
