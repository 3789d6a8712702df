// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The engine (engine/engine.c), the send queue's fetch (engine/sq.c and
 * wqe.c) and the receive queue (engine/rq.c), driven through a whole
 * device in this process (device_fixture.h): WQEs are posted into the
 * shared rings, the doorbell is rung through the device page, and
 * rn_engine_pass does what ringnicd's loop does.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "device_fixture.h"

/* engine.c: WQEs one QP may execute before the next QP's turn. */
#define QP_BUDGET 16

#define ALL_ACCESS                                                             \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                     \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

struct env {
	struct fx *fx;
	struct fx_cq cq; /* every queue of a and b completes here */
	struct fx_qp a, b; /* connected to each other, local path */
	struct fx_mr src, dst;
};

static int setup(void **state)
{
	static const struct rn_qp_cap cap = { 64, 64, 4, 4, 64, 0 };
	struct env *e = calloc(1, sizeof(*e));
	unsigned int i;

	assert_non_null(e);
	e->fx = fx_new();
	fx_cq_new(e->fx, 256, &e->cq);
	fx_qp_new(e->fx, &e->cq, &e->cq, &cap, &e->a);
	fx_qp_new(e->fx, &e->cq, &e->cq, &cap, &e->b);
	fx_qp_pair(&e->a, &e->b);
	fx_mr_new(e->fx, 16384, ALL_ACCESS, 0, &e->src);
	fx_mr_new(e->fx, 16384, ALL_ACCESS, 0, &e->dst);
	for (i = 0; i < e->src.len; i++)
		e->src.buf[i] = (uint8_t)(i * 7 + i / 256);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	fx_free(e->fx);
	free(e);
	return 0;
}

static void post_write(struct fx_qp *qp, uint64_t wr_id, const struct fx_mr *src,
		       uint64_t soff, const struct fx_mr *dst, uint64_t doff,
		       uint32_t len)
{
	struct rn_sge sge = fx_sge(src, soff, len);

	fx_post_send(qp, &(struct rn_send_wqe){
		.wr_id = wr_id,
		.opcode = RN_OP_WRITE,
		.flags = RN_WQE_SIGNALED,
		.num_sge = 1,
		.remote_addr = (uintptr_t)dst->buf + doff,
		.rkey = dst->rkey,
	}, &sge);
}

static void post_read(struct fx_qp *qp, uint64_t wr_id, const struct fx_mr *local,
		      uint64_t loff, const struct fx_mr *remote, uint64_t roff,
		      uint32_t len)
{
	struct rn_sge sge = fx_sge(local, loff, len);

	fx_post_send(qp, &(struct rn_send_wqe){
		.wr_id = wr_id,
		.opcode = RN_OP_READ,
		.flags = RN_WQE_SIGNALED,
		.num_sge = 1,
		.remote_addr = (uintptr_t)remote->buf + roff,
		.rkey = remote->rkey,
	}, &sge);
}

/* Poll exactly n CQEs (no more), into out if given. */
static void poll_n(struct fx_cq *cq, struct rn_cqe *out, unsigned int n)
{
	struct rn_cqe c;
	unsigned int i;

	for (i = 0; i < n; i++) {
		assert_true(fx_poll(cq, &c));
		if (out)
			out[i] = c;
	}
	assert_false(fx_poll(cq, &c));
}

/* ---- scheduling and budgets ---------------------------------------------------- */

/*
 * 40 WRITEs (a run the batch path moves together) rung at once: one pass
 * executes QP_BUDGET of them, the QP stays scheduled until its queue is
 * empty, and the data lands byte for byte.
 */
