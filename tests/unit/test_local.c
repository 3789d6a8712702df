// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The local path (local/local.c, local/batch.c): two RC QPs of the test
 * process connected to each other through the device's own GID, every
 * operation checked byte for byte, and the statuses the path gives where
 * the responder refuses, has no receive, or is not there.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "device_fixture.h"

#define ALL_ACCESS                                                             \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                     \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

struct env {
	struct fx *fx;
	struct fx_cq cqa, cqb; /* every completion of a, of b */
	struct fx_qp a, b; /* a requests, b responds */
	struct fx_mr la, rb; /* a's local buffer, b's */
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	unsigned int i;

	assert_non_null(e);
	e->fx = fx_new();
	fx_cq_new(e->fx, 64, &e->cqa);
	fx_cq_new(e->fx, 64, &e->cqb);
	fx_qp_new(e->fx, &e->cqa, &e->cqa, NULL, &e->a);
	fx_qp_new(e->fx, &e->cqb, &e->cqb, NULL, &e->b);
	fx_mr_new(e->fx, 16384, ALL_ACCESS, 0, &e->la);
	fx_mr_new(e->fx, 16384, ALL_ACCESS, 0, &e->rb);
	for (i = 0; i < e->la.len; i++)
		e->la.buf[i] = (uint8_t)(i * 13 + i / 251);
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

/* Connect a and b with these settings (NULL: the defaults). */
static void connect_qps(struct env *e, const struct fx_conn *ca,
		    const struct fx_conn *cb)
{
	struct fx_conn da = fx_conn_default(e->b.qpn), db = fx_conn_default(e->a.qpn);

	fx_qp_connect(&e->a, ca ? ca : &da);
	fx_qp_connect(&e->b, cb ? cb : &db);
}

static int setup_connected(void **state)
{
	setup(state);
	connect_qps(*state, NULL, NULL);
	return 0;
}

static void run(struct env *e, struct fx_qp *qp)
{
	fx_ring(qp);
	fx_pass(e->fx);
}

/* The one CQE of cq, and no other. */
static struct rn_cqe one_cqe(struct fx_cq *cq)
{
	struct rn_cqe c, more;

	assert_true(fx_poll(cq, &c));
	assert_false(fx_poll(cq, &more));
	return c;
}

static void assert_no_cqe(struct fx_cq *cq)
{
	struct rn_cqe c;

	assert_false(fx_poll(cq, &c));
}

static void post_op(struct fx_qp *qp, uint64_t wr_id, uint8_t opcode,
		    const struct rn_sge *sge, unsigned int n, uint64_t raddr,
		    uint32_t rkey)
{
	fx_post_send(qp, &(struct rn_send_wqe){ .wr_id = wr_id, .opcode = opcode,
		.flags = RN_WQE_SIGNALED, .num_sge = n, .remote_addr = raddr,
		.rkey = rkey }, sge);
}

/* ---- the operations ------------------------------------------------------------- */

/* SEND with immediate: both completions, the data, the PSNs it took. */
static void test_send_imm(void **state)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 0, 3000), rs = fx_sge(&e->rb, 100, 4000);
	struct rn_cqe c;

	fx_post_recv(&e->b, 0xb0, &rs, 1);
	fx_post_send(&e->a, &(struct rn_send_wqe){ .wr_id = 0xa0,
		.opcode = RN_OP_SEND_IMM, .flags = RN_WQE_SIGNALED,
		.num_sge = 1, .imm_data = htonl(0x12345678) }, &ls);
	run(e, &e->a);

	c = one_cqe(&e->cqb);
	assert_int_equal(c.wr_id, 0xb0);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
	assert_int_equal(c.opcode, IBV_WC_RECV);
	assert_int_equal(c.byte_len, 3000);
	assert_int_equal(c.flags, RN_CQE_WITH_IMM);
	assert_int_equal(c.imm_data, htonl(0x12345678));
	assert_int_equal(c.qp_num, e->b.qpn);
	assert_int_equal(c.src_qp, e->a.qpn);
	c = one_cqe(&e->cqa);
	assert_int_equal(c.wr_id, 0xa0);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
	assert_int_equal(c.opcode, IBV_WC_SEND);
	assert_int_equal(c.byte_len, 3000);
	assert_int_equal(c.qp_num, e->a.qpn);
	assert_memory_equal(e->rb.buf + 100, e->la.buf, 3000);
	assert_int_equal(e->rb.buf[99], 0);
	assert_int_equal(e->rb.buf[3100], 0);
	/* 3000 bytes at a path MTU of 1024: three packets' PSNs, both ends. */
	assert_int_equal(e->a.dq->attr.sq_psn, 0x103);
	assert_int_equal(e->b.dq->attr.rq_psn, 0x103);
}

