// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Errors, each on a fresh QP pair:
 *  - completion errors (remote access, local protection, receive problems,
 *    RNR and ACK-timeout retries exhausted), after which the QP is in ERR
 *    and every outstanding or later WR, receives included, is flushed;
 *  - post-time errors (wrong state, unsupported opcode, too many SGEs, bad
 *    atomic SGE, full queues): a positive errno, *bad_wr at the culprit, the
 *    WRs before it posted and completed, nothing after it.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <infiniband/ringnicdv.h>

#include "e2e.h"

#define FILLER 0xee

static int check_untouched(const uint8_t *buf, size_t off, size_t len,
			   const char *what)
{
	size_t i;

	for (i = off; i < off + len; i++)
		CHECK(buf[i] == FILLER, "%s: byte at offset %zu was written (%#04x)",
		      what, i, buf[i]);
	return 0;
}

static struct ibv_send_wr send_wr(uint64_t wr_id, struct ibv_sge *sge, int n,
				  unsigned int flags)
{
	return (struct ibv_send_wr){
		.wr_id = wr_id,
		.sg_list = sge,
		.num_sge = n,
		.opcode = IBV_WR_SEND,
		.send_flags = flags,
	};
}

/* A post that must fail with err and name want as the bad WR. */
static int post_send_fails(struct ibv_qp *qp, struct ibv_send_wr *wr,
			   struct ibv_send_wr *want, int err, const char *what)
{
	struct ibv_send_wr *bad = NULL;
	int ret = ibv_post_send(qp, wr, &bad);

	CHECK(ret == err, "%s: ibv_post_send returned %d (%s), expected %d (%s)",
	      what, ret, strerror(ret), err, strerror(err));
	CHECK(bad == want, "%s: bad_wr is %p (wr_id %#llx), expected %p (wr_id %#llx)",
	      what, (void *)bad, bad ? (unsigned long long)bad->wr_id : 0ull,
	      (void *)want, (unsigned long long)want->wr_id);
	return 0;
}

static int post_recv_fails(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			   struct ibv_recv_wr *want, int err, const char *what)
{
	struct ibv_recv_wr *bad = NULL;
	int ret = ibv_post_recv(qp, wr, &bad);

	CHECK(ret == err, "%s: ibv_post_recv returned %d (%s), expected %d (%s)",
	      what, ret, strerror(ret), err, strerror(err));
	CHECK(bad == want, "%s: bad_wr is %p, expected %p", what, (void *)bad,
	      (void *)want);
	return 0;
}

/*
 * After the first error of a QP: it is in ERR, and a send and a receive
 * posted now are accepted and flushed.
 */
static int check_flushes_later(struct e2e_side *s)
{
	struct ibv_sge sge = sge_of(s, 0, 16);
	struct ibv_send_wr wr = send_wr(0x4444, &sge, 1, 0);

	TRY(expect_qp_state(s->qp, IBV_QPS_ERR));
	TRY(post_send1(s->qp, &wr));
	TRY(expect_err(scq_of(s), 0x4444, IBV_WC_WR_FLUSH_ERR, s->qp->qp_num,
		       "send posted in ERR"));
	TRY(post_recv_buf(s, 0x5555, 128, 16));
	TRY(expect_err(rcq_of(s), 0x5555, IBV_WC_WR_FLUSH_ERR, s->qp->qp_num,
		       "receive posted in ERR"));
	TRY(expect_no_wc(scq_of(s), 10, "send CQ after the flushes"));
	return expect_no_wc(rcq_of(s), 10, "receive CQ after the flushes");
}

/* =================================================== completion errors */

enum where { AT_BASE, AT_END, BEFORE, AT_REAL, MISALIGNED };
enum resp_outcome {
	RESP_UNAFFECTED, /* the error never reached it: RTS, nothing consumed */
	RESP_FATAL, /* async event, ERR, receives flushed */
	RESP_RECV_ERR, /* its first receive completes in error, then ERR */
};

struct err_case {
	const char *name;
	enum ibv_wr_opcode op;
	uint32_t len;
	/* the requester's side of the bad WR */
	uint32_t lkey_xor;
	bool local_at_end; /* local SGE runs past the MR */
	bool local_ro; /* local MR without LOCAL_WRITE */
	/* the responder's side */
	uint32_t rkey_xor;
	enum where where;
	unsigned int resp_mr_access; /* 0: all */
	unsigned int resp_qp_access; /* 0: all */
	bool resp_iova;
	uint32_t resp_recv_len; /* 0: 4096 */
	bool resp_recv_ro; /* first receive in an MR without LOCAL_WRITE */
	/* expectations */
	enum ibv_wc_status want;
	enum resp_outcome resp;
	enum ibv_event_type event; /* RESP_FATAL */
	enum ibv_wc_status resp_status; /* RESP_RECV_ERR */
};

#define NO_RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define NO_RR (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)
#define NO_RA (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

#define REM(n, o, l, ...)                                                      \
	{ .name = n, .op = o, .len = l, .want = IBV_WC_REM_ACCESS_ERR,         \
	  .resp = RESP_FATAL, .event = IBV_EVENT_QP_ACCESS_ERR, __VA_ARGS__ }
#define LOC(n, o, l, ...)                                                      \
	{ .name = n, .op = o, .len = l, .want = IBV_WC_LOC_PROT_ERR,           \
	  .resp = RESP_UNAFFECTED, __VA_ARGS__ }

