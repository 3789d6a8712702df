// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The responder's side of a lane: post a batch's receives over
 * canary-filled targets, check each receive completion and its data, and
 * at the batch's last op (which consumes a receive, so everything before
 * it has landed) every WRITE, the canary between all targets and the
 * atomic word; then post the next batch's receives and ACK.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "client.h"

static uint8_t *recv_at(struct qp_res *r, uint32_t off)
{
	return r->local + LOCAL_RECV_OFF + off;
}

/* The receives of the lane's next batch, over canary-filled targets. */
int rx_post_batch(struct qp_res *r)
{
	struct ibv_recv_wr wr[BATCH_MAX_OPS], *bad = NULL;
	struct ibv_sge sge[BATCH_MAX_OPS][OP_MAX_SGE];
	struct rx_lane *x = &r->rx;
	struct batch *b = &x->b;
	unsigned int i, k, n = 0;
	int ret;

	lane_gen_next(&x->gen, b);
	memset(recv_at(r, 0), b->canary, b->recv_end);
	memset(r->win + WIN_WRITE_OFF, b->canary, b->write_end);
	for (i = 0; i < b->n; i++) {
		const struct op *o = &b->op[i];

		if (!op_consumes_recv(o->opcode))
			continue;
		for (k = 0; k < o->nrecv; k++)
			sge[n][k] = (struct ibv_sge){ (uintptr_t)recv_at(r, o->recv[k].off),
						      o->recv[k].len, r->lmr->lkey };
		wr[n] = (struct ibv_recv_wr){
			.wr_id = WR_ID(r->idx, b->no, i),
			.next = NULL,
			.sg_list = sge[n],
			.num_sge = (int)o->nrecv,
		};
		if (n)
			wr[n - 1].next = &wr[n];
		n++;
	}
	ret = ibv_post_recv(r->qp, wr, &bad);
	CHECK(!ret, "QP %u: ibv_post_recv of batch %u: %s", r->idx, b->no, strerror(ret));
	x->recvs_out += n;
	x->next = batch_next_consumer(b, 0);
	x->posted = true;
	return 0;
}

static int check_write(struct qp_res *r, const struct op *o, unsigned int i)
{
	ptrdiff_t d = pattern_diff(r->win + o->remote_off, o->len,
				   payload_key(r->rx.gen.key, r->rx.b.no, i), 0);

	CHECK(d < 0, "QP %u batch %u op %u: %s of %u bytes: byte %td differs", r->idx,
	      r->rx.b.no, i, op_name(o->opcode), o->len, d);
	return 0;
}

/* A SEND's bytes across the receive's pieces; the room beyond stays canary. */
static int check_received(struct qp_res *r, const struct op *o, unsigned int i)
{
	uint64_t at = 0;
	unsigned int k;
	ptrdiff_t d;

	for (k = 0; k < o->nrecv; k++) {
		const struct piece *p = &o->recv[k];
		uint32_t data = o->len - at < p->len ? (uint32_t)(o->len - at) : p->len;

		d = pattern_diff(recv_at(r, p->off), data,
				 payload_key(r->rx.gen.key, r->rx.b.no, i), at);
		CHECK(d < 0, "QP %u batch %u op %u: %s of %u bytes: byte %llu differs",
		      r->idx, r->rx.b.no, i, op_name(o->opcode), o->len,
		      (unsigned long long)(at + d));
		d = canary_diff(recv_at(r, p->off + data), p->len - data, r->rx.b.canary);
		CHECK(d < 0, "QP %u batch %u op %u: receive byte %llu past the message was written",
		      r->idx, r->rx.b.no, i, (unsigned long long)(at + data + d));
		at += data;
	}
	return 0;
}

/* Canary between the pieces of an arena (pieces checked by their owner). */
static int check_gaps(struct qp_res *r, const uint8_t *base, uint32_t end,
		      bool recv_arena)
{
	const struct batch *b = &r->rx.b;
	uint32_t cursor = 0;
	unsigned int i, k;
	ptrdiff_t d;

	for (i = 0; i < b->n; i++) {
		const struct op *o = &b->op[i];
		struct piece w = { (uint32_t)(o->remote_off - WIN_WRITE_OFF), o->len };
		const struct piece *p = recv_arena ? o->recv : &w;
		unsigned int n = recv_arena ? o->nrecv : op_is_write(o->opcode) && o->len;

		for (k = 0; k < n; k++) {
			/* A WRITE_WITH_IMM's receive gets no data: it is gap. */
			if (recv_arena && !op_is_send(o->opcode))
				continue;
			d = canary_diff(base + cursor, p[k].off - cursor, b->canary);
			CHECK(d < 0, "QP %u batch %u: %s byte %llu before op %u was written",
			      r->idx, b->no, recv_arena ? "receive" : "window",
			      (unsigned long long)(cursor + d), i);
			cursor = p[k].off + p[k].len;
		}
	}
	d = canary_diff(base + cursor, end - cursor, b->canary);
	CHECK(d < 0, "QP %u batch %u: %s byte %llu after the last op was written", r->idx,
	      b->no, recv_arena ? "receive" : "window", (unsigned long long)(cursor + d));
	return 0;
}