/* A run of SENDs (the batch path) lands each in its own receive. */
static void test_send_run(void **state)
{
	struct env *e = *state;
	struct rn_cqe c;
	unsigned int i;

	for (i = 0; i < 4; i++) {
		struct rn_sge rs = fx_sge(&e->rb, i * 1000, 1000);
		struct rn_sge ls = fx_sge(&e->la, i * 333, 100 + i);

		fx_post_recv(&e->b, i, &rs, 1);
		post_op(&e->a, 10 + i, RN_OP_SEND, &ls, 1, 0, 0);
	}
	run(e, &e->a);
	for (i = 0; i < 4; i++) {
		assert_true(fx_poll(&e->cqb, &c));
		assert_int_equal(c.wr_id, i);
		assert_int_equal(c.byte_len, 100 + i);
		assert_true(fx_poll(&e->cqa, &c));
		assert_int_equal(c.wr_id, 10 + i);
		assert_int_equal(c.status, IBV_WC_SUCCESS);
		assert_memory_equal(e->rb.buf + i * 1000, e->la.buf + i * 333,
				    100 + i);
		assert_int_equal(e->rb.buf[i * 1000 + 100 + i], 0);
	}
	assert_no_cqe(&e->cqa);
	assert_no_cqe(&e->cqb);
}

static void test_send_inline(void **state)
{
	struct env *e = *state;
	struct rn_sge rs = fx_sge(&e->rb, 0, 100);
	static const char msg[] = "inline bytes travel in the WQE itself";
	struct rn_cqe c;

	fx_post_recv(&e->b, 1, &rs, 1);
	fx_post_inline(&e->a, &(struct rn_send_wqe){ .wr_id = 2,
		.opcode = RN_OP_SEND, .flags = RN_WQE_SIGNALED }, msg, sizeof(msg));
	run(e, &e->a);
	c = one_cqe(&e->cqb);
	assert_int_equal(c.byte_len, sizeof(msg));
	assert_memory_equal(e->rb.buf, msg, sizeof(msg));
	c = one_cqe(&e->cqa);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
}

/* WRITE gathers its SGEs into one remote range; no receive is taken. */
static void test_write_gather(void **state)
{
	struct env *e = *state;
	struct rn_sge ls[3] = { fx_sge(&e->la, 0, 10), fx_sge(&e->la, 5000, 2000),
				fx_sge(&e->la, 100, 1) };
	struct rn_sge rs = fx_sge(&e->rb, 0, 100);
	struct rn_cqe c;

	fx_post_recv(&e->b, 1, &rs, 1);
	post_op(&e->a, 7, RN_OP_WRITE, ls, 3, (uintptr_t)e->rb.buf + 64,
		e->rb.rkey);
	run(e, &e->a);
	c = one_cqe(&e->cqa);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
	assert_int_equal(c.opcode, IBV_WC_RDMA_WRITE);
	assert_int_equal(c.byte_len, 2011);
	assert_memory_equal(e->rb.buf + 64, e->la.buf, 10);
	assert_memory_equal(e->rb.buf + 74, e->la.buf + 5000, 2000);
	assert_int_equal(e->rb.buf[2074], e->la.buf[100]);
	assert_int_equal(e->rb.buf[2075], 0);
	assert_int_equal(e->rb.buf[63], 0);
	assert_no_cqe(&e->cqb);
	assert_int_equal(e->b.ctrl->rq_wr_cons, 0);
}

