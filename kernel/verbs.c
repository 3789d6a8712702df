// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The uverbs objects.  Creating one relays the provider's control request
 * (the command's driver data) to ringnicd and returns its response as the
 * driver response; memory ringnicd sends back becomes an mmap of the uverbs
 * file.  Destroying one tells ringnicd and always succeeds: a device whose
 * ringnicd is gone has nothing left to free.  Kernel consumers (no udata)
 * are not served.
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "ringnic.h"

atomic_t rn_live_entries = ATOMIC_INIT(0);

static struct rn_ucontext *udata_uc(struct ib_udata *udata)
{
	return rdma_udata_to_drv_context(udata, struct rn_ucontext, ibuc);
}

/* The request of op that the command carries, with its descriptors. */
static struct rn_req *req_from_udata(struct ib_udata *udata, u32 op,
				     u32 max_fds)
{
	const u8 __user *in = udata->inbuf;
	u32 size = rn_ctl_req_size(op);
	const struct rn_ctl_req_hdr *hdr;
	struct rn_kdev_cmd cmd;
	struct rn_req *req;
	int ret = -EINVAL;
	u32 i;

	if (udata->inlen != sizeof(cmd) + size)
		return ERR_PTR(-EINVAL);
	req = rn_req_new(RN_KDEV_REQUEST);
	if (!req)
		return ERR_PTR(-ENOMEM);
	if (copy_from_user(&cmd, in, sizeof(cmd)) ||
	    copy_from_user(req->body, in + sizeof(cmd), size)) {
		ret = -EFAULT;
		goto err;
	}
	hdr = (const void *)req->body;
	if (hdr->op != op || hdr->len != size || cmd.nfds > max_fds)
		goto err;
	req->len = size;
	for (i = 0; i < cmd.nfds; i++) {
		req->fds_in[i] = fget(cmd.fds[i]);
		if (!req->fds_in[i]) {
			ret = -EBADF;
			goto err;
		}
		req->nfds_in++;
	}
	return req;
err:
	rn_req_put(req);
	return ERR_PTR(ret);
}

/* A request the stub makes itself: op on one of ringnicd's handles. */
static struct rn_req *req_handle(u32 op, u32 handle)
{
	struct rn_req *req = rn_req_new(RN_KDEV_REQUEST);
	struct rn_ctl_handle_req *h;

	if (!req)
		return NULL;
	h = (void *)req->body;
	h->hdr.op = op;
	h->hdr.len = sizeof(*h);
	h->handle = handle;
	req->len = sizeof(*h);
	return req;
}

/* Send req: 0 when ringnicd carried it out and answered resp_len bytes. */
static int call(struct rn_ucontext *uc, struct rn_req *req, u32 resp_len)
{
	const struct rn_ctl_resp_hdr *hdr = (const void *)req->reply;
	int ret = rn_req_call(uc, req);

	if (ret)
		return ret;
	if (req->reply_len < sizeof(*hdr) || hdr->len != req->reply_len)
		return -EPROTO;
	if (hdr->status)
		return hdr->status > 0 && hdr->status < MAX_ERRNO ? -hdr->status :
								     -EPROTO;
	return req->reply_len == resp_len ? 0 : -EPROTO;
}

/* Tell ringnicd an object is gone; what it answers changes nothing. */
static void destroy_handle(struct rn_ucontext *uc, u32 op, u32 handle)
{
	struct rn_req *req = req_handle(op, handle);

	if (!req)
		return; /* freed with the context */
	call(uc, req, sizeof(struct rn_ctl_resp_hdr));
	rn_req_put(req);
}

static struct rdma_user_mmap_entry *mmap_entry_new(struct rn_ucontext *uc,
						   struct file *memfd,
						   size_t length)
{
	struct rn_mmap_entry *e = kzalloc(sizeof(*e), GFP_KERNEL);

	if (!e)
		return NULL;
	e->memfd = memfd ? get_file(memfd) : NULL;
	if (rdma_user_mmap_entry_insert(&uc->ibuc, &e->rdma, length)) {
		if (e->memfd)
			fput(e->memfd);
		kfree(e);
		return NULL;
	}
	atomic_inc(&rn_live_entries);
	return &e->rdma;
}

static void mmap_entry_remove(struct rdma_user_mmap_entry *entry)
{
	if (entry)
		rdma_user_mmap_entry_remove(entry);
}

static u64 split_u64(struct rn_kdev_u64 *w, u64 v)
{
	w->lo = lower_32_bits(v);
	w->hi = upper_32_bits(v);
	return v;
}

/*
 * Give the application what ringnicd answered: each memory descriptor an
 * mmap entry (stored in mem[], one per memory descriptor, in order), each
 * passed descriptor installed in the caller, the response after kresp.
 * nfds and pass are what the op returns; anything else is a broken reply.
 */
static int reply_to_udata(struct rn_ucontext *uc, struct rn_req *req,
			  struct ib_udata *udata, struct rn_kdev_cmd_resp *kresp,
			  u32 nfds, u32 pass, struct rdma_user_mmap_entry **mem)
{
	int fds[RN_CTL_MAX_FDS];
	u32 i, nmem = 0, npass = 0;
	u8 *out;
	int ret;

	if (req->nfds_out != nfds || req->fd_pass != pass)
		return -EPROTO;
	out = kzalloc(sizeof(*kresp) + req->reply_len, GFP_KERNEL);
	if (!out)
		return -ENOMEM;
	for (i = 0; i < nfds; i++) {
		struct file *f = req->fds_out[i];

		if (pass & BIT(i)) {
			ret = get_unused_fd_flags(O_CLOEXEC);
			if (ret < 0)
				goto err;
			fds[npass++] = ret;
			split_u64(&kresp->fds[i], ret);
			continue;
		}
		ret = -ENOMEM;
		mem[nmem] = mmap_entry_new(uc, f, PAGE_ALIGN(i_size_read(file_inode(f))));
		if (!mem[nmem])
			goto err;
		split_u64(&kresp->fds[i], rdma_user_mmap_get_offset(mem[nmem++]));
	}
	kresp->nfds = nfds;
	memcpy(out, kresp, sizeof(*kresp));
	memcpy(out + sizeof(*kresp), req->reply, req->reply_len);
	ret = ib_copy_to_udata(udata, out, sizeof(*kresp) + req->reply_len);
	if (ret)
		goto err;
	kfree(out);
	/* Installed last: a descriptor in the table cannot be taken back. */
	for (i = 0, npass = 0; i < nfds; i++)
		if (pass & BIT(i))
			fd_install(fds[npass++], get_file(req->fds_out[i]));
	return 0;
err:
	while (npass)
		put_unused_fd(fds[--npass]);
	while (nmem) {
		mmap_entry_remove(mem[--nmem]);
		mem[nmem] = NULL;
	}
	kfree(out);
	return ret;
}

/* ---- context and mmap ----------------------------------------------- */

static int rn_alloc_ucontext(struct ib_ucontext *ibuc, struct ib_udata *udata)
{
	struct rn_ucontext *uc = to_rn_uc(ibuc);
	struct rn_kdev_cmd_resp kresp = {};
	struct rdma_user_mmap_entry *mem[1] = {};
	struct rn_req *req;
	int ret;

	uc->dev = to_rn_dev(ibuc->device);
	xa_init(&uc->cqs);
	xa_init(&uc->qps);
	req = req_from_udata(udata, RN_CTL_OPEN, 1);
	if (IS_ERR(req))
		return PTR_ERR(req);
	/* A provider of another ABI gets a clear EPROTO, before ringnicd. */
	ret = -EPROTO;
	if (((const struct rn_ctl_open_req *)req->body)->version != RN_CTL_VERSION)
		goto err;
	ret = -ENOMEM;
	uc->close = rn_req_new(RN_KDEV_CLOSE);
	uc->status = vmalloc_user(PAGE_SIZE);
	if (!uc->close || !uc->status)
		goto err;
	uc->status_entry = mmap_entry_new(uc, NULL, PAGE_SIZE);
	if (!uc->status_entry)
		goto err;
	split_u64(&kresp.status, rdma_user_mmap_get_offset(uc->status_entry));

	ret = rn_ucontext_register(uc);
	if (ret)
		goto err;
	ret = call(uc, req, sizeof(struct rn_ctl_open_resp));
	/* fds: the device page (memory), the wake-up eventfd (passed) */
	if (!ret)
		ret = reply_to_udata(uc, req, udata, &kresp, 2, BIT(1), mem);
	if (ret) {
		rn_req_close(uc, uc->close);
		uc->close = NULL;
		goto err;
	}
	uc->page_entry = mem[0];
	rn_req_put(req);
	return 0;
err:
	mmap_entry_remove(uc->status_entry);
	vfree(uc->status);
	if (uc->close)
		rn_req_put(uc->close);
	rn_req_put(req);
	return ret;
}

static void rn_dealloc_ucontext(struct ib_ucontext *ibuc)
{
	struct rn_ucontext *uc = to_rn_uc(ibuc);

	rn_req_close(uc, uc->close);
	mmap_entry_remove(uc->page_entry);
	mmap_entry_remove(uc->status_entry);
	/* Still mapped after a disassociation: the mapping holds the page. */
	vfree(uc->status);
	xa_destroy(&uc->cqs);
	xa_destroy(&uc->qps);
}

/*
 * The device is going away under a live context.  Its mappings are plain
 * memory, nothing of the device's, and may stay; the status page tells the
 * provider that polls and posts must fail from now on.
 */
static void rn_disassociate_ucontext(struct ib_ucontext *ibuc)
{
	WRITE_ONCE(to_rn_uc(ibuc)->status->dead, 1);
}

static int rn_mmap(struct ib_ucontext *ibuc, struct vm_area_struct *vma)
{
	struct rn_ucontext *uc = to_rn_uc(ibuc);
	struct rdma_user_mmap_entry *entry;
	struct rn_mmap_entry *e;
	int ret;

	entry = rdma_user_mmap_entry_get(ibuc, vma);
	if (!entry)
		return -EINVAL;
	e = container_of(entry, struct rn_mmap_entry, rdma);
	if (e->memfd) {
		/* The mapping becomes one of ringnicd's memory itself. */
		vma_set_file(vma, e->memfd);
		vma->vm_pgoff = 0;
		ret = call_mmap(vma->vm_file, vma);
	} else if (vma->vm_flags & VM_WRITE) {
		ret = -EPERM;
	} else {
		vma->vm_flags &= ~VM_MAYWRITE;
		ret = remap_vmalloc_range(vma, uc->status, 0);
	}
	rdma_user_mmap_entry_put(entry);
	return ret;
}

static void rn_mmap_free(struct rdma_user_mmap_entry *entry)
{
	struct rn_mmap_entry *e = container_of(entry, struct rn_mmap_entry, rdma);

	if (e->memfd)
		fput(e->memfd);
	kfree(e);
	atomic_dec(&rn_live_entries);
}

/* ---- PD and MR -------------------------------------------------------- */

static int rn_alloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct rn_pd *pd = container_of(ibpd, struct rn_pd, ibpd);
	const struct rn_ctl_alloc_pd_resp *resp;
	struct rn_kdev_cmd_resp kresp = {};
	struct rn_req *req;
	int ret;

	if (!udata)
		return -EOPNOTSUPP;
	pd->uc = udata_uc(udata);
	req = req_from_udata(udata, RN_CTL_ALLOC_PD, 0);
	if (IS_ERR(req))
		return PTR_ERR(req);
	ret = call(pd->uc, req, sizeof(*resp));
	if (!ret) {
		resp = (const void *)req->reply;
		pd->handle = resp->pd;
		ret = reply_to_udata(pd->uc, req, udata, &kresp, 0, 0, NULL);
		if (ret)
			destroy_handle(pd->uc, RN_CTL_DEALLOC_PD, pd->handle);
	}
	rn_req_put(req);
	return ret;
}

