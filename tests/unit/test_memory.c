// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Key, rights and range checks against an MR (rn_mr_check), a retired
 * MR's, iova translation (rn_iovs_add), and data movement through
 * /proc/PID/mem: within the test process itself, past ranges that go
 * nowhere, and into address spaces that are gone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/memory.h"

#define MR_IOVA 0x10000ull
#define MR_LEN 0x1000ull
#define MR_KEY 0x001234a7u

struct mr_env {
	/* client made the MR; member is another process of its context */
	struct rn_client client, member;
	struct rn_pd pd, other_pd;
	struct rn_mr mr;
};

static void env_init(struct mr_env *e, uint64_t iova, uint64_t len,
		     uint32_t access)
{
	memset(e, 0, sizeof(*e));
	e->client.mem_fd = -1;
	e->member.mem_fd = -1;
	e->pd.client = &e->client;
	e->other_pd.client = &e->client;
	e->mr.client = &e->client;
	e->mr.pd = &e->pd;
	e->mr.key = MR_KEY;
	e->mr.iova = iova;
	e->mr.length = len;
	e->mr.addr = 0x7f0000000000ull;
	e->mr.access = access;
}

static enum rn_mem_status check(const struct mr_env *e, uint64_t addr,
				uint64_t len, uint32_t access)
{
	return rn_mr_check(&e->mr, MR_KEY, &e->pd, addr, len,
			   access);
}

/* ---- rn_mr_check ---------------------------------------------------------- */

static void test_mr_check_ok(void **state)
{
	struct mr_env e;

	(void)state;
	env_init(&e, MR_IOVA, MR_LEN, IBV_ACCESS_LOCAL_WRITE |
		 IBV_ACCESS_REMOTE_READ);
	assert_int_equal(check(&e, MR_IOVA, MR_LEN, 0), RN_MEM_OK);
	assert_int_equal(check(&e, MR_IOVA, 1, IBV_ACCESS_LOCAL_WRITE),
			 RN_MEM_OK);
	assert_int_equal(check(&e, MR_IOVA + MR_LEN - 1, 1,
			       IBV_ACCESS_REMOTE_READ), RN_MEM_OK);
	assert_int_equal(check(&e, MR_IOVA + 100, 200, IBV_ACCESS_LOCAL_WRITE |
			       IBV_ACCESS_REMOTE_READ), RN_MEM_OK);
}

static void test_mr_check_bad_key(void **state)
{
	struct mr_env e;

	(void)state;
	env_init(&e, MR_IOVA, MR_LEN, IBV_ACCESS_LOCAL_WRITE);
	/* The same index with another tag: a key of an earlier MR. */
	assert_int_equal(rn_mr_check(&e.mr, MR_KEY ^ 1, &e.pd,
				     MR_IOVA, 8, 0), RN_MEM_BAD_KEY);
	assert_int_equal(rn_mr_check(&e.mr, (MR_KEY & ~0xffu) | 0xa8,
				     &e.pd, MR_IOVA, 8, 0),
			 RN_MEM_BAD_KEY);
	assert_int_equal(rn_mr_check(&e.mr, MR_KEY + 0x100, &e.pd,
				     MR_IOVA, 8, 0), RN_MEM_BAD_KEY);
	assert_int_equal(rn_mr_check(NULL, MR_KEY, &e.pd, MR_IOVA,
				     8, 0), RN_MEM_BAD_KEY);
	/* The right key, but the QP's PD is another (of another context,
	 * perhaps). */
	assert_int_equal(rn_mr_check(&e.mr, MR_KEY, &e.other_pd,
				     MR_IOVA, 8, 0), RN_MEM_BAD_KEY);
	/* A bad key wins over a bad range or missing rights. */
	assert_int_equal(rn_mr_check(&e.mr, MR_KEY ^ 1, &e.pd, 0,
				     8, IBV_ACCESS_REMOTE_ATOMIC),
			 RN_MEM_BAD_KEY);
}

