/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The provider's objects; each embeds the libibverbs object it extends. */
#ifndef RINGNIC_H
#define RINGNIC_H

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

#include "ibverbs-private.h"
#include "kernel-abi/ringnic-abi.h"
#include "kernel-abi/ringnic-ctl.h"
#include "kernel-abi/ringnic-devpage.h"
#include "kernel-abi/ringnic-queue.h"

#define rn_container_of(ptr, type, member)                                     \
	((type *)((char *)(ptr) - offsetof(type, member)))

struct rn_device {
	struct verbs_device ibv_dev;
	bool kernel; /* ringnic.ko's device (kernel.c), not a published one */
	char ctl_path[108]; /* userspace mode: the device's control socket */
};

struct rn_kdev_status;
struct rn_kdev_u64;

struct rn_cq;
struct rn_mr;

#define RN_MR_HASH_SIZE 256

struct rn_context {
	struct verbs_context ibv_ctx;
	int ctl_fd;
	pthread_mutex_t ctl_lock; /* one request in flight on ctl_fd */
	bool dead; /* the device went away (atomic: the watchdog sets it) */
	struct rn_device_attr attr;
	struct rn_dev_page *dev_page;
	int wake_fd; /* written to wake the device when it sleeps */
	bool kernel; /* kernel mode: the rest of this block is unused */
	/* Kernel mode: the kernel's page saying whether ringnicd is gone. */
	const volatile struct rn_kdev_status *kstatus;

	/*
	 * The watchdog: a thread asleep in poll() on the control socket.
	 * When ringnicd goes away it reports IBV_EVENT_DEVICE_FATAL on our
	 * copy of the async pipe and wakes every completion channel.
	 */
	pthread_t watchdog;
	int watchdog_stop; /* eventfd: the context is being closed */
	int async_wfd; /* our write end of context->async_fd */
	pthread_mutex_t channel_lock;
	struct rn_cq *channel_cqs; /* CQs with a completion channel */

	/* The MRs by lkey, which ibv_advise_mr names; a home's serve all. */
	pthread_mutex_t mr_lock;
	struct rn_mr *mr_hash[RN_MR_HASH_SIZE];

	/*
	 * Contexts that share one context of the device: the one opened
	 * (ibv_open_device) and those imported in this process from a dup of
	 * its command fd (ibv_import_device).  The opener is their home:
	 * its ctl_lock and MR index serve them all, and an importer's ctl_fd,
	 * dev_page, wake_fd and attr are copies of its own.  A home lives
	 * while any of them is open: its importers work on after the opener
	 * is closed.  Each context has its own async pipe, watchdog and
	 * channel list; ringnicd reports the objects' async events on the
	 * opener's pipe, as the kernel reports them on a uverbs file's first
	 * async fd, and an importer's carries its watchdog's DEVICE_FATAL.
	 */
	struct rn_context *home; /* the opener itself, in the opener */
	unsigned int users; /* of a home: its contexts open (homes_lock) */
	struct rn_context *next_home; /* the process's homes (homes_lock) */
	dev_t cmd_dev; /* of a home: the file of its command fd */
	ino_t cmd_ino;
	pid_t pid; /* of a home: the process whose connection it is */
};

struct rn_pd {
	struct ibv_pd ibv_pd;
	uint32_t handle;
};

struct rn_mr {
	struct verbs_mr vmr;
	uint32_t handle;
	uint64_t iova; /* the address work requests name vmr.ibv_mr.addr by */
	/* Its PD's handle: the PD object it was made with may be an imported
	 * one, freed by ibv_unimport_pd since. */
	uint32_t pd_handle;
	struct rn_mr *next_by_key; /* in ctx->mr_hash, for ibv_advise_mr */
};

struct rn_mw {
	struct ibv_mw ibv_mw;
	uint32_t handle;
};

struct rn_ah {
	struct ibv_ah ibv_ah;
	uint32_t handle;
};

struct rn_xrcd {
	struct verbs_xrcd vxrcd;
	uint32_t handle;
};

/* A receive ring and its counters: a QP's own or an SRQ's. */
struct rn_recv_ring {
	uint8_t *ring;
	uint32_t slots; /* 0: none */
	uint32_t max_wr;
	uint32_t max_sge;
	uint32_t *shared_prod; /* slots posted, read by the device */
	const uint32_t *shared_wr_cons; /* WRs the device consumed */
	pthread_spinlock_t lock;
	uint32_t prod; /* slots posted, under lock */
	uint32_t wr_prod; /* WRs posted, under lock */
};