static int rn_dealloc_pd(struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct rn_pd *pd = container_of(ibpd, struct rn_pd, ibpd);

	destroy_handle(pd->uc, RN_CTL_DEALLOC_PD, pd->handle);
	return 0;
}

static struct ib_mr *rn_reg_user_mr(struct ib_pd *ibpd, u64 start, u64 length,
				    u64 iova, int access, struct ib_udata *udata)
{
	struct rn_pd *pd = container_of(ibpd, struct rn_pd, ibpd);
	const struct rn_ctl_reg_mr_resp *resp;
	struct rn_kdev_cmd_resp kresp = {};
	struct rn_req *req;
	struct rn_mr *mr;
	int ret;

	if (!udata)
		return ERR_PTR(-EOPNOTSUPP);
	mr = kzalloc(sizeof(*mr), GFP_KERNEL);
	if (!mr)
		return ERR_PTR(-ENOMEM);
	mr->uc = pd->uc;
	req = req_from_udata(udata, RN_CTL_REG_MR, 0);
	if (IS_ERR(req)) {
		kfree(mr);
		return ERR_CAST(req);
	}
	ret = call(mr->uc, req, sizeof(*resp));
	if (!ret) {
		resp = (const void *)req->reply;
		mr->handle = resp->handle;
		mr->ibmr.lkey = resp->lkey;
		mr->ibmr.rkey = resp->rkey;
		ret = reply_to_udata(mr->uc, req, udata, &kresp, 0, 0, NULL);
		if (ret)
			destroy_handle(mr->uc, RN_CTL_DEREG_MR, mr->handle);
	}
	rn_req_put(req);
	if (ret) {
		kfree(mr);
		return ERR_PTR(ret);
	}
	return &mr->ibmr;
}

