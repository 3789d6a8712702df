/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ringnic.ko: the thin kernel stub of the ringnic software RDMA NIC.
 *
 * It registers an ib_device per `rdma link add NAME type ringnic netdev
 * DEV` so that libibverbs, uverbs and the rdma tool see an ordinary RDMA
 * device, and relays every control request to the ringnicd attached to the
 * device (see kernel-abi/ringnic-kdev.h).  It moves no payload and runs no
 * protocol: queues live in memory ringnicd created and the stub maps into
 * the application; the data path never enters the kernel.
 */
#ifndef RINGNIC_KMOD_H
#define RINGNIC_KMOD_H

#include <linux/completion.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/xarray.h>
#include <rdma/ib_verbs.h>

#include "kernel-abi/ringnic-abi.h"
#include "kernel-abi/ringnic-ctl.h"
#include "kernel-abi/ringnic-kdev.h"

struct rn_daemon;
struct rn_devctx;
struct rn_engine_stats;

/* One ringnic ib_device. */
struct rn_dev {
	struct ib_device ibdev;
	struct list_head link; /* rn_devices */
	struct net_device *ndev;
	struct mutex devctx_lock;
	struct rn_devctx *devctx; /* under devctx_lock: the newest, or NULL */
	/* Under rn_lock: */
	struct rn_daemon *daemon; /* the attached ringnicd, or NULL */
	/* It can use none of the port's GIDs (struct rn_kdev_port): INIT. */
	bool no_gid;
	struct xarray contexts; /* ringnicd's context id -> struct rn_ucontext */
	u32 next_ctx;
	u64 counters[RN_CNT_MAX]; /* the port's, as ringnicd last sent them */
	/* Under rn_devices_lock (main.c): engines/K/hw_counters/, what each
	 * engine of the attached ringnicd counted, while it stays attached.
	 */
	struct kobject *engines_dir; /* engines/, or NULL */
	struct rn_engine_stats *engines[RN_KDEV_ENGINES_MAX];
	struct rn_qp *gsi; /* the kernel's QP1 (gsi.c), or NULL */
	u32 gsi_queued; /* its datagrams waiting for ringnicd to read them */
};

/* A ringnicd that opened RN_KDEV_PATH; file->private_data. */
struct rn_daemon {
	struct rn_dev *dev; /* under rn_lock; NULL until attached or once gone */
	struct pid_namespace *pidns;
	wait_queue_head_t readq;
	/* Under rn_lock: */
	struct list_head unread; /* requests ringnicd has not read yet */
	struct list_head waiting; /* read, waiting for the reply */
	u64 next_seq;
};

/* A request on its way to ringnicd and back. */
struct rn_req {
	struct kref ref; /* the caller's, and the daemon lists' while queued */
	struct list_head link; /* on unread or waiting; empty when answered */
	struct completion done;
	u32 type; /* enum rn_kdev_req_type */
	u32 ctx;
	u64 seq;
	struct pid *pid;
	kuid_t uid;
	struct file *fds_in[RN_CTL_MAX_FDS];
	u32 nfds_in;
	u32 len;
	u8 body[RN_CTL_MSG_MAX];

	/* The answer: status 0 and the reply, or -ENODEV when ringnicd left. */
	int status;
	struct file *fds_out[RN_CTL_MAX_FDS];
	u32 nfds_out;
	u32 fd_pass;
	u32 reply_len;
	u8 reply[RN_CTL_MSG_MAX];
};

struct rn_ucontext {
	struct ib_ucontext ibuc;
	struct rn_dev *dev;
	struct rn_daemon *daemon; /* the ringnicd that opened it */
	u32 ctx; /* its id there; 0: not registered (ringnicd left or never) */
	struct rn_kdev_status *status; /* vmalloc_user page, mapped read-only */
	struct rdma_user_mmap_entry *status_entry;
	struct rdma_user_mmap_entry *page_entry; /* ringnicd's device page */
	/* ringnicd's handles -> our objects, for its events (under rn_lock) */
	struct xarray cqs;
	struct xarray qps;
	struct xarray srqs;
	struct rn_req *close; /* allocated up front: closing cannot fail */
};

/*
 * The device's own context with ringnicd.  The kernel shares an XRC domain
 * between the processes that open its file, lets any of them ib_open_qp a
 * target QP of it without the driver, and creates that QP with no udata:
 * such objects outlive, or never meet, the application context that made
 * them.  They are ringnicd's objects of this context instead, which holds
 * no application's memory.  One is opened with ringnicd when first needed;
 * each XRC domain and target QP holds a reference to the one it was made
 * in (ringnicd's domain ids are valid in that ringnicd only), and the last
 * one closes it.  Its QP table bounds the target QPs of a device at
 * RN_CTX_MAX_QP.
 */