static const struct err_case err_cases[] = {
	REM("bad_rkey_write", IBV_WR_RDMA_WRITE, 64, .rkey_xor = 0x80),
	REM("bad_rkey_read", IBV_WR_RDMA_READ, 64, .rkey_xor = 0x80),
	REM("bad_rkey_atomic", IBV_WR_ATOMIC_FETCH_AND_ADD, 8, .rkey_xor = 0x80),
	REM("bad_rkey_write_imm", IBV_WR_RDMA_WRITE_WITH_IMM, 64,
	    .rkey_xor = 0x12345600),
	REM("range_write", IBV_WR_RDMA_WRITE, 64, .where = AT_END),
	REM("range_read", IBV_WR_RDMA_READ, 128, .where = BEFORE),
	REM("range_atomic", IBV_WR_ATOMIC_CMP_AND_SWP, 8, .where = AT_END),
	REM("mr_no_remote_write", IBV_WR_RDMA_WRITE, 64, .resp_mr_access = NO_RW),
	REM("mr_no_remote_read", IBV_WR_RDMA_READ, 64, .resp_mr_access = NO_RR),
	REM("mr_no_remote_atomic_cas", IBV_WR_ATOMIC_CMP_AND_SWP, 8,
	    .resp_mr_access = NO_RA),
	REM("mr_no_remote_atomic_faa", IBV_WR_ATOMIC_FETCH_AND_ADD, 8,
	    .resp_mr_access = NO_RA),
	REM("qp_no_remote_write", IBV_WR_RDMA_WRITE, 64, .resp_qp_access = NO_RW),
	REM("qp_no_remote_read", IBV_WR_RDMA_READ, 64, .resp_qp_access = NO_RR),
	REM("qp_no_remote_atomic", IBV_WR_ATOMIC_FETCH_AND_ADD, 8,
	    .resp_qp_access = NO_RA),
	REM("iova_by_address", IBV_WR_RDMA_WRITE, 64, .resp_iova = true,
	    .where = AT_REAL),
	{ .name = "atomic_misaligned", .op = IBV_WR_ATOMIC_FETCH_AND_ADD, .len = 8,
	  .where = MISALIGNED, .want = IBV_WC_REM_INV_REQ_ERR, .resp = RESP_FATAL,
	  .event = IBV_EVENT_QP_REQ_ERR },
	LOC("bad_lkey_send", IBV_WR_SEND, 64, .lkey_xor = 0x80),
	LOC("bad_lkey_write", IBV_WR_RDMA_WRITE, 64, .lkey_xor = 0x80),
	LOC("bad_lkey_read", IBV_WR_RDMA_READ, 64, .lkey_xor = 0x80),
	LOC("local_range_send", IBV_WR_SEND, 64, .local_at_end = true),
	LOC("read_into_readonly", IBV_WR_RDMA_READ, 64, .local_ro = true),
	LOC("atomic_into_readonly", IBV_WR_ATOMIC_FETCH_AND_ADD, 8,
	    .local_ro = true),
	{ .name = "recv_too_small", .op = IBV_WR_SEND, .len = 64,
	  .resp_recv_len = 16, .want = IBV_WC_REM_INV_REQ_ERR,
	  .resp = RESP_RECV_ERR, .resp_status = IBV_WC_LOC_LEN_ERR },
	{ .name = "recv_into_readonly", .op = IBV_WR_SEND, .len = 64,
	  .resp_recv_ro = true, .want = IBV_WC_REM_OP_ERR,
	  .resp = RESP_RECV_ERR, .resp_status = IBV_WC_LOC_PROT_ERR },
};

#define N_ERR_CASES (sizeof(err_cases) / sizeof(err_cases[0]))
#define LOCAL_OFF 8192
#define REMOTE_OFF 4096

static bool is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static int err_req(struct e2e_proc *p, const struct err_case *c)
{
	struct ibv_send_wr wr[3];
	struct ibv_sge sge[3];
	struct ibv_mr *ro = NULL;
	struct e2e_opts o;
	struct e2e_side s;
	uint64_t raddr, real = 0;
	uint32_t qpn;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qpn = s.qp->qp_num;
	memset(s.buf, FILLER, o.buf_len);
	fill(s.buf + LOCAL_OFF, c->len, 1);
	if (c->local_ro) {
		ro = ibv_reg_mr(s.pd, s.buf + LOCAL_OFF, 4096, 0);
		CHECK(ro, "ibv_reg_mr read-only: %s", strerror(errno));
	}
	TRY(post_recv_buf(&s, 0x51, 65536, 64));
	TRY(post_recv_buf(&s, 0x52, 65536 + 64, 64));
	if (c->where == AT_REAL)
		TRY(recv_u64(p->peer, &real, E2E_WAIT_MS));

	switch (c->where) {
	case AT_BASE:
		raddr = s.rem.addr + REMOTE_OFF;
		break;
	case AT_END:
		raddr = s.rem.addr + s.rem.len - (is_atomic(c->op) ? 0 : 16);
		break;
	case BEFORE:
		raddr = s.rem.addr - 64;
		break;
	case AT_REAL:
		raddr = real + REMOTE_OFF;
		break;
	default:
		raddr = s.rem.addr + REMOTE_OFF + 4;
		break;
	}
	sge[0] = sge_of(&s, c->local_at_end ? o.buf_len - 8 : LOCAL_OFF, c->len);
	sge[0].lkey ^= c->lkey_xor;
	if (ro)
		sge[0].lkey = ro->lkey;
	wr[0] = send_wr(1, &sge[0], 1, IBV_SEND_SIGNALED);
	wr[0].opcode = c->op;
	wr[0].imm_data = htobe32(0x1234);
	if (is_atomic(c->op)) {
		wr[0].wr.atomic.remote_addr = raddr;
		wr[0].wr.atomic.rkey = s.rem.rkey ^ c->rkey_xor;
		wr[0].wr.atomic.compare_add = 1;
		wr[0].wr.atomic.swap = 2;
	} else {
		wr[0].wr.rdma.remote_addr = raddr;
		wr[0].wr.rdma.rkey = s.rem.rkey ^ c->rkey_xor;
	}
	/* Behind it: a signaled and an unsignaled SEND, both to be flushed. */
	sge[1] = sge_of(&s, 0, 16);
	sge[2] = sge_of(&s, 0, 16);
	wr[1] = send_wr(2, &sge[1], 1, IBV_SEND_SIGNALED);
	wr[2] = send_wr(3, &sge[2], 1, 0);
	wr[0].next = &wr[1];
	wr[1].next = &wr[2];

	TRY(e2e_sync(p, "ready"));
	TRY(post_send1(s.qp, wr));
	TRY(expect_err(scq_of(&s), 1, c->want, qpn, "the failing WR"));
	TRY(expect_err(scq_of(&s), 2, IBV_WC_WR_FLUSH_ERR, qpn,
		       "signaled WR behind the error"));
	TRY(expect_err(scq_of(&s), 3, IBV_WC_WR_FLUSH_ERR, qpn,
		       "unsignaled WR behind the error"));
	TRY(expect_err(rcq_of(&s), 0x51, IBV_WC_WR_FLUSH_ERR, qpn,
		       "receive posted before the error"));
	TRY(expect_err(rcq_of(&s), 0x52, IBV_WC_WR_FLUSH_ERR, qpn,
		       "receive posted before the error"));
	TRY(check_flushes_later(&s));
	/* Nothing came back into local memory. */
	TRY(check_fill(s.buf + LOCAL_OFF, c->len, 1, "local data of the failed WR"));
	TRY(check_untouched(s.buf, 0, LOCAL_OFF, "local buffer"));
	TRY(check_untouched(s.buf, LOCAL_OFF + c->len, o.buf_len - LOCAL_OFF - c->len,
			    "local buffer"));
	TRY(e2e_sync(p, "checked"));
	TRY(e2e_sync(p, "end"));
	if (ro)
		CHECK(!ibv_dereg_mr(ro), "ibv_dereg_mr failed");
	return e2e_close(&s);
}