static int rn_dereg_mr(struct ib_mr *ibmr, struct ib_udata *udata)
{
	struct rn_mr *mr = container_of(ibmr, struct rn_mr, ibmr);

	destroy_handle(mr->uc, RN_CTL_DEREG_MR, mr->handle);
	kfree(mr);
	return 0;
}

/* ---- CQ --------------------------------------------------------------- */

static int rn_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			struct ib_udata *udata)
{
	struct rn_cq *cq = container_of(ibcq, struct rn_cq, ibcq);
	const struct rn_ctl_create_cq_resp *resp;
	struct rn_kdev_cmd_resp kresp = {};
	struct rn_req *req;
	int ret;

	if (!udata)
		return -EOPNOTSUPP;
	if (attr->flags)
		return -EOPNOTSUPP;
	cq->uc = udata_uc(udata);
	req = req_from_udata(udata, RN_CTL_CREATE_CQ, 0);
	if (IS_ERR(req))
		return PTR_ERR(req);
	ret = call(cq->uc, req, sizeof(*resp));
	if (ret)
		goto out;
	resp = (const void *)req->reply;
	cq->handle = resp->handle;
	ibcq->cqe = resp->ring_entries;
	ret = reply_to_udata(cq->uc, req, udata, &kresp, 1, 0, &cq->mem);
	if (!ret) {
		ret = xa_insert(&cq->uc->cqs, cq->handle, cq, GFP_KERNEL);
		if (ret)
			mmap_entry_remove(cq->mem);
	}
	if (ret)
		destroy_handle(cq->uc, RN_CTL_DESTROY_CQ, cq->handle);
out:
	rn_req_put(req);
	return ret;
}

