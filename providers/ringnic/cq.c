// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Completion queue objects: creation, resizing and destruction. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ringnic.h"

#define RN_CQ_WC_FLAGS                                                         \
	(IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_QP_NUM |   \
	 IBV_WC_EX_WITH_SRC_QP | IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |       \
	 IBV_WC_EX_WITH_DLID_PATH_BITS)

/*
 * A completion channel of userspace mode is a pipe (from ringnic-run's
 * shim): the device gets a write end of it and writes events into it
 * itself.  Reopening the read end through /proc gives that write end.
 */
static int channel_write_end(struct ibv_comp_channel *channel)
{
	char path[32];
	struct stat st;

	if (fstat(channel->fd, &st) || !S_ISFIFO(st.st_mode)) {
		errno = EINVAL;
		return -1;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", channel->fd);
	return open(path, O_WRONLY | O_CLOEXEC | O_NONBLOCK);
}

static void channel_cq_add(struct rn_context *ctx, struct rn_cq *cq)
{
	pthread_mutex_lock(&ctx->channel_lock);
	cq->next_channel_cq = ctx->channel_cqs;
	ctx->channel_cqs = cq;
	pthread_mutex_unlock(&ctx->channel_lock);
}

static void channel_cq_del(struct rn_context *ctx, struct rn_cq *cq)
{
	struct rn_cq **p;

	pthread_mutex_lock(&ctx->channel_lock);
	for (p = &ctx->channel_cqs; *p; p = &(*p)->next_channel_cq)
		if (*p == cq) {
			*p = cq->next_channel_cq;
			break;
		}
	pthread_mutex_unlock(&ctx->channel_lock);
}

/* The control block and ring in the CQ's memory. */
static void cq_layout(struct rn_cq *cq, uint32_t entries)
{
	cq->ctrl = cq->mem;
	cq->ring = (struct rn_cqe *)((uint8_t *)cq->mem + RN_CQ_RING_OFFSET);
	cq->entries = entries;
	cq->log2_entries = 0;
	while ((1u << cq->log2_entries) < cq->entries)
		cq->log2_entries++;
}

static struct rn_cq *cq_create(struct ibv_context *context,
			       const struct ibv_cq_init_attr_ex *attr)
{
	struct rn_ctl_create_cq_req req = { .hdr.op = RN_CTL_CREATE_CQ };
	struct rn_ctl_create_cq_resp resp;
	struct rn_cq *cq;
	int ret, memfd;

	if (attr->comp_mask & ~IBV_CQ_INIT_ATTR_MASK_FLAGS ||
	    attr->wc_flags & ~RN_CQ_WC_FLAGS ||
	    (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS &&
	     attr->flags & ~IBV_CREATE_CQ_ATTR_SINGLE_THREADED)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!attr->cqe || attr->cqe > to_rn_ctx(context)->attr.max_cqe ||
	    attr->comp_vector >= (uint32_t)context->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	cq->channel_wfd = -1;
	/* Events carry the handle ibv_get_cq_event turns back into the CQ. */
	req.user_handle = (uintptr_t)ibv_cq_ex_to_cq(&cq->ibv_cq);
	req.cqe = attr->cqe;
	if (rn_kernel_mode(context)) {
		/* The channel is the kernel's; it signals it itself. */
		ret = rn_kernel_create_cq(context, cq, attr, &req, &resp);
		if (ret)
			goto err_free;
		goto mapped;
	}
	if (attr->channel) {
		cq->channel_wfd = channel_write_end(attr->channel);
		if (cq->channel_wfd < 0) {
			ret = errno;
			goto err_free;
		}
	}
	ret = rn_ctl_call(to_rn_ctx(context), &req, sizeof(req), &resp,
			  sizeof(resp), &cq->channel_wfd, attr->channel ? 1 : 0,
			  &memfd, 1);
	if (ret)
		goto err_channel;
	ret = ENOMEM;
	cq->mem_size = resp.mmap_size;
	cq->mem = rn_map_fd(memfd, cq->mem_size);
	if (!cq->mem)
		goto err_destroy;
	cq->ibv_cq.handle = resp.handle;
mapped:
	cq->handle = resp.handle;
	cq_layout(cq, resp.ring_entries);
	cq->single_threaded = attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS &&
			      attr->flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED;
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	pthread_mutex_init(&cq->send_qps_lock, NULL);
	cq->ibv_cq.cqe = cq->entries;
	rn_cq_init_poll_ops(cq);
	if (cq->channel_wfd >= 0)
		channel_cq_add(to_rn_ctx(context), cq);
	return cq;

err_destroy:
	rn_ctl_handle_call(context, RN_CTL_DESTROY_CQ, resp.handle);
err_channel:
	if (cq->channel_wfd >= 0)
		close(cq->channel_wfd);
err_free:
	free(cq);
	errno = ret;
	return NULL;
}

struct ibv_cq *rn_create_cq(struct ibv_context *context, int cqe,
			    struct ibv_comp_channel *channel, int comp_vector)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = cqe > 0 ? cqe : 0,
		.channel = channel,
		.comp_vector = comp_vector >= 0 ? (uint32_t)comp_vector : UINT32_MAX,
	};
	struct rn_cq *cq = cq_create(context, &attr);

	return cq ? ibv_cq_ex_to_cq(&cq->ibv_cq) : NULL;
}

