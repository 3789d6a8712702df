// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RN_KDEV_PATH, ringnicd's side of the stub: it attaches to a device, reads
 * the requests of that device's applications, writes back the answers and
 * the events that go out through the kernel's own channels.
 *
 * A request holds one reference for its caller and one while it is on a
 * daemon list, so a caller that gives up (a fatal signal) never frees what
 * ringnicd is about to answer.  rn_lock guards the lists, dev->daemon,
 * dev->contexts and every context's handle tables; event delivery runs
 * under it, so an object leaves those tables before it can be freed.
 */
#include <linux/cred.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/pid_namespace.h>
#include <linux/poll.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "ringnic.h"

DEFINE_SPINLOCK(rn_lock);
atomic_t rn_live_reqs = ATOMIC_INIT(0);

static struct rn_req *req_alloc(u32 type, gfp_t gfp)
{
	struct rn_req *req = kzalloc(sizeof(*req), gfp);

	if (!req)
		return NULL;
	atomic_inc(&rn_live_reqs);
	kref_init(&req->ref);
	INIT_LIST_HEAD(&req->link);
	init_completion(&req->done);
	req->type = type;
	req->pid = get_pid(task_tgid(current));
	req->uid = current_uid();
	return req;
}

struct rn_req *rn_req_new(u32 type)
{
	return req_alloc(type, GFP_KERNEL);
}

static void req_release(struct kref *ref)
{
	struct rn_req *req = container_of(ref, struct rn_req, ref);
	u32 i;

	for (i = 0; i < req->nfds_in; i++)
		fput(req->fds_in[i]);
	for (i = 0; i < req->nfds_out; i++)
		fput(req->fds_out[i]);
	put_pid(req->pid);
	kfree(req);
	atomic_dec(&rn_live_reqs);
}

void rn_req_put(struct rn_req *req)
{
	kref_put(&req->ref, req_release);
}

/* Answer a request ringnicd will never answer. */
static void req_abandon(struct rn_req *req)
{
	req->status = -ENODEV;
	complete(&req->done);
	rn_req_put(req); /* the list's reference */
}

/* Under rn_lock: queue req for uc's ringnicd; false once it is gone. */
static bool req_queue_locked(struct rn_ucontext *uc, struct rn_req *req)
{
	struct rn_daemon *d = uc->dev->daemon;

	if (!uc->ctx || d != uc->daemon)
		return false;
	req->ctx = uc->ctx;
	req->seq = ++d->next_seq;
	kref_get(&req->ref);
	list_add_tail(&req->link, &d->unread);
	wake_up_interruptible(&d->readq);
	return true;
}

/*
 * Send req and wait for the answer: 0 (the reply is in req), -ENODEV when
 * no ringnicd serves the context, -EINTR when the caller is being killed
 * (ringnicd still gets the request).
 */
int rn_req_call(struct rn_ucontext *uc, struct rn_req *req)
{
	bool queued;

	spin_lock(&rn_lock);
	queued = req_queue_locked(uc, req);
	spin_unlock(&rn_lock);
	if (!queued)
		return -ENODEV;
	if (wait_for_completion_killable(&req->done))
		return -EINTR;
	return req->status;
}

/*
 * Hand a datagram of the kernel's QP1 to ringnicd, from any context (the
 * MAD layer posts with interrupts off).  With no ringnicd, or one that
 * stopped reading, it is lost, as on a link that is down: the MAD layer
 * retries.
 */
#define RN_GSI_QUEUE_MAX 1024

void rn_daemon_gsi_send(struct rn_dev *dev, const struct rn_kdev_gsi *g)
{
	struct rn_req *req = req_alloc(RN_KDEV_GSI_SEND, GFP_ATOMIC);
	struct rn_daemon *d;

	if (!req)
		return;
	req->len = sizeof(*g);
	memcpy(req->body, g, sizeof(*g));
	spin_lock(&rn_lock);
	d = dev->daemon;
	if (d && dev->gsi_queued < RN_GSI_QUEUE_MAX) {
		dev->gsi_queued++;
		req->seq = ++d->next_seq;
		list_add_tail(&req->link, &d->unread); /* the list takes ours */
		wake_up_interruptible(&d->readq);
		req = NULL;
	}
	spin_unlock(&rn_lock);
	if (req)
		rn_req_put(req);
}