static int err_resp(struct e2e_proc *p, const struct err_case *c)
{
	struct ibv_mr *ro = NULL;
	struct ibv_sge sge;
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t qpn;
	int i;

	e2e_default_opts(&o);
	if (c->resp_mr_access)
		o.mr_access = c->resp_mr_access;
	if (c->resp_qp_access)
		o.qp_access = c->resp_qp_access;
	o.iova = c->resp_iova;
	TRY(e2e_setup(&s, p, &o));
	qpn = s.qp->qp_num;
	memset(s.buf, FILLER, o.buf_len);
	if (c->resp_recv_ro) {
		ro = ibv_reg_mr(s.pd, s.buf + 32768, 4096, 0);
		CHECK(ro, "ibv_reg_mr read-only: %s", strerror(errno));
		sge = (struct ibv_sge){ (uintptr_t)s.buf + 32768, 4096, ro->lkey };
		TRY(post_recv1(s.qp, 0x61, &sge, 1));
	} else {
		TRY(post_recv_buf(&s, 0x61, 32768,
				  c->resp_recv_len ? c->resp_recv_len : 4096));
	}
	TRY(post_recv_buf(&s, 0x62, 40960, 4096));
	TRY(post_recv_buf(&s, 0x63, 49152, 4096));
	if (c->where == AT_REAL)
		TRY(send_u64(p->peer, (uintptr_t)s.buf));
	TRY(e2e_sync(p, "ready"));
	TRY(e2e_sync(p, "checked"));

	switch (c->resp) {
	case RESP_UNAFFECTED:
		TRY(expect_qp_state(s.qp, IBV_QPS_RTS));
		TRY(expect_no_wc(rcq_of(&s), 20, "responder receive CQ"));
		break;
	case RESP_FATAL:
		TRY(expect_async(s.ctx, s.qp, c->event, E2E_WAIT_MS));
		TRY(expect_qp_state(s.qp, IBV_QPS_ERR));
		for (i = 0; i < 3; i++)
			TRY(expect_err(rcq_of(&s), 0x61 + i, IBV_WC_WR_FLUSH_ERR, qpn,
				       "responder receive after the error"));
		TRY(check_flushes_later(&s));
		break;
	case RESP_RECV_ERR:
		TRY(expect_err(rcq_of(&s), 0x61, c->resp_status, qpn,
			       "the receive that failed"));
		for (i = 1; i < 3; i++)
			TRY(expect_err(rcq_of(&s), 0x61 + i, IBV_WC_WR_FLUSH_ERR, qpn,
				       "responder receive after the error"));
		TRY(check_flushes_later(&s));
		break;
	}
	/* Nothing was written into the responder's memory. */
	TRY(check_untouched(s.buf, 0, o.buf_len, "responder buffer"));
	TRY(e2e_sync(p, "end"));
	if (ro)
		CHECK(!ibv_dereg_mr(ro), "ibv_dereg_mr failed");
	return e2e_close(&s);
}

/* One pair of role functions per case. */
#define ERR_FNS(i)                                                             \
	static int err_req_##i(struct e2e_proc *p)                             \
	{                                                                      \
		return err_req(p, &err_cases[i]);                              \
	}                                                                      \
	static int err_resp_##i(struct e2e_proc *p)                            \
	{                                                                      \
		return err_resp(p, &err_cases[i]);                             \
	}
ERR_FNS(0) ERR_FNS(1) ERR_FNS(2) ERR_FNS(3) ERR_FNS(4) ERR_FNS(5) ERR_FNS(6)
ERR_FNS(7) ERR_FNS(8) ERR_FNS(9) ERR_FNS(10) ERR_FNS(11) ERR_FNS(12)
ERR_FNS(13) ERR_FNS(14) ERR_FNS(15) ERR_FNS(16) ERR_FNS(17) ERR_FNS(18)
ERR_FNS(19) ERR_FNS(20) ERR_FNS(21) ERR_FNS(22) ERR_FNS(23)
_Static_assert(N_ERR_CASES == 24, "one ERR_FNS per case");

/* ==================================================================== RNR */

#define SLOW_US 3000000 /* an upper bound no correct timer comes near */
#define RNR_TIMER 14 /* 1.28 ms */
#define RNR_TIMER_US 1280
#define RNR_RETRIES 3

/*
 * The QP's own counters (ringnicdv_query_qp_counters) agree with what
 * happened, on the local path as on the wire: every lost try an ACK
 * timeout, every try but the last a retry; every RNR NAK counted.
 */
static int expect_qp_counters(struct ibv_qp *qp, uint64_t ack_timeouts,
			      uint64_t retries, uint64_t rnr_naks)
{
	struct ringnicdv_qp_counters c;
	int ret = ringnicdv_query_qp_counters(qp, &c, sizeof(c));

	CHECK(!ret, "ringnicdv_query_qp_counters: %s", strerror(ret));
	CHECK(c.ack_timeouts == ack_timeouts && c.retries == retries &&
	      c.rnr_naks == rnr_naks,
	      "QP counters: ack_timeouts %llu retries %llu rnr_naks %llu, expected %llu %llu %llu",
	      (unsigned long long)c.ack_timeouts,
	      (unsigned long long)c.retries, (unsigned long long)c.rnr_naks,
	      (unsigned long long)ack_timeouts, (unsigned long long)retries,
	      (unsigned long long)rnr_naks);
	return 0;
}