struct ibv_cq_ex *rn_create_cq_ex(struct ibv_context *context,
				  struct ibv_cq_init_attr_ex *attr)
{
	struct rn_cq *cq = cq_create(context, attr);

	return cq ? &cq->ibv_cq : NULL;
}

int rn_destroy_cq(struct ibv_cq *ibcq)
{
	struct rn_cq *cq = to_rn_cq(ibcq);
	int ret = rn_kernel_mode(ibcq->context) ?
			  ibv_cmd_destroy_cq(ibcq) :
			  rn_destroy_result(rn_ctl_handle_call(ibcq->context,
						     RN_CTL_DESTROY_CQ, cq->handle));

	if (ret)
		return ret;
	if (cq->channel_wfd >= 0) {
		channel_cq_del(to_rn_ctx(ibcq->context), cq);
		close(cq->channel_wfd);
	}
	munmap(cq->mem, cq->mem_size);
	pthread_spin_destroy(&cq->lock);
	pthread_mutex_destroy(&cq->send_qps_lock);
	free(cq);
	return 0;
}

/*
 * ibv_resize_cq: the device moves the CQ to new memory with the CQEs not
 * yet polled at its start.  Polls and arms wait on the CQ's lock meanwhile.
 */
int rn_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct rn_cq *cq = to_rn_cq(ibcq);
	struct rn_ctl_resize_cq_req req = {
		.hdr.op = RN_CTL_RESIZE_CQ,
		.handle = cq->handle,
		.cqe = cqe > 0 ? cqe : 0,
	};
	struct rn_ctl_resize_cq_resp resp;
	void *mem = NULL;
	int ret, memfd;

	if (cqe <= 0)
		return EINVAL;
	pthread_spin_lock(&cq->lock);
	if (rn_kernel_mode(ibcq->context)) {
		ret = rn_kernel_resize_cq(ibcq, &req, &resp, &mem);
	} else {
		ret = rn_ctl_call(to_rn_ctx(ibcq->context), &req, sizeof(req),
				  &resp, sizeof(resp), NULL, 0, &memfd, 1);
		if (!ret) {
			mem = rn_map_fd(memfd, resp.mmap_size);
			if (!mem)
				ret = ENOMEM; /* the device moved: this CQ is lost */
		}
	}
	if (!ret) {
		munmap(cq->mem, cq->mem_size);
		cq->mem = mem;
		cq->mem_size = resp.mmap_size;
		cq_layout(cq, resp.ring_entries);
		cq->cons = 0;
		ibcq->cqe = cq->entries;
	}
	pthread_spin_unlock(&cq->lock);
	return ret;
}
