// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion queues: the objects (creation, resizing, destruction) and
 * writing CQEs, of which the device is the only producer.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "verbs/verbs.h"
#include "base/table.h"

static uint32_t log2_ceil(uint32_t v)
{
	uint32_t l = 0;

	while ((1u << l) < v)
		l++;
	return l;
}

/* The write end of a completion channel, made non-blocking for us. */
static int channel_check(int fd)
{
	struct stat st;
	int flags;

	if (fstat(fd, &st) || !S_ISFIFO(st.st_mode))
		return EINVAL;
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY ||
	    fcntl(fd, F_SETFL, flags | O_NONBLOCK))
		return EINVAL;
	return 0;
}

int rn_cq_create(struct rn_client *client, const struct rn_ctl_create_cq_req *req,
		 struct rn_ctl_create_cq_resp *resp, int *channel, int *memfd)
{
	struct rn_cq *cq;
	int64_t h;

	if (!req->cqe || req->cqe > client->dev->attr.max_cqe)
		return EINVAL;
	if (*channel >= 0 && channel_check(*channel))
		return EINVAL;
	/* Each channel is a descriptor ringnicd keeps open. */
	if ((*channel >= 0 && client->ctx->channels >= RN_CONTEXT_MAX_CHANNELS) ||
	    client->dev->ncqs >= client->dev->attr.max_cq)
		return ENOMEM;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return ENOMEM;
	cq->log2_entries = log2_ceil(req->cqe);
	cq->entries = 1u << cq->log2_entries;
	cq->mem_size = RN_CQ_RING_OFFSET + (size_t)cq->entries * sizeof(struct rn_cqe);
	cq->mem_size = (cq->mem_size + 4095) & ~(size_t)4095;
	if (rn_charge(client, cq->mem_size))
		goto err_free;
	cq->mem = rn_shared_alloc(cq->mem_size, memfd);
	if (!cq->mem)
		goto err_charge;
	h = rn_table_insert(&client->ctx->cqs, cq);
	if (h < 0)
		goto err_unmap;

	cq->client = client;
	pthread_mutex_init(&cq->lock, NULL);
	cq->handle = h;
	cq->cqn = client->dev->next_resn.cq++;
	cq->user_handle = req->user_handle;
	cq->ctrl = cq->mem;
	cq->ring = (struct rn_cqe *)((uint8_t *)cq->mem + RN_CQ_RING_OFFSET);
	cq->channel_fd = *channel;
	if (*channel >= 0)
		client->ctx->channels++;
	*channel = -1; /* kept */
	client->dev->ncqs++;

	resp->handle = h;
	resp->ring_entries = cq->entries;
	resp->mmap_size = cq->mem_size;
	return 0;

err_unmap:
	munmap(cq->mem, cq->mem_size);
	close(*memfd);
err_charge:
	rn_uncharge(client, cq->mem_size);
err_free:
	free(cq);
	return ENOMEM;
}

void rn_cq_release(struct rn_cq *cq)
{
	if (cq->channel_fd >= 0) {
		close(cq->channel_fd);
		cq->client->ctx->channels--;
	}
	rn_table_remove(&cq->client->ctx->cqs, cq->handle);
	munmap(cq->mem, cq->mem_size);
	rn_uncharge(cq->client, cq->mem_size);
	cq->client->dev->ncqs--;
	pthread_mutex_destroy(&cq->lock);
	free(cq);
}

int rn_cq_destroy(struct rn_client *client, uint32_t handle)
{
	struct rn_cq *cq = rn_table_get(&client->ctx->cqs, handle);

	if (!cq)
		return EINVAL;
	if (cq->refs)
		return EBUSY;
	rn_cq_release(cq);
	return 0;
}

/*
 * Move the CQ to a ring of at least req->cqe entries.  The CQEs not yet
 * polled are copied to the start of the new ring, counters restart there
 * (so each keeps its place relative to the producer), and the arm and
 * event state carry over.  The provider waits for the answer and neither
 * polls nor arms meanwhile: its fields are copied as they are.
 */
int rn_cq_resize(struct rn_client *client, const struct rn_ctl_resize_cq_req *req,
		 struct rn_ctl_resize_cq_resp *resp, int *memfd)
{
	struct rn_cq *cq = rn_table_get(&client->ctx->cqs, req->handle);
	uint32_t cons, waiting, log2, entries, i;
	struct rn_cq_ctrl *ctrl;
	struct rn_cqe *ring;
	size_t size;
	void *mem;

	if (!cq || !req->cqe || req->cqe > client->dev->attr.max_cqe)
		return EINVAL;
	cons = __atomic_load_n(&cq->ctrl->cons, __ATOMIC_ACQUIRE);
	waiting = cq->prod - cons;
	if (waiting > cq->entries || req->cqe < waiting)
		return EINVAL;
	log2 = log2_ceil(req->cqe);
	entries = 1u << log2;
	size = (RN_CQ_RING_OFFSET + (size_t)entries * sizeof(struct rn_cqe) +
		4095) & ~(size_t)4095;
	if (rn_charge(client, size))
		return ENOMEM;
	mem = rn_shared_alloc(size, memfd);
	if (!mem) {
		rn_uncharge(client, size);
		return ENOMEM;
	}
	ctrl = mem;
	ring = (struct rn_cqe *)((uint8_t *)mem + RN_CQ_RING_OFFSET);
	for (i = 0; i < waiting; i++) {
		ring[i] = cq->ring[(cons + i) & (cq->entries - 1)];
		ring[i].owner = RN_CQE_PHASE(i, log2);
	}
	ctrl->arm = __atomic_load_n(&cq->ctrl->arm, __ATOMIC_ACQUIRE);
	ctrl->events_consumed =
		__atomic_load_n(&cq->ctrl->events_consumed, __ATOMIC_ACQUIRE);
	ctrl->overrun = cq->overrun;
	ctrl->deferred = cq->deferred;
	/* Positions relative to the producer stay what they were. */
	cq->notified_prod = waiting - (cq->prod - cq->notified_prod);
	cq->last_err_end = waiting - (cq->prod - cq->last_err_end);
	cq->last_sol_end = waiting - (cq->prod - cq->last_sol_end);
	cq->prod = waiting;

	munmap(cq->mem, cq->mem_size);
	rn_uncharge(client, cq->mem_size);
	cq->mem = mem;
	cq->mem_size = size;
	cq->ctrl = ctrl;
	cq->ring = ring;
	cq->entries = entries;
	cq->log2_entries = log2;
	resp->ring_entries = entries;
	resp->mmap_size = size;
	return 0;
}
