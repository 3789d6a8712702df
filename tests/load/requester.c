// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The requester's side of a lane: fill a batch's sources, post it in a
 * few calls (ibv_post_send lists on even QPs, ibv_wr_* on odd ones), and
 * check every completion in order: opcode and length, READ data and atomic
 * results, and at the end of the batch that its sources are intact and the
 * canary around them untouched.
 */
#include <endian.h>
#include <string.h>

#include "client.h"

static uint8_t *src_at(struct qp_res *r, uint32_t off)
{
	return r->local + LOCAL_SRC_OFF + off;
}

static void src_sges(struct qp_res *r, const struct op *o, struct ibv_sge *sge)
{
	unsigned int k;

	for (k = 0; k < o->nsrc; k++)
		sge[k] = (struct ibv_sge){ (uintptr_t)src_at(r, o->src[k].off),
					   o->src[k].len, r->lmr->lkey };
}

/* The payload of a SEND or WRITE into its sources; empty targets stay canary. */
static void fill_sources(struct qp_res *r, const struct batch *b)
{
	unsigned int i, k;

	memset(src_at(r, 0), b->canary, b->src_end);
	for (i = 0; i < b->n; i++) {
		const struct op *o = &b->op[i];
		uint64_t at = 0;

		if (!op_is_send(o->opcode) && !op_is_write(o->opcode))
			continue;
		for (k = 0; k < o->nsrc; at += o->src[k].len, k++)
			pattern_fill(src_at(r, o->src[k].off), o->src[k].len,
				     payload_key(r->tx.gen.key, b->no, i), at);
	}
}

static int post_list(struct qp_res *r, const struct batch *b, unsigned int from,
		     unsigned int to)
{
	struct ibv_send_wr wr[BATCH_MAX_OPS], *bad = NULL;
	struct ibv_sge sge[BATCH_MAX_OPS][OP_MAX_SGE];
	unsigned int i;
	int ret;

	for (i = from; i < to; i++) {
		const struct op *o = &b->op[i];
		struct ibv_send_wr *w = &wr[i - from];

		src_sges(r, o, sge[i - from]);
		*w = (struct ibv_send_wr){
			.wr_id = WR_ID(r->idx, b->no, i),
			.next = i + 1 < to ? w + 1 : NULL,
			.sg_list = sge[i - from],
			.num_sge = (int)o->nsrc,
			.opcode = o->opcode,
			.send_flags = (o->signaled ? IBV_SEND_SIGNALED : 0) |
				      (o->inline_data ? IBV_SEND_INLINE : 0),
			.imm_data = htobe32(o->imm),
		};
		if (op_is_atomic(o->opcode)) {
			w->wr.atomic.remote_addr = r->peer_win + o->remote_off;
			w->wr.atomic.compare_add = o->compare_add;
			w->wr.atomic.swap = o->swap;
			w->wr.atomic.rkey = r->peer_rkey;
		} else if (!op_is_send(o->opcode)) {
			w->wr.rdma.remote_addr = r->peer_win + o->remote_off;
			w->wr.rdma.rkey = r->peer_rkey;
		}
	}
	ret = ibv_post_send(r->qp, wr, &bad);
	CHECK(!ret, "QP %u: ibv_post_send of ops %u..%u of batch %u: %s", r->idx,
	      from, to - 1, b->no, strerror(ret));
	return 0;
}

static void wr_one(struct qp_res *r, const struct op *o)
{
	struct ibv_qp_ex *x = r->qpx;
	uint64_t addr = r->peer_win + o->remote_off;

	switch (o->opcode) {
	case IBV_WR_SEND:
		ibv_wr_send(x);
		break;
	case IBV_WR_SEND_WITH_IMM:
		ibv_wr_send_imm(x, htobe32(o->imm));
		break;
	case IBV_WR_RDMA_WRITE:
		ibv_wr_rdma_write(x, r->peer_rkey, addr);
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		ibv_wr_rdma_write_imm(x, r->peer_rkey, addr, htobe32(o->imm));
		break;
	case IBV_WR_RDMA_READ:
		ibv_wr_rdma_read(x, r->peer_rkey, addr);
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		ibv_wr_atomic_fetch_add(x, r->peer_rkey, addr, o->compare_add);
		break;
	default:
		ibv_wr_atomic_cmp_swp(x, r->peer_rkey, addr, o->compare_add, o->swap);
		break;
	}
}