/* WRITE with immediate: the data, and a receive completion for it. */
static void test_write_imm(void **state)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 0, 777), rs = fx_sge(&e->rb, 8000, 16);
	struct rn_cqe c;

	fx_post_recv(&e->b, 5, &rs, 1);
	fx_post_send(&e->a, &(struct rn_send_wqe){ .wr_id = 6,
		.opcode = RN_OP_WRITE_IMM, .flags = RN_WQE_SIGNALED,
		.num_sge = 1, .imm_data = htonl(0xfeed),
		.remote_addr = (uintptr_t)e->rb.buf, .rkey = e->rb.rkey }, &ls);
	run(e, &e->a);
	c = one_cqe(&e->cqb);
	assert_int_equal(c.wr_id, 5);
	assert_int_equal(c.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(c.byte_len, 777);
	assert_int_equal(c.flags, RN_CQE_WITH_IMM);
	assert_int_equal(c.imm_data, htonl(0xfeed));
	c = one_cqe(&e->cqa);
	assert_int_equal(c.opcode, IBV_WC_RDMA_WRITE);
	assert_memory_equal(e->rb.buf, e->la.buf, 777);
	/* The receive buffer itself is untouched. */
	assert_int_equal(e->rb.buf[8000], 0);
}

/* READ: b's memory scattered over a's local SGEs. */
static void test_read(void **state)
{
	struct env *e = *state;
	struct rn_sge ls[2] = { fx_sge(&e->la, 0, 1000), fx_sge(&e->la, 8192, 2000) };
	struct rn_cqe c;
	unsigned int i;

	for (i = 0; i < 3000; i++)
		e->rb.buf[10000 + i] = (uint8_t)(i * 31 + 7);
	memset(e->la.buf, 0, e->la.len);
	post_op(&e->a, 9, RN_OP_READ, ls, 2, (uintptr_t)e->rb.buf + 10000,
		e->rb.rkey);
	run(e, &e->a);
	c = one_cqe(&e->cqa);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
	assert_int_equal(c.opcode, IBV_WC_RDMA_READ);
	assert_int_equal(c.byte_len, 3000);
	assert_memory_equal(e->la.buf, e->rb.buf + 10000, 1000);
	assert_memory_equal(e->la.buf + 8192, e->rb.buf + 11000, 2000);
	assert_int_equal(e->la.buf[1000], 0);
	assert_int_equal(e->la.buf[10192], 0);
	assert_no_cqe(&e->cqb);
	assert_int_equal(e->a.dq->attr.sq_psn, 0x103);
}

static uint64_t *u64_at(struct fx_mr *mr, uint64_t off)
{
	return (uint64_t *)(mr->buf + off);
}

static void post_atomic(struct fx_qp *qp, uint64_t wr_id, uint8_t opcode,
			const struct rn_sge *ls, uint64_t raddr, uint32_t rkey,
			uint64_t compare_add, uint64_t swap)
{
	fx_post_send(qp, &(struct rn_send_wqe){ .wr_id = wr_id, .opcode = opcode,
		.flags = RN_WQE_SIGNALED, .num_sge = 1, .remote_addr = raddr,
		.rkey = rkey, .compare_add = compare_add, .swap = swap }, ls);
}

static void test_fetch_add(void **state)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 0, 8);
	struct rn_cqe c;

	*u64_at(&e->rb, 64) = 0x1000000000000005ull;
	post_atomic(&e->a, 1, RN_OP_FETCH_ADD, &ls, (uintptr_t)e->rb.buf + 64,
		    e->rb.rkey, 0x0fffffffffffffffull, 0);
	run(e, &e->a);
	c = one_cqe(&e->cqa);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
	assert_int_equal(c.opcode, IBV_WC_FETCH_ADD);
	assert_int_equal(c.byte_len, 8);
	assert_int_equal(*u64_at(&e->rb, 64), 0x2000000000000004ull);
	assert_int_equal(*u64_at(&e->la, 0), 0x1000000000000005ull);
	assert_int_equal(*u64_at(&e->rb, 72), 0);
}

