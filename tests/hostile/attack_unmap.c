// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Registered memory unmapped or moved under its MR.  A NIC keeps the pages
 * it pinned; ringnicd reaches memory by address, so what it must never do
 * is write into whatever the process mapped at that address later.  An
 * RDMA WRITE through the MR afterwards succeeds and goes nowhere, as into
 * the pages a NIC keeps; every other access gets its error status (the
 * remote side REM_ACCESS_ERR, the local side LOC_PROT_ERR); memory mapped
 * there anew and memory moved elsewhere keep their bytes; the canary pages
 * around stay.
 *
 * That is with a userfaultfd.  A process without one (seccomp) gets the
 * checks by address only: an access to the range left unmapped fails as
 * above; one to memory mapped there again succeeds and lands in that new
 * memory, which then holds exactly what the access wrote; memory moved
 * elsewhere and the canary pages keep their bytes all the same.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "hostile.h"

struct region {
	struct gbuf g; /* canary page, the MR's pages, canary page */
	struct ibv_mr *mr;
	uint64_t seed; /* what the MR's pages held */
	uint8_t *moved; /* where mremap put them, or NULL */
	uint8_t *fresh; /* memory mapped anew inside the old range, or NULL */
	size_t fresh_len;
	uint8_t *want; /* what fresh must hold: its pattern, and what landed */
};

/* The pages the operations aim at: where fresh memory went, or all. */
static uint8_t *aim(const struct region *r, size_t *len)
{
	if (r->fresh) {
		*len = r->fresh_len;
		return r->fresh;
	}
	*len = r->g.len;
	return r->g.data;
}

/* Memory at at, mapped anew: a pattern, and its image in r->want. */
static int fill_fresh(struct region *r, uint8_t *at, size_t len)
{
	uint64_t seed = rng_next();

	r->fresh = at;
	r->fresh_len = len;
	r->want = malloc(len);
	HCHECK(r->want, "out of memory");
	fill_pattern(at, len, seed);
	fill_pattern(r->want, len, seed);
	return 0;
}