static int post_wr_api(struct qp_res *r, const struct batch *b, unsigned int from,
		       unsigned int to)
{
	struct ibv_qp_ex *x = r->qpx;
	unsigned int i, k;
	int ret;

	ibv_wr_start(x);
	for (i = from; i < to; i++) {
		const struct op *o = &b->op[i];
		struct ibv_sge sge[OP_MAX_SGE];
		struct ibv_data_buf data[OP_MAX_SGE];

		x->wr_id = WR_ID(r->idx, b->no, i);
		x->wr_flags = o->signaled ? IBV_SEND_SIGNALED : 0;
		wr_one(r, o);
		src_sges(r, o, sge);
		if (o->inline_data) {
			for (k = 0; k < o->nsrc; k++)
				data[k] = (struct ibv_data_buf){
					(void *)(uintptr_t)sge[k].addr, sge[k].length
				};
			ibv_wr_set_inline_data_list(x, o->nsrc, data);
		} else {
			ibv_wr_set_sge_list(x, o->nsrc, sge);
		}
	}
	ret = ibv_wr_complete(x);
	CHECK(!ret, "QP %u: ibv_wr_complete of ops %u..%u of batch %u: %s", r->idx,
	      from, to - 1, b->no, strerror(ret));
	return 0;
}

int tx_start(struct client *c, struct qp_res *r)
{
	struct tx_lane *t = &r->tx;
	struct batch *b = &t->b;
	unsigned int i, k, chunk;

	lane_gen_next(&t->gen, b);
	fill_sources(r, b);
	t->active = true;
	t->acked = false;
	t->posted = 0;
	t->next = 0;
	for (i = 0; i < b->n; i += chunk) {
		chunk = 1 + rng_below(&c->rng, b->n - i);
		if (r->qpx)
			TRY(post_wr_api(r, b, i, i + chunk));
		else
			TRY(post_list(r, b, i, i + chunk));
		t->posted = i + chunk;
		/* Inline data was copied when posted: the sources are free. */
		for (k = i; k < i + chunk; k++) {
			const struct op *o = &b->op[k];
			unsigned int s;

			for (s = 0; o->inline_data && s < o->nsrc; s++)
				memset(src_at(r, o->src[s].off), b->canary, o->src[s].len);
		}
	}
	return 0;
}

/* READ data or an atomic's old value, where the op's local pieces are. */
static int check_result(struct client *c, struct qp_res *r, const struct op *o,
			unsigned int i)
{
	uint64_t at = o->remote_off - WIN_READ_OFF, old;
	unsigned int k;
	ptrdiff_t d;

	if (o->opcode == IBV_WR_RDMA_READ) {
		for (k = 0; k < o->nsrc; at += o->src[k].len, k++) {
			d = pattern_diff(src_at(r, o->src[k].off), o->src[k].len,
					 read_src_key(r->tx.gen.key), at);
			CHECK(d < 0, "QP %u batch %u op %u: RDMA_READ of %u bytes: byte %llu differs",
			      r->idx, r->tx.b.no, i, o->len,
			      (unsigned long long)(at + (uint64_t)d - (o->remote_off - WIN_READ_OFF)));
		}
	} else if (op_is_atomic(o->opcode)) {
		memcpy(&old, src_at(r, o->src[0].off), sizeof(old));
		CHECK(old == o->old, "QP %u batch %u op %u: %s returned %#llx, expected %#llx",
		      r->idx, r->tx.b.no, i, op_name(o->opcode),
		      (unsigned long long)old, (unsigned long long)o->old);
	} else {
		return 0; /* the responder checks SENDs and WRITEs */
	}
	c->rep->ops[o->opcode]++;
	c->rep->bytes += o->len;
	return 0;
}

