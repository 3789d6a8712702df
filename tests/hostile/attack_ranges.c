// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Overflowing ranges and rights not granted, on the hostile's own pair:
 * every access outside an MR by one byte, below it, wrapping 2^64, longer
 * than a message may be, or needing a right the MR or the QP does not
 * grant.  Each has its verbs status; the memory around and under the
 * rejected range must stay as it was (nothing is applied in part).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "hostile.h"

/* A random RDMA opcode of a, with a local range and a remote one. */
static enum ibv_wr_opcode write_or_read(void)
{
	return rng_below(2) ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
}

/* Fill the whole target with a known pattern; returns its seed. */
static uint64_t mark_target(struct hpair *hp)
{
	uint64_t seed = rng_next();

	fill_pattern(hp->target.data, hp->target.len, seed);
	return seed;
}

static int target_unchanged(struct hpair *hp, uint64_t seed, const char *what)
{
	HTRY(check_pattern(hp->target.data, hp->target.len, seed, what));
	return hp_check_canaries(hp, what);
}

/* A remote range that is not inside the target MR. */
static int bad_remote(struct hpair *hp, enum variant v)
{
	uint32_t len = rng_range(2, 4096);
	uint64_t start = (uintptr_t)hp->target.data, end = start + hp->target.len;
	enum ibv_wr_opcode op = write_or_read();
	uint64_t seed = mark_target(hp);
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	uint64_t raddr;

	switch (v) {
	case V_RANGE_REMOTE_END_PLUS_1:
		raddr = end - len + 1;
		break;
	case V_RANGE_REMOTE_BELOW:
		raddr = start - (rng_below(2) ? rng_range(1, len) : 1ull << 40);
		break;
	default: /* V_RANGE_REMOTE_WRAP: addr + len passes 2^64 */
		raddr = UINT64_MAX - rng_below(len - 1);
		break;
	}
	make_wr(&wr, &sge, v, op, (uintptr_t)hp->local.data, len,
		hp->local_mr->lkey, raddr, hp->target_mr->rkey);
	HTRY(post_send(hp->qp[QA], &wr));
	HTRY(expect_remote_access_err(hp, v, variants[v].name));
	return target_unchanged(hp, seed, variants[v].name);
}

/* A local SGE not inside the local MR, for a SEND, WRITE or READ. */
static int bad_local(struct hpair *hp, enum variant v)
{
	static const enum ibv_wr_opcode ops[] = { IBV_WR_SEND, IBV_WR_RDMA_WRITE,
						  IBV_WR_RDMA_READ };
	enum ibv_wr_opcode op = ops[rng_below(3)];
	uint32_t len = rng_range(2, 4096);
	uint64_t start = (uintptr_t)hp->local.data, end = start + hp->local.len;
	uint64_t seed = mark_target(hp);
	struct ibv_send_wr wr;
	struct ibv_sge sge[2];
	uint64_t laddr;

	switch (v) {
	case V_RANGE_LOCAL_END_PLUS_1:
		laddr = end - len + 1;
		break;
	case V_RANGE_LOCAL_BELOW:
		laddr = start - rng_range(1, len);
		break;
	case V_RANGE_LOCAL_WRAP:
		laddr = UINT64_MAX - rng_below(len - 1);
		break;
	default: /* V_RANGE_SECOND_SGE: the first one is fine */
		laddr = start;
		break;
	}
	make_wr(&wr, &sge[0], v, op, laddr, len, hp->local_mr->lkey,
		(uintptr_t)hp->target.data, hp->target_mr->rkey);
	if (v == V_RANGE_SECOND_SGE) {
		sge[1] = (struct ibv_sge){ end - len / 2, len, hp->local_mr->lkey };
		wr.num_sge = 2;
	}
	if (op == IBV_WR_SEND)
		HTRY(post_recv(hp->qp[QB], 1, (uintptr_t)hp->target.data,
			       hp->target.len, hp->target_mr->lkey));
	HTRY(post_send(hp->qp[QA], &wr));
	HTRY(expect_local_err(hp, v, IBV_WC_LOC_PROT_ERR, variants[v].name));
	return target_unchanged(hp, seed, variants[v].name);
}