/* Compare and swap: swaps when equal, and only then; the original comes back. */
static void test_cmp_swap(void **state)
{
	struct env *e = *state;
	struct rn_sge l0 = fx_sge(&e->la, 0, 8), l1 = fx_sge(&e->la, 8, 8);
	uint64_t raddr = (uintptr_t)e->rb.buf + 128;
	struct rn_cqe c;

	*u64_at(&e->rb, 128) = 5;
	post_atomic(&e->a, 1, RN_OP_CMP_SWAP, &l0, raddr, e->rb.rkey, 5, 9);
	post_atomic(&e->a, 2, RN_OP_CMP_SWAP, &l1, raddr, e->rb.rkey, 5, 11);
	run(e, &e->a);
	assert_true(fx_poll(&e->cqa, &c));
	assert_int_equal(c.opcode, IBV_WC_COMP_SWAP);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
	assert_true(fx_poll(&e->cqa, &c));
	assert_int_equal(c.wr_id, 2);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
	assert_int_equal(*u64_at(&e->la, 0), 5);
	assert_int_equal(*u64_at(&e->la, 8), 9);
	assert_int_equal(*u64_at(&e->rb, 128), 9);
}

/* ---- what the responder refuses ----------------------------------------------------- */

/*
 * A WRITE to an rkey that names nothing: REM_ACCESS_ERR at the requester,
 * whose QP goes to ERR; the responder is fatal with QP_ACCESS_ERR.
 */
static void test_write_bad_rkey(void **state)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 0, 100);
	struct rn_cqe c;

	post_op(&e->a, 1, RN_OP_WRITE, &ls, 1, (uintptr_t)e->rb.buf,
		e->rb.rkey + 1);
	post_op(&e->a, 2, RN_OP_WRITE, &ls, 1, (uintptr_t)e->rb.buf, e->rb.rkey);
	run(e, &e->a);
	assert_true(fx_poll(&e->cqa, &c));
	assert_int_equal(c.wr_id, 1);
	assert_int_equal(c.status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(c.byte_len, 0);
	assert_true(fx_poll(&e->cqa, &c));
	assert_int_equal(c.wr_id, 2);
	assert_int_equal(c.status, IBV_WC_WR_FLUSH_ERR);
	assert_no_cqe(&e->cqa);
	assert_int_equal(fx_qp_state(&e->a), IBV_QPS_ERR);
	assert_int_equal(fx_qp_state(&e->b), IBV_QPS_ERR);
	fx_assert_event(e->fx, IBV_EVENT_QP_ACCESS_ERR, &e->b);
	fx_assert_no_event(e->fx);
	assert_int_equal(e->rb.buf[0], 0);
}

/* READ of an MR registered without REMOTE_READ: a remote access error. */
static void test_read_without_right(void **state)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 0, 100);
	struct fx_mr wo;
	struct rn_cqe c;

	fx_mr_new(e->fx, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
		  0x5a, &wo);
	post_op(&e->a, 1, RN_OP_READ, &ls, 1, (uintptr_t)wo.buf, wo.rkey);
	run(e, &e->a);
	c = one_cqe(&e->cqa);
	assert_int_equal(c.status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(c.opcode, IBV_WC_RDMA_READ);
	fx_assert_event(e->fx, IBV_EVENT_QP_ACCESS_ERR, &e->b);
	assert_int_equal(e->la.buf[0], 0);
	assert_int_equal(e->la.buf[1], 13);
}

/* The responder QP does not allow remote writes (its access flags). */
static void test_write_qp_denies(void **state)
{
	struct env *e = *state;
	struct fx_conn cb = fx_conn_default(e->a.qpn);
	struct rn_sge ls = fx_sge(&e->la, 0, 100);
	struct rn_cqe c;

	cb.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ;
	connect_qps(e, NULL, &cb);
	post_op(&e->a, 1, RN_OP_WRITE, &ls, 1, (uintptr_t)e->rb.buf, e->rb.rkey);
	run(e, &e->a);
	c = one_cqe(&e->cqa);
	assert_int_equal(c.status, IBV_WC_REM_ACCESS_ERR);
	fx_assert_event(e->fx, IBV_EVENT_QP_ACCESS_ERR, &e->b);
	assert_int_equal(e->rb.buf[0], 0);
}