/* The context is gone: tell ringnicd, which frees what it had. */
void rn_req_close(struct rn_ucontext *uc, struct rn_req *close)
{
	spin_lock(&rn_lock);
	if (uc->ctx && req_queue_locked(uc, close))
		xa_erase(&uc->dev->contexts, uc->ctx);
	uc->ctx = 0;
	spin_unlock(&rn_lock);
	rn_req_put(close);
}

/* Give a new context an id with the device's ringnicd. */
int rn_ucontext_register(struct rn_ucontext *uc)
{
	struct rn_dev *dev = uc->dev;
	int ret = -ENODEV;

	spin_lock(&rn_lock);
	if (dev->daemon) {
		uc->daemon = dev->daemon;
		ret = xa_alloc_cyclic(&dev->contexts, &uc->ctx, uc,
				      XA_LIMIT(1, U32_MAX), &dev->next_ctx,
				      GFP_ATOMIC);
		ret = ret < 0 ? ret : 0;
	}
	spin_unlock(&rn_lock);
	return ret;
}

/*
 * ringnicd is leaving dev (it exited, or the device is being removed):
 * answer what it never will, mark every context dead and wake whoever waits
 * on one of their completion channels.  Caller holds rn_devices_lock.
 */
void rn_daemon_detach_dev(struct rn_dev *dev, bool fatal)
{
	struct ib_event ev = {
		.device = &dev->ibdev,
		.event = IB_EVENT_DEVICE_FATAL,
		.element.port_num = 1,
	};
	struct rn_req *req, *tmp;
	struct rn_ucontext *uc;
	struct rn_daemon *d;
	unsigned long id, h;
	struct rn_cq *cq;
	LIST_HEAD(gone);

	spin_lock(&rn_lock);
	d = dev->daemon;
	if (!d) {
		spin_unlock(&rn_lock);
		return;
	}
	dev->daemon = NULL;
	dev->gsi_queued = 0;
	dev->no_gid = false; /* the next ringnicd says */
	d->dev = NULL;
	list_splice_init(&d->unread, &gone);
	list_splice_init(&d->waiting, &gone);
	xa_for_each(&dev->contexts, id, uc) {
		uc->ctx = 0;
		WRITE_ONCE(uc->status->dead, 1);
		xa_for_each(&uc->cqs, h, cq)
			if (cq->ibcq.comp_handler)
				cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
		xa_erase(&dev->contexts, id);
	}
	spin_unlock(&rn_lock);
	wake_up_interruptible(&d->readq);

	list_for_each_entry_safe(req, tmp, &gone, link) {
		list_del_init(&req->link);
		req_abandon(req);
	}
	if (fatal)
		ib_dispatch_event(&ev);
	dev_info(&dev->ibdev.dev, "ringnicd detached\n");
}

static int kdev_open(struct inode *inode, struct file *f)
{
	struct rn_daemon *d = kzalloc(sizeof(*d), GFP_KERNEL);

	if (!d)
		return -ENOMEM;
	d->pidns = get_pid_ns(task_active_pid_ns(current));
	init_waitqueue_head(&d->readq);
	INIT_LIST_HEAD(&d->unread);
	INIT_LIST_HEAD(&d->waiting);
	f->private_data = d;
	return 0;
}

static int kdev_release(struct inode *inode, struct file *f)
{
	struct rn_daemon *d = f->private_data;

	rn_dev_detach_daemon(d);
	put_pid_ns(d->pidns);
	kfree(d);
	return 0;
}

static long kdev_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	struct rn_kdev_attach __user *uarg = (void __user *)arg;
	struct rn_daemon *d = f->private_data;
	struct rn_kdev_attach a;
	int ret;

	if (cmd != RN_KDEV_ATTACH)
		return -ENOTTY;
	if (copy_from_user(&a, uarg, sizeof(a)))
		return -EFAULT;
	if (a.version != RN_CTL_VERSION)
		return -EPROTO;
	a.ibdev[sizeof(a.ibdev) - 1] = 0;
	ret = rn_dev_attach_daemon(d, a.ibdev, &a.node_guid);
	if (ret)
		return ret;
	return copy_to_user(uarg, &a, sizeof(a)) ? -EFAULT : 0;
}