static void test_budget_takes_passes(void **state)
{
	struct env *e = *state;
	struct rn_cqe c[QP_BUDGET];
	unsigned int i, pass;

	for (i = 0; i < 40; i++)
		post_write(&e->a, i, &e->src, i * 100, &e->dst, i * 100, 100);
	fx_ring(&e->a);
	for (pass = 1; pass <= 3; pass++) {
		unsigned int want = pass < 3 ? QP_BUDGET : 40 - 2 * QP_BUDGET;

		assert_true(fx_pass(e->fx));
		poll_n(&e->cq, c, want);
		for (i = 0; i < want; i++) {
			assert_int_equal(c[i].status, IBV_WC_SUCCESS);
			assert_int_equal(c[i].opcode, IBV_WC_RDMA_WRITE);
			assert_int_equal(c[i].wr_id, (pass - 1) * QP_BUDGET + i);
			assert_int_equal(c[i].byte_len, 100);
			assert_int_equal(c[i].qp_num, e->a.qpn);
		}
		assert_int_equal(e->a.ctrl->sq_wr_cons,
				 pass < 3 ? pass * QP_BUDGET : 40);
		/* Scheduled while it has work, off the list once it has none. */
		assert_int_equal(e->a.dq->active, pass < 3);
	}
	assert_int_equal(e->a.ctrl->sq_cons, e->a.sq_prod);
	assert_int_equal(e->a.ctrl->wqes, 40);
	assert_int_equal(e->a.ctrl->doorbells, 1);
	assert_memory_equal(e->dst.buf, e->src.buf, 4000);
	assert_int_equal(e->dst.buf[4000], 0);
	/* Nothing left: a pass makes no progress. */
	assert_false(fx_pass(e->fx));
	poll_n(&e->cq, NULL, 0);
}

/* READs go one at a time (no batch): the same budget holds. */
static void test_budget_unbatched(void **state)
{
	struct env *e = *state;
	struct rn_cqe c[QP_BUDGET];
	unsigned int i;

	for (i = 0; i < 20; i++)
		post_read(&e->a, 100 + i, &e->dst, i * 64, &e->src, i * 64, 64);
	fx_ring(&e->a);
	assert_true(fx_pass(e->fx));
	poll_n(&e->cq, c, QP_BUDGET);
	assert_int_equal(c[0].opcode, IBV_WC_RDMA_READ);
	assert_int_equal(c[15].wr_id, 115);
	assert_true(e->a.dq->active);
	assert_true(fx_pass(e->fx));
	poll_n(&e->cq, c, 4);
	assert_int_equal(c[3].wr_id, 119);
	assert_false(e->a.dq->active);
	assert_memory_equal(e->dst.buf, e->src.buf, 20 * 64);
}

/* Two QPs with more work than a turn each: their turns alternate. */
static void test_two_qps_take_turns(void **state)
{
	struct env *e = *state;
	static const struct rn_qp_cap cap = { 64, 64, 4, 4, 64, 0 };
	struct rn_cqe c[2 * QP_BUDGET];
	struct fx_qp qc, qd;
	unsigned int i;

	fx_qp_new(e->fx, &e->cq, &e->cq, &cap, &qc);
	fx_qp_new(e->fx, &e->cq, &e->cq, &cap, &qd);
	fx_qp_pair(&qc, &qd);
	for (i = 0; i < 20; i++) {
		post_write(&e->a, i, &e->src, i * 64, &e->dst, i * 64, 64);
		post_write(&qc, 1000 + i, &e->src, i * 64, &e->dst, 8192 + i * 64,
			   64);
	}
	fx_ring(&e->a);
	fx_ring(&qc);

	assert_true(fx_pass(e->fx));
	poll_n(&e->cq, c, 2 * QP_BUDGET);
	for (i = 0; i < QP_BUDGET; i++) {
		assert_int_equal(c[i].qp_num, e->a.qpn);
		assert_int_equal(c[i].wr_id, i);
		assert_int_equal(c[QP_BUDGET + i].qp_num, qc.qpn);
		assert_int_equal(c[QP_BUDGET + i].wr_id, 1000 + i);
	}
	assert_true(e->a.dq->active && qc.dq->active);

	assert_true(fx_pass(e->fx));
	poll_n(&e->cq, c, 8);
	for (i = 0; i < 4; i++) {
		assert_int_equal(c[i].qp_num, e->a.qpn);
		assert_int_equal(c[i].wr_id, QP_BUDGET + i);
		assert_int_equal(c[4 + i].qp_num, qc.qpn);
		assert_int_equal(c[4 + i].wr_id, 1000 + QP_BUDGET + i);
	}
	assert_false(e->a.dq->active || qc.dq->active);
	assert_memory_equal(e->dst.buf, e->src.buf, 20 * 64);
	assert_memory_equal(e->dst.buf + 8192, e->src.buf, 20 * 64);
}