/* No receive posted, rnr_retry 3: RNR_RETRY_EXC_ERR after 3 RNR waits. */
static int rnr_req(struct e2e_proc *p)
{
	struct ibv_send_wr wr[2];
	struct ibv_sge sge;
	struct e2e_opts o;
	struct e2e_side s;
	uint64_t t0, dt;

	e2e_default_opts(&o);
	o.rnr_retry = RNR_RETRIES;
	TRY(e2e_setup(&s, p, &o));
	sge = sge_of(&s, 0, 100);
	wr[0] = send_wr(1, &sge, 1, IBV_SEND_SIGNALED);
	wr[1] = send_wr(2, &sge, 1, 0);
	wr[0].next = &wr[1];
	TRY(e2e_sync(p, "ready"));
	t0 = e2e_now_us();
	TRY(post_send1(s.qp, wr));
	TRY(expect_err(scq_of(&s), 1, IBV_WC_RNR_RETRY_EXC_ERR, s.qp->qp_num,
		       "SEND without a receive"));
	dt = e2e_now_us() - t0;
	CHECK(dt >= RNR_RETRIES * RNR_TIMER_US,
	      "RNR_RETRY_EXC_ERR after %llu us, before %d retries of %d us",
	      (unsigned long long)dt, RNR_RETRIES, RNR_TIMER_US);
	/* Far more than the waits add up to: only a wrong timer gets here. */
	CHECK(dt < SLOW_US, "RNR_RETRY_EXC_ERR only after %llu us (%d retries of %d us)",
	      (unsigned long long)dt, RNR_RETRIES, RNR_TIMER_US);
	TRY(expect_err(scq_of(&s), 2, IBV_WC_WR_FLUSH_ERR, s.qp->qp_num,
		       "WR behind the RNR failure"));
	TRY(expect_qp_counters(s.qp, 0, 0, RNR_RETRIES + 1));
	TRY(check_flushes_later(&s));
	TRY(e2e_sync(p, "checked"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int rnr_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	o.min_rnr_timer = RNR_TIMER;
	TRY(e2e_setup(&s, p, &o));
	TRY(e2e_sync(p, "ready"));
	TRY(e2e_sync(p, "checked"));
	/* Receiver-not-ready is the requester's problem only. */
	TRY(expect_qp_state(s.qp, IBV_QPS_RTS));
	TRY(post_recv_buf(&s, 9, 0, 4096));
	TRY(expect_no_wc(rcq_of(&s), 20, "responder receive CQ"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* rnr_retry 7: retried for as long as it takes. */
static int rnr_forever_req(struct e2e_proc *p)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	o.rnr_retry = 7;
	TRY(e2e_setup(&s, p, &o));
	fill(s.buf, 100, 3);
	sge = sge_of(&s, 0, 100);
	wr = send_wr(1, &sge, 1, IBV_SEND_SIGNALED);
	TRY(e2e_sync(p, "ready"));
	TRY(post_send1(s.qp, &wr));
	TRY(expect_no_wc(scq_of(&s), 300, "SEND waiting for a receive"));
	TRY(expect_qp_state(s.qp, IBV_QPS_RTS));
	TRY(e2e_sync(p, "post now"));
	TRY(expect_send_ok(&s, 1, IBV_WC_SEND, 100));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int rnr_forever_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	o.min_rnr_timer = 1; /* 10 us: thousands of retries */
	TRY(e2e_setup(&s, p, &o));
	TRY(e2e_sync(p, "ready"));
	TRY(e2e_sync(p, "post now"));
	TRY(post_recv_buf(&s, 2, 0, 4096));
	TRY(expect_recv_ok(&s, 2, IBV_WC_RECV, 100, false, 0));
	TRY(check_fill(s.buf, 100, 3, "data after RNR retries"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* ============================================================ ACK timeouts */

#define ACK_TIMEOUT 10 /* 4.096 us << 10 = 4.19 ms */
#define ACK_TIMEOUT_US 4194
#define ACK_RETRIES 3

/* The requester's part: RETRY_EXC_ERR after retry_cnt ACK timeouts. */
static int expect_retry_exc(struct e2e_side *s)
{
	struct ibv_send_wr wr[2];
	struct ibv_sge sge = sge_of(s, 0, 64);
	uint64_t t0, dt;

	wr[0] = send_wr(1, &sge, 1, IBV_SEND_SIGNALED);
	wr[1] = send_wr(2, &sge, 1, IBV_SEND_SIGNALED);
	wr[0].next = &wr[1];
	t0 = e2e_now_us();
	TRY(post_send1(s->qp, wr));
	TRY(expect_err(scq_of(s), 1, IBV_WC_RETRY_EXC_ERR, s->qp->qp_num,
		       "SEND to an absent responder"));
	dt = e2e_now_us() - t0;
	CHECK(dt >= ACK_RETRIES * ACK_TIMEOUT_US,
	      "RETRY_EXC_ERR after %llu us, before %d retries of %d us",
	      (unsigned long long)dt, ACK_RETRIES, ACK_TIMEOUT_US);
	CHECK(dt < SLOW_US, "RETRY_EXC_ERR only after %llu us (%d retries of %d us)",
	      (unsigned long long)dt, ACK_RETRIES, ACK_TIMEOUT_US);
	TRY(expect_err(scq_of(s), 2, IBV_WC_WR_FLUSH_ERR, s->qp->qp_num,
		       "WR behind the timeout"));
	TRY(expect_qp_counters(s->qp, ACK_RETRIES + 1, ACK_RETRIES, 0));
	return check_flushes_later(s);
}

/* The peer QP does not exist. */
static int retry_no_qp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	o.timeout = ACK_TIMEOUT;
	o.retry_cnt = ACK_RETRIES;
	TRY(e2e_open(&s, p, &o));
	/* A QPN of the last generation at the last index: never handed out here. */
	s.rem.qpn = 0xfffffe;
	s.rem.psn = 1;
	memcpy(s.rem.gid, s.gid.raw, 16);
	TRY(e2e_connect(&s));
	TRY(expect_retry_exc(&s));
	return e2e_close(&s);
}

/* The peer QP exists but is not ready to receive (RESET or INIT). */
static int retry_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	o.timeout = ACK_TIMEOUT;
	o.retry_cnt = ACK_RETRIES;
	TRY(e2e_setup(&s, p, &o));
	TRY(e2e_sync(p, "ready"));
	TRY(expect_retry_exc(&s));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int retry_resp(struct e2e_proc *p, enum ibv_qp_state state)
{
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	o.state = state;
	TRY(e2e_setup(&s, p, &o));
	if (state == IBV_QPS_INIT)
		TRY(post_recv_buf(&s, 1, 0, 4096));
	TRY(e2e_sync(p, "ready"));
	TRY(e2e_sync(p, "end"));
	TRY(expect_qp_state(s.qp, state));
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ of the unready QP"));
	return e2e_close(&s);
}

static int retry_reset_resp(struct e2e_proc *p) { return retry_resp(p, IBV_QPS_RESET); }
static int retry_init_resp(struct e2e_proc *p) { return retry_resp(p, IBV_QPS_INIT); }

/* The peer reaches RTR while the requester retries: the SEND gets through. */
static int late_rtr_req(struct e2e_proc *p)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	o.timeout = 16; /* 268 ms, 7 retries: about 2 s */
	o.retry_cnt = 7;
	TRY(e2e_setup(&s, p, &o));
	fill(s.buf, 500, 11);
	sge = sge_of(&s, 0, 500);
	wr = send_wr(1, &sge, 1, IBV_SEND_SIGNALED);
	TRY(post_send1(s.qp, &wr));
	TRY(e2e_sync(p, "posted"));
	TRY(expect_send_ok(&s, 1, IBV_WC_SEND, 500));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int late_rtr_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	o.state = IBV_QPS_INIT;
	TRY(e2e_setup(&s, p, &o));
	TRY(post_recv_buf(&s, 2, 0, 4096));
	TRY(e2e_sync(p, "posted"));
	e2e_sleep_ms(30);
	TRY(qp_to_rtr(&s, s.rem.qpn, s.rem.psn));
	TRY(expect_recv_ok(&s, 2, IBV_WC_RECV, 500, false, 0));
	TRY(check_fill(s.buf, 500, 11, "data sent before RTR"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* ======================================================= post-time errors */

/* Posting sends before RTS fails and leaves nothing behind. */
static int post_state_req(struct e2e_proc *p)
{
	struct ibv_send_wr wr[2];
	struct ibv_recv_wr rwr;
	struct ibv_sge sge, rsge;
	struct e2e_opts o;
	struct e2e_side s;
	int step;

	e2e_default_opts(&o);
	TRY(e2e_open(&s, p, &o));
	TRY(e2e_exchange(&s));
	TRY(e2e_sync(p, "connected")); /* the responder is in RTS */
	sge = sge_of(&s, 0, 32);
	wr[0] = send_wr(1, &sge, 1, IBV_SEND_SIGNALED);
	wr[1] = send_wr(2, &sge, 1, IBV_SEND_SIGNALED);
	wr[0].next = &wr[1];
	rsge = sge_of(&s, 4096, 64);
	rwr = (struct ibv_recv_wr){ .wr_id = 3, .sg_list = &rsge, .num_sge = 1 };
	TRY(post_recv_fails(s.qp, &rwr, &rwr, EINVAL, "receive in RESET"));
	for (step = 0; step < 3; step++) {
		static const char *const names[3] = { "SEND in RESET",
						      "SEND in INIT",
						      "SEND in RTR" };

		if (step == 1)
			TRY(qp_to_init(s.qp, E2E_ACCESS_ALL));
		if (step == 2)
			TRY(qp_to_rtr(&s, s.rem.qpn, s.rem.psn));
		TRY(post_send_fails(s.qp, &wr[1], &wr[1], EINVAL, names[step]));
		TRY(post_send_fails(s.qp, wr, wr, EINVAL, names[step]));
	}
	TRY(qp_to_rts(&s));
	TRY(expect_no_wc(scq_of(&s), 50, "send CQ after the refused posts"));
	TRY(e2e_sync(p, "rts"));
	fill(s.buf + 512, 77, 21);
	sge = sge_of(&s, 512, 77);
	wr[0] = send_wr(9, &sge, 1, IBV_SEND_SIGNALED);
	TRY(post_send1(s.qp, &wr[0]));
	TRY(expect_send_ok(&s, 9, IBV_WC_SEND, 77));
	TRY(expect_no_wc(scq_of(&s), 10, "send CQ"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int post_state_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(post_recv_buf(&s, 1, 0, 4096));
	TRY(post_recv_buf(&s, 2, 4096, 4096));
	TRY(e2e_sync(p, "rts"));
	TRY(expect_recv_ok(&s, 1, IBV_WC_RECV, 77, false, 0));
	TRY(check_fill(s.buf, 77, 21, "the one SEND really posted"));
	TRY(e2e_sync(p, "end"));
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ"));
	return e2e_close(&s);
}

/* An opcode RC/ringnic does not support, third in a list of four. */
static const enum ibv_wr_opcode bad_ops[] = {
	IBV_WR_TSO,
	IBV_WR_DRIVER1,
	(enum ibv_wr_opcode)0x3e,
};
#define N_BAD_OPS (sizeof(bad_ops) / sizeof(bad_ops[0]))

static int bad_opcode_req(struct e2e_proc *p)
{
	struct ibv_send_wr wr[4];
	struct ibv_sge sge[4];
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int r, i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	fill(s.buf, 4096, 31);
	TRY(e2e_sync(p, "recv posted"));
	for (r = 0; r < N_BAD_OPS; r++) {
		char what[64];

		for (i = 0; i < 4; i++) {
			sge[i] = sge_of(&s, 0, 10 * r + i + 1);
			wr[i] = send_wr(r * 10 + i, &sge[i], 1, IBV_SEND_SIGNALED);
			wr[i].next = i < 3 ? &wr[i + 1] : NULL;
		}
		wr[2].opcode = bad_ops[r];
		snprintf(what, sizeof(what), "opcode %d third in a list", bad_ops[r]);
		TRY(post_send_fails(s.qp, wr, &wr[2], EINVAL, what));
		TRY(expect_send_ok(&s, r * 10, IBV_WC_SEND, 10 * r + 1));
		TRY(expect_send_ok(&s, r * 10 + 1, IBV_WC_SEND, 10 * r + 2));
		TRY(expect_no_wc(scq_of(&s), 10, what));
		TRY(expect_qp_state(s.qp, IBV_QPS_RTS));
	}
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int bad_opcode_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int r, i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	for (i = 0; i < 2 * N_BAD_OPS + 2; i++)
		TRY(post_recv_buf(&s, 100 + i, i * 256, 256));
	TRY(e2e_sync(p, "recv posted"));
	for (r = 0; r < N_BAD_OPS; r++) {
		for (i = 0; i < 2; i++) {
			TRY(expect_recv_ok(&s, 100 + 2 * r + i, IBV_WC_RECV,
					   10 * r + i + 1, false, 0));
			TRY(check_fill(s.buf + (2 * r + i) * 256, 10 * r + i + 1,
				       31, "SEND before the bad opcode"));
		}
	}
	TRY(e2e_sync(p, "end"));
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ"));
	return e2e_close(&s);
}

#define SGE_MAX_TRY 80

/* One SGE more than max_send_sge / max_recv_sge. */
static int too_many_sge_req(struct e2e_proc *p)
{
	static struct ibv_sge many[SGE_MAX_TRY];
	struct ibv_send_wr wr[3];
	struct ibv_sge sge;
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t n;
	int i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	n = s.cap.max_send_sge + 1;
	CHECK(n < SGE_MAX_TRY, "max_send_sge %u", s.cap.max_send_sge);
	for (i = 0; i < SGE_MAX_TRY; i++)
		many[i] = sge_of(&s, 1000 + i, 1);
	fill(s.buf, 100, 41);
	sge = sge_of(&s, 0, 100);
	wr[0] = send_wr(1, &sge, 1, IBV_SEND_SIGNALED);
	wr[1] = send_wr(2, many, n, IBV_SEND_SIGNALED);
	wr[2] = send_wr(3, &sge, 1, IBV_SEND_SIGNALED);
	wr[0].next = &wr[1];
	wr[1].next = &wr[2];
	TRY(e2e_sync(p, "recv posted"));
	TRY(post_send_fails(s.qp, wr, &wr[1], EINVAL, "SEND with max_send_sge + 1"));
	TRY(expect_send_ok(&s, 1, IBV_WC_SEND, 100));
	TRY(expect_no_wc(scq_of(&s), 10, "after the refused SEND"));

	wr[1].next = NULL;
	wr[1].opcode = IBV_WR_RDMA_WRITE;
	wr[1].wr.rdma.remote_addr = s.rem.addr;
	wr[1].wr.rdma.rkey = s.rem.rkey;
	TRY(post_send_fails(s.qp, &wr[1], &wr[1], EINVAL,
			    "WRITE with max_send_sge + 1"));
	wr[1].opcode = IBV_WR_RDMA_READ;
	TRY(post_send_fails(s.qp, &wr[1], &wr[1], EINVAL,
			    "READ with max_send_sge + 1"));
	wr[1].num_sge = SGE_MAX_TRY;
	TRY(post_send_fails(s.qp, &wr[1], &wr[1], EINVAL,
			    "READ with more SGEs than the device has"));
	wr[1].num_sge = -1;
	TRY(post_send_fails(s.qp, &wr[1], &wr[1], EINVAL, "num_sge -1"));
	TRY(expect_no_wc(scq_of(&s), 10, "after the refused WRs"));
	TRY(expect_qp_state(s.qp, IBV_QPS_RTS));
	wr[0].wr_id = 4;
	wr[0].next = NULL;
	TRY(post_send1(s.qp, &wr[0]));
	TRY(expect_send_ok(&s, 4, IBV_WC_SEND, 100));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int too_many_sge_resp(struct e2e_proc *p)
{
	static struct ibv_sge many[SGE_MAX_TRY];
	struct ibv_recv_wr rwr[3];
	struct ibv_sge sge[2];
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t n;
	int i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	n = s.cap.max_recv_sge + 1;
	CHECK(n < SGE_MAX_TRY, "max_recv_sge %u", s.cap.max_recv_sge);
	for (i = 0; i < SGE_MAX_TRY; i++)
		many[i] = sge_of(&s, 8192 + i * 8, 8);
	sge[0] = sge_of(&s, 0, 4096);
	sge[1] = sge_of(&s, 4096, 4096);
	rwr[0] = (struct ibv_recv_wr){ .wr_id = 11, .sg_list = &sge[0], .num_sge = 1,
				       .next = &rwr[1] };
	rwr[1] = (struct ibv_recv_wr){ .wr_id = 12, .sg_list = many, .num_sge = n,
				       .next = &rwr[2] };
	rwr[2] = (struct ibv_recv_wr){ .wr_id = 13, .sg_list = &sge[1], .num_sge = 1 };
	TRY(post_recv_fails(s.qp, rwr, &rwr[1], EINVAL,
			    "receive with max_recv_sge + 1"));
	TRY(e2e_sync(p, "recv posted"));
	TRY(expect_recv_ok(&s, 11, IBV_WC_RECV, 100, false, 0));
	TRY(check_fill(s.buf, 100, 41, "SEND before the refused one"));
	TRY(post_recv_buf(&s, 14, 4096, 4096));
	TRY(e2e_sync(p, "end"));
	TRY(expect_recv_ok(&s, 14, IBV_WC_RECV, 100, false, 0));
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ"));
	return e2e_close(&s);
}

/* Atomics take exactly one 8-byte local SGE; anything else is refused. */
static int atomic_sge_req(struct e2e_proc *p)
{
	struct ibv_send_wr wr[2], *bad;
	struct ibv_sge sge[2], ssge;
	struct e2e_opts o;
	struct e2e_side s;
	uint64_t old;
	int i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	for (i = 0; i < 6; i++) {
		static const char *const what[6] = {
			"FETCH_ADD into 4 bytes", "FETCH_ADD into 2 SGEs of 4",
			"CMP_SWP into 16 bytes", "CMP_SWP with no SGE",
			"FETCH_ADD into 2 SGEs of 8", "CMP_SWP into 7 bytes",
		};
		static const uint32_t len[6] = { 4, 4, 16, 8, 8, 7 };
		static const int nsge[6] = { 1, 2, 1, 0, 2, 1 };

		sge[0] = sge_of(&s, 512, len[i]);
		sge[1] = sge_of(&s, 1024, len[i]);
		memset(wr, 0, sizeof(wr));
		wr[0].wr_id = 10 + i;
		wr[0].sg_list = sge;
		wr[0].num_sge = nsge[i];
		wr[0].opcode = i == 2 || i == 3 || i == 5 ?
				       IBV_WR_ATOMIC_CMP_AND_SWP :
				       IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr[0].send_flags = IBV_SEND_SIGNALED;
		wr[0].wr.atomic.remote_addr = s.rem.addr + 64;
		wr[0].wr.atomic.rkey = s.rem.rkey;
		wr[0].wr.atomic.compare_add = 1;
		TRY(post_send_fails(s.qp, wr, wr, EINVAL, what[i]));
	}
	/* In a list: the SEND before it is posted. */
	fill(s.buf, 64, 51);
	ssge = sge_of(&s, 0, 64);
	wr[1] = wr[0];
	wr[1].num_sge = 1;
	sge[0].length = 4;
	wr[0] = send_wr(20, &ssge, 1, IBV_SEND_SIGNALED);
	wr[0].next = &wr[1];
	TRY(e2e_sync(p, "recv posted"));
	TRY(post_send_fails(s.qp, wr, &wr[1], EINVAL, "SEND then a bad atomic"));
	TRY(expect_send_ok(&s, 20, IBV_WC_SEND, 64));
	TRY(expect_no_wc(scq_of(&s), 10, "after the refused atomics"));
	TRY(expect_qp_state(s.qp, IBV_QPS_RTS));
	/* A correct one still works and saw none of the refused ones. */
	sge[0].length = 8;
	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 30;
	wr[0].sg_list = sge;
	wr[0].num_sge = 1;
	wr[0].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr[0].send_flags = IBV_SEND_SIGNALED;
	wr[0].wr.atomic.remote_addr = s.rem.addr + 64;
	wr[0].wr.atomic.rkey = s.rem.rkey;
	wr[0].wr.atomic.compare_add = 5;
	bad = NULL;
	CHECK(!ibv_post_send(s.qp, wr, &bad), "valid FETCH_ADD refused");
	TRY(expect_send_ok(&s, 30, IBV_WC_FETCH_ADD, 8));
	memcpy(&old, s.buf + 512, 8);
	CHECK(old == 1000, "FETCH_ADD returned %llu, expected 1000",
	      (unsigned long long)old);
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int atomic_sge_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	uint64_t v = 1000;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	memcpy(s.buf + 64, &v, 8);
	TRY(post_recv_buf(&s, 1, 4096, 4096));
	TRY(e2e_sync(p, "recv posted"));
	TRY(expect_recv_ok(&s, 1, IBV_WC_RECV, 64, false, 0));
	TRY(e2e_sync(p, "end"));
	memcpy(&v, s.buf + 64, 8);
	CHECK(v == 1005, "remote value %llu, expected 1005 (only the valid atomic)",
	      (unsigned long long)v);
	return e2e_close(&s);
}

/*
 * A full send queue: the head SEND waits for a receive (rnr_retry 7), so
 * nothing retires; a list of max_send_wr more WRs fits but for its last,
 * which gets ENOMEM.  Also a full receive queue.
 */
#define FULL_WR 8

static int sq_full_req(struct e2e_proc *p)
{
	struct ibv_send_wr wr[4 * FULL_WR + 3];
	struct ibv_sge sge[4 * FULL_WR + 3];
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t n, i;

	e2e_default_opts(&o);
	o.max_send_wr = FULL_WR;
	o.max_send_sge = 1;
	o.max_inline = 0;
	TRY(e2e_setup(&s, p, &o));
	n = s.cap.max_send_wr;
	CHECK(n >= FULL_WR && n <= 4 * FULL_WR, "max_send_wr %u", n);
	for (i = 0; i < n + 3; i++) {
		fill(s.buf + i * 64, 64, 60 + i);
		sge[i] = sge_of(&s, i * 64, 64);
		wr[i] = send_wr(0x100 + i, &sge[i], 1, IBV_SEND_SIGNALED);
		wr[i].next = i > 0 && i < n + 2 ? &wr[i + 1] : NULL;
	}
	TRY(e2e_sync(p, "ready"));
	TRY(post_send1(s.qp, &wr[0]));
	TRY(post_send_fails(s.qp, &wr[1], &wr[n], ENOMEM,
			    "max_send_wr + 2 WRs behind a blocked one"));
	TRY(expect_qp_state(s.qp, IBV_QPS_RTS));
	TRY(send_u64(p->peer, n));
	for (i = 0; i < n; i++)
		TRY(expect_send_ok(&s, 0x100 + i, IBV_WC_SEND, 64));
	TRY(expect_no_wc(scq_of(&s), 20, "WRs that did not fit"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int sq_full_resp(struct e2e_proc *p)
{
	struct ibv_recv_wr rwr[4 * FULL_WR + 2];
	struct ibv_sge sge[4 * FULL_WR + 2];
	struct e2e_opts o;
	struct e2e_side s;
	uint64_t n;
	uint32_t m, i, posted;

	e2e_default_opts(&o);
	o.max_recv_wr = FULL_WR;
	o.max_recv_sge = 1;
	TRY(e2e_setup(&s, p, &o));
	m = s.cap.max_recv_wr;
	CHECK(m >= FULL_WR && m <= 4 * FULL_WR, "max_recv_wr %u", m);
	TRY(e2e_sync(p, "ready"));
	TRY(recv_u64(p->peer, &n, E2E_WAIT_MS));
	for (i = 0; i < m + 2; i++) {
		sge[i] = sge_of(&s, 4096 + i * 128, 128);
		rwr[i] = (struct ibv_recv_wr){ .wr_id = 0x200 + i,
					       .sg_list = &sge[i], .num_sge = 1,
					       .next = i < m + 1 ? &rwr[i + 1] : NULL };
	}
	TRY(post_recv_fails(s.qp, rwr, &rwr[m], ENOMEM,
			    "max_recv_wr + 2 receives"));
	posted = m;
	for (i = 0; i < n; i++) {
		TRY(expect_recv_ok(&s, 0x200 + i % (m + 2), IBV_WC_RECV, 64, false, 0));
		TRY(check_fill(s.buf + 4096 + (i % (m + 2)) * 128, 64, 60 + i,
			       "SEND that waited for room"));
		if (posted < n) {
			TRY(post_recv_buf(&s, 0x200 + posted % (m + 2),
					  4096 + (posted % (m + 2)) * 128, 128));
			posted++;
		}
	}
	TRY(e2e_sync(p, "end"));
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ"));
	return e2e_close(&s);
}

/*
 * A SEND posted just before ibv_modify_qp to ERR (rdma_disconnect does
 * that) reaches the responder, as on a NIC, which started it when the
 * doorbell rang; the requester's WQE completes or is flushed (on the
 * wire, its ACK may come back to a QP in ERR).
 */
static int send_then_err_req(struct e2e_proc *p)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_ERR };
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	fill(s.buf + LOCAL_OFF, 64, 41);
	TRY(e2e_sync(p, "recv posted"));
	sge = sge_of(&s, LOCAL_OFF, 64);
	wr = send_wr(1, &sge, 1, IBV_SEND_SIGNALED);
	TRY(post_send1(s.qp, &wr));
	CHECK(!ibv_modify_qp(s.qp, &attr, IBV_QP_STATE),
	      "ibv_modify_qp to ERR failed");
	TRY(poll_one(scq_of(&s), &wc, E2E_WAIT_MS));
	CHECK(wc.wr_id == 1 && (wc.status == IBV_WC_SUCCESS ||
				wc.status == IBV_WC_WR_FLUSH_ERR),
	      "the SEND completed with wr_id %#llx, status %s",
	      (unsigned long long)wc.wr_id, wc_status_name(wc.status));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int send_then_err_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(post_recv_buf(&s, 11, 0, 4096));
	TRY(e2e_sync(p, "recv posted"));
	TRY(expect_recv_ok(&s, 11, IBV_WC_RECV, 64, false, 0));
	TRY(check_fill(s.buf, 64, 41, "the SEND posted before the error"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/*
 * A receive's SGEs are checked as far as the message reaches, as on rxe
 * and mlx5: a zero-length SEND into a receive whose only SGE has a bad
 * key, and a 64-byte SEND into a receive whose second SGE has one, both
 * succeed; a 100-byte SEND that reaches that second SGE fails it (a local
 * protection error there, a remote operational error at the sender).
 */
static int recv_reached_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	fill(s.buf + 8192, 100, 31);
	TRY(e2e_sync(p, "recv posted"));
	wr = send_wr(1, NULL, 0, IBV_SEND_SIGNALED);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 1, IBV_WC_SEND, 0));
	sge = sge_of(&s, 8192, 64);
	wr = send_wr(2, &sge, 1, IBV_SEND_SIGNALED);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 2, IBV_WC_SEND, 64));
	sge = sge_of(&s, 8192, 100);
	wr = send_wr(3, &sge, 1, IBV_SEND_SIGNALED);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_err(scq_of(&s), 3, IBV_WC_REM_OP_ERR, s.qp->qp_num,
		       "a SEND reaching a bad SGE"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int recv_reached_resp(struct e2e_proc *p)
{
	struct ibv_sge sge[2];
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	memset(s.buf, FILLER, o.buf_len);
	sge[0] = sge_of(&s, 0, 64);
	sge[0].lkey ^= 0x80;
	TRY(post_recv1(s.qp, 21, sge, 1));
	sge[0] = sge_of(&s, 4096, 64);
	sge[1] = sge_of(&s, 8192, 64);
	sge[1].lkey ^= 0x80;
	TRY(post_recv1(s.qp, 22, sge, 2));
	sge[0] = sge_of(&s, 12288, 64);
	sge[1] = sge_of(&s, 16384, 64);
	sge[1].lkey ^= 0x80;
	TRY(post_recv1(s.qp, 23, sge, 2));
	TRY(e2e_sync(p, "recv posted"));
	TRY(expect_recv_ok(&s, 21, IBV_WC_RECV, 0, false, 0));
	TRY(expect_recv_ok(&s, 22, IBV_WC_RECV, 64, false, 0));
	TRY(check_fill(s.buf + 4096, 64, 31, "data in the SGE reached"));
	TRY(expect_err(rcq_of(&s), 23, IBV_WC_LOC_PROT_ERR, s.qp->qp_num,
		       "a receive whose bad SGE the message reaches"));
	TRY(e2e_sync(p, "end"));
	TRY(check_untouched(s.buf, 0, 4096, "behind the bad key"));
	TRY(check_untouched(s.buf, 4096 + 64, 8192 - 64, "past the SGE reached"));
	TRY(check_untouched(s.buf, 16384, 4096, "behind the bad key"));
	return e2e_close(&s);
}

/* ================================================================== table */

#define PAIR(g, n, req, resp)                                                  \
	{ .group = g, .name = n, .nroles = 2, .role = { req, resp } }

/* The "errors" entries follow err_cases, in order and by name. */
const struct e2e_test e2e_error_tests[] = {
	PAIR("errors", "bad_rkey_write", err_req_0, err_resp_0),
	PAIR("errors", "bad_rkey_read", err_req_1, err_resp_1),
	PAIR("errors", "bad_rkey_atomic", err_req_2, err_resp_2),
	PAIR("errors", "bad_rkey_write_imm", err_req_3, err_resp_3),
	PAIR("errors", "range_write", err_req_4, err_resp_4),
	PAIR("errors", "range_read", err_req_5, err_resp_5),
	PAIR("errors", "range_atomic", err_req_6, err_resp_6),
	PAIR("errors", "mr_no_remote_write", err_req_7, err_resp_7),
	PAIR("errors", "mr_no_remote_read", err_req_8, err_resp_8),
	PAIR("errors", "mr_no_remote_atomic_cas", err_req_9, err_resp_9),
	PAIR("errors", "mr_no_remote_atomic_faa", err_req_10, err_resp_10),
	PAIR("errors", "qp_no_remote_write", err_req_11, err_resp_11),
	PAIR("errors", "qp_no_remote_read", err_req_12, err_resp_12),
	PAIR("errors", "qp_no_remote_atomic", err_req_13, err_resp_13),
	PAIR("errors", "iova_by_address", err_req_14, err_resp_14),
	PAIR("errors", "atomic_misaligned", err_req_15, err_resp_15),
	PAIR("errors", "bad_lkey_send", err_req_16, err_resp_16),
	PAIR("errors", "bad_lkey_write", err_req_17, err_resp_17),
	PAIR("errors", "bad_lkey_read", err_req_18, err_resp_18),
	PAIR("errors", "local_range_send", err_req_19, err_resp_19),
	PAIR("errors", "read_into_readonly", err_req_20, err_resp_20),
	PAIR("errors", "atomic_into_readonly", err_req_21, err_resp_21),
	PAIR("errors", "recv_too_small", err_req_22, err_resp_22),
	PAIR("errors", "recv_into_readonly", err_req_23, err_resp_23),
	PAIR("errors", "recv_sges_reached", recv_reached_req, recv_reached_resp),
	PAIR("errors", "send_then_err", send_then_err_req, send_then_err_resp),
	PAIR("retry", "rnr_exhausted", rnr_req, rnr_resp),
	PAIR("retry", "rnr_forever", rnr_forever_req, rnr_forever_resp),
	{ .group = "retry", .name = "no_peer_qp", .nroles = 1,
	  .role = { retry_no_qp } },
	PAIR("retry", "peer_in_reset", retry_req, retry_reset_resp),
	PAIR("retry", "peer_in_init", retry_req, retry_init_resp),
	PAIR("retry", "peer_late_rtr", late_rtr_req, late_rtr_resp),
	PAIR("post", "not_rts", post_state_req, post_state_resp),
	PAIR("post", "bad_opcode", bad_opcode_req, bad_opcode_resp),
	PAIR("post", "too_many_sge", too_many_sge_req, too_many_sge_resp),
	PAIR("post", "atomic_sge", atomic_sge_req, atomic_sge_resp),
	PAIR("post", "queue_full", sq_full_req, sq_full_resp),
	{ 0 },
};