/* The oldest unread request, taken off the list; NULL if none. */
static struct rn_req *take_unread(struct rn_daemon *d, int *err)
{
	struct rn_req *req = NULL;

	spin_lock(&rn_lock);
	if (!d->dev)
		*err = -ENODEV;
	else
		req = list_first_entry_or_null(&d->unread, struct rn_req, link);
	if (req) {
		list_del_init(&req->link);
		if (req->type == RN_KDEV_GSI_SEND)
			d->dev->gsi_queued--;
	}
	spin_unlock(&rn_lock);
	return req;
}

static bool readable(struct rn_daemon *d)
{
	return !list_empty_careful(&d->unread) || !READ_ONCE(d->dev);
}

/* Put a request back where it came from, or answer it if ringnicd left. */
static void put_back(struct rn_daemon *d, struct rn_req *req,
		     struct list_head *where)
{
	spin_lock(&rn_lock);
	if (d->dev) {
		if (req->type == RN_KDEV_GSI_SEND)
			d->dev->gsi_queued++; /* only ever back to unread */
		list_add(&req->link, where);
		req = NULL;
	}
	spin_unlock(&rn_lock);
	if (req)
		req_abandon(req);
}

static ssize_t kdev_read(struct file *f, char __user *buf, size_t count,
			 loff_t *pos)
{
	struct rn_daemon *d = f->private_data;
	int fds[RN_CTL_MAX_FDS];
	struct rn_kdev_req *msg;
	struct rn_req *req;
	int err = 0;
	u32 i;

	if (count < sizeof(*msg))
		return -EINVAL;
	while (!(req = take_unread(d, &err))) {
		if (err)
			return err;
		if (f->f_flags & O_NONBLOCK)
			return -EAGAIN;
		if (wait_event_interruptible(d->readq, readable(d)))
			return -ERESTARTSYS;
	}
	msg = kzalloc(sizeof(*msg), GFP_KERNEL);
	if (!msg) {
		put_back(d, req, &d->unread);
		return -ENOMEM;
	}
	msg->type = req->type;
	msg->ctx = req->ctx;
	msg->seq = req->seq;
	msg->pid = pid_nr_ns(req->pid, d->pidns);
	msg->uid = from_kuid_munged(current_user_ns(), req->uid);
	msg->len = req->len;
	memcpy(msg->body, req->body, req->len);
	for (i = 0; i < req->nfds_in; i++) {
		fds[i] = get_unused_fd_flags(O_CLOEXEC);
		if (fds[i] < 0) {
			err = fds[i];
			goto err_fds;
		}
		msg->fds[i] = fds[i];
	}
	msg->nfds = req->nfds_in;
	if (copy_to_user(buf, msg, sizeof(*msg))) {
		err = -EFAULT;
		goto err_fds;
	}
	kfree(msg);
	/* Only now are the descriptors ringnicd's: installing moves our
	 * references into its table.
	 */
	for (i = 0; i < req->nfds_in; i++)
		fd_install(fds[i], req->fds_in[i]);
	req->nfds_in = 0;
	if (req->type == RN_KDEV_REQUEST)
		put_back(d, req, &d->waiting);
	else
		rn_req_put(req);
	return sizeof(*msg);

err_fds:
	while (i--)
		put_unused_fd(fds[i]);
	kfree(msg);
	put_back(d, req, &d->unread);
	return err;
}

