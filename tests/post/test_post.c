// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Posting rules against a live ringnicd (run under ringnic-run): one
 * doorbell per post call and per ibv_wr_* batch, deferred posting and
 * every way deferred WRs get handed over, a full send queue (ENOMEM and
 * bad_wr), and the window arithmetic of ringnicdv_query_sq_window against
 * what posting really accepts.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <infiniband/ringnicdv.h>

#define BUF 65536

struct env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp; /* the requester */
	struct ibv_qp *peer;
	struct ibv_mr *mr;
	uint8_t *buf;
};

static void modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	assert_int_equal(ibv_modify_qp(qp, a, mask), 0);
}

static void to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			       IBV_QP_ACCESS_FLAGS);
}

/* To RTS, talking to dest; timeout as the IB exponent. */
static void to_rts(struct ibv_qp *qp, uint32_t dest, uint8_t timeout)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_4096,
		.dest_qp_num = dest,
		.ah_attr.port_num = 1,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 1,
	};

	modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			       IBV_QP_MAX_QP_RD_ATOMIC);
}

/*
 * A requester and a peer.  With 'stalled' the peer stays in INIT: nothing
 * the requester posts can execute for seconds (an ACK timeout of 2^20 x
 * 4 us per retry), so its send queue only fills.
 */
static struct env *env_open(bool stalled, uint32_t max_send_wr,
			    uint32_t max_sge, uint32_t max_inline)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = max_send_wr, .max_recv_wr = 16,
			 .max_send_sge = max_sge, .max_recv_sge = 1,
			 .max_inline_data = max_inline },
	};
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct env *e = calloc(1, sizeof(*e));

	assert_non_null(list);
	assert_non_null(list[0]);
	e->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	assert_non_null(e->ctx);
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, 4096, NULL, NULL, 0);
	e->buf = aligned_alloc(4096, 2 * BUF);
	assert_non_null(e->buf);
	e->mr = ibv_reg_mr(e->pd, e->buf, 2 * BUF,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(e->mr);
	qa.send_cq = qa.recv_cq = e->cq;
	e->qp = ibv_create_qp(e->pd, &qa);
	e->peer = ibv_create_qp(e->pd, &qa);
	assert_non_null(e->qp);
	assert_non_null(e->peer);
	to_init(e->qp);
	to_init(e->peer);
	to_rts(e->qp, e->peer->qp_num, stalled ? 20 : 14);
	if (!stalled)
		to_rts(e->peer, e->qp->qp_num, 14);
	return e;
}

static void env_close(struct env *e)
{
	assert_int_equal(ibv_destroy_qp(e->qp), 0);
	assert_int_equal(ibv_destroy_qp(e->peer), 0);
	assert_int_equal(ibv_dereg_mr(e->mr), 0);
	assert_int_equal(ibv_destroy_cq(e->cq), 0);
	assert_int_equal(ibv_dealloc_pd(e->pd), 0);
	assert_int_equal(ibv_close_device(e->ctx), 0);
	free(e->buf);
	free(e);
}

static struct ringnicdv_qp_counters counters(struct ibv_qp *qp)
{
	struct ringnicdv_qp_counters c;

	assert_int_equal(ringnicdv_query_qp_counters(qp, &c, sizeof(c)), 0);
	return c;
}

/* A WRITE of len bytes at offset off into the second half of buf. */
static void write_wr(struct env *e, struct ibv_send_wr *wr, struct ibv_sge *sge,
		     uint64_t id, uint32_t off, uint32_t len, unsigned int flags)
{
	*sge = (struct ibv_sge){ (uintptr_t)e->buf + off, len, e->mr->lkey };
	*wr = (struct ibv_send_wr){
		.wr_id = id,
		.sg_list = sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = flags,
		.wr.rdma = { (uintptr_t)e->buf + BUF + off, e->mr->rkey },
	};
}

static void post_one(struct env *e, uint64_t id, unsigned int flags, int expect)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge;

	write_wr(e, &wr, &sge, id, (uint32_t)id * 64 % BUF, 64, flags);
	assert_int_equal(ibv_post_send(e->qp, &wr, &bad), expect);
}