static void test_mr_check_access(void **state)
{
	static const uint32_t rights[] = {
		IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_ATOMIC,
	};
	struct mr_env e;
	size_t i, j;

	(void)state;
	for (i = 0; i < 4; i++) {
		env_init(&e, MR_IOVA, MR_LEN, rights[i]);
		for (j = 0; j < 4; j++)
			assert_int_equal(check(&e, MR_IOVA, 8, rights[j]),
					 i == j ? RN_MEM_OK : RN_MEM_BAD_ACCESS);
		/* Both rights asked, one granted. */
		assert_int_equal(check(&e, MR_IOVA, 8, rights[i] |
				       rights[(i + 1) % 4]), RN_MEM_BAD_ACCESS);
		assert_int_equal(check(&e, MR_IOVA, 8, 0), RN_MEM_OK);
	}
}

static void test_mr_check_range(void **state)
{
	struct mr_env e;

	(void)state;
	env_init(&e, MR_IOVA, MR_LEN, IBV_ACCESS_LOCAL_WRITE);
	/* Before the start, and straddling it. */
	assert_int_equal(check(&e, MR_IOVA - 1, 1, 0), RN_MEM_BAD_RANGE);
	assert_int_equal(check(&e, MR_IOVA - 1, 2, 0), RN_MEM_BAD_RANGE);
	assert_int_equal(check(&e, 0, 8, 0), RN_MEM_BAD_RANGE);
	/* Straddling the end, just after it, far after it. */
	assert_int_equal(check(&e, MR_IOVA + MR_LEN - 1, 2, 0),
			 RN_MEM_BAD_RANGE);
	assert_int_equal(check(&e, MR_IOVA, MR_LEN + 1, 0), RN_MEM_BAD_RANGE);
	assert_int_equal(check(&e, MR_IOVA + MR_LEN, 1, 0), RN_MEM_BAD_RANGE);
	assert_int_equal(check(&e, MR_IOVA + 2 * MR_LEN, 8, 0),
			 RN_MEM_BAD_RANGE);
	/* Covering the whole MR and more on both sides. */
	assert_int_equal(check(&e, MR_IOVA - 8, MR_LEN + 16, 0),
			 RN_MEM_BAD_RANGE);
}