/* ---- doorbell records ------------------------------------------------------------ */

/* A record behind the head is counted as stale and changes nothing. */
static void test_stale_doorbell(void **state)
{
	struct env *e = *state;

	post_write(&e->a, 1, &e->src, 0, &e->dst, 0, 8);
	post_write(&e->a, 2, &e->src, 8, &e->dst, 8, 8);
	fx_ring(&e->a);
	assert_true(fx_pass(e->fx));
	poll_n(&e->cq, NULL, 2);
	assert_int_equal(e->a.ctrl->stale, 0);

	/* The record of the first WQE alone, rung late, and the first ever. */
	fx_ring_record(&e->a, RN_DB_RECORD(e->a.handle, e->a.sq_prod - 1));
	fx_pass(e->fx);
	fx_ring_record(&e->a, RN_DB_RECORD(e->a.handle, 0));
	fx_pass(e->fx);
	assert_int_equal(e->a.ctrl->stale, 2);
	assert_int_equal(e->a.ctrl->doorbells, 3);
	assert_int_equal(e->a.ctrl->sq_cons, e->a.sq_prod);
	assert_int_equal(fx_qp_state(&e->a), IBV_QPS_RTS);
	assert_false(e->a.dq->active);
	poll_n(&e->cq, NULL, 0);
	fx_assert_no_event(e->fx);

	/* The QP still works. */
	post_write(&e->a, 3, &e->src, 16, &e->dst, 16, 8);
	fx_ring(&e->a);
	fx_pass(e->fx);
	poll_n(&e->cq, NULL, 1);
	assert_memory_equal(e->dst.buf, e->src.buf, 24);
}

/*
 * A record naming another QP's index is bad: the QP is fatal (async event,
 * ERR), and what the bad record named is not executed.  In ERR a valid
 * record flushes the queue.
 */