/* More than RN_MAX_MSG_SZ (2 GiB) in one message, from a sparse MR. */
static int too_long(struct hpair *hp)
{
	static const enum ibv_wr_opcode ops[] = { IBV_WR_SEND, IBV_WR_RDMA_WRITE,
						  IBV_WR_RDMA_READ };
	const size_t big = (2ull << 30) + (64u << 10);
	enum ibv_wr_opcode op = ops[rng_below(3)];
	uint32_t len = (uint32_t)((2ull << 30) + rng_range(1, 64u << 10));
	uint64_t seed = mark_target(hp);
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	struct gbuf g;
	int ret;

	HTRY(gbuf_alloc_sparse(&g, big));
	mr = reg_mr(hp->pd, g.data, big, ACCESS_ALL);
	if (!mr) {
		gbuf_free(&g);
		return -1;
	}
	make_wr(&wr, &sge, V_RANGE_TOO_LONG, op, (uintptr_t)g.data, len, mr->lkey,
		(uintptr_t)hp->target.data, hp->target_mr->rkey);
	ret = post_send(hp->qp[QA], &wr);
	if (!ret)
		ret = expect_local_err(hp, V_RANGE_TOO_LONG, IBV_WC_LOC_LEN_ERR,
				       "message over 2 GiB");
	if (ibv_dereg_mr(mr))
		ret = HFAIL("ibv_dereg_mr of the sparse MR failed");
	if (!ret)
		ret = gbuf_check(&g, "sparse MR");
	gbuf_free(&g);
	HTRY(ret);
	return target_unchanged(hp, seed, "message over 2 GiB");
}

/*
 * An MR over the first half of the target without the right the operation
 * needs (the target MR itself has every right: the key decides).
 */
static int no_remote_right(struct hpair *hp, enum variant v)
{
	size_t half = hp->target.len / 2;
	uint64_t seed = mark_target(hp);
	unsigned int access = ACCESS_ALL;
	enum ibv_wr_opcode op;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	uint32_t len = 8;
	uint64_t raddr;
	int ret;

	switch (v) {
	case V_RANGE_NO_REMOTE_WRITE:
		access &= ~IBV_ACCESS_REMOTE_WRITE;
		op = IBV_WR_RDMA_WRITE;
		len = rng_range(1, 4096);
		break;
	case V_RANGE_NO_REMOTE_READ:
		access &= ~IBV_ACCESS_REMOTE_READ;
		op = IBV_WR_RDMA_READ;
		len = rng_range(1, 4096);
		break;
	default: /* V_RANGE_NO_REMOTE_ATOMIC */
		access &= ~IBV_ACCESS_REMOTE_ATOMIC;
		op = rng_below(2) ? IBV_WR_ATOMIC_FETCH_AND_ADD :
				    IBV_WR_ATOMIC_CMP_AND_SWP;
		break;
	}
	mr = reg_mr(hp->pd, hp->target.data, half, access);
	HTRY(!mr);
	raddr = (uintptr_t)hp->target.data + rng_below((half - len) / 8) * 8;
	make_wr(&wr, &sge, v, op, (uintptr_t)hp->local.data, len,
		hp->local_mr->lkey, raddr, mr->rkey);
	ret = post_send(hp->qp[QA], &wr);
	if (!ret)
		ret = expect_remote_access_err(hp, v, variants[v].name);
	if (ibv_dereg_mr(mr))
		ret = HFAIL("ibv_dereg_mr failed");
	HTRY(ret);
	return target_unchanged(hp, seed, variants[v].name);
}