/*
 * After the whole batch: sources as filled (the device only reads them),
 * results where they belong, and the canary everywhere else.
 */
static int check_src_arena(struct qp_res *r)
{
	const struct batch *b = &r->tx.b;
	uint32_t cursor = 0;
	unsigned int i, k;
	ptrdiff_t d;

	for (i = 0; i < b->n; i++) {
		const struct op *o = &b->op[i];
		bool source = (op_is_send(o->opcode) || op_is_write(o->opcode)) &&
			      !o->inline_data;
		uint64_t at = 0;

		for (k = 0; k < o->nsrc; at += o->src[k].len, k++) {
			const struct piece *p = &o->src[k];

			if (o->inline_data)
				continue; /* back to canary: part of the gap */
			d = canary_diff(src_at(r, cursor), p->off - cursor, b->canary);
			CHECK(d < 0, "QP %u batch %u: local byte %llu before op %u was overwritten",
			      r->idx, b->no, (unsigned long long)(cursor + d), i);
			if (source) {
				d = pattern_diff(src_at(r, p->off), p->len,
						 payload_key(r->tx.gen.key, b->no, i), at);
				CHECK(d < 0, "QP %u batch %u op %u: the source of a %s changed at byte %td",
				      r->idx, b->no, i, op_name(o->opcode), d);
			}
			cursor = p->off + p->len;
		}
	}
	d = canary_diff(src_at(r, cursor), b->src_end - cursor, b->canary);
	CHECK(d < 0, "QP %u batch %u: local byte %llu after the last op was overwritten",
	      r->idx, b->no, (unsigned long long)(cursor + d));
	return 0;
}

int tx_completion(struct client *c, const struct ibv_wc *wc)
{
	unsigned int q = WR_QP(wc->wr_id), i, j;
	struct qp_res *r;
	const struct op *o;

	CHECK(q < c->nqps, "send completion with wr_id %#llx", (unsigned long long)wc->wr_id);
	r = &c->q[q];
	CHECK(wc->qp_num == r->qp->qp_num, "send completion of QP %u carries qp_num %#x, not %#x",
	      q, wc->qp_num, r->qp->qp_num);
	c->rep->completions++;
	if (wc->status != IBV_WC_SUCCESS || WR_OP(wc->wr_id) == OP_PROBE)
		return tx_error(c, r, wc);
	i = WR_OP(wc->wr_id);
	CHECK(r->tx.active && WR_BATCH(wc->wr_id) == r->tx.b.no && i < r->tx.posted &&
	      i >= r->tx.next && !r->tx.errored,
	      "QP %u: unexpected successful send completion of batch %u op %u (batch %u, next op %u of %u posted)",
	      q, WR_BATCH(wc->wr_id), i, r->tx.b.no, r->tx.next, r->tx.posted);
	for (j = r->tx.next; j < i; j++)
		CHECK(!r->tx.b.op[j].signaled,
		      "QP %u batch %u: signaled op %u got no completion before op %u", q,
		      r->tx.b.no, j, i);
	o = &r->tx.b.op[i];
	CHECK(wc->opcode == op_wc_opcode(o->opcode) && wc->byte_len == o->len,
	      "QP %u batch %u op %u (%s, %u bytes): completion opcode %d byte_len %u",
	      q, r->tx.b.no, i, op_name(o->opcode), o->len, wc->opcode, wc->byte_len);
	TRY(check_result(c, r, o, i));
	r->tx.next = i + 1;
	if (r->tx.next == r->tx.b.n)
		TRY(check_src_arena(r));
	return 0;
}
