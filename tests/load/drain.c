// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * When the peer of a victim pair is killed, the survivor must see what a
 * dead remote port produces and nothing else: on each QP, the oldest send
 * WR not yet acknowledged fails with IBV_WC_RETRY_EXC_ERR (earlier ones
 * succeeded, silently if unsignaled), every later send WR and every posted
 * receive completes with IBV_WC_WR_FLUSH_ERR, in order, and the QP ends in
 * ERR.  A QP with no send outstanding learns it from a probe READ.  A few
 * receives posted after the death must be flushed too.  In a stable pair
 * any of this is a failure.
 */
#include <string.h>

#include "client.h"

const char *status_name(enum ibv_wc_status s)
{
	return ibv_wc_status_str(s);
}

int peer_died(struct client *c, const char *how)
{
	if (!c->p->victim_pair)
		return client_fail("the peer vanished (%s) in phase %u", how,
				   c->rep->phase);
	if (!c->peer_dead) {
		c->peer_dead = true;
		c->rep->peer_died = c->rep->phase;
	}
	return 0;
}

int tx_error(struct client *c, struct qp_res *r, const struct ibv_wc *wc)
{
	struct tx_lane *t = &r->tx;
	unsigned int i = WR_OP(wc->wr_id), j;
	bool probe = i == OP_PROBE;

	CHECK(c->p->victim_pair, "QP %u: send wr_id %#llx (batch %u op %u) completed with %s",
	      r->idx, (unsigned long long)wc->wr_id, WR_BATCH(wc->wr_id), i,
	      status_name(wc->status));
	if (probe)
		CHECK(t->probe_posted && !t->probe_done && t->next == t->posted,
		      "QP %u: the probe completed before op %u of %u", r->idx, t->next,
		      t->posted);
	else
		CHECK(t->active && WR_BATCH(wc->wr_id) == t->b.no && i < t->posted &&
			      i >= t->next,
		      "QP %u: error completion of batch %u op %u, expected batch %u op %u..%u",
		      r->idx, WR_BATCH(wc->wr_id), i, t->b.no, t->next, t->posted);
	if (!t->errored) {
		CHECK(wc->status == IBV_WC_RETRY_EXC_ERR,
		      "QP %u: %s %u completed with %s, expected %s from a dead peer",
		      r->idx, probe ? "the probe" : "op", i, status_name(wc->status),
		      status_name(IBV_WC_RETRY_EXC_ERR));
		for (j = t->next; !probe && j < i; j++)
			CHECK(!t->b.op[j].signaled,
			      "QP %u: signaled op %u got no completion before the error of op %u",
			      r->idx, j, i);
		t->errored = true;
		c->rep->retry_exc++;
		TRY(peer_died(c, "retry exceeded"));
	} else {
		CHECK(wc->status == IBV_WC_WR_FLUSH_ERR && (probe || i == t->next),
		      "QP %u: after the error, %s %u completed with %s (next op %u)", r->idx,
		      probe ? "the probe" : "op", i, status_name(wc->status), t->next);
		c->rep->flushed++;
	}
	if (probe)
		t->probe_done = true;
	else
		t->next = i + 1;
	return 0;
}

int rx_error(struct client *c, struct qp_res *r, const struct ibv_wc *wc)
{
	struct rx_lane *x = &r->rx;
	unsigned int i = WR_OP(wc->wr_id);

	CHECK(c->p->victim_pair && wc->status == IBV_WC_WR_FLUSH_ERR,
	      "QP %u: receive wr_id %#llx (batch %u op %u) completed with %s", r->idx,
	      (unsigned long long)wc->wr_id, WR_BATCH(wc->wr_id), i,
	      status_name(wc->status));
	if (i == OP_EXTRA) {
		CHECK(x->extras_out && (!x->posted || x->next == x->b.n),
		      "QP %u: a late receive flushed before op %u of batch %u", r->idx,
		      x->next, x->b.no);
		x->extras_out--;
	} else {
		CHECK(x->posted && WR_BATCH(wc->wr_id) == x->b.no && i == x->next,
		      "QP %u: receive of batch %u op %u flushed, expected batch %u op %u",
		      r->idx, WR_BATCH(wc->wr_id), i, x->b.no, x->next);
		x->next = batch_next_consumer(&x->b, i + 1);
	}
	x->recvs_out--;
	x->errored = true;
	c->rep->flushed++;
	return peer_died(c, "receive flushed");
}

/*
 * An RDMA READ: it needs the peer's memory, which is gone once we know of
 * the death (a process loses its memory before its descriptors).  A SEND
 * could meet the dead peer's QP before ringnicd has seen the hang-up, with
 * its receive queue empty, and fail with an RNR error instead.
 */
static int post_probe(struct qp_res *r)
{
	struct ibv_sge sge = { (uintptr_t)(r->local + LOCAL_SRC_OFF + ARENA_BYTES - 64),
			       8, r->lmr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = WR_ID(r->idx, 0, OP_PROBE),
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_READ,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { r->peer_win + WIN_READ_OFF, r->peer_rkey },
	}, *bad = NULL;
	int ret = ibv_post_send(r->qp, &wr, &bad);

	CHECK(!ret, "QP %u: posting the probe: %s", r->idx, strerror(ret));
	r->tx.probe_posted = true;
	return 0;
}

static int post_extra_recvs(struct qp_res *r)
{
	struct ibv_sge sge = { (uintptr_t)(r->local + LOCAL_RECV_OFF + ARENA_BYTES - 128),
			       64, r->lmr->lkey };
	struct ibv_recv_wr wr = {
		.wr_id = WR_ID(r->idx, 0, OP_EXTRA),
		.sg_list = &sge,
		.num_sge = 1,
	}, *bad = NULL;
	unsigned int k;
	int ret;

	for (k = 0; k < DRAIN_EXTRA_RECVS; k++) {
		ret = ibv_post_recv(r->qp, &wr, &bad);
		CHECK(!ret, "QP %u: a receive after the peer died: %s", r->idx,
		      strerror(ret));
		r->rx.extras_out++;
		r->rx.recvs_out++;
	}
	r->rx.extras_posted = true;
	return 0;
}

/* Provoke and collect the errors; drained when every QP has all of them. */
int drain_step(struct client *c, bool *drained)
{
	bool all = true;
	unsigned int i;

	for (i = 0; i < c->nqps; i++) {
		struct qp_res *r = &c->q[i];
		struct tx_lane *t = &r->tx;

		if (!t->errored && !t->probe_posted && t->next == t->posted)
			TRY(post_probe(r));
		if (!r->rx.extras_posted)
			TRY(post_extra_recvs(r));
		all &= t->errored && t->next == t->posted &&
		       t->probe_posted == t->probe_done && !r->rx.recvs_out;
	}
	*drained = all;
	return 0;
}
