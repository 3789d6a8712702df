// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The thief: it knows the rkeys, lkeys, addresses and QPNs of the good
 * pair and of the hostile (they were handed over through a pipe) and
 * uses them from its own QPs.  Keys only open memory of the same client
 * and PD: a foreign or forged rkey is REM_ACCESS_ERR, a foreign lkey
 * LOC_PROT_ERR.  A QP answers only the QP it is connected to: requests
 * sent to someone else's QPN are never answered, so they end as a lost
 * peer does, with RETRY_EXC_ERR, and the victim sees nothing.
 */
#include <string.h>

#include "hostile.h"

static const struct loot *pick_victim(const struct attack_env *env)
{
	return &env->loot[rng_below(VICTIM_COUNT)];
}

/* A random place of n bytes (8-aligned) in the victim's registered memory. */
static uint64_t victim_addr(const struct loot *l, uint32_t n)
{
	return l->addr + rng_below((l->len - n) / 8) * 8;
}

static int foreign_rkey(struct hpair *hp, const struct loot *l, enum variant v)
{
	uint32_t len = v == V_STOLEN_RKEY_ATOMIC ? 8 : rng_range(1, 4096);
	enum ibv_wr_opcode op = v == V_STOLEN_RKEY_WRITE ? IBV_WR_RDMA_WRITE :
				v == V_STOLEN_RKEY_READ ? IBV_WR_RDMA_READ :
							  IBV_WR_ATOMIC_FETCH_AND_ADD;
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	make_wr(&wr, &sge, v, op, (uintptr_t)hp->local.data, len,
		hp->local_mr->lkey, victim_addr(l, len), l->rkey);
	HTRY(post_send(hp->qp[QA], &wr));
	return expect_remote_access_err(hp, v, variants[v].name);
}

static int foreign_lkey(struct hpair *hp, const struct loot *l, enum variant v)
{
	uint32_t len = rng_range(1, 4096);
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	if (v == V_STOLEN_LKEY_SEND) {
		make_wr(&wr, &sge, v, rng_below(2) ? IBV_WR_SEND : IBV_WR_RDMA_WRITE,
			victim_addr(l, len), len, l->lkey,
			(uintptr_t)hp->target.data, hp->target_mr->rkey);
		HTRY(post_recv(hp->qp[QB], 1, (uintptr_t)hp->target.data,
			       hp->target.len, hp->target_mr->lkey));
	} else {
		make_wr(&wr, &sge, v, IBV_WR_RDMA_READ, victim_addr(l, len), len,
			l->lkey, (uintptr_t)hp->target.data, hp->target_mr->rkey);
	}
	HTRY(post_send(hp->qp[QA], &wr));
	return expect_local_err(hp, v, IBV_WC_LOC_PROT_ERR, variants[v].name);
}

/* Our own memory, registered in our second PD: not usable from the first. */
static int other_pd(struct hpair *hp)
{
	const char *what = "own key of another PD";
	uint32_t len = rng_range(1, 4096);
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	struct gbuf g;
	uint64_t seed = rng_next();
	int ret;

	HTRY(gbuf_alloc(&g, 8192, rng_below(page_size() / 8) * 8));
	fill_pattern(g.data, g.len, seed);
	mr = reg_mr(hp->pd2, g.data, g.len, ACCESS_ALL);
	if (!mr) {
		gbuf_free(&g);
		return -1;
	}
	if (rng_below(2)) {
		make_wr(&wr, &sge, V_STOLEN_OTHER_PD,
			rng_below(2) ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
			(uintptr_t)hp->local.data, len, hp->local_mr->lkey,
			(uintptr_t)g.data, mr->rkey);
		ret = post_send(hp->qp[QA], &wr);
		if (!ret)
			ret = expect_remote_access_err(hp, V_STOLEN_OTHER_PD, what);
	} else {
		make_wr(&wr, &sge, V_STOLEN_OTHER_PD, IBV_WR_RDMA_READ,
			(uintptr_t)g.data, len, mr->lkey,
			(uintptr_t)hp->target.data, hp->target_mr->rkey);
		ret = post_send(hp->qp[QA], &wr);
		if (!ret)
			ret = expect_local_err(hp, V_STOLEN_OTHER_PD,
					       IBV_WC_LOC_PROT_ERR, what);
	}
	if (ibv_dereg_mr(mr))
		ret = HFAIL("ibv_dereg_mr failed");
	if (!ret)
		ret = check_pattern(g.data, g.len, seed, what);
	if (!ret)
		ret = gbuf_check(&g, what);
	gbuf_free(&g);
	return ret;
}

