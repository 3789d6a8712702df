// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Reaching a client's memory.
 *
 * process_vm_readv and process_vm_writev name the process by pid, and no
 * check before such a call makes it safe.  A process alive when its pidfd
 * is polled may exit, be reaped by its parent and have its pid handed to a
 * new process before the call that follows.  Only timing stands in the
 * way, and the device can be kept off the CPU between the two (preempted,
 * throttled, not given realtime priority, its page faulted out) for as long
 * as the pid counter needs to come round.  A check after the call comes
 * too late for a write.  And a pid keeps
 * naming its process across execve, into a new image (set-user-ID, say)
 * that the client's registrations must never reach: a pidfd does not even
 * notice an exec.
 *
 * So the device reaches a client only through its /proc/PID/mem, opened
 * once at OPEN (process.c says why it is the client's).  That file holds
 * the address space it was opened on, not the pid: once the process has
 * exited or exec'd, the address space has no users left and every pread or
 * pwrite moves 0 bytes (RN_DMA_GONE).  No later process, whatever its pid,
 * is ever reached, and no check before a call is needed.
 *
 * The price, measured here (2 shared cores; medians, the two ways taking
 * turns): a call for 64 B costs a little less than process_vm_* (1.9 vs
 * 2.0 us, mostly the system call), for 64 KiB 1.3 times as much, and a
 * batch of 1 MiB in 64 KiB pieces 3 times as much: the kernel copies
 * through a page of its own and looks pages up one at a time, and each
 * range takes a call of its own where process_vm_* took a list.  With
 * perftest between two local clients (bench/run.sh, 8 paired runs):
 * ib_write_bw 64 B message rate unchanged (ratio 1.1, within the noise),
 * 64 KiB bandwidth 0.58 of before, ib_write_lat 8 B 0.96.  Polling the
 * pidfd before each process_vm_* call instead would have cost 1.2 us a
 * call (60% of a 64 B copy) and closed nothing.
 *
 * One corner differs from process_vm_*: depending on the kernel's
 * proc_mem.force_override, a write through /proc/PID/mem may land in pages
 * the process made read-only after registering them, as the DMA of a NIC
 * that pinned them would.
 */
#include <sys/uio.h>
#include <unistd.h>

#include "core/core.h"
#include "core/memory.h"

enum rn_mem_status rn_mr_check(const struct rn_mr *mr, uint32_t key,
			       const struct rn_pd *pd, uint64_t addr,
			       uint64_t len, uint32_t access)
{
	if (!len)
		return RN_MEM_OK;
	if (!mr || mr->key != key || mr->pd != pd)
		return RN_MEM_BAD_KEY;
	if ((mr->access & access) != access)
		return RN_MEM_BAD_ACCESS;
	/* addr + len may wrap: compare offsets instead of end addresses. */
	if (addr < mr->iova || addr - mr->iova > mr->length ||
	    len > mr->length - (addr - mr->iova))
		return RN_MEM_BAD_RANGE;
	/* Last: the access is one the MR would allow, but its memory went. */
	if (mr->unmapped) {
		uint64_t at = addr - mr->iova + mr->addr;

		return at >= mr->gone_start && at + len <= mr->gone_end ?
			       RN_MEM_GONE :
			       RN_MEM_UNMAPPED;
	}
	/* On demand, each access needs its pages mapped with its rights. */
	if (mr->access & IBV_ACCESS_ON_DEMAND &&
	    !rn_client_mapped(mr->client, addr - mr->iova + mr->addr, len,
			      access & (IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_WRITE |
					IBV_ACCESS_REMOTE_ATOMIC)))
		return RN_MEM_BAD_ACCESS;
	return RN_MEM_OK;
}

bool rn_iovs_add(struct rn_iovs *v, const struct rn_mr *mr, uint64_t addr,
		 uint64_t len)
{
	if (!len)
		return true;
	if (v->owner && v->owner != mr->client)
		return false;
	v->owner = mr->client;
	v->mem = mr->client->mem_fd;
	v->iov[v->n].iov_base = (void *)(uintptr_t)(addr - mr->iova + mr->addr);
	v->iov[v->n].iov_len = len;
	v->n++;
	v->len += len;
	v->guarded = v->guarded && mr->guarded;
	return true;
}

void rn_iovs_add_gone(struct rn_iovs *v, uint64_t len)
{
	if (!len)
		return;
	v->iov[v->n].iov_base = (void *)RN_MEM_NOWHERE;
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

void rn_iovs_sub(const struct rn_iovs *v, uint64_t off, uint64_t len,
		 struct rn_iovs *out)
{
	out->owner = v->owner;
	out->mem = v->mem;
	out->n = slice(v, off, len, out->iov);
	out->len = len;
	out->guarded = v->guarded;
}

/*
 * Move between buf and the ranges remote[0..n) of the address space behind
 * 'mem' (a client's /proc/PID/mem, see rn_client_attach): one pread or
 * pwrite per range.  The descriptor is bound to the address space it was
 * opened on, so an exit or an exec of the client turns every later access
 * into 0 bytes moved, never into an access to another process.
 */
static enum rn_dma_status transfer(int mem, const struct iovec *remote,
				   unsigned int n, uint8_t *buf, bool write,
				   enum rn_dma_status fault)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		size_t len = remote[i].iov_len;
		off_t at = (off_t)(uintptr_t)remote[i].iov_base;
		ssize_t done;

		if ((uintptr_t)remote[i].iov_base >= RN_MEM_NOWHERE) {
			if (!write)
				return fault;
			buf += len;
			continue;
		}
		done = write ? pwrite(mem, buf, len, at) : pread(mem, buf, len, at);

		if (done == 0 && len)
			return RN_DMA_GONE;
		if (done < 0 || (size_t)done != len)
			return fault;
		buf += len;
	}
	return RN_DMA_OK;
}

enum rn_dma_status rn_mem_read(int mem, const struct iovec *remote,
			       unsigned int n, void *buf)
{
	return transfer(mem, remote, n, buf, false, RN_DMA_SRC_FAULT);
}

enum rn_dma_status rn_mem_write(int mem, const struct iovec *remote,
				unsigned int n, const void *buf)
{
	return transfer(mem, remote, n, (uint8_t *)buf, true, RN_DMA_DST_FAULT);
}

enum rn_dma_status rn_dma_copy(const struct rn_iovs *src,
			       const struct rn_iovs *dst, uint64_t len,
			       uint8_t *bounce, size_t bounce_size)
{
	struct iovec part[RN_MAX_SGE];
	enum rn_dma_status st;
	uint64_t off, chunk;
	unsigned int n;

	for (off = 0; off < len; off += chunk) {
		chunk = len - off < bounce_size ? len - off : bounce_size;
		n = slice(src, off, chunk, part);
		st = rn_mem_read(src->mem, part, n, bounce);
		if (st)
			return st;
		n = slice(dst, off, chunk, part);
		st = rn_mem_write(dst->mem, part, n, bounce);
		if (st)
			return st;
	}
	return RN_DMA_OK;
}

enum rn_dma_status rn_dma_to(const struct rn_iovs *dst, const void *buf,
			     uint64_t len)
{
	struct iovec part[RN_MAX_SGE];

	return rn_mem_write(dst->mem, part, slice(dst, 0, len, part), buf);
}

enum rn_dma_status rn_dma_from(const struct rn_iovs *src, void *buf,
			       uint64_t len)
{
	struct iovec part[RN_MAX_SGE];

	return rn_mem_read(src->mem, part, slice(src, 0, len, part), buf);
}