/* Local memory the device would have to write without LOCAL_WRITE. */
static int no_local_write(struct hpair *hp, enum variant v)
{
	size_t half = hp->target.len / 2;
	uint64_t seed = mark_target(hp);
	uint32_t len = rng_range(1, 4096);
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	int ret;

	/* Read rights only: the device may read it, never write it. */
	mr = reg_mr(hp->pd, hp->target.data, half, IBV_ACCESS_REMOTE_READ);
	HTRY(!mr);
	if (v == V_RANGE_NO_LOCAL_WRITE_RECV) {
		/* b receives into it: its receive fails, a's SEND too. */
		make_wr(&wr, &sge, v, IBV_WR_SEND, (uintptr_t)hp->local.data, len,
			hp->local_mr->lkey, 0, 0);
		ret = post_recv(hp->qp[QB], 77, (uintptr_t)hp->target.data, half,
				mr->lkey);
		if (!ret)
			ret = post_send(hp->qp[QA], &wr);
		if (!ret)
			ret = expect_recv_err(hp, v, IBV_WC_REM_OP_ERR, 77,
					      IBV_WC_LOC_PROT_ERR, variants[v].name);
	} else if (rng_below(2)) {
		/* a READs from its local buffer into it (as the local side). */
		make_wr(&wr, &sge, v, IBV_WR_RDMA_READ, (uintptr_t)hp->target.data,
			len, mr->lkey, (uintptr_t)hp->local.data,
			hp->local_mr->rkey);
		ret = post_send(hp->qp[QA], &wr);
		if (!ret)
			ret = expect_local_err(hp, v, IBV_WC_LOC_PROT_ERR,
					       variants[v].name);
	} else {
		/* An atomic's result would land in it. */
		make_wr(&wr, &sge, v, IBV_WR_ATOMIC_FETCH_AND_ADD,
			(uintptr_t)hp->target.data + 8 * rng_below(half / 8), 8,
			mr->lkey, (uintptr_t)hp->local.data & ~7ull,
			hp->local_mr->rkey);
		if (wr.wr.atomic.remote_addr < (uintptr_t)hp->local.data)
			wr.wr.atomic.remote_addr += 8;
		ret = post_send(hp->qp[QA], &wr);
		if (!ret)
			ret = expect_local_err(hp, v, IBV_WC_LOC_PROT_ERR,
					       variants[v].name);
	}
	if (ibv_dereg_mr(mr))
		ret = HFAIL("ibv_dereg_mr failed");
	HTRY(ret);
	return target_unchanged(hp, seed, variants[v].name);
}

/* b's QP does not allow remote writes, whatever the MR says. */
static int qp_no_remote_write(struct hpair *hp)
{
	uint64_t seed = mark_target(hp);
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	int ret;

	hp->params[QB].access = IBV_ACCESS_REMOTE_READ;
	ret = hp_reset(hp);
	make_wr(&wr, &sge, V_RANGE_QP_NO_REMOTE_WRITE, IBV_WR_RDMA_WRITE,
		(uintptr_t)hp->local.data, rng_range(1, 4096), hp->local_mr->lkey,
		(uintptr_t)hp->target.data, hp->target_mr->rkey);
	if (!ret)
		ret = post_send(hp->qp[QA], &wr);
	if (!ret)
		ret = expect_remote_access_err(hp, V_RANGE_QP_NO_REMOTE_WRITE,
					       "WRITE to a QP not allowing it");
	hp->params[QB].access = ACCESS_ALL;
	HTRY(hp_reset(hp) || ret);
	return target_unchanged(hp, seed, "WRITE to a QP not allowing it");
}

static int atomic_misaligned(struct hpair *hp)
{
	uint64_t seed = mark_target(hp);
	uint64_t raddr = (uintptr_t)hp->target.data +
			 8 * rng_below(hp->target.len / 8 - 1) + rng_range(1, 7);
	const struct want_wc wc = { SCQ_A, V_RANGE_ATOMIC_MISALIGNED,
				    IBV_WC_REM_INV_REQ_ERR };
	const struct want_ev ev = { IBV_EVENT_QP_REQ_ERR, QB, 0 };
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	make_wr(&wr, &sge, V_RANGE_ATOMIC_MISALIGNED,
		rng_below(2) ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_ATOMIC_CMP_AND_SWP,
		(uintptr_t)hp->local.data, 8, hp->local_mr->lkey, raddr,
		hp->target_mr->rkey);
	HTRY(post_send(hp->qp[QA], &wr));
	HTRY(hp_expect(hp, &wc, 1, &ev, 1, "misaligned atomic"));
	HTRY(hp_reset(hp));
	return target_unchanged(hp, seed, "misaligned atomic");
}