/* A key whose tag byte is not the MR's: a victim's, or our own target's. */
static int forged_tag(struct hpair *hp, const struct loot *l)
{
	bool own = rng_below(2);
	uint32_t len = rng_range(1, 4096);
	uint32_t key = (own ? hp->target_mr->rkey : l->rkey) ^
		       (uint32_t)rng_range(1, 255);
	uint64_t addr = own ? (uintptr_t)hp->target.data : victim_addr(l, len);
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	make_wr(&wr, &sge, V_STOLEN_FORGED_TAG,
		rng_below(2) ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
		(uintptr_t)hp->local.data, len, hp->local_mr->lkey, addr, key);
	HTRY(post_send(hp->qp[QA], &wr));
	return expect_remote_access_err(hp, V_STOLEN_FORGED_TAG,
					"key with a forged tag byte");
}

/*
 * a is pointed at the victim's QP (which is connected to someone else) and
 * sends: a SEND, or a WRITE or READ with the victim's own rkey.
 */
static int foreign_qpn(struct hpair *hp, const struct loot *l, enum variant v)
{
	const struct want_wc wc = { SCQ_A, v, IBV_WC_RETRY_EXC_ERR };
	uint32_t len = rng_range(1, 4096);
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	int ret;

	hp->dest[QA] = l->qpn;
	ret = hp_reset(hp);
	switch (v) {
	case V_STOLEN_QPN_SEND:
		make_wr(&wr, &sge, v, IBV_WR_SEND, (uintptr_t)hp->local.data, len,
			hp->local_mr->lkey, 0, 0);
		break;
	case V_STOLEN_QPN_WRITE:
		make_wr(&wr, &sge, v, IBV_WR_RDMA_WRITE, (uintptr_t)hp->local.data,
			len, hp->local_mr->lkey, victim_addr(l, len), l->rkey);
		break;
	default:
		make_wr(&wr, &sge, v, IBV_WR_RDMA_READ, (uintptr_t)hp->local.data,
			len, hp->local_mr->lkey, victim_addr(l, len), l->rkey);
		break;
	}
	if (!ret)
		ret = post_send(hp->qp[QA], &wr);
	if (!ret)
		ret = hp_expect(hp, &wc, 1, NULL, 0, variants[v].name);
	if (!ret)
		ret = hp_expect_state(hp, QA, IBV_QPS_ERR, variants[v].name);
	hp->dest[QA] = hp->qp[QB]->qp_num;
	HTRY(hp_reset(hp) || ret);
	return 0;
}

int attack_stolen(struct attack_env *env)
{
	enum variant v = V_STOLEN_RKEY_WRITE + rng_below(V_STOLEN_QPN_READ -
							 V_STOLEN_RKEY_WRITE + 1);
	const struct loot *l = pick_victim(env);
	struct hpair *hp = env->hp;
	int ret;

	count_try(v);
	switch (v) {
	case V_STOLEN_RKEY_WRITE:
	case V_STOLEN_RKEY_READ:
	case V_STOLEN_RKEY_ATOMIC:
		ret = foreign_rkey(hp, l, v);
		break;
	case V_STOLEN_LKEY_SEND:
	case V_STOLEN_LKEY_READ:
		ret = foreign_lkey(hp, l, v);
		break;
	case V_STOLEN_OTHER_PD:
		ret = other_pd(hp);
		break;
	case V_STOLEN_FORGED_TAG:
		ret = forged_tag(hp, l);
		break;
	default:
		ret = foreign_qpn(hp, l, v);
		break;
	}
	if (!ret)
		ret = hp_check_canaries(hp, variants[v].name);
	return ret;
}