/* Poll completions until 'n' came (ids in order) or 5 s passed. */
static void expect_completions(struct env *e, const uint64_t *ids, int n)
{
	struct timespec t0, t;
	struct ibv_wc wc;
	int got = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (got < n) {
		int r = ibv_poll_cq(e->cq, 1, &wc);

		assert_true(r >= 0);
		if (r) {
			assert_int_equal(wc.status, IBV_WC_SUCCESS);
			assert_int_equal(wc.wr_id, ids[got]);
			got++;
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &t);
		if (t.tv_sec - t0.tv_sec > 5)
			fail_msg("%d of %d completions", got, n);
	}
}

static void expect_no_completion(struct env *e)
{
	struct timespec ts = { 0, 100 * 1000 * 1000 };
	struct ibv_wc wc;

	nanosleep(&ts, NULL);
	assert_int_equal(ibv_poll_cq(e->cq, 1, &wc), 0);
}

/* ---- doorbells ----------------------------------------------------------- */

static void test_one_doorbell_per_call(void **state)
{
	struct env *e = env_open(false, 256, 1, 0);
	struct ibv_send_wr wr[32], *bad;
	struct ibv_sge sge[32];
	struct ringnicdv_qp_counters c0 = counters(e->qp), c1;
	uint64_t last = 0;
	int call, i;

	(void)state;
	for (call = 0; call < 100; call++) {
		for (i = 0; i < 32; i++) {
			write_wr(e, &wr[i], &sge[i], call * 32 + i, i * 64, 64,
				 i == 31 ? IBV_SEND_SIGNALED : 0);
			wr[i].next = i < 31 ? &wr[i + 1] : NULL;
		}
		assert_int_equal(ibv_post_send(e->qp, wr, &bad), 0);
		last = call * 32 + 31;
		expect_completions(e, &last, 1);
	}
	c1 = counters(e->qp);
	assert_int_equal(c1.doorbells - c0.doorbells, 100);
	assert_true(c1.wakeups - c0.wakeups <= 100);
	assert_int_equal(c1.wqes - c0.wqes, 3200);
	assert_true(c1.device_doorbells - c0.device_doorbells <= 100);
	assert_true(c1.device_doorbells - c0.device_doorbells >= 1);
	/* One-slot WQEs: 32 per call fit in one page of the ring. */
	assert_true(c1.groups - c0.groups >= 50);
	assert_true(c1.groups - c0.groups <= 200);
	env_close(e);
}

static void test_one_doorbell_per_wr_batch(void **state)
{
	struct ibv_qp_init_attr_ex qa;
	struct env *e = env_open(false, 256, 1, 0);
	struct ringnicdv_qp_counters c0, c1;
	struct ibv_qp_ex *qpx;
	struct ibv_qp *qp;
	uint64_t last = 0;
	int batch, i;

	(void)state;
	/* An extended QP on the same CQ, talking to the same peer's twin. */
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = qa.recv_cq = e->cq;
	qa.cap = (struct ibv_qp_cap){ 256, 16, 1, 1, 0 };
	qa.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qa.pd = e->pd;
	qa.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
	qp = ibv_create_qp_ex(e->ctx, &qa);
	assert_non_null(qp);
	qpx = ibv_qp_to_qp_ex(qp);
	assert_non_null(qpx);
	assert_int_equal(ibv_destroy_qp(e->peer), 0);
	e->peer = ibv_create_qp(e->pd, &(struct ibv_qp_init_attr){
		.qp_type = IBV_QPT_RC, .send_cq = e->cq, .recv_cq = e->cq,
		.cap = { 16, 16, 1, 1, 0 } });
	assert_non_null(e->peer);
	to_init(qp);
	to_init(e->peer);
	to_rts(qp, e->peer->qp_num, 14);
	to_rts(e->peer, qp->qp_num, 14);

	c0 = counters(qp);
	for (batch = 0; batch < 50; batch++) {
		ibv_wr_start(qpx);
		for (i = 0; i < 16; i++) {
			qpx->wr_id = batch * 16 + i;
			qpx->wr_flags = i == 15 ? IBV_SEND_SIGNALED : 0;
			ibv_wr_rdma_write(qpx, e->mr->rkey,
					  (uintptr_t)e->buf + BUF + i * 64);
			ibv_wr_set_sge(qpx, e->mr->lkey, (uintptr_t)e->buf, 64);
		}
		assert_int_equal(ibv_wr_complete(qpx), 0);
		last = batch * 16 + 15;
		expect_completions(e, &last, 1);
	}
	c1 = counters(qp);
	assert_int_equal(c1.doorbells - c0.doorbells, 50);
	assert_int_equal(c1.wqes - c0.wqes, 800);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	env_close(e);
}