/* An atomic at an address not 8-byte aligned: an invalid request. */
static void test_atomic_misaligned(void **state)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 0, 8);
	struct rn_cqe c;

	post_atomic(&e->a, 1, RN_OP_FETCH_ADD, &ls, (uintptr_t)e->rb.buf + 4,
		    e->rb.rkey, 1, 0);
	run(e, &e->a);
	c = one_cqe(&e->cqa);
	assert_int_equal(c.status, IBV_WC_REM_INV_REQ_ERR);
	assert_int_equal(fx_qp_state(&e->b), IBV_QPS_ERR);
	fx_assert_event(e->fx, IBV_EVENT_QP_REQ_ERR, &e->b);
	assert_int_equal(*u64_at(&e->rb, 0), 0);
}

/*
 * A SEND larger than its receive WQE: the receive completes with
 * LOC_LEN_ERR and the responder goes to ERR (no async event); the sender
 * gets REM_INV_REQ_ERR, the NAK an IB responder sends for a length error
 * (IB spec 9.7.5.2.2, invalid request), and goes to ERR too.
 */
static void test_recv_too_small(void **state)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 0, 200), rs = fx_sge(&e->rb, 0, 100);
	struct rn_cqe c;

	fx_post_recv(&e->b, 0xb1, &rs, 1);
	post_op(&e->a, 0xa1, RN_OP_SEND, &ls, 1, 0, 0);
	run(e, &e->a);
	c = one_cqe(&e->cqb);
	assert_int_equal(c.wr_id, 0xb1);
	assert_int_equal(c.status, IBV_WC_LOC_LEN_ERR);
	assert_int_equal(c.opcode, IBV_WC_RECV);
	c = one_cqe(&e->cqa);
	assert_int_equal(c.wr_id, 0xa1);
	assert_int_equal(c.status, IBV_WC_REM_INV_REQ_ERR);
	assert_int_equal(c.byte_len, 0);
	assert_int_equal(fx_qp_state(&e->a), IBV_QPS_ERR);
	assert_int_equal(fx_qp_state(&e->b), IBV_QPS_ERR);
	fx_assert_no_event(e->fx);
	assert_int_equal(e->rb.buf[0], 0);
}

/* ---- waits: RNR and ACK timeouts -------------------------------------------------- */

/* No receive and rnr_retry 0: the first RNR NAK fails the SEND. */
static void test_rnr_retry_exceeded(void **state)
{
	struct env *e = *state;
	struct fx_conn ca = fx_conn_default(e->b.qpn);
	struct rn_sge ls = fx_sge(&e->la, 0, 10);
	struct rn_cqe c;

	ca.rnr_retry = 0;
	connect_qps(e, &ca, NULL);
	post_op(&e->a, 1, RN_OP_SEND, &ls, 1, 0, 0);
	run(e, &e->a);
	c = one_cqe(&e->cqa);
	assert_int_equal(c.status, IBV_WC_RNR_RETRY_EXC_ERR);
	assert_int_equal(c.opcode, IBV_WC_SEND);
	assert_int_equal(fx_qp_state(&e->a), IBV_QPS_ERR);
	/* The responder has done nothing wrong. */
	assert_int_equal(fx_qp_state(&e->b), IBV_QPS_RTS);
	assert_no_cqe(&e->cqb);
	fx_assert_no_event(e->fx);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RCVD_RNR), 1);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RNR_RETRY_EXC), 1);
	assert_int_equal(e->a.ctrl->rnr_naks, 1);
}

/*
 * rnr_retry 1: the SEND waits the responder's RNR timer (min_rnr_timer 1:
 * 10 us), a receive is posted meanwhile, and the retry delivers it.
 */
