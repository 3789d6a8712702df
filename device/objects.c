// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Protection domains, memory regions and completion queues of a client. */
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

#include "memory.h"
#include "ringnicd.h"

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
	};
	snprintf(dev->attr.fw_ver, sizeof(dev->attr.fw_ver), "%s", RN_FW_VERSION);
	rn_list_init(&dev->clients);
	rn_list_init(&dev->active);
	rn_table_init(&dev->mr_keys, 1, RN_MAX_MR, RN_REUSE_LATE);
	rn_table_init(&dev->qpns, 0, RN_MAX_QP, RN_REUSE_LATE);
	dev->mr_tags = calloc(RN_MAX_MR, sizeof(*dev->mr_tags));
	dev->qpn_gens = calloc(RN_MAX_QP, sizeof(*dev->qpn_gens));
	if (!dev->mr_tags || !dev->qpn_gens)
		return ENOMEM;
	return rn_engine_init(dev);
}

void rn_client_init(struct rn_client *client, struct rn_device *dev, pid_t pid,
		    uid_t uid)
{
	client->dev = dev;
	client->fd = -1;
	client->pid = pid;
	client->uid = uid;
	client->async_fd = -1;
	client->wake_fd = -1;
	client->uffd = -1;
	rn_table_init(&client->pds, 1, RN_CLIENT_MAX_PD, RN_REUSE_LOWEST);
	rn_table_init(&client->mrs, 1, RN_CLIENT_MAX_MR, RN_REUSE_LOWEST);
	rn_table_init(&client->cqs, 0, RN_CTX_MAX_CQ, RN_REUSE_LOWEST);
	rn_table_init(&client->qps, 0, RN_CTX_MAX_QP, RN_REUSE_LOWEST);
}

/* Everything the client made, and what OPEN gave it. */
void rn_client_release(struct rn_client *client)
{
	/* Closing the uffd unregisters all at once, before the MRs go. */
	rn_guard_close(client);
	rn_client_objects_destroy(client);
	if (client->wake_fd >= 0) {
		epoll_ctl(client->dev->epoll_fd, EPOLL_CTL_DEL, client->wake_fd,
			  NULL);
		close(client->wake_fd);
	}
	if (client->async_fd >= 0)
		close(client->async_fd);
	if (client->dev_page) {
		munmap(client->dev_page, RN_DEV_PAGE_SIZE);
		rn_uncharge(client, RN_DEV_PAGE_SIZE);
	}
}

/*
 * Shared memory (rings, the device page) is charged to the client and to
 * the device, so that neither one client nor all of them can make
 * ringnicd allocate without bound.  The charge is the size of the memory,
 * whether the pages were touched or not.
 */
int rn_charge(struct rn_client *client, uint64_t bytes)
{
	struct rn_device *dev = client->dev;

	if (client->shared_bytes + bytes > RN_CLIENT_MEM_MAX ||
	    dev->shared_bytes + bytes > dev->max_shared_bytes)
		return ENOMEM;
	client->shared_bytes += bytes;
	dev->shared_bytes += bytes;
	return 0;
}

void rn_uncharge(struct rn_client *client, uint64_t bytes)
{
	client->shared_bytes -= bytes;
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

int rn_pd_alloc(struct rn_client *client, uint32_t *handle)
{
	struct rn_pd *pd = calloc(1, sizeof(*pd));
	int64_t h;

	if (!pd)
		return ENOMEM;
	if (client->dev->npds >= client->dev->attr.max_pd) {
		free(pd);
		return ENOMEM;
	}
	h = rn_table_insert(&client->pds, pd);
	if (h < 0) {
		free(pd);
		return ENOMEM;
	}
	pd->client = client;
	pd->handle = h;
	*handle = h;
	client->dev->npds++;
	return 0;
}

int rn_pd_dealloc(struct rn_client *client, uint32_t handle)
{
	struct rn_pd *pd = rn_table_get(&client->pds, handle);

	if (!pd)
		return EINVAL;
	if (pd->refs)
		return EBUSY;
	rn_table_remove(&client->pds, handle);
	client->dev->npds--;
	free(pd);
	return 0;
}

/* ---- MR ---------------------------------------------------------------- */

#define RN_MR_ACCESS_SUPPORTED                                                 \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                     \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |                    \
	 IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB |    \
	 IBV_ACCESS_RELAXED_ORDERING)

/*
 * Is [addr, addr + len) mapped in the process with the protections the
 * rights need?  Read from /proc/PID/maps, the only place the kernel says it.
 * A NIC pins the pages at registration and fails with EFAULT; we never pin
 * (process_vm_* faults pages in on demand), but refuse the same ranges.
 */
static int check_mapped(pid_t pid, uint64_t addr, uint64_t len, bool writable)
{
	uint64_t start, end, want = addr, last = addr + len;
	char path[64], perms[8];
	int ret = EFAULT;
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	maps = fopen(path, "re");
	if (!maps)
		return EFAULT;
	/* Lines are sorted by address; walk until the range is covered. */
	while (fscanf(maps, "%" SCNx64 "-%" SCNx64 " %7s%*[^\n]", &start, &end,
		      perms) == 3) {
		if (end <= want)
			continue;
		if (start > want)
			break;
		if (perms[0] != 'r' || (writable && perms[1] != 'w'))
			break;
		want = end;
		if (want >= last) {
			ret = 0;
			break;
		}
	}
	fclose(maps);
	return ret;
}

