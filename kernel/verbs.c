// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The uverbs objects.  Creating one relays the provider's control request
 * (the command's driver data) to ringnicd and returns its response as the
 * driver response; memory ringnicd sends back becomes an mmap of the uverbs
 * file.  Destroying one tells ringnicd and always succeeds: a device whose
 * ringnicd is gone has nothing left to free.  Kernel consumers (no udata)
 * get only what the kernel's MAD layer needs for QP1 (gsi.c).
 *
 * The stub reads nothing of a request but the handles: where the kernel
 * has resolved an object a request names (PD, CQ, SRQ, XRC domain), the
 * handle ringnicd gets is that object's, whatever the provider wrote, so
 * that ringnicd's uses and the kernel's use counts agree.  Two requests
 * the provider cannot send are the stub's own: CREATE_AH (libibverbs'
 * create_ah command carries no driver data; the request is made of the
 * attributes the kernel resolved) and CREATE_QP of an XRC target QP (the
 * kernel creates those without udata; see struct rn_devctx).
 */
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>
#include <rdma/uverbs_ioctl.h>

#include "compat.h"
#include "ringnic.h"

atomic_t rn_live_entries = ATOMIC_INIT(0);

static struct rn_ucontext *udata_uc(struct ib_udata *udata)
{
	return rdma_udata_to_drv_context(udata, struct rn_ucontext, ibuc);
}

static struct rn_pd *to_pd(struct ib_pd *ibpd)
{
	return container_of(ibpd, struct rn_pd, ibpd);
}

static struct rn_cq *to_cq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct rn_cq, ibcq);
}

static struct rn_srq *to_srq(struct ib_srq *ibsrq)
{
	return container_of(ibsrq, struct rn_srq, ibsrq);
}

static struct rn_xrcd *to_xrcd(struct ib_xrcd *ibxrcd)
{
	return container_of(ibxrcd, struct rn_xrcd, ibxrcd);
}

/*
 * The request of op that the command carries, with its descriptors, and
 * the tail_len bytes after it into tail (MODIFY_SRQ's struct
 * rn_kdev_resp_at).
 */