/* addr + len past 2^64 must not look like a small end inside the MR. */
static void test_mr_check_wrap(void **state)
{
	struct mr_env e;

	(void)state;
	env_init(&e, MR_IOVA, MR_LEN, IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(check(&e, MR_IOVA + 16, UINT64_MAX, 0),
			 RN_MEM_BAD_RANGE);
	assert_int_equal(check(&e, MR_IOVA + 16, UINT64_MAX - 15, 0),
			 RN_MEM_BAD_RANGE);
	assert_int_equal(check(&e, MR_IOVA + 16, -(MR_IOVA + 16) + 32, 0),
			 RN_MEM_BAD_RANGE);
	assert_int_equal(check(&e, UINT64_MAX, 2, 0), RN_MEM_BAD_RANGE);
	assert_int_equal(check(&e, UINT64_MAX - 7, 16, 0), RN_MEM_BAD_RANGE);

	/* An MR that ends exactly at 2^64. */
	env_init(&e, UINT64_MAX - MR_LEN + 1, MR_LEN, IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(check(&e, UINT64_MAX - MR_LEN + 1, MR_LEN, 0),
			 RN_MEM_OK);
	assert_int_equal(check(&e, UINT64_MAX, 1, 0), RN_MEM_OK);
	assert_int_equal(check(&e, UINT64_MAX, 2, 0), RN_MEM_BAD_RANGE);
	assert_int_equal(check(&e, UINT64_MAX - 1, UINT64_MAX, 0),
			 RN_MEM_BAD_RANGE);
	assert_int_equal(check(&e, 0, 1, 0), RN_MEM_BAD_RANGE);
}

/* A zero-length range needs no MR, no key, no rights, no range. */
static void test_mr_check_zero_length(void **state)
{
	struct mr_env e;

	(void)state;
	env_init(&e, MR_IOVA, MR_LEN, 0);
	assert_int_equal(rn_mr_check(NULL, 0, NULL, 0, 0, 0), RN_MEM_OK);
	assert_int_equal(rn_mr_check(NULL, 12345, &e.pd, 77, 0,
				     IBV_ACCESS_REMOTE_WRITE), RN_MEM_OK);
	assert_int_equal(rn_mr_check(&e.mr, MR_KEY ^ 1, &e.other_pd,
				     UINT64_MAX, 0,
				     IBV_ACCESS_REMOTE_ATOMIC), RN_MEM_OK);
}

/*
 * Retired (its owner unmapped part of it): an access the MR would allow is
 * RN_MEM_GONE when it lies wholly in what went, RN_MEM_UNMAPPED when it
 * reaches beyond; keys, rights and bounds come first as ever.
 */
static void test_mr_check_retired(void **state)
{
	struct mr_env e;

	(void)state;
	env_init(&e, MR_IOVA, MR_LEN,
		 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	e.mr.unmapped = true;
	e.mr.gone_start = e.mr.addr + 0x100;
	e.mr.gone_end = e.mr.addr + 0x200;
	assert_int_equal(check(&e, MR_IOVA + 0x100, 0x100, IBV_ACCESS_REMOTE_WRITE),
			 RN_MEM_GONE);
	assert_int_equal(check(&e, MR_IOVA + 0x1ff, 1, 0), RN_MEM_GONE);
	assert_int_equal(check(&e, MR_IOVA + 0x100, 0x101, IBV_ACCESS_REMOTE_WRITE),
			 RN_MEM_UNMAPPED);
	assert_int_equal(check(&e, MR_IOVA + 0xff, 2, 0), RN_MEM_UNMAPPED);
	assert_int_equal(check(&e, MR_IOVA, 8, 0), RN_MEM_UNMAPPED);
	assert_int_equal(check(&e, MR_IOVA + 0x100, 8, IBV_ACCESS_REMOTE_READ),
			 RN_MEM_BAD_ACCESS);
	assert_int_equal(check(&e, MR_IOVA + 0x100, MR_LEN, 0),
			 RN_MEM_BAD_RANGE);
	assert_int_equal(rn_mr_check(&e.mr, MR_KEY ^ 1, &e.pd,
				     MR_IOVA + 0x100, 8, 0), RN_MEM_BAD_KEY);
	/* Nothing to reach: nothing is missed. */
	assert_int_equal(check(&e, MR_IOVA, 0, 0), RN_MEM_OK);
}

/* ---- rn_iovs_add ---------------------------------------------------------- */

static void test_iovs_add(void **state)
{
	static char buf[MR_LEN];
	struct rn_iovs v;
	struct rn_mr theirs;
	struct mr_env e;

	(void)state;
	rn_iovs_init(&v);
	env_init(&e, MR_IOVA, MR_LEN, 0);
	e.mr.addr = (uintptr_t)buf;
	assert_true(rn_iovs_add(&v, &e.mr, MR_IOVA + 16, 32));
	assert_true(rn_iovs_add(&v, &e.mr, MR_IOVA + 100, 0));
	assert_true(rn_iovs_add(&v, &e.mr, MR_IOVA, MR_LEN));
	assert_ptr_equal(v.owner, &e.client);
	/* An MR another member of the context made is in another address
	 * space: not in this list.
	 */
	theirs = e.mr;
	theirs.client = &e.member;
	assert_false(rn_iovs_add(&v, &theirs, MR_IOVA, 8));
	assert_int_equal(v.n, 2);
	assert_int_equal(v.len, 32 + MR_LEN);
	assert_ptr_equal(v.iov[0].iov_base, buf + 16);
	assert_int_equal(v.iov[0].iov_len, 32);
	assert_ptr_equal(v.iov[1].iov_base, buf);
	assert_int_equal(v.iov[1].iov_len, MR_LEN);

	/* A zero-based MR: iova 0 is the first byte. */
	env_init(&e, 0, MR_LEN, 0);
	e.mr.addr = (uintptr_t)buf;
	rn_iovs_add(&v, &e.mr, 5, 7);
	assert_int_equal(v.n, 3);
	assert_ptr_equal(v.iov[2].iov_base, buf + 5);
	assert_int_equal(v.len, 39 + MR_LEN);

	/* iova above addr. */
	env_init(&e, (uintptr_t)buf + 0x100000, MR_LEN, 0);
	e.mr.addr = (uintptr_t)buf;
	rn_iovs_add(&v, &e.mr, (uintptr_t)buf + 0x100000 + MR_LEN - 1, 1);
	assert_ptr_equal(v.iov[3].iov_base, buf + MR_LEN - 1);
}

/* ---- DMA ------------------------------------------------------------------ */

static int self_mem = -1; /* this process's address space, as a client's */

#define DMA_LEN 1000

static void pattern(uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 7 + i / 251);
}

/* Cut 'area' into segments of the given sizes, each 'gap' bytes apart. */
static void split(struct rn_iovs *v, uint8_t *area, const size_t *sizes,
		  unsigned int n, size_t gap)
{
	unsigned int i;

	memset(v, 0, sizeof(*v));
	v->mem = self_mem;
	for (i = 0; i < n; i++) {
		v->iov[i].iov_base = area;
		v->iov[i].iov_len = sizes[i];
		v->len += sizes[i];
		area += sizes[i] + gap;
	}
	v->n = n;
}

/* Concatenate the segments of v (the bytes a transfer sees). */
static void gather(const struct rn_iovs *v, uint8_t *out)
{
	unsigned int i;

	for (i = 0; i < v->n; i++) {
		memcpy(out, v->iov[i].iov_base, v->iov[i].iov_len);
		out += v->iov[i].iov_len;
	}
}

static const size_t src_sizes[] = { 100, 1, 333, 64, 502 };
static const size_t dst_sizes[] = { 7, 500, 13, 1, 479 };

struct dma_env {
	uint8_t src_area[2 * DMA_LEN];
	uint8_t dst_area[2 * DMA_LEN];
	struct rn_iovs src, dst;
};

static void dma_env_init(struct dma_env *d)
{
	pattern(d->src_area, sizeof(d->src_area), 11);
	memset(d->dst_area, 0xcc, sizeof(d->dst_area));
	split(&d->src, d->src_area, src_sizes, 5, 17);
	split(&d->dst, d->dst_area, dst_sizes, 5, 9);
	assert_int_equal(d->src.len, DMA_LEN);
	assert_int_equal(d->dst.len, DMA_LEN);
}

/* The first len bytes arrived, the rest of dst and every gap is intact. */
static void assert_copied(const struct dma_env *d, uint64_t len)
{
	uint8_t want[DMA_LEN], got[DMA_LEN];
	uint8_t shadow[2 * DMA_LEN];
	unsigned int i;
	size_t off;

	gather(&d->src, want);
	gather(&d->dst, got);
	assert_memory_equal(got, want, len);
	for (off = len; off < DMA_LEN; off++)
		assert_int_equal(got[off], 0xcc);
	/* Gaps between the dst segments were not written. */
	memcpy(shadow, d->dst_area, sizeof(shadow));
	for (i = 0; i < d->dst.n; i++)
		memset(shadow + ((uint8_t *)d->dst.iov[i].iov_base -
				 d->dst_area), 0xcc, d->dst.iov[i].iov_len);
	for (off = 0; off < sizeof(shadow); off++)
		assert_int_equal(shadow[off], 0xcc);
}

/* Any bounce size, smaller or larger than the transfer; nothing of the
 * bounce buffer beyond bounce_size is touched.
 */
static void test_dma_copy_uneven(void **state)
{
	static const size_t bounces[] = { 1, 3, 64, 100, 999, 1000, 2048 };
	uint8_t bounce[2048 + 64];
	struct dma_env d;
	size_t i, j;

	(void)state;
	for (i = 0; i < sizeof(bounces) / sizeof(bounces[0]); i++) {
		dma_env_init(&d);
		memset(bounce, 0x5c, sizeof(bounce));
		assert_int_equal(rn_dma_copy(&d.src, &d.dst, DMA_LEN, bounce,
					     bounces[i]), RN_DMA_OK);
		assert_copied(&d, DMA_LEN);
		for (j = bounces[i]; j < sizeof(bounce); j++)
			assert_int_equal(bounce[j], 0x5c);
	}
}

/* Only the first len bytes are moved. */
static void test_dma_copy_prefix(void **state)
{
	static const uint64_t lens[] = { 0, 1, 7, 8, 101, 507, 999 };
	uint8_t bounce[64];
	struct dma_env d;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		dma_env_init(&d);
		assert_int_equal(rn_dma_copy(&d.src, &d.dst, lens[i], bounce,
					     sizeof(bounce)), RN_DMA_OK);
		assert_copied(&d, lens[i]);
	}
}

static void test_dma_to_from(void **state)
{
	uint8_t buf[DMA_LEN], back[DMA_LEN];
	struct dma_env d;

	(void)state;
	dma_env_init(&d);
	pattern(buf, sizeof(buf), 99);
	assert_int_equal(rn_dma_to(&d.dst, buf, DMA_LEN), RN_DMA_OK);
	gather(&d.dst, back);
	assert_memory_equal(back, buf, DMA_LEN);

	memset(back, 0, sizeof(back));
	assert_int_equal(rn_dma_from(&d.src, back, 777), RN_DMA_OK);
	gather(&d.src, buf);
	assert_memory_equal(back, buf, 777);
	assert_int_equal(back[777], 0);

	/* Nothing to move: nothing looked at. */
	memset(&d.src, 0, sizeof(d.src));
	assert_int_equal(rn_dma_to(&d.src, buf, 0), RN_DMA_OK);
	assert_int_equal(rn_dma_from(&d.src, buf, 0), RN_DMA_OK);
	assert_int_equal(rn_dma_copy(&d.src, &d.src, 0, buf, 1), RN_DMA_OK);
}

/*
 * A range that goes nowhere (rn_iovs_add_gone) takes its bytes of a write
 * and writes nothing; a read from one fails.
 */
static void test_dma_nowhere(void **state)
{
	uint8_t area[300], buf[300];
	struct rn_iovs v;
	struct mr_env e;
	size_t i;

	(void)state;
	rn_iovs_init(&v);
	env_init(&e, (uintptr_t)area, sizeof(area), 0);
	e.mr.addr = (uintptr_t)area;
	e.mr.guarded = true;
	e.client.mem_fd = self_mem; /* the MR's maker's address space */
	memset(area, 0xcc, sizeof(area));
	pattern(buf, sizeof(buf), 5);
	rn_iovs_add(&v, &e.mr, (uintptr_t)area, 100);
	rn_iovs_add_gone(&v, 50);
	rn_iovs_add_gone(&v, 0);
	rn_iovs_add(&v, &e.mr, (uintptr_t)area + 200, 100);
	assert_int_equal(v.n, 3);
	assert_int_equal(v.len, 250);
	assert_true(v.guarded);
	assert_int_equal(rn_dma_to(&v, buf, 250), RN_DMA_OK);
	assert_memory_equal(area, buf, 100);
	for (i = 100; i < 200; i++)
		assert_int_equal(area[i], 0xcc);
	assert_memory_equal(area + 200, buf + 150, 100);
	assert_int_equal(rn_dma_from(&v, buf, 250), RN_DMA_SRC_FAULT);
	/* The part before it reads. */
	assert_int_equal(rn_dma_from(&v, buf, 100), RN_DMA_OK);
	/* One range of an MR nobody watches: the list is not guarded. */
	e.mr.guarded = false;
	rn_iovs_add(&v, &e.mr, (uintptr_t)area, 1);
	assert_false(v.guarded);
}

/* Three pages; the middle one is unmapped, the last one read-only. */
struct hole {
	uint8_t *base;
	size_t page;
};

static int hole_setup(void **state)
{
	static struct hole h;

	h.page = (size_t)sysconf(_SC_PAGESIZE);
	h.base = mmap(NULL, 3 * h.page, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (h.base == MAP_FAILED)
		return -1;
	memset(h.base, 0x11, 3 * h.page);
	if (munmap(h.base + h.page, h.page) ||
	    mprotect(h.base + 2 * h.page, h.page, PROT_READ))
		return -1;
	*state = &h;
	return 0;
}

static int hole_teardown(void **state)
{
	struct hole *h = *state;

	munmap(h->base, h->page);
	munmap(h->base + 2 * h->page, h->page);
	return 0;
}

static void one_iov(struct rn_iovs *v, void *base, size_t len)
{
	memset(v, 0, sizeof(*v));
	v->mem = self_mem;
	v->n = 1;
	v->iov[0].iov_base = base;
	v->iov[0].iov_len = len;
	v->len = len;
}

/* Nothing else may have been mapped into the hole since the setup. */
static void assert_hole(const struct hole *h)
{
	assert_int_equal(msync(h->base + h->page, h->page, MS_ASYNC), -1);
	assert_int_equal(errno, ENOMEM);
}

static void test_dma_faults(void **state)
{
	struct hole *h = *state;
	uint8_t *hole = h->base + h->page, *ro = h->base + 2 * h->page;
	uint8_t good[256], bounce[64];
	struct rn_iovs src, dst, bad;

	assert_hole(h);
	pattern(good, sizeof(good), 1);
	one_iov(&src, good, sizeof(good));
	one_iov(&dst, h->base, sizeof(good));

	one_iov(&bad, hole, sizeof(good));
	assert_int_equal(rn_dma_copy(&bad, &dst, sizeof(good), bounce,
				     sizeof(bounce)), RN_DMA_SRC_FAULT);
	assert_int_equal(rn_dma_copy(&src, &bad, sizeof(good), bounce,
				     sizeof(bounce)), RN_DMA_DST_FAULT);
	assert_int_equal(rn_dma_from(&bad, good, sizeof(good)),
			 RN_DMA_SRC_FAULT);
	assert_int_equal(rn_dma_to(&bad, good, sizeof(good)),
			 RN_DMA_DST_FAULT);

	/* Running off the end of the mapped page into the hole. */
	one_iov(&bad, hole - 100, sizeof(good));
	assert_int_equal(rn_dma_copy(&bad, &dst, sizeof(good), bounce,
				     sizeof(bounce)), RN_DMA_SRC_FAULT);
	assert_int_equal(rn_dma_copy(&src, &bad, sizeof(good), bounce,
				     sizeof(bounce)), RN_DMA_DST_FAULT);
	assert_int_equal(rn_dma_to(&bad, good, sizeof(good)),
			 RN_DMA_DST_FAULT);

	/* A read-only page can be a source.  Whether it can be a destination
	 * is the kernel's choice (proc_mem.force_override), as for the DMA of
	 * a NIC, which writes pages it pinned whatever the process did since.
	 */
	one_iov(&bad, ro, sizeof(good));
	assert_int_equal(rn_dma_copy(&bad, &dst, sizeof(good), bounce,
				     sizeof(bounce)), RN_DMA_OK);
}

/* A fault in the second segment of a list, after good chunks were moved. */
static void test_dma_fault_later_segment(void **state)
{
	struct hole *h = *state;
	uint8_t good[512], out[512], bounce[64];
	struct rn_iovs src, dst;

	assert_hole(h);
	pattern(good, sizeof(good), 2);
	memset(out, 0, sizeof(out));
	one_iov(&src, good, sizeof(good));
	one_iov(&dst, out, 256);
	dst.iov[1].iov_base = h->base + h->page;
	dst.iov[1].iov_len = 256;
	dst.n = 2;
	dst.len = 512;
	assert_int_equal(rn_dma_copy(&src, &dst, sizeof(good), bounce,
				     sizeof(bounce)), RN_DMA_DST_FAULT);
	/* The chunks before the fault did arrive. */
	assert_memory_equal(out, good, 256);

	one_iov(&src, good, 256);
	src.iov[1].iov_base = h->base + h->page + 8;
	src.iov[1].iov_len = 256;
	src.n = 2;
	src.len = 512;
	one_iov(&dst, out, sizeof(out));
	assert_int_equal(rn_dma_copy(&src, &dst, sizeof(out), bounce,
				     sizeof(bounce)), RN_DMA_SRC_FAULT);
	assert_int_equal(rn_dma_from(&src, out, sizeof(out)),
			 RN_DMA_SRC_FAULT);
}

/*
 * A child and its /proc/PID/mem.  It sleeps until a byte comes down the
 * pipe, then execs sleep(1) (exec_after) or exits.
 */
struct child {
	pid_t pid;
	int go;
	int mem;
};

static void child_start(struct child *c, bool exec_after)
{
	char path[32], byte;
	int p[2];

	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		if (read(p[0], &byte, 1) == 1 && exec_after)
			execl("/bin/sleep", "sleep", "60", (char *)NULL);
		_exit(0);
	}
	close(p[0]);
	c->go = p[1];
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)c->pid);
	c->mem = open(path, O_RDWR | O_CLOEXEC);
	assert_true(c->mem >= 0);
}