struct rn_srq {
	struct verbs_srq vsrq;
	uint32_t handle;
	void *mem;
	size_t mem_size;
	struct rn_srq_ctrl *ctrl;
	struct rn_recv_ring rq;
};

struct rn_cq {
	struct ibv_cq_ex ibv_cq;
	uint32_t handle;
	void *mem;
	size_t mem_size;
	struct rn_cq_ctrl *ctrl;
	struct rn_cqe *ring;
	uint32_t entries;
	uint32_t log2_entries;
	uint32_t cons; /* CQEs consumed, under lock */
	bool single_threaded; /* the consumer serializes: no lock */
	pthread_spinlock_t lock;
	const struct rn_cqe *cur; /* the CQE between start_poll and end_poll */
	int channel_wfd; /* write end of the completion channel, or -1 */
	struct rn_cq *next_channel_cq; /* in ctx->channel_cqs */

	/* QPs sending into this CQ, whose deferred WRs polling or arming it
	 * hands to the device (rn_cq_flush_deferred).
	 */
	pthread_mutex_t send_qps_lock;
	struct rn_qp *send_qps;
	int deferred; /* atomic: one of them may have deferred WRs */
};

/* The largest send WQE: header, destination and the largest payload. */
#define RN_WQE_BUF (RN_SEND_HDR_SIZE + sizeof(struct rn_wqe_dest) + RN_MAX_INLINE)

/* The WQE being built by the ibv_wr_* calls (wr.c). */
struct rn_wr_state {
	uint64_t start_prod; /* SQ producer at ibv_wr_start */
	uint32_t start_wr_prod;
	int err; /* first error since ibv_wr_start */
	unsigned int need; /* setters the WQE in buf still waits for */
	bool deferred; /* the WR has RINGNICDV_SEND_DEFER */
	bool ring; /* a WR of the batch is not deferred */
	struct ibv_sge sge[1]; /* its first SGE, which atomics are checked by */
	uint8_t buf[RN_WQE_BUF] __attribute__((aligned(8)));
};

struct rn_qp {
	struct verbs_qp vqp;
	uint32_t handle;
	void *mem; /* NULL for a QP opened with ibv_open_qp */
	size_t mem_size;
	struct rn_qp_ctrl *ctrl;
	uint8_t *sq;
	uint32_t sq_slots; /* 0: no send queue */
	struct rn_qp_cap cap;
	bool sq_sig_all;
	bool has_dest; /* UD, XRC_SEND: WQEs carry struct rn_wqe_dest */

	pthread_spinlock_t sq_lock;
	uint64_t sq_prod; /* slots written, 48 bits */
	uint32_t sq_wr_prod; /* WRs written */
	uint64_t sq_rung; /* sq_prod in the last doorbell record */
	struct rn_wr_state wr;
	struct rn_qp *next_send_qp; /* in send_cq->send_qps */
	uint64_t doorbells; /* doorbell records written, under sq_lock */
	uint64_t wakeups; /* of them, those that woke the device */

	struct rn_recv_ring rq; /* its own (rq.slots 0: an SRQ, or none) */
};

static inline struct rn_device *to_rn_dev(struct ibv_device *d)
{
	return rn_container_of(d, struct rn_device, ibv_dev.device);
}

static inline struct rn_context *to_rn_ctx(struct ibv_context *c)
{
	return rn_container_of(c, struct rn_context, ibv_ctx.context);
}

static inline struct rn_pd *to_rn_pd(struct ibv_pd *pd)
{
	return rn_container_of(pd, struct rn_pd, ibv_pd);
}

static inline struct rn_mr *to_rn_mr(struct verbs_mr *vmr)
{
	return rn_container_of(vmr, struct rn_mr, vmr);
}

static inline struct rn_cq *to_rn_cq(struct ibv_cq *cq)
{
	return rn_container_of((struct ibv_cq_ex *)cq, struct rn_cq, ibv_cq);
}

static inline struct rn_cq *to_rn_cq_ex(struct ibv_cq_ex *cq)
{
	return rn_container_of(cq, struct rn_cq, ibv_cq);
}

static inline struct rn_mw *to_rn_mw(struct ibv_mw *mw)
{
	return rn_container_of(mw, struct rn_mw, ibv_mw);
}

static inline struct rn_ah *to_rn_ah(struct ibv_ah *ah)
{
	return rn_container_of(ah, struct rn_ah, ibv_ah);
}

static inline struct rn_xrcd *to_rn_xrcd(struct ibv_xrcd *xrcd)
{
	return rn_container_of(xrcd, struct rn_xrcd, vxrcd.xrcd);
}