/* ---- deferral ------------------------------------------------------------ */

static void test_defer_then_terminate(void **state)
{
	struct env *e = env_open(false, 64, 1, 0);
	struct ringnicdv_qp_counters c0 = counters(e->qp), c1;
	uint64_t ids[11];
	int i;

	(void)state;
	for (i = 0; i < 10; i++) {
		ids[i] = i;
		post_one(e, i, IBV_SEND_SIGNALED | RINGNICDV_SEND_DEFER, 0);
	}
	c1 = counters(e->qp);
	assert_int_equal(c1.doorbells, c0.doorbells); /* not rung */
	ids[10] = 10;
	post_one(e, 10, IBV_SEND_SIGNALED, 0);
	c1 = counters(e->qp);
	assert_int_equal(c1.doorbells - c0.doorbells, 1); /* once for all */
	expect_completions(e, ids, 11);
	env_close(e);
}

/*
 * The seed's example, with ringnic's operations: two deferred requests, the
 * second fails; the first is handed over and completes, the second never
 * completes, and no terminating post is made.
 */
static void test_defer_failed_post_flushes(void **state)
{
	struct env *e = env_open(false, 64, 1, 0);
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge[2];
	struct ringnicdv_qp_counters c0 = counters(e->qp), c1;
	uint64_t first = 1;

	(void)state;
	post_one(e, 1, IBV_SEND_SIGNALED | RINGNICDV_SEND_DEFER, 0);
	/* Two SGEs on a one-SGE QP: refused. */
	write_wr(e, &wr, sge, 2, 0, 64, IBV_SEND_SIGNALED | RINGNICDV_SEND_DEFER);
	sge[1] = sge[0];
	wr.num_sge = 2;
	assert_int_equal(ibv_post_send(e->qp, &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
	c1 = counters(e->qp);
	assert_int_equal(c1.doorbells - c0.doorbells, 1);
	expect_completions(e, &first, 1);
	expect_no_completion(e);
	env_close(e);
}

/* The same inside one list: the WRs before the bad one are posted and run. */
static void test_defer_failed_list(void **state)
{
	struct env *e = env_open(false, 64, 1, 0);
	struct ibv_send_wr wr[3], *bad = NULL;
	struct ibv_sge sge[4];
	uint64_t ids[2] = { 1, 2 };
	struct ringnicdv_qp_counters c0 = counters(e->qp);

	(void)state;
	write_wr(e, &wr[0], &sge[0], 1, 0, 64,
		 IBV_SEND_SIGNALED | RINGNICDV_SEND_DEFER);
	write_wr(e, &wr[1], &sge[1], 2, 64, 64,
		 IBV_SEND_SIGNALED | RINGNICDV_SEND_DEFER);
	write_wr(e, &wr[2], &sge[2], 3, 128, 64,
		 IBV_SEND_SIGNALED | RINGNICDV_SEND_DEFER);
	wr[2].num_sge = 2;
	wr[0].next = &wr[1];
	wr[1].next = &wr[2];
	assert_int_equal(ibv_post_send(e->qp, wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr[2]);
	/* Rung by the failure itself, before anything polls. */
	assert_int_equal(counters(e->qp).doorbells - c0.doorbells, 1);
	expect_completions(e, ids, 2);
	expect_no_completion(e);
	env_close(e);
}

/* No terminator at all: polling the send CQ hands the WRs over. */
static void test_defer_flushed_by_poll(void **state)
{
	struct env *e = env_open(false, 64, 1, 0);
	uint64_t ids[3] = { 1, 2, 3 };
	int i;

	(void)state;
	for (i = 1; i <= 3; i++)
		post_one(e, i, IBV_SEND_SIGNALED | RINGNICDV_SEND_DEFER, 0);
	expect_completions(e, ids, 3);
	env_close(e);
}

static void test_defer_flushed_by_arm(void **state)
{
	struct env *e = env_open(false, 64, 1, 0);
	struct ringnicdv_qp_counters c0 = counters(e->qp);
	uint64_t id = 1;

	(void)state;
	post_one(e, 1, IBV_SEND_SIGNALED | RINGNICDV_SEND_DEFER, 0);
	assert_int_equal(ibv_req_notify_cq(e->cq, 0), 0);
	assert_int_equal(counters(e->qp).doorbells - c0.doorbells, 1);
	expect_completions(e, &id, 1);
	env_close(e);
}

static void test_defer_flushed_by_modify(void **state)
{
	struct env *e = env_open(false, 64, 1, 0);
	struct ringnicdv_qp_counters c0 = counters(e->qp);
	struct ibv_qp_attr a = { .min_rnr_timer = 2 };
	uint64_t id = 1;

	(void)state;
	post_one(e, 1, IBV_SEND_SIGNALED | RINGNICDV_SEND_DEFER, 0);
	modify(e->qp, &a, IBV_QP_MIN_RNR_TIMER); /* RTS to RTS */
	assert_int_equal(counters(e->qp).doorbells - c0.doorbells, 1);
	expect_completions(e, &id, 1);
	env_close(e);
}

static void test_defer_in_wr_api(void **state)
{
	struct ibv_qp_init_attr_ex qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { 64, 16, 1, 1, 0 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE,
	};
	struct env *e = env_open(false, 64, 1, 0);
	struct ringnicdv_qp_counters c0;
	struct ibv_qp_ex *qpx;
	struct ibv_qp *qp, *peer2;
	uint64_t ids[3] = { 1, 2, 3 };
	int i;

	(void)state;
	qa.send_cq = qa.recv_cq = e->cq;
	qa.pd = e->pd;
	qp = ibv_create_qp_ex(e->ctx, &qa);
	peer2 = ibv_create_qp(e->pd, &(struct ibv_qp_init_attr){
		.qp_type = IBV_QPT_RC, .send_cq = e->cq, .recv_cq = e->cq,
		.cap = { 16, 16, 1, 1, 0 } });
	assert_non_null(qp);
	assert_non_null(peer2);
	qpx = ibv_qp_to_qp_ex(qp);
	to_init(qp);
	to_init(peer2);
	to_rts(qp, peer2->qp_num, 14);
	to_rts(peer2, qp->qp_num, 14);
	c0 = counters(qp);
	for (i = 1; i <= 3; i++) {
		ibv_wr_start(qpx);
		qpx->wr_id = i;
		qpx->wr_flags = IBV_SEND_SIGNALED | (i < 3 ? RINGNICDV_SEND_DEFER : 0);
		ibv_wr_rdma_write(qpx, e->mr->rkey, (uintptr_t)e->buf + BUF);
		ibv_wr_set_sge(qpx, e->mr->lkey, (uintptr_t)e->buf, 64);
		assert_int_equal(ibv_wr_complete(qpx), 0);
		assert_int_equal(counters(qp).doorbells - c0.doorbells,
				 i < 3 ? 0 : 1);
	}
	expect_completions(e, ids, 3);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_qp(peer2), 0);
	env_close(e);
}

/* ---- a full send queue and the window ------------------------------------ */

static void test_full_queue_enomem(void **state)
{
	struct env *e = env_open(true, 16, 1, 0);
	struct ibv_send_wr wr[64], *bad = NULL;
	struct ibv_sge sge[64];
	struct ringnicdv_sq_window w;
	uint32_t fit;
	int i;

	(void)state;
	assert_int_equal(ringnicdv_query_sq_window(e->qp, &w, sizeof(w)), 0);
	fit = w.free / w.op_alignment; /* one-SGE WRs take one unit each */
	assert_true(fit >= 16 && fit < 64);
	for (i = 0; i < 64; i++) {
		write_wr(e, &wr[i], &sge[i], i, 0, 64, 0);
		wr[i].next = i < 63 ? &wr[i + 1] : NULL;
	}
	assert_int_equal(ibv_post_send(e->qp, wr, &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[fit]);
	assert_int_equal(ringnicdv_query_sq_window(e->qp, &w, sizeof(w)), 0);
	assert_int_equal(w.free, 0);
	/* At once, not after waiting for room. */
	assert_int_equal(ibv_post_send(e->qp, wr, &bad), ENOMEM);
	assert_ptr_equal(bad, &wr[0]);
	env_close(e);
}

static uint32_t roundup(uint32_t v, uint32_t a)
{
	return (v + a - 1) / a * a;
}

/*
 * Random mixes of SGE counts and inline sizes on a queue that cannot
 * drain: the formula predicts every post's outcome, and 'free' drops by
 * exactly what it says.
 */
static void test_window_matches_acceptance(void **state)
{
	struct env *e = env_open(true, 64, 16, 512);
	struct ringnicdv_sq_window w, w2;
	unsigned int seed = 7, accepted = 0, refused = 0;
	struct ibv_sge sge[16];
	int i, round;

	(void)state;
	assert_int_equal(ringnicdv_query_sq_window(e->qp, &w, sizeof(w)), 0);
	assert_int_equal(w.op_size, 48);
	assert_int_equal(w.iov_size, 16);
	assert_int_equal(w.op_alignment, 64);
	assert_true(w.iov_limit >= 16);
	assert_true(w.inline_limit >= 512);
	assert_int_equal(w.free, w.size);
	assert_int_equal(w.free_wr, w.max_wr);
	assert_true(w.max_wr >= 64);
	for (round = 0; round < 400 && w.free; round++) {
		bool inl = rand_r(&seed) % 3 == 0;
		uint32_t nsge = 1 + rand_r(&seed) % 16;
		uint32_t ilen = rand_r(&seed) % 513, need;
		struct ibv_send_wr wr = {
			.wr_id = round,
			.sg_list = sge,
			.opcode = IBV_WR_RDMA_WRITE,
			.wr.rdma = { (uintptr_t)e->buf + BUF, e->mr->rkey },
		}, *bad;
		int ret;

		if (inl) {
			sge[0] = (struct ibv_sge){ (uintptr_t)e->buf, ilen, 0 };
			wr.num_sge = 1;
			wr.send_flags = IBV_SEND_INLINE;
			need = roundup(w.op_size + ilen, w.op_alignment);
		} else {
			for (i = 0; i < (int)nsge; i++)
				sge[i] = (struct ibv_sge){ (uintptr_t)e->buf + i * 8, 8,
							   e->mr->lkey };
			wr.num_sge = nsge;
			need = roundup(w.op_size + w.iov_size * nsge, w.op_alignment);
		}
		ret = ibv_post_send(e->qp, &wr, &bad);
		assert_int_equal(ringnicdv_query_sq_window(e->qp, &w2, sizeof(w2)), 0);
		if (need <= w.free && w.free_wr) {
			assert_int_equal(ret, 0);
			assert_int_equal(w2.free, w.free - need);
			assert_int_equal(w2.free_wr, w.free_wr - 1);
			accepted++;
		} else {
			assert_int_equal(ret, ENOMEM);
			assert_int_equal(w2.free, w.free);
			assert_int_equal(w2.free_wr, w.free_wr);
			refused++;
		}
		w = w2;
	}
	assert_true(accepted > 10);
	assert_true(refused > 0);
	print_message("window: %u posts accepted, %u refused as predicted\n",
		      accepted, refused);
	env_close(e);
}

static void test_window_input(void **state)
{
	struct env *e = env_open(false, 16, 1, 0);
	struct {
		struct ringnicdv_sq_window w;
		uint64_t future;
	} big;
	struct ringnicdv_qp_counters c;

	(void)state;
	assert_int_equal(ringnicdv_query_sq_window(e->qp, &big.w, 8), EINVAL);
	memset(&big, 0xff, sizeof(big));
	assert_int_equal(ringnicdv_query_sq_window(e->qp, &big.w, sizeof(big)), 0);
	assert_int_equal(big.future, 0); /* unknown fields come back 0 */
	assert_int_equal(big.w.comp_mask, 0);
	assert_int_equal(ringnicdv_query_qp_counters(e->qp, &c, 8), EINVAL);
	env_close(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_doorbell_per_call),
		cmocka_unit_test(test_one_doorbell_per_wr_batch),
		cmocka_unit_test(test_defer_then_terminate),
		cmocka_unit_test(test_defer_failed_post_flushes),
		cmocka_unit_test(test_defer_failed_list),
		cmocka_unit_test(test_defer_flushed_by_poll),
		cmocka_unit_test(test_defer_flushed_by_arm),
		cmocka_unit_test(test_defer_flushed_by_modify),
		cmocka_unit_test(test_defer_in_wr_api),
		cmocka_unit_test(test_full_queue_enomem),
		cmocka_unit_test(test_window_matches_acceptance),
		cmocka_unit_test(test_window_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