static int rn_destroy_cq(struct ib_cq *ibcq, struct ib_udata *udata)
{
	struct rn_cq *cq = container_of(ibcq, struct rn_cq, ibcq);

	/* No event reaches it once it is out of the table (see daemon.c). */
	spin_lock(&rn_lock);
	xa_erase(&cq->uc->cqs, cq->handle);
	spin_unlock(&rn_lock);
	destroy_handle(cq->uc, RN_CTL_DESTROY_CQ, cq->handle);
	mmap_entry_remove(cq->mem);
	return 0;
}

/* ---- QP --------------------------------------------------------------- */

static int rn_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
			struct ib_udata *udata)
{
	struct rn_qp *qp = container_of(ibqp, struct rn_qp, ibqp);
	const struct rn_ctl_create_qp_resp *resp;
	struct rn_kdev_cmd_resp kresp = {};
	struct rn_req *req;
	int ret;

	if (!udata)
		return -EOPNOTSUPP;
	if (init->qp_type != IB_QPT_RC || init->srq || init->create_flags)
		return -EOPNOTSUPP;
	qp->uc = udata_uc(udata);
	req = req_from_udata(udata, RN_CTL_CREATE_QP, 0);
	if (IS_ERR(req))
		return PTR_ERR(req);
	ret = call(qp->uc, req, sizeof(*resp));
	if (ret)
		goto out;
	resp = (const void *)req->reply;
	qp->handle = resp->handle;
	ibqp->qp_num = resp->qpn;
	init->cap.max_send_wr = resp->cap.max_send_wr;
	init->cap.max_recv_wr = resp->cap.max_recv_wr;
	init->cap.max_send_sge = resp->cap.max_send_sge;
	init->cap.max_recv_sge = resp->cap.max_recv_sge;
	init->cap.max_inline_data = resp->cap.max_inline_data;
	ret = reply_to_udata(qp->uc, req, udata, &kresp, 1, 0, &qp->mem);
	if (!ret) {
		ret = xa_insert(&qp->uc->qps, qp->handle, qp, GFP_KERNEL);
		if (ret)
			mmap_entry_remove(qp->mem);
	}
	if (ret)
		destroy_handle(qp->uc, RN_CTL_DESTROY_QP, qp->handle);
out:
	rn_req_put(req);
	return ret;
}