static inline struct rn_srq *to_rn_srq(struct ibv_srq *srq)
{
	return rn_container_of(srq, struct rn_srq, vsrq.srq);
}

static inline struct rn_qp *to_rn_qp(struct ibv_qp *qp)
{
	return rn_container_of(qp, struct rn_qp, vqp.qp);
}

static inline struct rn_qp *to_rn_qp_ex(struct ibv_qp_ex *qpx)
{
	return rn_container_of(qpx, struct rn_qp, vqp.qp_ex);
}

#define rn_log(ctx, level, fmt, ...)                                           \
	__verbs_log(&(ctx)->ibv_ctx, level, "%s: " fmt,                        \
		    (ctx)->ibv_ctx.context.device->name, ##__VA_ARGS__)
#define rn_err(ctx, fmt, ...) rn_log(ctx, RN_VERBS_LOG_ERR, fmt, ##__VA_ARGS__)
#define rn_dbg(ctx, fmt, ...) rn_log(ctx, RN_VERBS_LOG_DEBUG, fmt, ##__VA_ARGS__)

static inline bool rn_dead(struct rn_context *ctx)
{
	/* The status page starts with its dead word (ringnic-kdev.h). */
	return __atomic_load_n(&ctx->dead, __ATOMIC_RELAXED) ||
	       (ctx->kstatus && *(const volatile uint32_t *)ctx->kstatus);
}

static inline bool rn_kernel_mode(struct ibv_context *context)
{
	return to_rn_ctx(context)->kernel;
}

/* Destroying an object of a device that is gone frees our side and succeeds. */
static inline int rn_destroy_result(int ret)
{
	return ret == ENODEV ? 0 : ret;
}

/* ringnic.c */
bool rn_is_ringnic(struct ibv_context *context);

/* control.c */
int rn_ctl_call(struct rn_context *ctx, void *req, size_t req_len, void *resp,
		size_t resp_len, const int *fds_in, int nfds_in, int *fds_out,
		int nfds_out);
void *rn_map_fd(int fd, size_t size);
int rn_ctl_handle_call(struct ibv_context *context, enum rn_ctl_op op,
		       uint32_t handle);

/* kernel.c: kernel mode's transport */
bool rn_kernel_device(const struct verbs_sysfs_dev *sysfs);
void *rn_kernel_map(struct rn_context *ctx, const struct rn_kdev_u64 *offset,
		    size_t size, int prot);
int rn_kernel_open(struct rn_context *ctx, int uffd);
int rn_kernel_alloc_pd(struct ibv_context *context, struct rn_pd *pd);
int rn_kernel_reg_mr(struct rn_mr *mr, struct ibv_pd *pd,
		     const struct rn_ctl_reg_mr_req *req);
int rn_kernel_create_cq(struct ibv_context *context, struct rn_cq *cq,
			const struct ibv_cq_init_attr_ex *attr,
			const struct rn_ctl_create_cq_req *req,
			struct rn_ctl_create_cq_resp *out);
int rn_kernel_create_qp(struct ibv_context *context, struct rn_qp *qp,
			struct ibv_qp_init_attr_ex *attr,
			const struct rn_ctl_create_qp_req *req,
			struct rn_ctl_create_qp_resp *out);
int rn_kernel_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
			const struct rn_ctl_modify_qp_req *req);
int rn_kernel_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		       struct ibv_qp_init_attr *init_attr);
int rn_kernel_query_port(struct ibv_context *context, uint8_t port,
			 struct ibv_port_attr *attr);
int rn_kernel_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr,
			struct rn_ah *ah, const struct rn_ctl_create_ah_req *req);
int rn_kernel_destroy_ah(struct ibv_ah *ah);
int rn_kernel_create_srq(struct ibv_context *context, struct rn_srq *srq,
			 struct ibv_srq_init_attr_ex *attr,
			 const struct rn_ctl_create_srq_req *req,
			 struct rn_ctl_create_srq_resp *out, void **mem);
int rn_kernel_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			 int mask, const struct rn_ctl_modify_srq_req *req,
			 struct rn_ctl_modify_srq_resp *out, void **mem);
int rn_kernel_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int rn_kernel_destroy_srq(struct ibv_srq *srq);
int rn_kernel_open_xrcd(struct ibv_context *context, struct rn_xrcd *xrcd,
			struct ibv_xrcd_init_attr *attr);
int rn_kernel_close_xrcd(struct ibv_xrcd *xrcd);
int rn_kernel_open_qp(struct ibv_context *context, struct rn_qp *qp,
		      struct ibv_qp_open_attr *attr);