static struct rn_req *req_from_cmd(struct ib_udata *udata, u32 op,
				   u32 max_fds, void *tail, u32 tail_len)
{
	const u8 __user *in = udata->inbuf;
	u32 size = rn_ctl_req_size(op);
	const struct rn_ctl_req_hdr *hdr;
	struct rn_kdev_cmd cmd;
	struct rn_req *req;
	int ret = -EINVAL;
	u32 i;

	if (udata->inlen != sizeof(cmd) + size + tail_len)
		return ERR_PTR(-EINVAL);
	req = rn_req_new(RN_KDEV_REQUEST);
	if (!req)
		return ERR_PTR(-ENOMEM);
	if (copy_from_user(&cmd, in, sizeof(cmd)) ||
	    copy_from_user(req->body, in + sizeof(cmd), size) ||
	    (tail_len && copy_from_user(tail, in + sizeof(cmd) + size, tail_len))) {
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

static struct rn_req *req_from_udata(struct ib_udata *udata, u32 op,
				     u32 max_fds)
{
	return req_from_cmd(udata, op, max_fds, NULL, 0);
}

/* A request the stub makes itself, of size bytes: the body to fill in. */
static struct rn_req *req_own(u32 op, u32 size, void **body)
{
	struct rn_req *req = rn_req_new(RN_KDEV_REQUEST);
	struct rn_ctl_req_hdr *hdr;

	if (!req)
		return NULL;
	hdr = (void *)req->body;
	hdr->op = op;
	hdr->len = size;
	req->len = size;
	*body = req->body;
	return req;
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
	if (udata->outlen < sizeof(*kresp) + req->reply_len)
		return -ENOSPC;
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
	xa_init(&uc->srqs);
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
	xa_destroy(&uc->srqs);
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
		rn_vm_flags_clear(vma, VM_MAYWRITE);
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

/* ---- the device's own context (struct rn_devctx) ---------------------- */

static void devctx_free(struct rn_devctx *d)
{
	if (d->uc.close)
		rn_req_close(&d->uc, d->uc.close);
	kfree(d->uc.status);
	xa_destroy(&d->uc.cqs);
	xa_destroy(&d->uc.qps);
	xa_destroy(&d->uc.srqs);
	kfree(d);
}

/* A new one, opened with the device's ringnicd. */
static struct rn_devctx *devctx_open(struct rn_dev *dev)
{
	struct rn_ctl_open_req *open;
	struct rn_devctx *d;
	struct rn_req *req;
	int ret = -ENOMEM;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return ERR_PTR(-ENOMEM);
	kref_init(&d->ref);
	d->uc.dev = dev;
	xa_init(&d->uc.cqs);
	xa_init(&d->uc.qps);
	xa_init(&d->uc.srqs);
	/* Not mapped: written when ringnicd leaves, as any context's. */
	d->uc.status = kzalloc(sizeof(*d->uc.status), GFP_KERNEL);
	d->uc.close = rn_req_new(RN_KDEV_CLOSE);
	req = req_own(RN_CTL_OPEN, sizeof(*open), (void **)&open);
	if (!d->uc.status || !d->uc.close || !req)
		goto err;
	open->version = RN_CTL_VERSION;
	ret = rn_ucontext_register(&d->uc);
	if (!ret)
		ret = call(&d->uc, req, sizeof(struct rn_ctl_open_resp));
	/* The device page and the wake-up eventfd are an application's
	 * means of posting: nothing here posts, and req drops them.
	 */
	if (ret)
		goto err;
	rn_req_put(req);
	return d;
err:
	if (req)
		rn_req_put(req);
	devctx_free(d);
	return ERR_PTR(ret);
}

/* The device context of dev's ringnicd, held; opened if need be. */
static struct rn_devctx *devctx_get(struct rn_dev *dev)
{
	struct rn_devctx *d;
	bool live;

	mutex_lock(&dev->devctx_lock);
	d = dev->devctx;
	spin_lock(&rn_lock);
	live = d && d->uc.ctx;
	spin_unlock(&rn_lock);
	if (live) {
		kref_get(&d->ref);
	} else {
		/* None, or one of a ringnicd that left: its objects keep it
		 * until they go, and new ones get a new one.
		 */
		d = devctx_open(dev);
		if (!IS_ERR(d))
			dev->devctx = d;
	}
	mutex_unlock(&dev->devctx_lock);
	return d;
}

/* Called with the last reference, under devctx_lock, which it drops. */
static void devctx_release(struct kref *ref)
{
	struct rn_devctx *d = container_of(ref, struct rn_devctx, ref);
	struct rn_dev *dev = d->uc.dev;

	if (dev->devctx == d)
		dev->devctx = NULL;
	mutex_unlock(&dev->devctx_lock);
	devctx_free(d);
}

static void devctx_put(struct rn_devctx *d)
{
	kref_put_mutex(&d->ref, devctx_release, &d->uc.dev->devctx_lock);
}

/*
 * Whether a and b are contexts of the same ringnicd, the one attached: a
 * context's id is cleared when its ringnicd leaves and never set again.
 * A request that names b's objects goes through a; once queued (a still
 * registered), b is still registered too.
 */
static bool same_daemon(struct rn_ucontext *a, struct rn_ucontext *b)
{
	bool same;

	spin_lock(&rn_lock);
	same = a->ctx && b->ctx;
	spin_unlock(&rn_lock);
	return same;
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
		return 0; /* a kernel consumer's: nothing of ringnicd's */
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

	if (pd->uc)
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
	((struct rn_ctl_reg_mr_req *)req->body)->pd = pd->handle;
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

/*
 * In place: the MR keeps its handle and ringnicd its keys, which the core
 * returns from the MR (it takes the PD and translation over itself).
 */
static struct ib_mr *rn_rereg_user_mr(struct ib_mr *ibmr, int flags, u64 start,
				      u64 length, u64 iova, int access,
				      struct ib_pd *ibpd, struct ib_udata *udata)
{
	struct rn_mr *mr = container_of(ibmr, struct rn_mr, ibmr);
	const struct rn_ctl_rereg_mr_resp *resp;
	struct rn_kdev_cmd_resp kresp = {};
	struct rn_ctl_rereg_mr_req *r;
	struct rn_req *req;
	int ret;

	if (!udata)
		return ERR_PTR(-EOPNOTSUPP);
	req = req_from_udata(udata, RN_CTL_REREG_MR, 0);
	if (IS_ERR(req))
		return ERR_CAST(req);
	r = (void *)req->body;
	r->handle = mr->handle;
	r->pd = container_of(ibpd, struct rn_pd, ibpd)->handle; /* the new, or the MR's */
	ret = -ENOSPC;
	if (udata->outlen >= sizeof(kresp) + sizeof(*resp))
		ret = call(mr->uc, req, sizeof(*resp));
	if (!ret) {
		resp = (const void *)req->reply;
		ibmr->lkey = resp->lkey;
		ibmr->rkey = resp->rkey;
		ret = reply_to_udata(mr->uc, req, udata, &kresp, 0, 0, NULL);
	}
	rn_req_put(req);
	return ret ? ERR_PTR(ret) : NULL;
}

/* ---- CQ --------------------------------------------------------------- */

static int rn_create_cq(struct ib_cq *ibcq, const struct ib_cq_init_attr *attr,
			rn_create_cq_attrs *attrs)
{
	struct ib_udata *udata = rn_create_cq_udata(attrs);
	struct rn_cq *cq = container_of(ibcq, struct rn_cq, ibcq);
	const struct rn_ctl_create_cq_resp *resp;
	struct rn_kdev_cmd_resp kresp = {};
	struct rn_req *req;
	int ret;

	if (!udata)
		return rn_kcq_create(cq, attr);
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

	if (cq->kcq) {
		rn_kcq_destroy(cq);
		return 0;
	}
	/* No event reaches it once it is out of the table (see daemon.c). */
	spin_lock(&rn_lock);
	xa_erase(&cq->uc->cqs, cq->handle);
	spin_unlock(&rn_lock);
	destroy_handle(cq->uc, RN_CTL_DESTROY_CQ, cq->handle);
	mmap_entry_remove(cq->mem);
	return 0;
}

/*
 * ringnicd moves the CQ to new memory: a new mmap entry, the old one
 * removed (the provider's mapping of it stays until it unmaps it).
 */
static int rn_resize_cq(struct ib_cq *ibcq, int cqe, struct ib_udata *udata)
{
	struct rn_cq *cq = container_of(ibcq, struct rn_cq, ibcq);
	const struct rn_ctl_resize_cq_resp *resp;
	struct rn_kdev_cmd_resp kresp = {};
	struct rdma_user_mmap_entry *mem = NULL;
	struct rn_req *req;
	int ret;

	if (!udata)
		return -EOPNOTSUPP;
	req = req_from_udata(udata, RN_CTL_RESIZE_CQ, 0);
	if (IS_ERR(req))
		return PTR_ERR(req);
	((struct rn_ctl_resize_cq_req *)req->body)->handle = cq->handle;
	/* Checked before: once ringnicd has moved, the answer must get out. */
	ret = -ENOSPC;
	if (udata->outlen >= sizeof(kresp) + sizeof(*resp))
		ret = call(cq->uc, req, sizeof(*resp));
	if (!ret)
		ret = reply_to_udata(cq->uc, req, udata, &kresp, 1, 0, &mem);
	if (!ret) {
		resp = (const void *)req->reply;
		ibcq->cqe = resp->ring_entries;
		/* Resizes of one CQ may race (the core holds it for reading):
		 * each removes the entry it replaced.
		 */
		mmap_entry_remove(xchg(&cq->mem, mem));
	}
	rn_req_put(req);
	return ret;
}

/* ---- QP --------------------------------------------------------------- */

/* The QP types served; each one's value is also libibverbs' (IBV_QPT_*). */
static bool qp_type_served(enum ib_qp_type type)
{
	switch (type) {
	case IB_QPT_RC:
	case IB_QPT_UC:
	case IB_QPT_UD:
	case IB_QPT_XRC_INI:
	case IB_QPT_XRC_TGT:
		return true;
	default:
		return false;
	}
}

/* The objects the kernel resolved for the QP, as ringnicd names them. */
static void qp_req_objects(struct rn_ctl_create_qp_req *c,
			   const struct ib_qp *ibqp,
			   const struct ib_qp_init_attr *init)
{
	c->qp_type = init->qp_type;
	c->pd = to_pd(ibqp->pd)->handle;
	c->send_cq = init->send_cq ? to_cq(init->send_cq)->handle : 0;
	c->recv_cq = init->recv_cq ? to_cq(init->recv_cq)->handle : 0;
	c->has_srq = !!init->srq;
	c->srq = init->srq ? to_srq(init->srq)->handle : 0;
	c->xrcd = 0;
}

/*
 * An XRC target QP: the core creates it with no udata and lets any process
 * of its domain ib_open_qp it without the driver, so the request is the
 * stub's and the QP is the domain's device context's (struct rn_devctx).
 * ringnicd's page of its state stays ringnicd's: it has no queues.
 */
static struct rn_req *tgt_qp_req(struct rn_qp *qp,
				 const struct ib_qp_init_attr *init)
{
	struct rn_xrcd *xrcd = to_xrcd(init->xrcd);
	struct rn_ctl_create_qp_req *c;
	struct rn_req *req;

	req = req_own(RN_CTL_CREATE_QP, sizeof(*c), (void **)&c);
	if (!req)
		return ERR_PTR(-ENOMEM);
	c->qp_type = IB_QPT_XRC_TGT;
	c->xrcd = xrcd->id;
	/* The domain holds its device context: this takes one more. */
	kref_get(&xrcd->devctx->ref);
	qp->devctx = xrcd->devctx;
	qp->uc = &qp->devctx->uc;
	return req;
}

static int rn_create_qp(struct ib_qp *ibqp, struct ib_qp_init_attr *init,
			struct ib_udata *udata)
{
	struct rn_qp *qp = container_of(ibqp, struct rn_qp, ibqp);
	bool tgt = init->qp_type == IB_QPT_XRC_TGT;
	const struct rn_ctl_create_qp_resp *resp;
	struct rn_kdev_cmd_resp kresp = {};
	struct rn_req *req;
	int ret;

	if (!udata && init->qp_type == IB_QPT_GSI)
		return rn_gsi_create(qp, init);
	if (!qp_type_served(init->qp_type) || init->create_flags ||
	    (!udata && !tgt))
		return -EOPNOTSUPP;
	if (tgt) {
		req = tgt_qp_req(qp, init);
	} else {
		qp->uc = udata_uc(udata);
		req = req_from_udata(udata, RN_CTL_CREATE_QP, 0);
		if (!IS_ERR(req))
			qp_req_objects((void *)req->body, ibqp, init);
	}
	if (IS_ERR(req)) {
		ret = PTR_ERR(req);
		req = NULL;
		goto out;
	}
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
	if (tgt)
		ret = req->nfds_out == 1 ? 0 : -EPROTO; /* req drops it */
	else
		ret = reply_to_udata(qp->uc, req, udata, &kresp, 1, 0, &qp->mem);
	if (!ret) {
		ret = xa_insert(&qp->uc->qps, qp->handle, qp, GFP_KERNEL);
		if (ret)
			mmap_entry_remove(qp->mem);
	}
	if (ret)
		destroy_handle(qp->uc, RN_CTL_DESTROY_QP, qp->handle);
out:
	if (req)
		rn_req_put(req);
	if (ret && qp->devctx) {
		devctx_put(qp->devctx);
		qp->devctx = NULL;
	}
	return ret;
}

static int rn_modify_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
			struct ib_udata *udata)
{
	struct rn_qp *qp = container_of(ibqp, struct rn_qp, ibqp);
	struct rn_ctl_modify_qp_req *m;
	struct rn_req *req;
	int ret;

	if (qp->gsi)
		return rn_gsi_modify(qp, attr, mask);
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
	init->sq_sig_type = r->sq_sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
}

static int rn_query_qp(struct ib_qp *ibqp, struct ib_qp_attr *attr, int mask,
		       struct ib_qp_init_attr *init)
{
	struct rn_qp *qp = container_of(ibqp, struct rn_qp, ibqp);
	struct rn_req *req;
	int ret;

	if (qp->gsi)
		return rn_gsi_query(qp, attr, init);
	req = req_handle(RN_CTL_QUERY_QP, qp->handle);
	if (!req)
		return -ENOMEM;
	ret = call(qp->uc, req, sizeof(struct rn_ctl_query_qp_resp));
	if (!ret) {
		attr_from_wire((const void *)req->reply, attr, init);
		init->qp_type = ibqp->qp_type;
	}
	rn_req_put(req);
	return ret;
}

static int rn_destroy_qp(struct ib_qp *ibqp, struct ib_udata *udata)
{
	struct rn_qp *qp = container_of(ibqp, struct rn_qp, ibqp);

	if (qp->gsi) {
		rn_gsi_destroy(qp);
		return 0;
	}
	spin_lock(&rn_lock);
	xa_erase(&qp->uc->qps, qp->handle);
	spin_unlock(&rn_lock);
	destroy_handle(qp->uc, RN_CTL_DESTROY_QP, qp->handle);
	mmap_entry_remove(qp->mem);
	if (qp->devctx)
		devctx_put(qp->devctx);
	return 0;
}

/* ---- AH --------------------------------------------------------------- */

/*
 * libibverbs' create_ah command carries no driver data: the request is
 * made of the address the kernel resolved (its GID entry checked, RoCE
 * only).  The answer, ringnicd's handle, which UD sends name, goes back as
 * the driver response.  A kernel consumer's AH (the MAD layer's, made in
 * atomic context) stays the stub's: see gsi.c.
 */
static int rn_create_ah(struct ib_ah *ibah, struct rdma_ah_init_attr *init,
			struct ib_udata *udata)
{
	struct rn_ah *ah = container_of(ibah, struct rn_ah, ibah);
	const struct rdma_ah_attr *a = init->ah_attr;
	const struct rn_ctl_create_ah_resp *resp;
	struct rn_kdev_cmd_resp kresp = {};
	struct rn_ctl_create_ah_req *c;
	struct rn_req *req;
	int ret;

	if (!udata)
		return rn_kah_init(ah, a);
	/* Waiting for ringnicd sleeps. */
	if (!(init->flags & RDMA_CREATE_AH_SLEEPABLE))
		return -EOPNOTSUPP;
	if (a->type != RDMA_AH_ATTR_TYPE_ROCE)
		return -EINVAL;
	ah->uc = udata_uc(udata);
	req = req_own(RN_CTL_CREATE_AH, sizeof(*c), (void **)&c);
	if (!req)
		return -ENOMEM;
	c->pd = to_pd(ibah->pd)->handle;
	c->attr.sl = rdma_ah_get_sl(a);
	c->attr.static_rate = rdma_ah_get_static_rate(a);
	c->attr.port_num = rdma_ah_get_port_num(a);
	if (rdma_ah_get_ah_flags(a) & IB_AH_GRH) {
		const struct ib_global_route *grh = rdma_ah_read_grh(a);

		memcpy(c->attr.dgid, grh->dgid.raw, sizeof(c->attr.dgid));
		c->attr.flow_label = grh->flow_label;
		c->attr.sgid_index = grh->sgid_index;
		c->attr.hop_limit = grh->hop_limit;
		c->attr.traffic_class = grh->traffic_class;
		c->attr.is_global = 1;
	}
	ret = -ENOSPC;
	if (udata->outlen >= sizeof(kresp) + sizeof(*resp))
		ret = call(ah->uc, req, sizeof(*resp));
	if (!ret) {
		resp = (const void *)req->reply;
		ah->handle = resp->handle;
		ret = reply_to_udata(ah->uc, req, udata, &kresp, 0, 0, NULL);
		if (ret)
			destroy_handle(ah->uc, RN_CTL_DESTROY_AH, ah->handle);
	}
	rn_req_put(req);
	return ret;
}

static int rn_destroy_ah(struct ib_ah *ibah, u32 flags)
{
	struct rn_ah *ah = container_of(ibah, struct rn_ah, ibah);

	if (!ah->uc)
		return 0; /* a kernel consumer's */
	/* Only kernel AHs go without sleeping. */
	if (!WARN_ON_ONCE(!(flags & RDMA_DESTROY_AH_SLEEPABLE)))
		destroy_handle(ah->uc, RN_CTL_DESTROY_AH, ah->handle);
	return 0;
}

/* ---- SRQ -------------------------------------------------------------- */

static int rn_create_srq(struct ib_srq *ibsrq, struct ib_srq_init_attr *init,
			 struct ib_udata *udata)
{
	struct rn_srq *srq = to_srq(ibsrq);
	const struct rn_ctl_create_srq_resp *resp;
	struct rn_kdev_cmd_resp kresp = {};
	struct rn_ctl_create_srq_req *c;
	struct rn_xrcd *xrcd;
	struct rn_req *req;
	int ret;

	if (!udata)
		return -EOPNOTSUPP;
	if (init->srq_type != IB_SRQT_BASIC && init->srq_type != IB_SRQT_XRC)
		return -EOPNOTSUPP;
	srq->uc = udata_uc(udata);
	req = req_from_udata(udata, RN_CTL_CREATE_SRQ, 0);
	if (IS_ERR(req))
		return PTR_ERR(req);
	c = (void *)req->body;
	c->pd = to_pd(ibsrq->pd)->handle;
	c->srq_type = init->srq_type; /* ibv_srq_type's values */
	c->xrcd = 0;
	c->cq = 0;
	if (init->srq_type == IB_SRQT_XRC) {
		/* ringnicd's domain ids are of the ringnicd that made them. */
		xrcd = to_xrcd(init->ext.xrc.xrcd);
		ret = -ENODEV;
		if (!same_daemon(srq->uc, &xrcd->devctx->uc))
			goto out;
		c->xrcd = xrcd->id;
		c->cq = to_cq(init->ext.cq)->handle;
	}
	ret = call(srq->uc, req, sizeof(*resp));
	if (ret)
		goto out;
	resp = (const void *)req->reply;
	srq->handle = resp->handle;
	if (init->srq_type == IB_SRQT_XRC)
		ibsrq->ext.xrc.srq_num = resp->srqn;
	init->attr.max_wr = resp->max_wr;
	init->attr.max_sge = resp->max_sge;
	ret = reply_to_udata(srq->uc, req, udata, &kresp, 1, 0, &srq->mem);
	if (!ret) {
		ret = xa_insert(&srq->uc->srqs, srq->handle, srq, GFP_KERNEL);
		if (ret)
			mmap_entry_remove(srq->mem);
	}
	if (ret)
		destroy_handle(srq->uc, RN_CTL_DESTROY_SRQ, srq->handle);
out:
	rn_req_put(req);
	return ret;
}

/*
 * The uverbs command has no response: the provider says where the answer
 * goes (struct rn_kdev_resp_at).  A resize moves the SRQ to new memory,
 * offered as CREATE offers it; the old entry is removed.
 */
static int rn_modify_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr,
			 enum ib_srq_attr_mask mask, struct ib_udata *udata)
{
	struct rn_srq *srq = to_srq(ibsrq);
	struct rdma_user_mmap_entry *mem = NULL;
	struct rn_kdev_cmd_resp kresp = {};
	struct rn_ctl_modify_srq_req *m;
	struct rn_kdev_resp_at at;
	struct ib_udata out = {};
	struct rn_req *req;
	u32 nfds;
	int ret;

	if (!udata)
		return -EOPNOTSUPP;
	req = req_from_cmd(udata, RN_CTL_MODIFY_SRQ, 0, &at, sizeof(at));
	if (IS_ERR(req))
		return PTR_ERR(req);
	m = (void *)req->body;
	m->handle = srq->handle;
	nfds = m->attr_mask & IB_SRQ_MAX_WR ? 1 : 0;
	out.outbuf = u64_to_user_ptr((u64)at.addr.hi << 32 | at.addr.lo);
	out.outlen = at.len;
	/* Checked before: once ringnicd has moved, the answer must get out. */
	ret = -EINVAL;
	if (at.len == sizeof(kresp) + sizeof(struct rn_ctl_modify_srq_resp))
		ret = call(srq->uc, req, sizeof(struct rn_ctl_modify_srq_resp));
	if (!ret)
		ret = reply_to_udata(srq->uc, req, &out, &kresp, nfds, 0, &mem);
	if (!ret && mem)
		mmap_entry_remove(xchg(&srq->mem, mem)); /* as rn_resize_cq */
	rn_req_put(req);
	return ret;
}

static int rn_query_srq(struct ib_srq *ibsrq, struct ib_srq_attr *attr)
{
	struct rn_srq *srq = to_srq(ibsrq);
	struct rn_req *req = req_handle(RN_CTL_QUERY_SRQ, srq->handle);
	const struct rn_ctl_query_srq_resp *resp;
	int ret;

	if (!req)
		return -ENOMEM;
	ret = call(srq->uc, req, sizeof(*resp));
	if (!ret) {
		resp = (const void *)req->reply;
		attr->max_wr = resp->max_wr;
		attr->max_sge = resp->max_sge;
		attr->srq_limit = resp->srq_limit;
	}
	rn_req_put(req);
	return ret;
}

static int rn_destroy_srq(struct ib_srq *ibsrq, struct ib_udata *udata)
{
	struct rn_srq *srq = to_srq(ibsrq);

	spin_lock(&rn_lock);
	xa_erase(&srq->uc->srqs, srq->handle);
	spin_unlock(&rn_lock);
	destroy_handle(srq->uc, RN_CTL_DESTROY_SRQ, srq->handle);
	mmap_entry_remove(srq->mem);
	return 0;
}

/* ---- XRC domains (see struct rn_devctx) ------------------------------- */

/*
 * The core calls this for a domain new to it (a file no process opened
 * yet, or none), and shares it by itself; ringnicd makes a device-wide
 * domain of the device context for it, named by its id.
 */
static int rn_alloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct rn_xrcd *xrcd = to_xrcd(ibxrcd);
	const struct rn_ctl_open_xrcd_resp *resp;
	struct rn_kdev_cmd_resp kresp = {};
	struct rn_ucontext *uc;
	struct rn_req *req;
	int ret;

	if (!udata)
		return -EOPNOTSUPP;
	uc = udata_uc(udata);
	req = req_from_udata(udata, RN_CTL_OPEN_XRCD, 0);
	if (IS_ERR(req))
		return PTR_ERR(req);
	xrcd->devctx = devctx_get(uc->dev);
	if (IS_ERR(xrcd->devctx)) {
		ret = PTR_ERR(xrcd->devctx);
		xrcd->devctx = NULL;
		goto out;
	}
	ret = call(&xrcd->devctx->uc, req, sizeof(*resp));
	if (!ret) {
		resp = (const void *)req->reply;
		xrcd->id = resp->handle;
		ret = reply_to_udata(uc, req, udata, &kresp, 0, 0, NULL);
		if (ret)
			destroy_handle(&xrcd->devctx->uc, RN_CTL_CLOSE_XRCD,
				       xrcd->id);
	}
	if (ret) {
		devctx_put(xrcd->devctx);
		xrcd->devctx = NULL;
	}
out:
	rn_req_put(req);
	return ret;
}

/* The last use of the domain in any process is gone. */
static int rn_dealloc_xrcd(struct ib_xrcd *ibxrcd, struct ib_udata *udata)
{
	struct rn_xrcd *xrcd = to_xrcd(ibxrcd);

	destroy_handle(&xrcd->devctx->uc, RN_CTL_CLOSE_XRCD, xrcd->id);
	devctx_put(xrcd->devctx);
	return 0;
}

/* ---- memory windows ------------------------------------------------- */

static int rn_alloc_mw(struct ib_mw *ibmw, struct ib_udata *udata)
{
	struct rn_mw *mw = container_of(ibmw, struct rn_mw, ibmw);
	const struct rn_ctl_alloc_mw_resp *resp;
	struct rn_kdev_cmd_resp kresp = {};
	struct rn_ctl_alloc_mw_req *c;
	struct rn_req *req;
	int ret;

	if (!udata)
		return -EOPNOTSUPP;
	mw->uc = udata_uc(udata);
	req = req_from_udata(udata, RN_CTL_ALLOC_MW, 0);
	if (IS_ERR(req))
		return PTR_ERR(req);
	c = (void *)req->body;
	c->pd = to_pd(ibmw->pd)->handle;
	c->type = ibmw->type; /* ibv_mw_type's values */
	ret = call(mw->uc, req, sizeof(*resp));
	if (!ret) {
		resp = (const void *)req->reply;
		mw->handle = resp->handle;
		ibmw->rkey = resp->rkey;
		ret = reply_to_udata(mw->uc, req, udata, &kresp, 0, 0, NULL);
		if (ret)
			destroy_handle(mw->uc, RN_CTL_DEALLOC_MW, mw->handle);
	}
	rn_req_put(req);
	return ret;
}

static int rn_dealloc_mw(struct ib_mw *ibmw)
{
	struct rn_mw *mw = container_of(ibmw, struct rn_mw, ibmw);

	destroy_handle(mw->uc, RN_CTL_DEALLOC_MW, mw->handle);
	return 0;
}

const struct ib_device_ops rn_verbs_ops = {
	.alloc_mw = rn_alloc_mw,
	.alloc_pd = rn_alloc_pd,
	.alloc_ucontext = rn_alloc_ucontext,
	.alloc_xrcd = rn_alloc_xrcd,
	.create_ah = rn_create_ah,
	.create_cq = rn_create_cq,
	.create_qp = rn_create_qp,
	.create_srq = rn_create_srq,
	.create_user_ah = rn_create_ah,
	.dealloc_mw = rn_dealloc_mw,
	.dealloc_pd = rn_dealloc_pd,
	.dealloc_ucontext = rn_dealloc_ucontext,
	.dealloc_xrcd = rn_dealloc_xrcd,
	.dereg_mr = rn_dereg_mr,
	.destroy_ah = rn_destroy_ah,
	.destroy_cq = rn_destroy_cq,
	.destroy_qp = rn_destroy_qp,
	.destroy_srq = rn_destroy_srq,
	.disassociate_ucontext = rn_disassociate_ucontext,
	.mmap = rn_mmap,
	.mmap_free = rn_mmap_free,
	.modify_qp = rn_modify_qp,
	.modify_srq = rn_modify_srq,
	.query_qp = rn_query_qp,
	.query_srq = rn_query_srq,
	.reg_user_mr = rn_reg_user_mr,
	.rereg_user_mr = rn_rereg_user_mr,
	.resize_cq = rn_resize_cq,

	INIT_RDMA_OBJ_SIZE(ib_ah, rn_ah, ibah),
	INIT_RDMA_OBJ_SIZE(ib_cq, rn_cq, ibcq),
	INIT_RDMA_OBJ_SIZE(ib_mw, rn_mw, ibmw),
	INIT_RDMA_OBJ_SIZE(ib_pd, rn_pd, ibpd),
	INIT_RDMA_OBJ_SIZE(ib_qp, rn_qp, ibqp),
	INIT_RDMA_OBJ_SIZE(ib_srq, rn_srq, ibsrq),
	INIT_RDMA_OBJ_SIZE(ib_ucontext, rn_ucontext, ibuc),
	INIT_RDMA_OBJ_SIZE(ib_xrcd, rn_xrcd, ibxrcd),
};