static void test_bad_doorbell_index(void **state)
{
	struct env *e = *state;
	struct rn_cqe c[2];

	post_write(&e->a, 1, &e->src, 0, &e->dst, 0, 8);
	post_write(&e->a, 2, &e->src, 8, &e->dst, 8, 8);
	fx_ring_record(&e->a, RN_DB_RECORD(e->b.handle, e->a.sq_prod));
	fx_pass(e->fx);
	assert_int_equal(fx_qp_state(&e->a), IBV_QPS_ERR);
	fx_assert_event(e->fx, IBV_EVENT_QP_FATAL, &e->a);
	fx_assert_no_event(e->fx);
	poll_n(&e->cq, NULL, 0);
	assert_int_equal(e->dst.buf[0], 0);
	/* The peer is not concerned. */
	assert_int_equal(fx_qp_state(&e->b), IBV_QPS_RTS);

	fx_ring(&e->a);
	fx_pass(e->fx);
	poll_n(&e->cq, c, 2);
	assert_int_equal(c[0].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(c[0].wr_id, 1);
	assert_int_equal(c[1].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(c[1].wr_id, 2);
	assert_int_equal(e->dst.buf[0], 0);
}

/* A record further ahead than the ring holds is bad too. */
static void test_bad_doorbell_beyond_ring(void **state)
{
	struct env *e = *state;

	post_write(&e->a, 1, &e->src, 0, &e->dst, 0, 8);
	fx_ring_record(&e->a, RN_DB_RECORD(e->a.handle, e->a.sq_slots + 1));
	fx_pass(e->fx);
	assert_int_equal(fx_qp_state(&e->a), IBV_QPS_ERR);
	fx_assert_event(e->fx, IBV_EVENT_QP_FATAL, &e->a);
	assert_int_equal(e->a.ctrl->stale, 0);
	poll_n(&e->cq, NULL, 0);
}

/* A QP not yet in RTS does not read its doorbell at all. */
static void test_doorbell_before_rts(void **state)
{
	struct env *e = *state;
	struct fx_qp q;

	fx_qp_new(e->fx, &e->cq, &e->cq, NULL, &q);
	post_write(&q, 1, &e->src, 0, &e->dst, 0, 8);
	fx_ring(&q);
	assert_true(fx_pass(e->fx)); /* the doorbell bits were taken */
	assert_int_equal(q.ctrl->doorbells, 0);
	assert_int_equal(q.dq->sq_prod, 0);
	assert_int_equal(fx_qp_state(&q), IBV_QPS_RESET);
	poll_n(&e->cq, NULL, 0);
}

/* ---- fetching and validating send WQEs ------------------------------------------- */

/*
 * A malformed WQE (an opcode that does not exist) cannot be parsed, so
 * it gets no completion: the QP is fatal.  What came before it executes.
 */
static void test_malformed_opcode(void **state)
{
	struct env *e = *state;
	struct rn_cqe c;

	post_write(&e->a, 1, &e->src, 0, &e->dst, 0, 8);
	fx_post_send(&e->a, &(struct rn_send_wqe){ .wr_id = 2,
		.opcode = RN_OP_MAX + 1, .flags = RN_WQE_SIGNALED }, NULL);
	post_write(&e->a, 3, &e->src, 8, &e->dst, 8, 8);
	fx_ring(&e->a);
	fx_pass(e->fx);
	poll_n(&e->cq, &c, 1);
	assert_int_equal(c.wr_id, 1);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
	assert_int_equal(fx_qp_state(&e->a), IBV_QPS_ERR);
	fx_assert_event(e->fx, IBV_EVENT_QP_FATAL, &e->a);
	assert_int_equal(e->a.ctrl->sq_wr_cons, 1);
	assert_memory_equal(e->dst.buf, e->src.buf, 8);
	assert_int_equal(e->dst.buf[8], 0);
	assert_int_equal(fx_qp_state(&e->b), IBV_QPS_RTS);
}

/* More SGEs than the QP's max_send_sge: malformed as well. */
static void test_too_many_sges(void **state)
{
	struct env *e = *state;
	struct rn_sge sge[RN_MAX_SGE];
	unsigned int i, n = e->a.cap.max_send_sge + 1;

	for (i = 0; i < n; i++)
		sge[i] = fx_sge(&e->src, i * 8, 8);
	fx_post_send(&e->a, &(struct rn_send_wqe){ .wr_id = 1,
		.opcode = RN_OP_WRITE, .flags = RN_WQE_SIGNALED, .num_sge = n,
		.remote_addr = (uintptr_t)e->dst.buf, .rkey = e->dst.rkey }, sge);
	fx_ring(&e->a);
	fx_pass(e->fx);
	poll_n(&e->cq, NULL, 0);
	assert_int_equal(fx_qp_state(&e->a), IBV_QPS_ERR);
	fx_assert_event(e->fx, IBV_EVENT_QP_FATAL, &e->a);
	assert_int_equal(e->dst.buf[0], 0);
}

/* The largest number of SGEs the QP allows is fine (the boundary). */
static void test_max_sges(void **state)
{
	struct env *e = *state;
	struct rn_sge sge[RN_MAX_SGE];
	unsigned int i, n = e->a.cap.max_send_sge;
	struct rn_cqe c;

	for (i = 0; i < n; i++)
		sge[i] = fx_sge(&e->src, i * 100, 10);
	fx_post_send(&e->a, &(struct rn_send_wqe){ .wr_id = 1,
		.opcode = RN_OP_WRITE, .flags = RN_WQE_SIGNALED, .num_sge = n,
		.remote_addr = (uintptr_t)e->dst.buf, .rkey = e->dst.rkey }, sge);
	fx_ring(&e->a);
	fx_pass(e->fx);
	poll_n(&e->cq, &c, 1);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
	assert_int_equal(c.byte_len, n * 10);
	for (i = 0; i < n; i++)
		assert_memory_equal(e->dst.buf + i * 10, e->src.buf + i * 100, 10);
}

/*
 * A bad lkey is a well-formed WQE that fails: LOC_PROT_ERR, the RC QP
 * goes to ERR (no async event: the completion says it) and the WQEs after
 * it are flushed.
 */
static void test_bad_lkey(void **state)
{
	struct env *e = *state;
	struct rn_sge sge = fx_sge(&e->src, 0, 8);
	struct rn_cqe c[2];

	sge.lkey ^= 0x100; /* another index: no MR */
	fx_post_send(&e->a, &(struct rn_send_wqe){ .wr_id = 1,
		.opcode = RN_OP_WRITE, .num_sge = 1,
		.remote_addr = (uintptr_t)e->dst.buf, .rkey = e->dst.rkey }, &sge);
	post_write(&e->a, 2, &e->src, 0, &e->dst, 0, 8);
	fx_ring(&e->a);
	fx_pass(e->fx);
	poll_n(&e->cq, c, 2);
	/* Unsignaled, but an error completes anyway. */
	assert_int_equal(c[0].wr_id, 1);
	assert_int_equal(c[0].status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(c[0].opcode, IBV_WC_RDMA_WRITE);
	assert_int_equal(c[0].byte_len, 0);
	assert_int_equal(c[1].wr_id, 2);
	assert_int_equal(c[1].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(fx_qp_state(&e->a), IBV_QPS_ERR);
	fx_assert_no_event(e->fx);
	assert_int_equal(e->dst.buf[0], 0);
	assert_int_equal(fx_qp_state(&e->b), IBV_QPS_RTS);
}

/* An SGE past the end of its MR: a protection error as well. */
static void test_sge_out_of_mr(void **state)
{
	struct env *e = *state;
	struct rn_sge sge = fx_sge(&e->src, e->src.len - 4, 8);
	struct rn_cqe c;

	fx_post_send(&e->a, &(struct rn_send_wqe){ .wr_id = 1,
		.opcode = RN_OP_WRITE, .num_sge = 1,
		.remote_addr = (uintptr_t)e->dst.buf, .rkey = e->dst.rkey }, &sge);
	fx_ring(&e->a);
	fx_pass(e->fx);
	poll_n(&e->cq, &c, 1);
	assert_int_equal(c.status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(fx_qp_state(&e->a), IBV_QPS_ERR);
}

/* ---- receive queues ---------------------------------------------------------------- */

static void post_send(struct fx_qp *qp, uint64_t wr_id, const struct fx_mr *src,
		      uint64_t off, uint32_t len)
{
	struct rn_sge sge = fx_sge(src, off, len);

	fx_post_send(qp, &(struct rn_send_wqe){ .wr_id = wr_id,
		.opcode = RN_OP_SEND, .flags = RN_WQE_SIGNALED, .num_sge = 1 },
		&sge);
}

/* A SEND scatters over a receive WQE's SGEs; the RQ counters move. */
static void test_recv_scatter(void **state)
{
	struct env *e = *state;
	struct rn_sge rs[2] = { fx_sge(&e->dst, 0, 100), fx_sge(&e->dst, 1000, 400) };
	struct rn_cqe c[2];

	fx_post_recv(&e->b, 77, rs, 2);
	post_send(&e->a, 1, &e->src, 0, 300);
	fx_ring(&e->a);
	fx_pass(e->fx);
	poll_n(&e->cq, c, 2);
	/* The receive completes first (local.c writes it before the send's). */
	assert_int_equal(c[0].wr_id, 77);
	assert_int_equal(c[0].status, IBV_WC_SUCCESS);
	assert_int_equal(c[0].opcode, IBV_WC_RECV);
	assert_int_equal(c[0].byte_len, 300);
	assert_int_equal(c[0].qp_num, e->b.qpn);
	assert_int_equal(c[0].src_qp, e->a.qpn);
	assert_int_equal(c[1].wr_id, 1);
	assert_int_equal(c[1].opcode, IBV_WC_SEND);
	assert_memory_equal(e->dst.buf, e->src.buf, 100);
	assert_memory_equal(e->dst.buf + 1000, e->src.buf + 100, 200);
	assert_int_equal(e->dst.buf[100], 0);
	assert_int_equal(e->dst.buf[1200], 0);
	assert_int_equal(e->b.ctrl->rq_wr_cons, 1);
	assert_int_equal(e->b.ctrl->rq_cons, e->b.rq_prod);
}

/*
 * A receive WQE that does not parse (its slot count is wrong): the
 * receiver is fatal, the sender gets a remote operational error.
 */
static void test_recv_malformed(void **state)
{
	struct env *e = *state;
	struct rn_sge rs = fx_sge(&e->dst, 0, 100);
	struct rn_recv_wqe *slot;
	struct rn_cqe c;

	fx_post_recv(&e->b, 77, &rs, 1);
	slot = (struct rn_recv_wqe *)rn_ring_slot(e->b.rq, e->b.rq_slots, 0);
	slot->nslots = 3;
	post_send(&e->a, 1, &e->src, 0, 10);
	fx_ring(&e->a);
	fx_pass(e->fx);
	poll_n(&e->cq, &c, 1);
	assert_int_equal(c.wr_id, 1);
	assert_int_equal(c.status, IBV_WC_REM_OP_ERR);
	assert_int_equal(fx_qp_state(&e->a), IBV_QPS_ERR);
	assert_int_equal(fx_qp_state(&e->b), IBV_QPS_ERR);
	fx_assert_event(e->fx, IBV_EVENT_QP_FATAL, &e->b);
	fx_assert_no_event(e->fx);
	assert_int_equal(e->dst.buf[0], 0);
}

/* A producer counter further ahead than the ring holds: the RQ is bad. */
static void test_recv_prod_beyond_ring(void **state)
{
	struct env *e = *state;
	struct rn_sge rs = fx_sge(&e->dst, 0, 100);
	struct rn_cqe c;

	fx_post_recv(&e->b, 77, &rs, 1);
	e->b.ctrl->rq_prod = e->b.rq_slots + 1;
	post_send(&e->a, 1, &e->src, 0, 10);
	fx_ring(&e->a);
	fx_pass(e->fx);
	poll_n(&e->cq, &c, 1);
	assert_int_equal(c.status, IBV_WC_REM_OP_ERR);
	assert_int_equal(fx_qp_state(&e->b), IBV_QPS_ERR);
	fx_assert_event(e->fx, IBV_EVENT_QP_FATAL, &e->b);
}

/* A QP put in ERR flushes its receive WQEs, in order. */
static void test_recv_flushed_in_error(void **state)
{
	struct env *e = *state;
	struct rn_sge rs = fx_sge(&e->dst, 0, 100);
	struct rn_ctl_modify_qp_req req = {
		.handle = e->b.handle,
		.attr_mask = IBV_QP_STATE,
		.attr.qp_state = IBV_QPS_ERR,
	};
	struct rn_cqe c[3];
	unsigned int i;

	for (i = 0; i < 3; i++)
		fx_post_recv(&e->b, 50 + i, &rs, 1);
	assert_int_equal(rn_qp_modify(e->fx->client, &req), 0);
	poll_n(&e->cq, c, 3);
	for (i = 0; i < 3; i++) {
		assert_int_equal(c[i].wr_id, 50 + i);
		assert_int_equal(c[i].status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(c[i].opcode, IBV_WC_RECV);
		assert_int_equal(c[i].qp_num, e->b.qpn);
	}
	assert_int_equal(e->b.ctrl->rq_wr_cons, 3);
}

/*
 * WQEs that cross a ring page (RN_GROUP_SLOTS slots) and the end of the
 * ring, in a chain longer than the fetch stage holds: a 1-slot WRITE puts
 * every 2-slot WRITE after it on an odd slot.  128 slots; the first chain
 * is 121 slots (the stage drops what it consumed and goes on), the second
 * wraps.  Every WQE's two SGEs land where they should.
 */
static void test_sq_wraps(void **state)
{
	struct env *e = *state;
	static const struct rn_qp_cap cap = { 64, 4, 4, 1, 64, 0 };
	struct fx_qp q, r;
	unsigned int i, n = 0, done = 0;
	struct rn_cqe c;

	fx_qp_new(e->fx, &e->cq, &e->cq, &cap, &q);
	fx_qp_new(e->fx, &e->cq, &e->cq, &cap, &r);
	fx_qp_pair(&q, &r);
	assert_int_equal(q.sq_slots, 128);
	post_write(&q, n++, &e->src, 0, &e->dst, 0, 4);
	for (int round = 0; round < 2; round++) {
		unsigned int count = round ? 40 : 60;

		for (i = 0; i < count; i++, n++) {
			struct rn_sge sge[2] = { fx_sge(&e->src, n * 8, 3),
						 fx_sge(&e->src, 8192 + n * 8, 5) };
			uint64_t at = fx_post_send(&q, &(struct rn_send_wqe){
				.wr_id = n, .opcode = RN_OP_WRITE,
				.flags = RN_WQE_SIGNALED, .num_sge = 2,
				.remote_addr = (uintptr_t)e->dst.buf + n * 8,
				.rkey = e->dst.rkey }, sge);

			assert_int_equal(at % 2, 1);
		}
		fx_ring(&q);
		while (fx_pass(e->fx))
			;
		while (fx_poll(&e->cq, &c)) {
			assert_int_equal(c.status, IBV_WC_SUCCESS);
			assert_int_equal(c.wr_id, done);
			done++;
		}
		assert_int_equal(done, n);
	}
	assert_true(q.sq_prod > 2 * q.sq_slots - 64);
	assert_int_equal(q.ctrl->sq_cons, q.sq_prod);
	for (i = 1; i < n; i++) {
		assert_memory_equal(e->dst.buf + i * 8, e->src.buf + i * 8, 3);
		assert_memory_equal(e->dst.buf + i * 8 + 3, e->src.buf + 8192 + i * 8,
				    5);
	}
}

/* Receive WQEs of 2 slots (4 SGEs) across the end of the receive ring. */
static void test_rq_wraps(void **state)
{
	struct env *e = *state;
	static const struct rn_qp_cap cap = { 16, 16, 1, 4, 0, 0 };
	struct fx_qp q, r;
	unsigned int i;
	struct rn_cqe c;

	fx_qp_new(e->fx, &e->cq, &e->cq, &cap, &q);
	fx_qp_new(e->fx, &e->cq, &e->cq, &cap, &r);
	fx_qp_pair(&q, &r);
	assert_int_equal(r.rq_slots, 32);
	assert_int_equal(RN_RECV_WQE_SLOTS(4), 2);
	/* One of 1 slot, then 2-slot ones from slot 1 on: the 16th wraps. */
	for (i = 0; i < 24; i++) {
		uint8_t *d = e->dst.buf + i * 64;
		struct rn_sge rs[4] = { fx_sge(&e->dst, i * 64, 2),
					fx_sge(&e->dst, i * 64 + 10, 2),
					fx_sge(&e->dst, i * 64 + 20, 2),
					fx_sge(&e->dst, i * 64 + 30, 30) };

		if (i)
			fx_post_recv(&r, 500 + i, rs, 4);
		else
			fx_post_recv(&r, 500 + i, &rs[3], 1);
		post_send(&q, i, &e->src, i * 16, 8);
		fx_ring(&q);
		fx_pass(e->fx);
		assert_true(fx_poll(&e->cq, &c));
		assert_int_equal(c.wr_id, 500 + i);
		assert_int_equal(c.status, IBV_WC_SUCCESS);
		assert_int_equal(c.byte_len, 8);
		assert_true(fx_poll(&e->cq, &c));
		assert_int_equal(c.wr_id, i);
		if (!i)
			continue;
		assert_memory_equal(d, e->src.buf + i * 16, 2);
		assert_memory_equal(d + 10, e->src.buf + i * 16 + 2, 2);
		assert_memory_equal(d + 20, e->src.buf + i * 16 + 4, 2);
		assert_memory_equal(d + 30, e->src.buf + i * 16 + 6, 2);
		assert_int_equal(d[32], 0);
	}
	assert_int_equal(r.rq_prod, 1 + 23 * 2);
	assert_int_equal(r.ctrl->rq_cons, r.rq_prod);
	assert_int_equal(r.ctrl->rq_wr_cons, 24);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_budget_takes_passes),
		T(test_budget_unbatched),
		T(test_two_qps_take_turns),
		T(test_stale_doorbell),
		T(test_bad_doorbell_index),
		T(test_bad_doorbell_beyond_ring),
		T(test_doorbell_before_rts),
		T(test_malformed_opcode),
		T(test_too_many_sges),
		T(test_max_sges),
		T(test_bad_lkey),
		T(test_sge_out_of_mr),
		T(test_recv_scatter),
		T(test_recv_malformed),
		T(test_recv_prod_beyond_ring),
		T(test_recv_flushed_in_error),
		T(test_sq_wraps),
		T(test_rq_wraps),
	};

	/* The device's warnings (malformed WQEs, bad doorbells) to stderr. */
	rn_log_init(true, false);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