struct rn_devctx {
	struct kref ref; /* put under dev->devctx_lock (kref_put_mutex) */
	struct rn_ucontext uc; /* registered as any context; ibuc unused */
};

/* What an application may mmap: ringnicd's memory, or the status page. */
struct rn_mmap_entry {
	struct rdma_user_mmap_entry rdma;
	struct file *memfd; /* NULL: the context's status page */
};

struct rn_pd {
	struct ib_pd ibpd;
	struct rn_ucontext *uc; /* NULL: a kernel consumer's, ringnicd's no */
	u32 handle;
};

struct rn_kcq;
struct rn_gsi;

/* A CQ: an application's (ringnicd's, mapped), or a kernel consumer's. */
struct rn_cq {
	struct ib_cq ibcq;
	struct rn_ucontext *uc;
	u32 handle;
	struct rdma_user_mmap_entry *mem;
	struct rn_kcq *kcq; /* a kernel consumer's: its completions (gsi.c) */
};

/*
 * A QP.  An XRC target QP (no udata, see struct rn_devctx) is the device
 * context's: uc is &devctx->uc, and it has no memory of the application's.
 */
struct rn_qp {
	struct ib_qp ibqp;
	struct rn_ucontext *uc;
	u32 handle;
	struct rdma_user_mmap_entry *mem;
	struct rn_devctx *devctx; /* XRC target QPs only: held */
	struct rn_gsi *gsi; /* the kernel's QP1 only (gsi.c) */
};

struct rn_mr {
	struct ib_mr ibmr;
	struct rn_ucontext *uc;
	u32 handle;
};

/* An AH: ringnicd's (handle), or, with no context, a kernel consumer's. */
struct rn_ah {
	struct ib_ah ibah;
	struct rn_ucontext *uc;
	u32 handle;
	struct {
		u8 dgid[16];
		u32 sgid_index;
		u32 flow_label;
		u8 traffic_class;
		u8 hop_limit;
	} kernel;
};

struct rn_srq {
	struct ib_srq ibsrq;
	struct rn_ucontext *uc;
	u32 handle;
	struct rdma_user_mmap_entry *mem; /* replaced by a resize */
};

/* An XRC domain: id is ringnicd's device-wide one, in devctx's ringnicd. */
struct rn_xrcd {
	struct ib_xrcd ibxrcd;
	struct rn_devctx *devctx; /* held */
	u32 id;
};

struct rn_mw {
	struct ib_mw ibmw;
	struct rn_ucontext *uc;
	u32 handle;
};

extern spinlock_t rn_lock;
/* Requests and mmap entries alive: none may outlive the module. */
extern atomic_t rn_live_reqs;
extern atomic_t rn_live_entries;

static inline struct rn_dev *to_rn_dev(struct ib_device *ibdev)
{
	return container_of(ibdev, struct rn_dev, ibdev);
}

static inline struct rn_ucontext *to_rn_uc(struct ib_ucontext *ibuc)
{
	return container_of(ibuc, struct rn_ucontext, ibuc);
}

/* main.c */
int rn_dev_attach_daemon(struct rn_daemon *d, const char *name, __u64 *guid);
void rn_dev_detach_daemon(struct rn_daemon *d);
int rn_dev_set_no_gid(struct rn_daemon *d, bool no_gid);
int rn_dev_engine_counters(struct rn_daemon *d, u32 k, const u64 *values);

/* daemon.c */
int rn_daemon_init(void);
void rn_daemon_exit(void);
void rn_daemon_detach_dev(struct rn_dev *dev, bool fatal);
int rn_ucontext_register(struct rn_ucontext *uc);
struct rn_req *rn_req_new(u32 type);
void rn_req_put(struct rn_req *req);
int rn_req_call(struct rn_ucontext *uc, struct rn_req *req);
void rn_req_close(struct rn_ucontext *uc, struct rn_req *close);
void rn_daemon_gsi_send(struct rn_dev *dev, const struct rn_kdev_gsi *g);

/* gsi.c */
extern const struct ib_device_ops rn_kernel_ops;
int rn_kcq_create(struct rn_cq *cq, const struct ib_cq_init_attr *attr);
void rn_kcq_destroy(struct rn_cq *cq);
int rn_kah_init(struct rn_ah *ah, const struct rdma_ah_attr *a);
int rn_gsi_create(struct rn_qp *qp, struct ib_qp_init_attr *init);
int rn_gsi_modify(struct rn_qp *qp, const struct ib_qp_attr *attr, int mask);
int rn_gsi_query(struct rn_qp *qp, struct ib_qp_attr *attr,
		 struct ib_qp_init_attr *init);
void rn_gsi_destroy(struct rn_qp *qp);
void rn_gsi_recv_locked(struct rn_dev *dev, const struct rn_kdev_gsi *g);

/* verbs.c */
extern const struct ib_device_ops rn_verbs_ops;

#endif
