// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Keys used after their MR is gone: deregistered, deregistered while a WR
 * naming it waits for a receive, replaced by a new registration of the
 * same buffer, or gone with a closed context.  The buffer stays mapped the
 * whole time, so only the device's key checks stand between a stale key
 * and the bytes: they must stay as they were.
 */
#include <errno.h>
#include <string.h>

#include "hostile.h"

struct victim_buf {
	struct gbuf g;
	uint64_t seed;
	uint32_t lkey, rkey;
};

/* A guarded buffer with known contents, and keys of an MR over it that is
 * gone already (when 'stale').
 */
static int stale_buffer(struct hpair *hp, struct victim_buf *x, bool stale)
{
	struct ibv_mr *mr;

	HTRY(gbuf_alloc(&x->g, rng_range(64, 16u << 10),
			rng_below(page_size() / 8) * 8));
	x->seed = rng_next();
	fill_pattern(x->g.data, x->g.len, x->seed);
	if (!stale)
		return 0;
	mr = reg_mr(hp->pd, x->g.data, x->g.len, ACCESS_ALL);
	HTRY(!mr);
	x->lkey = mr->lkey;
	x->rkey = mr->rkey;
	HCHECK(!ibv_dereg_mr(mr), "ibv_dereg_mr failed");
	return 0;
}

static int untouched(struct victim_buf *x, const char *what)
{
	int ret = check_pattern(x->g.data, x->g.len, x->seed, what);

	if (!ret)
		ret = gbuf_check(&x->g, what);
	gbuf_free(&x->g);
	return ret;
}

static uint32_t some_len(const struct victim_buf *x)
{
	return rng_range(1, x->g.len);
}

static int stale_rkey(struct hpair *hp, struct victim_buf *x)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	make_wr(&wr, &sge, V_STALE_RKEY,
		rng_below(2) ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
		(uintptr_t)hp->local.data, some_len(x), hp->local_mr->lkey,
		(uintptr_t)x->g.data, x->rkey);
	HTRY(post_send(hp->qp[QA], &wr));
	return expect_remote_access_err(hp, V_STALE_RKEY, "rkey after dereg");
}

static int stale_lkey_send(struct hpair *hp, struct victim_buf *x)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	make_wr(&wr, &sge, V_STALE_LKEY_SEND,
		rng_below(2) ? IBV_WR_SEND : IBV_WR_RDMA_WRITE,
		(uintptr_t)x->g.data, some_len(x), x->lkey,
		(uintptr_t)hp->target.data, hp->target_mr->rkey);
	HTRY(post_recv(hp->qp[QB], 1, (uintptr_t)hp->target.data, hp->target.len,
		       hp->target_mr->lkey));
	HTRY(post_send(hp->qp[QA], &wr));
	return expect_local_err(hp, V_STALE_LKEY_SEND, IBV_WC_LOC_PROT_ERR,
				"lkey after dereg, SEND source");
}

static int stale_lkey_recv(struct hpair *hp, struct victim_buf *x)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	make_wr(&wr, &sge, V_STALE_LKEY_RECV, IBV_WR_SEND,
		(uintptr_t)hp->local.data, some_len(x), hp->local_mr->lkey, 0, 0);
	HTRY(post_recv(hp->qp[QB], 2, (uintptr_t)x->g.data, x->g.len, x->lkey));
	HTRY(post_send(hp->qp[QA], &wr));
	return expect_recv_err(hp, V_STALE_LKEY_RECV, IBV_WC_REM_OP_ERR, 2,
			       IBV_WC_LOC_PROT_ERR, "lkey after dereg, RECV target");
}

static int stale_lkey_read(struct hpair *hp, struct victim_buf *x)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	make_wr(&wr, &sge, V_STALE_LKEY_READ, IBV_WR_RDMA_READ,
		(uintptr_t)x->g.data, some_len(x), x->lkey,
		(uintptr_t)hp->target.data, hp->target_mr->rkey);
	HTRY(post_send(hp->qp[QA], &wr));
	return expect_local_err(hp, V_STALE_LKEY_READ, IBV_WC_LOC_PROT_ERR,
				"lkey after dereg, READ target");
}