static int map_fresh(struct region *r, uint8_t *at, size_t len)
{
	/* NOREPLACE: the range must be the hole we made, nothing else. */
	void *p = mmap(at, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	HCHECK(p == at, "mmap at %p: %s", (void *)at, strerror(errno));
	return fill_fresh(r, at, len);
}

/* mremap the MR's pages to a place reserved for them. */
static int move_away(struct region *r)
{
	void *to = mmap(NULL, r->g.len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);

	HCHECK(to != MAP_FAILED, "mmap: %s", strerror(errno));
	r->moved = mremap(r->g.data, r->g.len, r->g.len,
			  MREMAP_MAYMOVE | MREMAP_FIXED, to);
	HCHECK(r->moved == to, "mremap: %s", strerror(errno));
	return 0;
}

/* Take the MR's memory away the way variant v says. */
static int take_away(struct region *r, enum variant v)
{
	size_t page = page_size();

	switch (v) {
	case V_UNMAP_HOLE:
		HCHECK(!munmap(r->g.data, r->g.len), "munmap: %s", strerror(errno));
		return 0;
	case V_UNMAP_REMAP:
	case V_UNMAP_IN_FLIGHT:
		HCHECK(!munmap(r->g.data, r->g.len), "munmap: %s", strerror(errno));
		return map_fresh(r, r->g.data, r->g.len);
	case V_UNMAP_MAP_FIXED: {
		void *p = mmap(r->g.data, r->g.len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);

		HCHECK(p == r->g.data, "mmap MAP_FIXED: %s", strerror(errno));
		return fill_fresh(r, r->g.data, r->g.len);
	}
	case V_UNMAP_MREMAP:
		return move_away(r);
	case V_UNMAP_MREMAP_REFILL:
		HTRY(move_away(r));
		return map_fresh(r, r->g.data, r->g.len);
	default: { /* V_UNMAP_SHRINK: keep the first page only */
		void *p = mremap(r->g.data, r->g.len, page, 0);

		HCHECK(p == r->g.data, "mremap shrink: %s", strerror(errno));
		return map_fresh(r, r->g.data + page, r->g.len - page);
	}
	}
}

/* Both QPs still in RTS: the access hurt neither. */
static int both_rts(struct hpair *hp, const char *what)
{
	HTRY(hp_expect_state(hp, QA, IBV_QPS_RTS, what));
	return hp_expect_state(hp, QB, IBV_QPS_RTS, what);
}

/* len bytes at got are what the fresh memory must hold from off on. */
static int check_want(const struct region *r, const uint8_t *got, size_t off,
		      size_t len, const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		HCHECK(got[i] == r->want[off + i],
		       "%s: byte %zu of %zu is %#x, not %#x (fresh memory at +%zu)",
		       what, i, len, got[i], r->want[off + i], off + i);
	return 0;
}

/*
 * Without a userfaultfd, the access of kind k (as in access_gone) at
 * offset off of the fresh memory, posted: it succeeds, reaches that memory
 * and nothing else.  The bytes it leaves there go into r->want, checked by
 * verify_and_free.
 */
static int access_landed(struct hpair *hp, struct region *r, enum variant v,
			 int k, size_t off, uint32_t len)
{
	const struct want_wc sent = { SCQ_A, v, IBV_WC_SUCCESS };
	const char *what = variants[v].name;
	uint64_t old, new;

	switch (k) {
	case 0: /* WRITE: the fresh memory holds what was written */
		HTRY(hp_expect(hp, &sent, 1, NULL, 0, what));
		memcpy(r->want + off, hp->local.data, len);
		break;
	case 1: /* READ: the fresh memory's bytes came back */
		HTRY(hp_expect(hp, &sent, 1, NULL, 0, what));
		HTRY(check_want(r, hp->local.data, off, len, what));
		break;
	case 2: /* FETCH_AND_ADD 1: the fresh memory's word came back, plus 1 */
		HTRY(hp_expect(hp, &sent, 1, NULL, 0, what));
		HTRY(check_want(r, hp->local.data, off, 8, what));
		memcpy(&old, r->want + off, 8);
		new = old + 1;
		memcpy(r->want + off, &new, 8);
		break;
	case 3: { /* SEND from it: the receive got the fresh memory's bytes */
		const struct want_wc wc[2] = { sent, { RCQ_B, 1, IBV_WC_SUCCESS } };

		HTRY(hp_expect(hp, wc, 2, NULL, 0, what));
		HTRY(check_want(r, hp->target.data, off, len, what));
		break;
	}
	case 4: { /* a receive into it: the fresh memory holds what was sent */
		const struct want_wc wc[2] = { sent, { RCQ_B, 2, IBV_WC_SUCCESS } };

		HTRY(hp_expect(hp, wc, 2, NULL, 0, what));
		memcpy(r->want + off, hp->local.data, len);
		break;
	}
	default: /* a READ into it: the fresh memory holds what was read */
		HTRY(hp_expect(hp, &sent, 1, NULL, 0, what));
		memcpy(r->want + off, hp->target.data, len);
		break;
	}
	return both_rts(hp, what);
}

/*
 * One access through the MR, at a random place of the pages aimed at, and
 * its exact outcome.  Each kind reaches the memory another way.  Without
 * a userfaultfd, an access to memory mapped anew succeeds there
 * (access_landed); one to the range left unmapped (UNMAP_HOLE, UNMAP_MREMAP)
 * fails as with one: nothing here maps memory between take_away and the
 * access, so the hole stays a hole.
 */
static int access_gone(struct hpair *hp, struct region *r, enum variant v)
{
	size_t room;
	uint8_t *base = aim(r, &room);
	uint32_t len = rng_range(1, room < 4096 ? room : 4096);
	uint64_t addr = (uintptr_t)base + rng_below(room - len + 1);
	uint64_t atomic_addr = ((uintptr_t)base + rng_below(room / 8) * 8);
	const char *what = variants[v].name;
	bool lands = r->fresh && !rn_test_have_uffd();
	int k = (int)rng_below(6);
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	if (lands) {
		/* Sources that differ from the fresh memory, and from each other. */
		fill_pattern(hp->local.data, len, rng_next());
		fill_pattern(hp->target.data, len, rng_next());
	}
	switch (k) {
	case 0: /* the remote side is written */
		make_wr(&wr, &sge, v, IBV_WR_RDMA_WRITE, (uintptr_t)hp->local.data,
			len, hp->local_mr->lkey, addr, r->mr->rkey);
		break;
	case 1: /* the remote side is read */
		make_wr(&wr, &sge, v, IBV_WR_RDMA_READ, (uintptr_t)hp->local.data,
			len, hp->local_mr->lkey, addr, r->mr->rkey);
		break;
	case 2: /* an atomic on the remote side */
		make_wr(&wr, &sge, v, IBV_WR_ATOMIC_FETCH_AND_ADD,
			(uintptr_t)hp->local.data, 8, hp->local_mr->lkey,
			atomic_addr, r->mr->rkey);
		break;
	case 3: /* a SEND's source */
		make_wr(&wr, &sge, v, IBV_WR_SEND, addr, len, r->mr->lkey, 0, 0);
		HTRY(post_recv(hp->qp[QB], 1, (uintptr_t)hp->target.data,
			       hp->target.len, hp->target_mr->lkey));
		break;
	case 4: /* a receive's target */
		make_wr(&wr, &sge, v, IBV_WR_SEND, (uintptr_t)hp->local.data, len,
			hp->local_mr->lkey, 0, 0);
		HTRY(post_recv(hp->qp[QB], 2, addr, len, r->mr->lkey));
		break;
	default: /* a READ's local target */
		make_wr(&wr, &sge, v, IBV_WR_RDMA_READ, addr, len, r->mr->lkey,
			(uintptr_t)hp->target.data, hp->target_mr->rkey);
		break;
	}
	HTRY(post_send(hp->qp[QA], &wr));
	if (lands)
		return access_landed(hp, r, v, k,
				     (k == 2 ? atomic_addr : addr) -
					     (uintptr_t)r->fresh, len);
	switch (k) {
	case 0: { /* the WRITE went nowhere */
		const struct want_wc sent = { SCQ_A, v, IBV_WC_SUCCESS };

		if (!rn_test_have_uffd())
			return expect_remote_access_err(hp, v, what);
		HTRY(hp_expect(hp, &sent, 1, NULL, 0, what));
		return both_rts(hp, what);
	}
	case 3:
	case 5:
		return expect_local_err(hp, v, IBV_WC_LOC_PROT_ERR, what);
	case 4:
		return expect_recv_err(hp, v, IBV_WC_REM_OP_ERR, 2,
				       IBV_WC_LOC_PROT_ERR, what);
	default:
		return expect_remote_access_err(hp, v, what);
	}
}

/*
 * A WRITE_WITH_IMM passes its checks and waits for a receive (RNR); the
 * memory is replaced; then the receive comes and the WRITE is retried.
 */
static int remapped_in_flight(struct hpair *hp, struct region *r)
{
	const char *what = "remapped while a WRITE waits";
	const struct want_wc done[2] = {
		{ SCQ_A, V_UNMAP_IN_FLIGHT, IBV_WC_SUCCESS },
		{ RCQ_B, 3, IBV_WC_SUCCESS },
	};
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	uint32_t len = rng_range(1, 4096);
	size_t off = rng_below(r->g.len - len + 1);

	if (!rn_test_have_uffd())
		fill_pattern(hp->local.data, len, rng_next());
	make_wr(&wr, &sge, V_UNMAP_IN_FLIGHT, IBV_WR_RDMA_WRITE_WITH_IMM,
		(uintptr_t)hp->local.data, len, hp->local_mr->lkey,
		(uintptr_t)r->g.data + off, r->mr->rkey);
	HTRY(post_send(hp->qp[QA], &wr));
	sleep_us(rng_range(0, 2000));
	HTRY(take_away(r, V_UNMAP_IN_FLIGHT));
	HTRY(post_recv(hp->qp[QB], 3, (uintptr_t)hp->target.data, 16,
		       hp->target_mr->lkey));
	if (!rn_test_have_uffd()) {
		/*
		 * The WRITE waits for the receive before it writes anything,
		 * and the receive comes after the new memory is filled: the
		 * WRITE lands there, whole.
		 */
		HTRY(hp_expect(hp, done, 2, NULL, 0, what));
		memcpy(r->want + off, hp->local.data, len);
		return both_rts(hp, what);
	}
	/* The MR retired meanwhile: the WRITE goes nowhere, and succeeds. */
	HTRY(hp_expect(hp, done, 2, NULL, 0, what));
	return both_rts(hp, what);
}

/* Every byte that is not the MR's any more is as it was; then clean up. */
static int verify_and_free(struct region *r, enum variant v)
{
	const char *what = variants[v].name;
	int ret = 0;

	if (ibv_dereg_mr(r->mr))
		ret = HFAIL("%s: ibv_dereg_mr failed", what);
	if (!ret && r->fresh)
		ret = check_want(r, r->fresh, 0, r->fresh_len, what);
	if (!ret && r->moved)
		ret = check_pattern(r->moved, r->g.len, r->seed, what);
	if (!ret)
		ret = gbuf_check(&r->g, what);
	if (r->moved)
		munmap(r->moved, r->g.len);
	gbuf_free(&r->g); /* the whole range, holes included */
	free(r->want);
	return ret;
}

int attack_unmap(struct attack_env *env)
{
	enum variant v = V_UNMAP_HOLE + rng_below(V_UNMAP_IN_FLIGHT -
						  V_UNMAP_HOLE + 1);
	struct hpair *hp = env->hp;
	struct region r = { 0 };
	int ret;

	count_try(v);
	/* Whole pages, from 2 (shrinking leaves one) to 4. */
	HTRY(gbuf_alloc(&r.g, rng_range(2, 4) * page_size(), 0));
	r.seed = rng_next();
	fill_pattern(r.g.data, r.g.len, r.seed);
	r.mr = reg_mr(hp->pd, r.g.data, r.g.len, ACCESS_ALL);
	if (!r.mr) {
		gbuf_free(&r.g);
		return -1;
	}
	if (v == V_UNMAP_IN_FLIGHT) {
		ret = remapped_in_flight(hp, &r);
	} else {
		ret = take_away(&r, v);
		if (!ret)
			ret = access_gone(hp, &r, v);
	}
	if (verify_and_free(&r, v))
		ret = -1;
	return ret;
}