static void test_rnr_wait_then_receive(void **state)
{
	struct env *e = *state;
	struct fx_conn ca = fx_conn_default(e->b.qpn);
	struct rn_sge ls = fx_sge(&e->la, 0, 10), rs = fx_sge(&e->rb, 0, 100);
	uint64_t t0 = rn_now_ns(), due;
	struct rn_cqe c;

	ca.rnr_retry = 1;
	connect_qps(e, &ca, NULL);
	post_op(&e->a, 1, RN_OP_SEND, &ls, 1, 0, 0);
	fx_ring(&e->a);
	rn_engine_pass(e->fx->dev.engines[0], t0);
	assert_no_cqe(&e->cqa);
	assert_true(rn_timer_armed(&e->a.dq->wait_timer));
	assert_false(e->a.dq->active);
	due = e->a.dq->wait_timer.when;
	assert_int_equal(due, t0 + rn_rnr_timer_ns(1));
	/* Not before its time. */
	assert_false(rn_engine_pass(e->fx->dev.engines[0], due - 1));
	assert_no_cqe(&e->cqa);

	fx_post_recv(&e->b, 2, &rs, 1);
	assert_true(rn_engine_pass(e->fx->dev.engines[0], due));
	c = one_cqe(&e->cqa);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
	c = one_cqe(&e->cqb);
	assert_int_equal(c.byte_len, 10);
	assert_memory_equal(e->rb.buf, e->la.buf, 10);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RCVD_RNR), 1);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RNR_RETRY_EXC), 0);
}

/*
 * Nobody answers (the peer is not ready to receive): the requester waits
 * an ACK timeout per retry; retry_cnt 0 fails at once with RETRY_EXC_ERR.
 */
static void test_unanswered_retry_exceeded(void **state)
{
	struct env *e = *state;
	struct fx_conn ca = fx_conn_default(e->b.qpn);
	struct rn_sge ls = fx_sge(&e->la, 0, 10);
	struct rn_cqe c;

	ca.retry_cnt = 0;
	fx_qp_connect(&e->a, &ca); /* b stays in RESET */
	post_op(&e->a, 1, RN_OP_WRITE, &ls, 1, (uintptr_t)e->rb.buf, e->rb.rkey);
	run(e, &e->a);
	c = one_cqe(&e->cqa);
	assert_int_equal(c.status, IBV_WC_RETRY_EXC_ERR);
	assert_int_equal(fx_counter(e->fx, RN_CNT_ACK_TIMEOUT), 1);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RETRY_EXC), 1);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RETRIES), 0);
	assert_int_equal(e->rb.buf[0], 0);
}

/* retry_cnt 1: after one ACK timeout the peer is there and the WRITE lands. */
static void test_unanswered_then_connected(void **state)
{
	struct env *e = *state;
	struct fx_conn ca = fx_conn_default(e->b.qpn), cb = fx_conn_default(e->a.qpn);
	struct rn_sge ls = fx_sge(&e->la, 0, 10);
	uint64_t t0 = rn_now_ns();
	struct rn_cqe c;

	ca.retry_cnt = 1;
	fx_qp_connect(&e->a, &ca);
	post_op(&e->a, 1, RN_OP_WRITE, &ls, 1, (uintptr_t)e->rb.buf, e->rb.rkey);
	fx_ring(&e->a);
	rn_engine_pass(e->fx->dev.engines[0], t0);
	assert_no_cqe(&e->cqa);
	assert_int_equal(e->a.dq->wait_timer.when, t0 + rn_ack_timeout_ns(14));
	assert_int_equal(fx_counter(e->fx, RN_CNT_RETRIES), 1);

	fx_qp_connect(&e->b, &cb);
	rn_engine_pass(e->fx->dev.engines[0], e->a.dq->wait_timer.when);
	c = one_cqe(&e->cqa);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
	assert_memory_equal(e->rb.buf, e->la.buf, 10);
	assert_int_equal(fx_counter(e->fx, RN_CNT_ACK_TIMEOUT), 1);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RETRY_EXC), 0);
}

/* ---- CQ overrun in a batch ---------------------------------------------------------- */