static int rn_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
			struct ib_udata *udata)
{
	struct rn_qp *qp = container_of(ibqp, struct rn_qp, ibqp);
	struct rn_ctl_modify_qp_req *m;
	struct rn_req *req;
	int ret;

	if (!udata)
		return -EOPNOTSUPP;
	req = req_from_udata(udata, RN_CTL_MODIFY_QP, 0);
	if (IS_ERR(req))
		return PTR_ERR(req);
	/* Whatever the provider says, this is the QP the command names. */
	m = (void *)req->body;
	m->handle = qp->handle;
	ret = call(qp->uc, req, sizeof(struct rn_ctl_resp_hdr));
	rn_req_put(req);
	return ret;
}

static void attr_from_wire(const struct rn_ctl_query_qp_resp *r,
			   struct ib_qp_attr *a, struct ib_qp_init_attr *init)
{
	const struct rn_qp_attr *w = &r->attr;
	union ib_gid dgid;

	memset(a, 0, sizeof(*a));
	memset(init, 0, sizeof(*init));
	a->qp_state = w->qp_state;
	a->cur_qp_state = w->cur_qp_state;
	a->path_mtu = w->path_mtu;
	a->path_mig_state = w->path_mig_state;
	a->qkey = w->qkey;
	a->rq_psn = w->rq_psn;
	a->sq_psn = w->sq_psn;
	a->dest_qp_num = w->dest_qp_num;
	a->qp_access_flags = w->qp_access_flags;
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
	a->cap.max_send_wr = w->cap.max_send_wr;
	a->cap.max_recv_wr = w->cap.max_recv_wr;
	a->cap.max_send_sge = w->cap.max_send_sge;
	a->cap.max_recv_sge = w->cap.max_recv_sge;
	a->cap.max_inline_data = w->cap.max_inline_data;
	a->ah_attr.type = RDMA_AH_ATTR_TYPE_ROCE;
	rdma_ah_set_port_num(&a->ah_attr, w->ah_attr.port_num);
	rdma_ah_set_sl(&a->ah_attr, w->ah_attr.sl);
	rdma_ah_set_static_rate(&a->ah_attr, w->ah_attr.static_rate);
	if (w->ah_attr.is_global) {
		memcpy(dgid.raw, w->ah_attr.dgid, sizeof(dgid.raw));
		rdma_ah_set_grh(&a->ah_attr, &dgid, w->ah_attr.flow_label,
				w->ah_attr.sgid_index, w->ah_attr.hop_limit,
				w->ah_attr.traffic_class);
	}
	init->cap = a->cap;
	init->qp_type = IB_QPT_RC;
	init->sq_sig_type = r->sq_sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
}

static int rn_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		       struct ib_qp_init_attr *init)
{
	struct rn_qp *qp = container_of(ibqp, struct rn_qp, ibqp);
	struct rn_req *req = req_handle(RN_CTL_QUERY_QP, qp->handle);
	int ret;

	if (!req)
		return -ENOMEM;
	ret = call(qp->uc, req, sizeof(struct rn_ctl_query_qp_resp));
	if (!ret)
		attr_from_wire((const void *)req->reply, attr, init);
	rn_req_put(req);
	return ret;
}

static int rn_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct rn_qp *qp = container_of(ibqp, struct rn_qp, ibqp);

	spin_lock(&rn_lock);
	xa_erase(&qp->uc->qps, qp->handle);
	spin_unlock(&rn_lock);
	destroy_handle(qp->uc, RN_CTL_DESTROY_QP, qp->handle);
	mmap_entry_remove(qp->mem);
	return 0;
}

const struct ib_device_ops rn_verbs_ops = {
	.alloc_pd = rn_alloc_pd,
	.alloc_ucontext = rn_alloc_ucontext,
	.create_cq = rn_create_cq,
	.create_qp = rn_create_qp,
	.dealloc_pd = rn_dealloc_pd,
	.dealloc_ucontext = rn_dealloc_ucontext,
	.dereg_mr = rn_dereg_mr,
	.destroy_cq = rn_destroy_cq,
	.destroy_qp = rn_destroy_qp,
	.disassociate_ucontext = rn_disassociate_ucontext,
	.mmap = rn_mmap,
	.mmap_free = rn_mmap_free,
	.modify_qp = rn_modify_qp,
	.query_qp = rn_query_qp,
	.reg_user_mr = rn_reg_user_mr,

	INIT_RDMA_OBJ_SIZE(ib_cq, rn_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_pd, rn_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, rn_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, rn_ucontext, ibuc),
};