/* The same buffer registered again: the old key must not reach it. */
static int reregistered(struct hpair *hp, struct victim_buf *x)
{
	const struct want_wc ok = { SCQ_A, 2, IBV_WC_SUCCESS };
	uint32_t len = some_len(x);
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	int ret;

	mr = reg_mr(hp->pd, x->g.data, x->g.len, ACCESS_ALL);
	HTRY(!mr);
	make_wr(&wr, &sge, V_STALE_REREGISTERED, IBV_WR_RDMA_WRITE,
		(uintptr_t)hp->local.data, len, hp->local_mr->lkey,
		(uintptr_t)x->g.data, x->rkey);
	ret = post_send(hp->qp[QA], &wr);
	if (!ret)
		ret = expect_remote_access_err(hp, V_STALE_REREGISTERED,
					       "old key of a re-registered buffer");
	/* The control: the new key is good (a READ leaves the bytes alone). */
	make_wr(&wr, &sge, 2, IBV_WR_RDMA_READ, (uintptr_t)hp->local.data, len,
		hp->local_mr->lkey, (uintptr_t)x->g.data, mr->rkey);
	if (!ret)
		ret = post_send(hp->qp[QA], &wr);
	if (!ret)
		ret = hp_expect(hp, &ok, 1, NULL, 0, "new key of the buffer");
	if (!ret)
		ret = check_pattern(hp->local.data, len, x->seed, "READ with new key");
	if (ibv_dereg_mr(mr))
		ret = HFAIL("ibv_dereg_mr failed");
	return ret;
}

/*
 * A WRITE_WITH_IMM waits for a receive (RNR) after its key was checked;
 * the MR goes; then the receive comes.  The retry must check again.  One
 * packet long (the QPs' path MTU is 4096): on a wire (--local-on-wire),
 * the packets before the last of a longer WRITE land while the MR is
 * still there, as they do on any RoCE NIC.
 */
static int dereg_in_flight(struct hpair *hp, struct victim_buf *x)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_mr *mr;

	mr = reg_mr(hp->pd, x->g.data, x->g.len, ACCESS_ALL);
	HTRY(!mr);
	make_wr(&wr, &sge, V_STALE_DEREG_IN_FLIGHT, IBV_WR_RDMA_WRITE_WITH_IMM,
		(uintptr_t)hp->local.data,
		rng_range(1, x->g.len < 4096 ? x->g.len : 4096),
		hp->local_mr->lkey,
		(uintptr_t)x->g.data, mr->rkey);
	HTRY(post_send(hp->qp[QA], &wr));
	sleep_us(rng_range(0, 2000));
	HCHECK(!ibv_dereg_mr(mr), "ibv_dereg_mr failed");
	HTRY(post_recv(hp->qp[QB], 3, (uintptr_t)hp->target.data, 16,
		       hp->target_mr->lkey));
	return expect_remote_access_err(hp, V_STALE_DEREG_IN_FLIGHT,
					"dereg while a WRITE waits");
}

/* An rkey of a context that was closed with its MR still registered. */
static int closed_context(struct hpair *hp, struct victim_buf *x)
{
	struct ibv_context *ctx;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_mr *mr;
	struct ibv_pd *pd;

	HTRY(open_device(&ctx));
	pd = ibv_alloc_pd(ctx);
	HCHECK(pd, "ibv_alloc_pd: %s", strerror(errno));
	mr = reg_mr(pd, x->g.data, x->g.len, ACCESS_ALL);
	HTRY(!mr);
	x->rkey = mr->rkey;
	/* Its PD and MR go with the connection (this process ends in _exit:
	 * the provider's structs of them are not reported as leaks).
	 */
	HCHECK(!ibv_close_device(ctx), "ibv_close_device failed");
	make_wr(&wr, &sge, V_STALE_CLOSED_CONTEXT,
		rng_below(2) ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
		(uintptr_t)hp->local.data, some_len(x), hp->local_mr->lkey,
		(uintptr_t)x->g.data, x->rkey);
	HTRY(post_send(hp->qp[QA], &wr));
	return expect_remote_access_err(hp, V_STALE_CLOSED_CONTEXT,
					"key of a closed context");
}

int attack_stale(struct attack_env *env)
{
	enum variant v = V_STALE_RKEY + rng_below(V_STALE_CLOSED_CONTEXT -
						  V_STALE_RKEY + 1);
	bool stale = v != V_STALE_DEREG_IN_FLIGHT && v != V_STALE_CLOSED_CONTEXT;
	struct hpair *hp = env->hp;
	struct victim_buf x;
	int ret;

	count_try(v);
	HTRY(stale_buffer(hp, &x, stale));
	switch (v) {
	case V_STALE_RKEY:
		ret = stale_rkey(hp, &x);
		break;
	case V_STALE_LKEY_SEND:
		ret = stale_lkey_send(hp, &x);
		break;
	case V_STALE_LKEY_RECV:
		ret = stale_lkey_recv(hp, &x);
		break;
	case V_STALE_LKEY_READ:
		ret = stale_lkey_read(hp, &x);
		break;
	case V_STALE_REREGISTERED:
		ret = reregistered(hp, &x);
		break;
	case V_STALE_DEREG_IN_FLIGHT:
		ret = dereg_in_flight(hp, &x);
		break;
	default:
		ret = closed_context(hp, &x);
		break;
	}
	if (untouched(&x, variants[v].name))
		ret = -1;
	return ret;
}