int rn_kernel_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		       struct rn_mw *mw, const struct rn_ctl_alloc_mw_req *req);
int rn_kernel_dealloc_mw(struct ibv_mw *mw);
int rn_kernel_rereg_mr(struct rn_mr *mr, int flags, struct ibv_pd *pd,
		       void *addr, size_t length, int access,
		       const struct rn_ctl_rereg_mr_req *req);
int rn_kernel_resize_cq(struct ibv_cq *cq, const struct rn_ctl_resize_cq_req *req,
			struct rn_ctl_resize_cq_resp *out, void **mem);

/* verbs.c */
int rn_query_device_ex(struct ibv_context *context,
		       const struct ibv_query_device_ex_input *input,
		       struct ibv_device_attr_ex *attr, size_t attr_size);
int rn_query_port(struct ibv_context *context, uint8_t port,
		  struct ibv_port_attr *attr);
struct ibv_pd *rn_alloc_pd(struct ibv_context *context);
int rn_dealloc_pd(struct ibv_pd *pd);
struct ibv_pd *rn_import_pd(struct ibv_context *context, uint32_t handle);
void rn_unimport_pd(struct ibv_pd *pd);
struct ibv_ah *rn_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int rn_destroy_ah(struct ibv_ah *ah);

/* mr.c */
struct ibv_mr *rn_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			 uint64_t iova, int access);
int rn_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
		void *addr, size_t length, int access);
int rn_dereg_mr(struct verbs_mr *vmr);
struct ibv_mr *rn_import_mr(struct ibv_pd *pd, uint32_t handle);
void rn_unimport_mr(struct ibv_mr *mr);
int rn_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		 uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sge);
struct ibv_mw *rn_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int rn_dealloc_mw(struct ibv_mw *mw);

/* srq.c */
struct ibv_srq *rn_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
struct ibv_srq *rn_create_srq_ex(struct ibv_context *context,
				 struct ibv_srq_init_attr_ex *attr);
int rn_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int rn_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int rn_destroy_srq(struct ibv_srq *srq);
int rn_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
struct ibv_xrcd *rn_open_xrcd(struct ibv_context *context,
			      struct ibv_xrcd_init_attr *attr);
int rn_close_xrcd(struct ibv_xrcd *xrcd);

/* cq.c */
struct ibv_cq *rn_create_cq(struct ibv_context *context, int cqe,
			    struct ibv_comp_channel *channel, int comp_vector);
struct ibv_cq_ex *rn_create_cq_ex(struct ibv_context *context,
				  struct ibv_cq_init_attr_ex *attr);
int rn_resize_cq(struct ibv_cq *cq, int cqe);
int rn_destroy_cq(struct ibv_cq *cq);

/* qp.c */
struct ibv_qp *rn_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
struct ibv_qp *rn_create_qp_ex(struct ibv_context *context,
			       struct ibv_qp_init_attr_ex *attr);
int rn_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int rn_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		struct ibv_qp_init_attr *init_attr);
int rn_destroy_qp(struct ibv_qp *qp);
struct ibv_qp *rn_open_qp(struct ibv_context *context,
			  struct ibv_qp_open_attr *attr);
int rn_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
			      uint32_t flags);

/* post.c */
int rn_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		 struct ibv_send_wr **bad_wr);
int rn_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind);

/* recv.c */
void rn_recv_ring_init(struct rn_recv_ring *rq, uint8_t *ring, uint32_t slots,
		       uint32_t max_wr, uint32_t max_sge, uint32_t *prod,
		       const uint32_t *wr_cons);
int rn_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		 struct ibv_recv_wr **bad_wr);
int rn_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
		     struct ibv_recv_wr **bad_wr);
void rn_qp_init_wr_ops(struct rn_qp *qp);
bool rn_ring(struct rn_context *ctx, struct rn_doorbells *db, uint32_t index);
void rn_qp_flush_deferred(struct rn_qp *qp);
void rn_cq_flush_deferred(struct rn_cq *cq);
uint32_t rn_sq_free_slots(const struct rn_qp *qp);

/* poll.c */
int rn_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
int rn_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int rn_arm_cq(struct rn_cq *cq, uint32_t level);
void rn_cq_discard_qp(struct rn_cq *cq, uint32_t qpn, bool keep_recv,
		      bool keep_send);
void rn_cq_event(struct ibv_cq *cq);
void rn_cq_init_poll_ops(struct rn_cq *cq);

#endif