static ssize_t write_reply(struct rn_daemon *d, const char __user *buf)
{
	struct file *files[RN_CTL_MAX_FDS] = {};
	struct rn_req *req = NULL, *r;
	struct rn_kdev_reply *msg;
	ssize_t ret;
	u32 i;

	msg = memdup_user(buf, sizeof(*msg));
	if (IS_ERR(msg))
		return PTR_ERR(msg);
	ret = -EINVAL;
	if (msg->nfds > RN_CTL_MAX_FDS || msg->len > RN_CTL_MSG_MAX ||
	    msg->fd_pass >> msg->nfds)
		goto out;
	for (i = 0; i < msg->nfds; i++) {
		files[i] = fget(msg->fds[i]);
		/* Memory must be mappable; a passed descriptor may be anything. */
		if (!files[i] || (!(msg->fd_pass & BIT(i)) &&
				  !files[i]->f_op->mmap)) {
			ret = -EBADF;
			goto out;
		}
	}
	spin_lock(&rn_lock);
	list_for_each_entry(r, &d->waiting, link)
		if (r->seq == msg->seq && r->ctx == msg->ctx) {
			req = r;
			list_del_init(&req->link);
			break;
		}
	spin_unlock(&rn_lock);
	ret = -ENOENT;
	if (!req)
		goto out;
	memcpy(req->fds_out, files, sizeof(files));
	memset(files, 0, sizeof(files));
	req->nfds_out = msg->nfds;
	req->fd_pass = msg->fd_pass;
	req->reply_len = msg->len;
	memcpy(req->reply, msg->body, msg->len);
	req->status = 0;
	complete(&req->done);
	rn_req_put(req);
	ret = sizeof(*msg);
out:
	for (i = 0; i < RN_CTL_MAX_FDS; i++)
		if (files[i])
			fput(files[i]);
	kfree(msg);
	return ret;
}

static bool is_qp_event(u32 event)
{
	switch (event) {
	case IB_EVENT_QP_FATAL:
	case IB_EVENT_QP_REQ_ERR:
	case IB_EVENT_QP_ACCESS_ERR:
	case IB_EVENT_COMM_EST:
	case IB_EVENT_SQ_DRAINED:
	case IB_EVENT_PATH_MIG:
	case IB_EVENT_PATH_MIG_ERR:
	case IB_EVENT_QP_LAST_WQE_REACHED:
		return true;
	}
	return false;
}

static bool is_srq_event(u32 event)
{
	return event == IB_EVENT_SRQ_ERR || event == IB_EVENT_SRQ_LIMIT_REACHED;
}

/* Under rn_lock: deliver ev to the CQ, QP or SRQ it names, if it exists. */
static void deliver_locked(struct rn_dev *dev, const struct rn_kdev_event *ev)
{
	struct ib_event ibev = { .device = &dev->ibdev, .event = ev->event };
	struct rn_ucontext *uc = xa_load(&dev->contexts, ev->ctx);
	struct rn_srq *srq;
	struct rn_cq *cq;
	struct rn_qp *qp;

	if (!uc)
		return;
	if (is_srq_event(ev->event)) {
		srq = xa_load(&uc->srqs, ev->handle);
		if (srq && srq->ibsrq.event_handler) {
			ibev.element.srq = &srq->ibsrq;
			srq->ibsrq.event_handler(&ibev, srq->ibsrq.srq_context);
		}
		return;
	}
	if (ev->event == RN_KDEV_COMP || ev->event == IB_EVENT_CQ_ERR) {
		cq = xa_load(&uc->cqs, ev->handle);
		if (!cq)
			return;
		if (ev->event == RN_KDEV_COMP) {
			if (cq->ibcq.comp_handler)
				cq->ibcq.comp_handler(&cq->ibcq, cq->ibcq.cq_context);
		} else if (cq->ibcq.event_handler) {
			ibev.element.cq = &cq->ibcq;
			cq->ibcq.event_handler(&ibev, cq->ibcq.cq_context);
		}
		return;
	}
	qp = xa_load(&uc->qps, ev->handle);
	if (qp && qp->ibqp.event_handler) {
		ibev.element.qp = &qp->ibqp;
		qp->ibqp.event_handler(&ibev, qp->ibqp.qp_context);
	}
}

static ssize_t write_event(struct rn_daemon *d, const char __user *buf)
{
	struct rn_kdev_event ev;
	ssize_t ret = sizeof(ev);

	if (copy_from_user(&ev, buf, sizeof(ev)))
		return -EFAULT;
	if (ev.event != RN_KDEV_COMP && ev.event != IB_EVENT_CQ_ERR &&
	    !is_qp_event(ev.event) && !is_srq_event(ev.event))
		return -EINVAL;
	spin_lock(&rn_lock);
	if (d->dev)
		deliver_locked(d->dev, &ev);
	else
		ret = -ENODEV;
	spin_unlock(&rn_lock);
	return ret;
}