int rn_mr_reg(struct rn_client *client, const struct rn_ctl_reg_mr_req *req,
	      struct rn_ctl_reg_mr_resp *resp)
{
	struct rn_device *dev = client->dev;
	struct rn_pd *pd = rn_table_get(&client->pds, req->pd);
	uint32_t access = req->access;
	bool writable;
	struct rn_mr *mr;
	int64_t h, k;
	int ret;

	if (!pd)
		return EINVAL;
	if (access & ~RN_MR_ACCESS_SUPPORTED)
		return access & IBV_ACCESS_MW_BIND ? EOPNOTSUPP : EINVAL;
	/* Remote writes and atomics imply that the memory changes locally. */
	if (access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return EINVAL;
	if (!req->length || req->length > dev->attr.max_mr_size ||
	    req->addr + req->length < req->addr)
		return EINVAL;
	if (!(access & IBV_ACCESS_ZERO_BASED) &&
	    req->iova + req->length < req->iova)
		return EINVAL;
	writable = access & (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			     IBV_ACCESS_REMOTE_ATOMIC);
	if (!(access & IBV_ACCESS_ON_DEMAND)) {
		ret = check_mapped(client->pid, req->addr, req->length, writable);
		if (ret)
			return ret;
	}

	ret = ENOMEM;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return ENOMEM;
	h = rn_table_insert(&client->mrs, mr);
	if (h < 0)
		goto err_free;
	k = rn_table_insert(&dev->mr_keys, mr);
	if (k < 0)
		goto err_handle;

	mr->client = client;
	mr->pd = pd;
	mr->handle = h;
	/* The low byte changes each time an index is reused, so a stale key
	 * does not reach the next MR at the same index.
	 */
	mr->key = (uint32_t)k << 8 | dev->mr_tags[k]++;
	mr->iova = access & IBV_ACCESS_ZERO_BASED ? 0 : req->iova;
	mr->length = req->length;
	mr->addr = req->addr;
	mr->access = access;
	ret = rn_guard_mr(mr);
	if (ret)
		goto err_key;
	pd->refs++;

	resp->handle = h;
	resp->lkey = mr->key;
	resp->rkey = mr->key;
	return 0;

err_key:
	rn_table_remove(&dev->mr_keys, k);
err_handle:
	rn_table_remove(&client->mrs, h);
err_free:
	free(mr);
	return ret;
}

static void mr_free(struct rn_mr *mr)
{
	rn_unguard_mr(mr);
	rn_table_remove(&mr->client->dev->mr_keys, mr->key >> 8);
	rn_table_remove(&mr->client->mrs, mr->handle);
	mr->pd->refs--;
	free(mr);
}

int rn_mr_dereg(struct rn_client *client, uint32_t handle)
{
	struct rn_mr *mr = rn_table_get(&client->mrs, handle);

	if (!mr)
		return EINVAL;
	mr_free(mr);
	return 0;
}

/* ---- CQ ---------------------------------------------------------------- */

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
	if ((*channel >= 0 && client->channels >= RN_CLIENT_MAX_CHANNELS) ||
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
	h = rn_table_insert(&client->cqs, cq);
	if (h < 0)
		goto err_unmap;

	cq->client = client;
	cq->handle = h;
	cq->user_handle = req->user_handle;
	cq->ctrl = cq->mem;
	cq->ring = (struct rn_cqe *)((uint8_t *)cq->mem + RN_CQ_RING_OFFSET);
	cq->channel_fd = *channel;
	if (*channel >= 0)
		client->channels++;
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

static void cq_free(struct rn_cq *cq)
{
	if (cq->channel_fd >= 0) {
		close(cq->channel_fd);
		cq->client->channels--;
	}
	rn_table_remove(&cq->client->cqs, cq->handle);
	munmap(cq->mem, cq->mem_size);
	rn_uncharge(cq->client, cq->mem_size);
	cq->client->dev->ncqs--;
	free(cq);
}

int rn_cq_destroy(struct rn_client *client, uint32_t handle)
{
	struct rn_cq *cq = rn_table_get(&client->cqs, handle);

	if (!cq)
		return EINVAL;
	if (cq->refs)
		return EBUSY;
	cq_free(cq);
	return 0;
}

/* Everything a client owns, in dependency order: QPs, then MRs, CQs, PDs. */
void rn_client_objects_destroy(struct rn_client *client)
{
	uint32_t i;

	for (i = 0; i < client->qps.size; i++)
		if (client->qps.slot[i])
			rn_qp_free(client->qps.slot[i]);
	for (i = 0; i < client->mrs.size; i++)
		if (client->mrs.slot[i])
			mr_free(client->mrs.slot[i]);
	for (i = 0; i < client->cqs.size; i++)
		if (client->cqs.slot[i])
			cq_free(client->cqs.slot[i]);
	for (i = 0; i < client->pds.size; i++)
		if (client->pds.slot[i])
			rn_pd_dealloc(client, i);
	rn_table_destroy(&client->qps);
	rn_table_destroy(&client->mrs);
	rn_table_destroy(&client->cqs);
	rn_table_destroy(&client->pds);
}
