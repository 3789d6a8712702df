// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The device and its clients: tables, limits, shared memory, async events. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel-abi/ringnic-kdev.h"
#include "core/memory.h"
#include "core/core.h"

/* What a device is before it is published: attributes, empty tables. */
int rn_device_init(struct rn_device *dev, uint64_t guid)
{
	dev->attr = (struct rn_device_attr){
		.node_guid = guid,
		.sys_image_guid = guid,
		.max_mr_size = RN_MAX_MR_SIZE,
		.page_size_cap = RN_PAGE_SIZE_CAP,
		.vendor_id = RN_VENDOR_ID,
		.vendor_part_id = RN_VENDOR_PART_ID,
		.hw_ver = RN_HW_VERSION,
		.max_qp = RN_MAX_QP,
		.max_qp_wr = RN_MAX_QP_WR,
		.max_sge = RN_MAX_SGE,
		.max_inline = RN_MAX_INLINE,
		.max_cq = RN_MAX_CQ,
		.max_cqe = RN_MAX_CQE,
		.max_mr = RN_MAX_MR,
		.max_pd = RN_MAX_PD,
		.max_qp_rd_atom = RN_MAX_RD_ATOM,
		.max_qp_init_rd_atom = RN_MAX_RD_ATOM,
		.max_res_rd_atom = RN_MAX_RD_ATOM * RN_MAX_QP,
		.max_srq = RN_MAX_SRQ,
		.max_srq_wr = RN_MAX_SRQ_WR,
		.max_srq_sge = RN_MAX_SGE,
		.max_ah = RN_MAX_AH,
		.max_mw = RN_MAX_MW,
		.max_xrcd = RN_MAX_XRCD,
	};
	snprintf(dev->attr.fw_ver, sizeof(dev->attr.fw_ver), "%s", RN_FW_VERSION);
	rn_list_init(&dev->clients);
	rn_list_init(&dev->contexts);
	rn_list_init(&dev->captures);
	pthread_mutex_init(&dev->hold_lock, NULL);
	pthread_mutex_init(&dev->atomic_lock, NULL);
	pthread_mutex_init(&dev->mw_lock, NULL);
	rn_table_init(&dev->mr_keys, 1, RN_MAX_MR, RN_REUSE_LATE);
	rn_table_init(&dev->mw_keys, 1, RN_MAX_MW, RN_REUSE_LATE);
	rn_table_init(&dev->qpns, 0, RN_MAX_QP, RN_REUSE_LATE);
	rn_table_init(&dev->srqns, 1, RN_MAX_SRQ, RN_REUSE_LATE);
	rn_table_init(&dev->xrcds, 1, RN_MAX_XRCD, RN_REUSE_LATE);
	dev->mr_tags = calloc(RN_MAX_MR, sizeof(*dev->mr_tags));
	dev->mw_tags = calloc(RN_MAX_MW, sizeof(*dev->mw_tags));
	dev->qpn_gens = calloc(RN_MAX_QP, sizeof(*dev->qpn_gens));
	if (!dev->mr_tags || !dev->mw_tags || !dev->qpn_gens)
		return ENOMEM;
	rn_port_init(dev);
	return 0;
}

void rn_client_init(struct rn_client *client, struct rn_device *dev, pid_t pid,
		    uid_t uid)
{
	client->dev = dev;
	client->fd = -1;
	client->pid = pid;
	client->uid = uid;
	client->async_fd = -1;
	client->uffd = -1;
	client->pidfd = -1;
	client->mem_fd = -1;
	rn_list_init(&client->ctx_link);
}

struct rn_context *rn_context_new(struct rn_device *dev)
{
	struct rn_context *ctx = calloc(1, sizeof(*ctx));

