// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The lanes of a client's QPs: tx (this client is the requester) and rx
 * (it is the responder).  A lane runs one batch at a time: the requester
 * starts the next batch once it has both the responder's ACK and its own
 * completions, so no buffer is reused while the device may still touch
 * it; after the deadline it sends FIN with the number of batches run.
 */
#include "client.h"

int on_lane_msg(struct client *c, const struct msg_lane *m)
{
	struct qp_res *r;

	CHECK(m->qp < c->nqps, "message for QP %u", m->qp);
	r = &c->q[m->qp];
	if (m->type == WIRE_ACK) {
		CHECK(r->tx.active && !r->tx.acked && m->batch == r->tx.b.no,
		      "QP %u: ACK of batch %u while batch %u is %s", m->qp, m->batch,
		      r->tx.b.no, r->tx.active ? "running" : "not started");
		r->tx.acked = true;
		return 0;
	}
	/* FIN: the requester ran m->batch batches, all of which we verified. */
	CHECK(!r->rx.fin && m->batch == r->rx.b.no &&
	      r->rx.next == batch_next_consumer(&r->rx.b, 0),
	      "QP %u: FIN after %u batches, but batch %u is next (op %u)", m->qp,
	      m->batch, r->rx.b.no, r->rx.next);
	r->rx.fin = true;
	return 0;
}

int poll_cqs(struct client *c, int *got)
{
	struct ibv_wc wc[32];
	int n, i;

	n = ibv_poll_cq(c->scq, 32, wc);
	CHECK(n >= 0, "ibv_poll_cq (send): %d", n);
	for (i = 0; i < n; i++)
		TRY(tx_completion(c, &wc[i]));
	*got += n;
	n = ibv_poll_cq(c->rcq, 32, wc);
	CHECK(n >= 0, "ibv_poll_cq (receive): %d", n);
	for (i = 0; i < n; i++)
		TRY(rx_completion(c, &wc[i]));
	*got += n;
	return 0;
}

bool lanes_done(const struct client *c)
{
	unsigned int i;

	for (i = 0; i < c->nqps; i++)
		if (!c->q[i].tx.finished || !c->q[i].rx.fin)
			return false;
	return true;
}

/* Start what may start; done once every lane has finished both ways. */
int lanes_step(struct client *c, bool *done)
{
	unsigned int i;

	for (i = 0; i < c->nqps; i++) {
		struct qp_res *r = &c->q[i];
		struct tx_lane *t = &r->tx;

		if (t->active && t->acked && t->next == t->b.n) {
			t->active = false;
			t->batches++;
		}
		if (!t->active && !t->finished) {
			if (now_ns() < c->p->deadline_ns) {
				TRY(tx_start(c, r));
			} else {
				struct msg_lane fin = { .type = WIRE_FIN, .qp = i,
							.batch = t->batches };

				TRY(send_msg(c, &fin, sizeof(fin)));
				t->finished = true;
			}
		}
	}
	*done = lanes_done(c);
	return 0;
}