static int send_too_long(struct hpair *hp)
{
	uint32_t room = rng_range(1, 4096);
	uint64_t seed = mark_target(hp);
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	make_wr(&wr, &sge, V_RANGE_SEND_TOO_LONG, IBV_WR_SEND,
		(uintptr_t)hp->local.data, room + rng_range(1, 512),
		hp->local_mr->lkey, 0, 0);
	HTRY(post_recv(hp->qp[QB], 78, (uintptr_t)hp->target.data, room,
		       hp->target_mr->lkey));
	HTRY(post_send(hp->qp[QA], &wr));
	HTRY(expect_recv_err(hp, V_RANGE_SEND_TOO_LONG, IBV_WC_REM_INV_REQ_ERR, 78,
			     IBV_WC_LOC_LEN_ERR, "SEND longer than the receive"));
	return target_unchanged(hp, seed, "SEND longer than the receive");
}

/*
 * Good WRITEs, one out of range, more good ones, in one post: ringnicd
 * moves runs of valid WRITEs as one batch, but the bad one must neither
 * join a batch nor take the ones before it down; those after it are
 * flushed, unexecuted.
 */
static int bad_in_batch(struct hpair *hp)
{
	const char *what = "bad WRITE amid a batch of good ones";
	unsigned int before = rng_range(2, 4), after = rng_range(0, 2);
	unsigned int n = before + 1 + after, i;
	struct want_wc wcs[7];
	struct ibv_send_wr wr[7];
	struct ibv_sge sge[7];
	uint8_t *expect;
	int ret;

	mark_target(hp);
	expect = malloc(hp->target.len);
	HCHECK(expect, "out of memory");
	memcpy(expect, hp->target.data, hp->target.len);
	for (i = 0; i < n; i++) {
		uint32_t len = rng_range(1, 4096);
		uint64_t off = (uint64_t)i * 4096;

		fill_pattern(hp->local.data + off, len, rng_next());
		make_wr(&wr[i], &sge[i], 0x100 + i, IBV_WR_RDMA_WRITE,
			(uintptr_t)hp->local.data + off, len, hp->local_mr->lkey,
			(uintptr_t)hp->target.data + off, hp->target_mr->rkey);
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
		wcs[i] = (struct want_wc){ SCQ_A, 0x100 + i,
					   i < before ? IBV_WC_SUCCESS :
					   i == before ? IBV_WC_REM_ACCESS_ERR :
							 IBV_WC_WR_FLUSH_ERR };
		if (i < before)
			memcpy(expect + off, hp->local.data + off, len);
	}
	if (rng_below(2))
		wr[before].wr.rdma.remote_addr = (uintptr_t)hp->target.data +
						 hp->target.len - sge[before].length + 1;
	else
		wr[before].wr.rdma.rkey ^= (uint32_t)rng_range(1, 255);
	ret = post_send(hp->qp[QA], wr);
	if (!ret) {
		const struct want_ev ev = { IBV_EVENT_QP_ACCESS_ERR, QB, 0 };

		ret = hp_expect(hp, wcs, n, &ev, 1, what);
	}
	if (!ret && memcmp(expect, hp->target.data, hp->target.len)) {
		for (i = 0; expect[i] == hp->target.data[i]; i++)
			;
		ret = HFAIL("%s: target byte %u is %#x, not %#x", what, i,
			    hp->target.data[i], expect[i]);
	}
	free(expect);
	HTRY(ret);
	HTRY(hp_reset(hp));
	return hp_check_canaries(hp, what);
}

