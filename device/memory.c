// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "memory.h"

enum rn_mem_status rn_mr_check(const struct rn_mr *mr, uint32_t key,
			       const struct rn_client *client,
			       const struct rn_pd *pd, uint64_t addr,
			       uint64_t len, uint32_t access)
{
	if (!len)
		return RN_MEM_OK;
	if (!mr || mr->key != key || mr->client != client || mr->pd != pd)
		return RN_MEM_BAD_KEY;
	if (mr->unmapped)
		return RN_MEM_UNMAPPED;
	if ((mr->access & access) != access)
		return RN_MEM_BAD_ACCESS;
	/* addr + len may wrap: compare offsets instead of end addresses. */
	if (addr < mr->iova || addr - mr->iova > mr->length ||
	    len > mr->length - (addr - mr->iova))
		return RN_MEM_BAD_RANGE;
	return RN_MEM_OK;
}

void rn_iovs_add(struct rn_iovs *v, const struct rn_mr *mr, uint64_t addr,
		 uint64_t len)
{
	if (!len)
		return;
	v->iov[v->n].iov_base = (void *)(uintptr_t)(addr - mr->iova + mr->addr);
	v->iov[v->n].iov_len = len;
	v->n++;
	v->len += len;
}

/* The part [off, off + len) of v as iovecs; returns how many. */
static unsigned int slice(const struct rn_iovs *v, uint64_t off, uint64_t len,
			  struct iovec *out)
{
	unsigned int i, n = 0;

	for (i = 0; i < v->n && len; i++) {
		uint64_t seg = v->iov[i].iov_len;

		if (off >= seg) {
			off -= seg;
			continue;
		}
		out[n].iov_base = (char *)v->iov[i].iov_base + off;
		out[n].iov_len = seg - off < len ? seg - off : len;
		len -= out[n].iov_len;
		off = 0;
		n++;
	}
	return n;
}

/* The outcome of one process_vm_* call that was to move 'want' bytes. */
static enum rn_dma_status moved(ssize_t done, uint64_t want,
				enum rn_dma_status fault)
{
	if (done >= 0 && (uint64_t)done == want)
		return RN_DMA_OK;
	return done < 0 && errno == ESRCH ? RN_DMA_GONE : fault;
}

enum rn_dma_status rn_dma_copy(const struct rn_iovs *src,
			       const struct rn_iovs *dst, uint64_t len,
			       uint8_t *bounce, size_t bounce_size)
{
	struct iovec part[RN_MAX_SGE];
	enum rn_dma_status st;
	struct iovec local;
	uint64_t off;
	unsigned int n;

	for (off = 0; off < len; off += local.iov_len) {
		local.iov_base = bounce;
		local.iov_len = len - off < bounce_size ? len - off : bounce_size;

		n = slice(src, off, local.iov_len, part);
		st = moved(process_vm_readv(src->pid, &local, 1, part, n, 0),
			   local.iov_len, RN_DMA_SRC_FAULT);
		if (st)
			return st;
		n = slice(dst, off, local.iov_len, part);
		st = moved(process_vm_writev(dst->pid, &local, 1, part, n, 0),
			   local.iov_len, RN_DMA_DST_FAULT);
		if (st)
			return st;
	}
	return RN_DMA_OK;
}

enum rn_dma_status rn_dma_to(const struct rn_iovs *dst, const void *buf,
			     uint64_t len)
{
	struct iovec part[RN_MAX_SGE];
	struct iovec local = { (void *)buf, len };
	unsigned int n;

	if (!len)
		return RN_DMA_OK;
	n = slice(dst, 0, len, part);
	return moved(process_vm_writev(dst->pid, &local, 1, part, n, 0), len,
		     RN_DMA_DST_FAULT);
}

enum rn_dma_status rn_dma_from(const struct rn_iovs *src, void *buf,
			       uint64_t len)
{
	struct iovec part[RN_MAX_SGE];
	struct iovec local = { buf, len };
	unsigned int n;

	if (!len)
		return RN_DMA_OK;
	n = slice(src, 0, len, part);
	return moved(process_vm_readv(src->pid, &local, 1, part, n, 0), len,
		     RN_DMA_SRC_FAULT);
}