/* A QP completing into a CQ of two entries, connected to b. */
static void small_cq_qp(struct env *e, struct fx_cq *small, struct fx_qp *q)
{
	struct fx_conn cq = fx_conn_default(e->b.qpn), cb = fx_conn_default(0);

	fx_cq_new(e->fx, 2, small);
	fx_qp_new(e->fx, small, small, NULL, q);
	cb.dest_qpn = q->qpn;
	fx_qp_connect(q, &cq);
	fx_qp_connect(&e->b, &cb);
}

/*
 * One at a time (READs, never batched), a CQ overrun is handled: the CQ
 * is in error (CQ_ERR), the QP goes to ERR, each WQE is retired once.
 */
static void test_cq_overrun(void **state)
{
	struct env *e = *state;
	struct fx_cq small;
	struct fx_qp q;
	struct rn_sge ls = fx_sge(&e->la, 0, 8);
	struct rn_cqe c;
	unsigned int i;

	small_cq_qp(e, &small, &q);
	for (i = 0; i < 4; i++)
		post_op(&q, i, RN_OP_READ, &ls, 1, (uintptr_t)e->rb.buf, e->rb.rkey);
	run(e, &q);
	assert_int_equal(fx_qp_state(&q), IBV_QPS_ERR);
	fx_assert_event(e->fx, IBV_EVENT_CQ_ERR, &small);
	assert_int_equal(small.ctrl->overrun, 1);
	assert_true(fx_poll(&small, &c));
	assert_true(fx_poll(&small, &c));
	assert_false(fx_poll(&small, &c));
	assert_int_equal(q.ctrl->sq_cons, q.sq_prod);
	assert_int_equal(q.ctrl->sq_wr_cons, 4);
}

/*
 * The same in a batch (device/local/batch.c, rn_batch_run): four WRITEs
 * move as one batch into a send CQ of two entries.  The third CQE overruns
 * it, so rn_sq_complete puts the QP in ERR, whose flush retires the
 * fourth WQE: the batch stops there, each WQE is retired once (it went on
 * and retired the fourth again: sq_cons and sq_wr_cons one past what was
 * posted, and the provider's room checks, rn_sq_has_room, wrapped).
 */
static void test_batch_cq_overrun(void **state)
{
	struct env *e = *state;
	struct fx_cq small;
	struct fx_qp q;
	struct rn_sge ls = fx_sge(&e->la, 0, 10);
	unsigned int i;

	small_cq_qp(e, &small, &q);
	for (i = 0; i < 4; i++)
		post_op(&q, i, RN_OP_WRITE, &ls, 1, (uintptr_t)e->rb.buf + i * 16,
			e->rb.rkey);
	run(e, &q);
	assert_int_equal(fx_qp_state(&q), IBV_QPS_ERR);
	fx_assert_event(e->fx, IBV_EVENT_CQ_ERR, &small);
	assert_int_equal(q.ctrl->sq_wr_cons, 4);
	assert_int_equal(q.ctrl->sq_cons, q.sq_prod);
}

/*
 * The receive side of a batch: four SENDs into a receiver whose CQ has
 * two entries.  The third receive CQE overruns it: the receiver goes to
 * ERR and its flush takes the fourth receive WQE; the batch stops after
 * the third SEND, which completes at the requester (its data arrived, as
 * one at a time).  Each receive WQE is consumed once (it was consumed
 * again: rq_cons 5 of 4 posted); the fourth SEND finds no responder and
 * waits for its ACK timeout.
 */