static ssize_t write_counters(struct rn_daemon *d, const char __user *buf)
{
	struct rn_kdev_counters c;
	ssize_t ret = sizeof(c);

	if (copy_from_user(&c, buf, sizeof(c)))
		return -EFAULT;
	if (c.count != RN_CNT_MAX)
		return -EINVAL;
	spin_lock(&rn_lock);
	if (d->dev)
		memcpy(d->dev->counters, c.values, sizeof(c.values));
	else
		ret = -ENODEV;
	spin_unlock(&rn_lock);
	return ret;
}

static ssize_t write_engine_counters(struct rn_daemon *d, const char __user *buf)
{
	struct rn_kdev_engine_counters *c = memdup_user(buf, sizeof(*c));
	ssize_t ret = sizeof(*c);

	if (IS_ERR(c))
		return PTR_ERR(c);
	if (c->count != RN_CNT_MAX || c->engine >= RN_KDEV_ENGINES_MAX ||
	    c->reserved)
		ret = -EINVAL;
	else
		ret = rn_dev_engine_counters(d, c->engine, c->values) ?: ret;
	kfree(c);
	return ret;
}

/* A datagram ringnicd received for QP 1: into the kernel's GSI QP. */
static ssize_t write_gsi(struct rn_daemon *d, const char __user *buf)
{
	struct rn_kdev_gsi *g = memdup_user(buf, sizeof(*g));
	ssize_t ret = sizeof(*g);

	if (IS_ERR(g))
		return PTR_ERR(g);
	if (g->len > RN_KDEV_MAD_MAX) {
		kfree(g);
		return -EINVAL;
	}
	spin_lock(&rn_lock);
	if (d->dev)
		rn_gsi_recv_locked(d->dev, g);
	else
		ret = -ENODEV;
	spin_unlock(&rn_lock);
	kfree(g);
	return ret;
}

static ssize_t write_port(struct rn_daemon *d, const char __user *buf)
{
	struct rn_kdev_port p;
	int ret;

	if (copy_from_user(&p, buf, sizeof(p)))
		return -EFAULT;
	if (p.no_gid > 1)
		return -EINVAL;
	ret = rn_dev_set_no_gid(d, p.no_gid);
	return ret ? ret : sizeof(p);
}

static ssize_t kdev_write(struct file *f, const char __user *buf, size_t count,
			  loff_t *pos)
{
	struct rn_daemon *d = f->private_data;
	u32 type;

	if (count < sizeof(type) || get_user(type, (const u32 __user *)buf))
		return -EINVAL;
	if (type == RN_KDEV_REPLY && count == sizeof(struct rn_kdev_reply))
		return write_reply(d, buf);
	if (type == RN_KDEV_EVENT && count == sizeof(struct rn_kdev_event))
		return write_event(d, buf);
	if (type == RN_KDEV_COUNTERS && count == sizeof(struct rn_kdev_counters))
		return write_counters(d, buf);
	if (type == RN_KDEV_ENGINE_COUNTERS &&
	    count == sizeof(struct rn_kdev_engine_counters))
		return write_engine_counters(d, buf);
	if (type == RN_KDEV_GSI_RECV && count == sizeof(struct rn_kdev_gsi))
		return write_gsi(d, buf);
	if (type == RN_KDEV_PORT && count == sizeof(struct rn_kdev_port))
		return write_port(d, buf);
	return -EINVAL;
}

static __poll_t kdev_poll(struct file *f, poll_table *wait)
{
	struct rn_daemon *d = f->private_data;

	poll_wait(f, &d->readq, wait);
	if (!READ_ONCE(d->dev))
		return EPOLLIN | EPOLLHUP;
	return list_empty_careful(&d->unread) ? 0 : EPOLLIN | EPOLLRDNORM;
}

static const struct file_operations kdev_fops = {
	.owner = THIS_MODULE,
	.open = kdev_open,
	.release = kdev_release,
	.read = kdev_read,
	.write = kdev_write,
	.poll = kdev_poll,
	.unlocked_ioctl = kdev_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	/* No llseek: without one the file cannot seek (FMODE_LSEEK, 6.0). */
};

static struct miscdevice kdev_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "ringnic",
	.fops = &kdev_fops,
	.mode = 0600,
};

int rn_daemon_init(void)
{
	return misc_register(&kdev_misc);
}

void rn_daemon_exit(void)
{
	misc_deregister(&kdev_misc);
}
