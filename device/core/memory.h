/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Memory the device may touch: checking a key, a range and a right against
 * a registered MR, and moving bytes between processes through a staging
 * buffer.  Every access to a client's memory goes through rn_mem_read and
 * rn_mem_write, on the descriptor of the client's address space (memory.c
 * says why it is not addressed by pid).
 */
#ifndef RN_MEMORY_H
#define RN_MEMORY_H

#include <sys/uio.h>
#include "core/types.h"

enum rn_mem_status {
	RN_MEM_OK = 0,
	RN_MEM_BAD_KEY, /* no such MR, or one of another PD */
	RN_MEM_BAD_ACCESS, /* the MR does not grant the right */
	RN_MEM_BAD_RANGE, /* the range is not inside the MR */
	RN_MEM_UNMAPPED, /* the owner unmapped or moved the MR's memory */
	RN_MEM_GONE, /* ... and the range lies in what went */
};

/*
 * May a QP of protection domain 'pd' use [addr, addr + len) of the MR
 * found for 'key' (NULL when none) with rights 'access'?  A PD is of one
 * context, so the MR's being pd's makes it of the QP's context too.  A
 * zero-length range needs no MR at all.
 */
enum rn_mem_status rn_mr_check(const struct rn_mr *mr, uint32_t key,
			       const struct rn_pd *pd, uint64_t addr,
			       uint64_t len, uint32_t access);

/*
 * A scatter/gather list resolved to addresses of one process: the MRs'
 * maker's.  (A list whose MRs two members of a context made, in two
 * address spaces, is refused: rn_iovs_add.)
 */
struct rn_iovs {
	const struct rn_client *owner; /* NULL until a range of an MR is added */
	int mem; /* the owner's address space: its mem_fd, or -1 */
	unsigned int n;
	uint64_t len; /* sum of the iov lengths */
	/* Every range lies in an MR whose pages the client's userfaultfd
	 * watches (core/guard.c): a fault there means that its owner has
	 * unmapped the memory, and the MR's retirement is on its way.
	 */
	bool guarded;
	struct iovec iov[RN_MAX_SGE];
};

/*
 * Where a range of a retired MR goes when the device writes into it:
 * nowhere.  Above every user address; rn_mem_write skips such a range
 * and rn_mem_read fails on it.
 */
#define RN_MEM_NOWHERE ((uintptr_t)1 << 63)

/* An empty list. */
static inline void rn_iovs_init(struct rn_iovs *v)
{
	v->owner = NULL;
	v->mem = -1;
	v->n = 0;
	v->len = 0;
	v->guarded = true;
}
/*
 * Append [addr, addr + len) of the MR to the list (translating the iova);
 * false, and nothing added, if the list's ranges are another process's.
 */
bool rn_iovs_add(struct rn_iovs *v, const struct rn_mr *mr, uint64_t addr,
		 uint64_t len);
/* Append len bytes that go nowhere (a range of a retired MR). */
void rn_iovs_add_gone(struct rn_iovs *v, uint64_t len);
/* The bytes [off, off + len) of v (both within v->len) as a list of its own. */
void rn_iovs_sub(const struct rn_iovs *v, uint64_t off, uint64_t len,
		 struct rn_iovs *out);

enum rn_dma_status {
	RN_DMA_OK = 0,
	RN_DMA_SRC_FAULT, /* the source could not be read (not mapped) */
	RN_DMA_DST_FAULT, /* the destination could not be written */
	RN_DMA_GONE, /* a process exited or exec'd; its client is going */
};

/* Copy between buf and the ranges remote[0..n) of the address space mem. */
enum rn_dma_status rn_mem_read(int mem, const struct iovec *remote,
			       unsigned int n, void *buf);
enum rn_dma_status rn_mem_write(int mem, const struct iovec *remote,
				unsigned int n, const void *buf);

/* Copy the first len bytes of src into dst (len <= both lengths). */
enum rn_dma_status rn_dma_copy(const struct rn_iovs *src,
			       const struct rn_iovs *dst, uint64_t len,
			       uint8_t *bounce, size_t bounce_size);
/* Copy between the device's own memory and a client's list. */
enum rn_dma_status rn_dma_to(const struct rn_iovs *dst, const void *buf,
			     uint64_t len);
enum rn_dma_status rn_dma_from(const struct rn_iovs *src, void *buf,
			       uint64_t len);

#endif