	if (!ctx)
		return NULL;
	ctx->dev = dev;
	ctx->ctxn = dev->next_resn.ctx++;
	rn_list_init(&ctx->link);
	rn_list_init(&ctx->members);
	ctx->wake_fd = -1;
	ctx->cmd_fd = -1;
	ctx->dev_page_fd = -1;
	rn_table_init(&ctx->pds, 1, RN_CONTEXT_MAX_PD, RN_REUSE_LOWEST);
	rn_table_init(&ctx->mrs, 1, RN_CONTEXT_MAX_MR, RN_REUSE_LOWEST);
	rn_table_init(&ctx->mws, 1, RN_CONTEXT_MAX_MW, RN_REUSE_LOWEST);
	rn_table_init(&ctx->cqs, 0, RN_CTX_MAX_CQ, RN_REUSE_LOWEST);
	rn_table_init(&ctx->qps, 0, RN_CTX_MAX_QP, RN_REUSE_LOWEST);
	rn_table_init(&ctx->ahs, 1, RN_CONTEXT_MAX_AH, RN_REUSE_LOWEST);
	rn_table_init(&ctx->srqs, 1, RN_CONTEXT_MAX_SRQ, RN_REUSE_LOWEST);
	rn_table_init(&ctx->xrcds, 1, RN_CONTEXT_MAX_XRCD, RN_REUSE_LOWEST);
	return ctx;
}

void rn_context_join(struct rn_context *ctx, struct rn_client *client)
{
	client->ctx = ctx;
	rn_list_add_tail(&ctx->members, &client->ctx_link);
	ctx->live++;
}

/*
 * Shared memory (rings, the device page) is charged to the client's
 * context and to the device, so that neither one context nor all can make
 * ringnicd allocate without bound.  The charge is the size of the memory,
 * whether the pages were touched or not.
 */
int rn_charge(struct rn_client *client, uint64_t bytes)
{
	struct rn_device *dev = client->dev;

	if (client->ctx->shared_bytes + bytes > RN_CONTEXT_MEM_MAX ||
	    dev->shared_bytes + bytes > dev->max_shared_bytes)
		return ENOMEM;
	client->ctx->shared_bytes += bytes;
	dev->shared_bytes += bytes;
	return 0;
}

void rn_uncharge(struct rn_client *client, uint64_t bytes)
{
	client->ctx->shared_bytes -= bytes;
	client->dev->shared_bytes -= bytes;
}

void *rn_shared_alloc(size_t size, int *memfd)
{
	void *mem;
	int fd;

	fd = memfd_create("ringnic", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return NULL;
	/* Sealed so that a client cannot shrink the file under our mapping
	 * (which would turn our next access into SIGBUS).
	 */
	if (ftruncate(fd, size) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL))
		goto err;
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (mem == MAP_FAILED)
		goto err;
	*memfd = fd;
	return mem;
err:
	close(fd);
	return NULL;
}

/*
 * An event for a kernel context (daemon/kdev.c): handle is a CQ's or a
 * QP's; the kernel delivers it on the context's own channels.
 */
void rn_kdev_event(struct rn_client *client, uint32_t handle, uint32_t event)
{
	struct rn_kdev_event ev = {
		.type = RN_KDEV_EVENT,
		.ctx = client->kctx,
		.event = event,
		.handle = handle,
	};

	if (write(client->dev->kdev_fd, &ev, sizeof(ev)) != sizeof(ev))
		rn_dbg("pid %d: event %u dropped: %s\n", client->pid, event,
		       strerror(errno));
}

/* An async event of the CQ or QP handle, whose user_handle the provider gave. */
void rn_async_event(struct rn_client *client, uint32_t handle,
		    uint64_t user_handle, uint32_t type)
{
	/* The layout libibverbs reads from context->async_fd. */
	struct {
		uint64_t element;
		uint32_t event_type;
		uint32_t reserved;
	} ev = { user_handle, type, 0 };

	if (client->kctx) {
		rn_kdev_event(client, handle, type);
		return;
	}
	if (client->async_fd < 0)
		return;
	/* Non-blocking: a client that never reads its events loses them. */
	if (write(client->async_fd, &ev, sizeof(ev)) != sizeof(ev))
		rn_dbg("pid %d: async event %u dropped\n", client->pid, type);
}

/* ---- PD ---------------------------------------------------------------- */