/* Has the child exec'd? Its command name says. */
static bool execd(pid_t pid)
{
	char path[32], comm[16] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	return !strcmp(comm, "sleep\n");
}

/*
 * Once the child has exited, or exec'd into a new address space, its
 * descriptor reaches nothing: RN_DMA_GONE, never another process's memory.
 */
static void test_dma_gone(void **state)
{
	static uint8_t buf[256]; /* at the same address in the child */
	uint8_t out[sizeof(buf)], bounce[64];
	struct rn_iovs there, here;
	struct child c;
	int i, exec_after;

	(void)state;
	for (exec_after = 0; exec_after < 2; exec_after++) {
		child_start(&c, exec_after);
		one_iov(&there, buf, sizeof(buf));
		there.mem = c.mem;
		one_iov(&here, out, sizeof(out));
		pattern(out, sizeof(out), 5);
		assert_int_equal(rn_dma_to(&there, out, sizeof(out)), RN_DMA_OK);
		memset(out, 0, sizeof(out));
		assert_int_equal(rn_dma_from(&there, out, sizeof(out)),
				 RN_DMA_OK);
		assert_int_equal(out[1], (uint8_t)(5 + 7));

		assert_int_equal(write(c.go, "", 1), 1);
		if (exec_after)
			for (i = 0; i < 10000 && !execd(c.pid); i++)
				usleep(1000);
		else
			assert_int_equal(waitpid(c.pid, NULL, 0), c.pid);
		assert_int_equal(rn_dma_to(&there, out, sizeof(out)),
				 RN_DMA_GONE);
		assert_int_equal(rn_dma_from(&there, out, sizeof(out)),
				 RN_DMA_GONE);
		assert_int_equal(rn_dma_copy(&here, &there, sizeof(out), bounce,
					     sizeof(bounce)), RN_DMA_GONE);
		if (exec_after) {
			kill(c.pid, SIGKILL);
			waitpid(c.pid, NULL, 0);
		}
		close(c.go);
		close(c.mem);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mr_check_ok),
		cmocka_unit_test(test_mr_check_bad_key),
		cmocka_unit_test(test_mr_check_access),
		cmocka_unit_test(test_mr_check_range),
		cmocka_unit_test(test_mr_check_wrap),
		cmocka_unit_test(test_mr_check_zero_length),
		cmocka_unit_test(test_mr_check_retired),
		cmocka_unit_test(test_iovs_add),
		cmocka_unit_test(test_dma_copy_uneven),
		cmocka_unit_test(test_dma_copy_prefix),
		cmocka_unit_test(test_dma_to_from),
		cmocka_unit_test(test_dma_nowhere),
		cmocka_unit_test_setup_teardown(test_dma_faults, hole_setup,
						hole_teardown),
		cmocka_unit_test_setup_teardown(test_dma_fault_later_segment,
						hole_setup, hole_teardown),
		cmocka_unit_test(test_dma_gone),
	};

	self_mem = open("/proc/self/mem", O_RDWR | O_CLOEXEC);
	if (self_mem < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