/* The control: the very first and last bytes of both MRs are fine. */
static int exact_fit(struct hpair *hp)
{
	uint32_t len = rng_range(1, 4096);
	bool at_end = rng_below(2);
	uint64_t loff = at_end ? hp->local.len - len : 0;
	uint64_t roff = at_end ? 0 : hp->target.len - len;
	enum ibv_wr_opcode op = write_or_read();
	uint64_t seed = rng_next();
	const struct want_wc wc = { SCQ_A, V_RANGE_EXACT_FIT, IBV_WC_SUCCESS };
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	fill_pattern((op == IBV_WR_RDMA_WRITE ? hp->local.data + loff :
						hp->target.data + roff),
		     len, seed);
	make_wr(&wr, &sge, V_RANGE_EXACT_FIT, op,
		(uintptr_t)hp->local.data + loff, len, hp->local_mr->lkey,
		(uintptr_t)hp->target.data + roff, hp->target_mr->rkey);
	HTRY(post_send(hp->qp[QA], &wr));
	HTRY(hp_expect(hp, &wc, 1, NULL, 0, "exact fit"));
	HTRY(check_pattern(op == IBV_WR_RDMA_WRITE ? hp->target.data + roff :
						     hp->local.data + loff,
			   len, seed, "exact fit"));
	return hp_check_canaries(hp, "exact fit");
}

int attack_ranges(struct attack_env *env)
{
	static const enum variant pick[] = {
		V_RANGE_REMOTE_END_PLUS_1, V_RANGE_REMOTE_BELOW,
		V_RANGE_REMOTE_WRAP, V_RANGE_LOCAL_END_PLUS_1,
		V_RANGE_LOCAL_BELOW, V_RANGE_LOCAL_WRAP, V_RANGE_SECOND_SGE,
		V_RANGE_TOO_LONG, V_RANGE_NO_REMOTE_WRITE,
		V_RANGE_NO_REMOTE_READ, V_RANGE_NO_REMOTE_ATOMIC,
		V_RANGE_NO_LOCAL_WRITE_RECV, V_RANGE_NO_LOCAL_WRITE_READ,
		V_RANGE_QP_NO_REMOTE_WRITE, V_RANGE_ATOMIC_MISALIGNED,
		V_RANGE_SEND_TOO_LONG, V_RANGE_IN_BATCH, V_RANGE_EXACT_FIT,
	};
	enum variant v = pick[rng_below(sizeof(pick) / sizeof(pick[0]))];
	struct hpair *hp = env->hp;

	count_try(v);
	switch (v) {
	case V_RANGE_REMOTE_END_PLUS_1:
	case V_RANGE_REMOTE_BELOW:
	case V_RANGE_REMOTE_WRAP:
		return bad_remote(hp, v);
	case V_RANGE_LOCAL_END_PLUS_1:
	case V_RANGE_LOCAL_BELOW:
	case V_RANGE_LOCAL_WRAP:
	case V_RANGE_SECOND_SGE:
		return bad_local(hp, v);
	case V_RANGE_TOO_LONG:
		return too_long(hp);
	case V_RANGE_NO_REMOTE_WRITE:
	case V_RANGE_NO_REMOTE_READ:
	case V_RANGE_NO_REMOTE_ATOMIC:
		return no_remote_right(hp, v);
	case V_RANGE_NO_LOCAL_WRITE_RECV:
	case V_RANGE_NO_LOCAL_WRITE_READ:
		return no_local_write(hp, v);
	case V_RANGE_QP_NO_REMOTE_WRITE:
		return qp_no_remote_write(hp);
	case V_RANGE_ATOMIC_MISALIGNED:
		return atomic_misaligned(hp);
	case V_RANGE_SEND_TOO_LONG:
		return send_too_long(hp);
	case V_RANGE_IN_BATCH:
		return bad_in_batch(hp);
	default:
		return exact_fit(hp);
	}
}