/* Register and deregister a scratch MR, or make and destroy a QP, now and then. */
static int churn(struct client *c)
{
	uint32_t x = rng_below(&c->rng, 128);

	if (x < 8) {
		struct ibv_mr *mr = ibv_reg_mr(c->pd, c->scratch + x * 512,
					       (64 << 10) - x * 512,
					       IBV_ACCESS_LOCAL_WRITE |
						       IBV_ACCESS_REMOTE_WRITE);
		int ret;

		CHECK(mr, "scratch ibv_reg_mr: %s", strerror(errno));
		c->rep->mrs++;
		ret = ibv_dereg_mr(mr);
		CHECK(!ret, "scratch ibv_dereg_mr: %s", strerror(ret));
		c->rep->mr_churn++;
	} else if (x == 8) {
		struct ibv_qp_init_attr a = {
			.send_cq = c->scq,
			.recv_cq = c->rcq,
			.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
				 .max_recv_sge = 1 },
			.qp_type = IBV_QPT_RC,
		};
		struct ibv_qp *qp = ibv_create_qp(c->pd, &a);
		int ret;

		CHECK(qp, "scratch ibv_create_qp: %s", strerror(errno));
		c->rep->qps++;
		ret = ibv_destroy_qp(qp);
		CHECK(!ret, "scratch ibv_destroy_qp: %s", strerror(ret));
		c->rep->qp_churn++;
	}
	return 0;
}

static int rx_batch_end(struct client *c, struct qp_res *r)
{
	struct msg_lane ack = { .type = WIRE_ACK, .qp = r->idx, .batch = r->rx.b.no };
	const struct batch *b = &r->rx.b;
	uint64_t counter;
	unsigned int i;

	for (i = 0; i < b->n; i++) {
		const struct op *o = &b->op[i];

		if (o->opcode == IBV_WR_RDMA_WRITE) {
			TRY(check_write(r, o, i));
			c->rep->ops[o->opcode]++;
			c->rep->bytes += o->len;
		}
	}
	TRY(check_gaps(r, r->win + WIN_WRITE_OFF, b->write_end, false));
	TRY(check_gaps(r, recv_at(r, 0), b->recv_end, true));
	memcpy(&counter, r->win + WIN_COUNTER_OFF, sizeof(counter));
	CHECK(counter == b->counter, "QP %u batch %u: the atomic word is %#llx, expected %#llx",
	      r->idx, b->no, (unsigned long long)counter, (unsigned long long)b->counter);
	c->rep->batches++;
	r->rx.posted = false;
	if (c->peer_dead)
		return 0;
	TRY(churn(c));
	TRY(rx_post_batch(r));
	return send_msg(c, &ack, sizeof(ack));
}

int rx_completion(struct client *c, const struct ibv_wc *wc)
{
	unsigned int q = WR_QP(wc->wr_id), i;
	struct qp_res *r;
	const struct op *o;
	bool imm;

	CHECK(q < c->nqps, "receive completion with wr_id %#llx",
	      (unsigned long long)wc->wr_id);
	r = &c->q[q];
	CHECK(wc->qp_num == r->qp->qp_num,
	      "receive completion of QP %u carries qp_num %#x, not %#x", q, wc->qp_num,
	      r->qp->qp_num);
	c->rep->completions++;
	if (wc->status != IBV_WC_SUCCESS)
		return rx_error(c, r, wc);
	i = WR_OP(wc->wr_id);
	CHECK(r->rx.posted && !r->rx.errored && WR_BATCH(wc->wr_id) == r->rx.b.no &&
	      i == r->rx.next,
	      "QP %u: receive completion of batch %u op %u, expected batch %u op %u",
	      q, WR_BATCH(wc->wr_id), i, r->rx.b.no, r->rx.next);
	o = &r->rx.b.op[i];
	imm = o->opcode != IBV_WR_SEND;
	CHECK(wc->opcode == (o->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ?
				     IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV) &&
		      wc->byte_len == o->len && !!(wc->wc_flags & IBV_WC_WITH_IMM) == imm &&
		      (!imm || be32toh(wc->imm_data) == o->imm) && wc->src_qp == r->peer_qpn,
	      "QP %u batch %u op %u (%s, %u bytes, imm %#x): receive completion opcode %d byte_len %u flags %#x imm %#x src_qp %#x",
	      q, r->rx.b.no, i, op_name(o->opcode), o->len, o->imm, wc->opcode,
	      wc->byte_len, wc->wc_flags, be32toh(wc->imm_data), wc->src_qp);
	if (op_is_send(o->opcode))
		TRY(check_received(r, o, i));
	else
		TRY(check_write(r, o, i));
	c->rep->ops[o->opcode]++;
	c->rep->bytes += o->len;
	r->rx.recvs_out--;
	r->rx.next = batch_next_consumer(&r->rx.b, i + 1);
	if (i == r->rx.b.n - 1)
		return rx_batch_end(c, r);
	return 0;
}