static void test_batch_recv_cq_overrun(void **state)
{
	struct env *e = *state;
	struct fx_cq small;
	struct fx_qp r;
	struct fx_conn ca = fx_conn_default(0), cr = fx_conn_default(e->a.qpn);
	struct rn_cqe c;
	unsigned int i;

	fx_cq_new(e->fx, 2, &small);
	fx_qp_new(e->fx, &small, &small, NULL, &r);
	ca.dest_qpn = r.qpn;
	fx_qp_connect(&e->a, &ca);
	fx_qp_connect(&r, &cr);
	for (i = 0; i < 4; i++) {
		struct rn_sge rs = fx_sge(&e->rb, i * 16, 16);
		struct rn_sge ls = fx_sge(&e->la, i * 16, 10);

		fx_post_recv(&r, i, &rs, 1);
		post_op(&e->a, 10 + i, RN_OP_SEND, &ls, 1, 0, 0);
	}
	run(e, &e->a);
	assert_int_equal(fx_qp_state(&r), IBV_QPS_ERR);
	fx_assert_event(e->fx, IBV_EVENT_CQ_ERR, &small);
	assert_int_equal(r.ctrl->rq_wr_cons, 4);
	assert_int_equal(r.ctrl->rq_cons, r.rq_prod);
	assert_true(fx_poll(&small, &c));
	assert_true(fx_poll(&small, &c));
	assert_false(fx_poll(&small, &c));

	assert_int_equal(fx_qp_state(&e->a), IBV_QPS_RTS);
	for (i = 0; i < 3; i++) {
		assert_true(fx_poll(&e->cqa, &c));
		assert_int_equal(c.wr_id, 10 + i);
		assert_int_equal(c.status, IBV_WC_SUCCESS);
	}
	assert_no_cqe(&e->cqa);
	assert_int_equal(e->a.ctrl->sq_wr_cons, 3);
	assert_true(rn_timer_armed(&e->a.dq->wait_timer));
}

/*
 * One at a time, a QP connected to itself: its SEND, retried after an RNR
 * NAK (so not batched), overruns its own CQ with the receive completion.
 * The QP goes to ERR, whose flush retires the SEND: it is retired once.
 */
static void test_self_recv_cq_overrun(void **state)
{
	struct env *e = *state;
	struct fx_cq one;
	struct fx_qp q;
	struct fx_conn cq;
	struct rn_sge ls = fx_sge(&e->la, 0, 10), rs = fx_sge(&e->rb, 0, 16);
	struct rn_sge rd = fx_sge(&e->la, 64, 8);
	struct rn_cqe c;

	fx_cq_new(e->fx, 1, &one);
	fx_qp_new(e->fx, &one, &one, NULL, &q);
	cq = fx_conn_default(q.qpn);
	cq.rnr_retry = 7;
	fx_qp_connect(&q, &cq);
	/* A READ of its own memory fills the CQ's one entry. */
	post_op(&q, 1, RN_OP_READ, &rd, 1, (uintptr_t)e->rb.buf, e->rb.rkey);
	run(e, &q);
	/* No receive: the SEND waits out an RNR NAK. */
	post_op(&q, 2, RN_OP_SEND, &ls, 1, 0, 0);
	run(e, &q);
	assert_true(rn_timer_armed(&q.dq->wait_timer));
	fx_post_recv(&q, 3, &rs, 1);
	rn_engine_pass(e->fx->dev.engines[0], q.dq->wait_timer.when);
	assert_int_equal(fx_qp_state(&q), IBV_QPS_ERR);
	fx_assert_event(e->fx, IBV_EVENT_CQ_ERR, &one);
	assert_int_equal(q.ctrl->sq_wr_cons, 2);
	assert_int_equal(q.ctrl->sq_cons, q.sq_prod);
	assert_int_equal(q.ctrl->rq_wr_cons, 1);
	assert_true(fx_poll(&one, &c));
	assert_int_equal(c.wr_id, 1);
	assert_false(fx_poll(&one, &c));
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup_connected, teardown)
#define U(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_send_imm),
		T(test_send_run),
		T(test_send_inline),
		T(test_write_gather),
		T(test_write_imm),
		T(test_read),
		T(test_fetch_add),
		T(test_cmp_swap),
		T(test_write_bad_rkey),
		T(test_read_without_right),
		U(test_write_qp_denies),
		T(test_atomic_misaligned),
		T(test_recv_too_small),
		U(test_rnr_retry_exceeded),
		U(test_rnr_wait_then_receive),
		U(test_unanswered_retry_exceeded),
		U(test_unanswered_then_connected),
		U(test_cq_overrun),
		U(test_batch_cq_overrun),
		U(test_batch_recv_cq_overrun),
		U(test_self_recv_cq_overrun),
	};

	rn_log_init(true, false);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
