/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The provider's objects; each embeds the libibverbs object it extends. */
#ifndef RINGNIC_H
#define RINGNIC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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
};

struct rn_pd {
	struct ibv_pd ibv_pd;
	uint32_t handle;
};

struct rn_mr {
	struct verbs_mr vmr;
	uint32_t handle;
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

/* The WQE being built by the ibv_wr_* calls. */
struct rn_wr_state {
	uint64_t start_prod; /* SQ producer at ibv_wr_start */
	int err; /* first error since ibv_wr_start */
	bool open; /* an opcode call is waiting for its data */
	bool deferred; /* the open WR has RINGNICDV_SEND_DEFER */
	bool ring; /* a WR of the batch is not deferred */
	struct rn_send_wqe hdr;
};

struct rn_qp {
	struct verbs_qp vqp;
	uint32_t handle;
	void *mem;
	size_t mem_size;
	struct rn_qp_ctrl *ctrl;
	uint8_t *sq;
	uint8_t *rq;
	uint32_t sq_slots;
	uint32_t rq_slots;
	struct rn_qp_cap cap;
	bool sq_sig_all;

	pthread_spinlock_t sq_lock;
	uint64_t sq_prod; /* slots written, 48 bits */
	uint64_t sq_rung; /* sq_prod in the last doorbell record */
	struct rn_wr_state wr;
	struct rn_qp *next_send_qp; /* in send_cq->send_qps */
	uint64_t doorbells; /* doorbell records written, under sq_lock */
	uint64_t wakeups; /* of them, those that woke the device */

	pthread_spinlock_t rq_lock;
	uint32_t rq_prod;
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

/* ringnic.c */
bool rn_is_ringnic(struct ibv_context *context);

/* control.c */
int rn_ctl_call(struct rn_context *ctx, void *req, size_t req_len, void *resp,
		size_t resp_len, const int *fds_in, int nfds_in, int *fds_out,
		int nfds_out);
void *rn_map_fd(int fd, size_t size);

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

/* verbs.c */
int rn_query_device_ex(struct ibv_context *context,
		       const struct ibv_query_device_ex_input *input,
		       struct ibv_device_attr_ex *attr, size_t attr_size);
int rn_query_port(struct ibv_context *context, uint8_t port,
		  struct ibv_port_attr *attr);
struct ibv_pd *rn_alloc_pd(struct ibv_context *context);
int rn_dealloc_pd(struct ibv_pd *pd);
struct ibv_mr *rn_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			 uint64_t iova, int access);
int rn_dereg_mr(struct verbs_mr *vmr);
struct ibv_cq *rn_create_cq(struct ibv_context *context, int cqe,
			    struct ibv_comp_channel *channel, int comp_vector);
struct ibv_cq_ex *rn_create_cq_ex(struct ibv_context *context,
				  struct ibv_cq_init_attr_ex *attr);
int rn_destroy_cq(struct ibv_cq *cq);
struct ibv_qp *rn_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
struct ibv_qp *rn_create_qp_ex(struct ibv_context *context,
			       struct ibv_qp_init_attr_ex *attr);
int rn_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int rn_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		struct ibv_qp_init_attr *init_attr);
int rn_destroy_qp(struct ibv_qp *qp);

/* post.c */
int rn_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		 struct ibv_send_wr **bad_wr);
int rn_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
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
void rn_cq_event(struct ibv_cq *cq);
void rn_cq_init_poll_ops(struct rn_cq *cq);

#endif
