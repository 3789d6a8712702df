// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory windows (group "mw"): type 1 windows bound with ibv_bind_mw,
 * type 2 windows bound through a QP (IBV_WR_BIND_MW, ibv_wr_bind_mw) and
 * invalidated locally (LOCAL_INV) or by the peer (SEND_WITH_INV).  The
 * responder owns the memory and its windows; the requester reaches it
 * through their rkeys.  Every access through a window lands exactly where
 * the window says (the responder compares its whole buffer with what it
 * expects), and every access a window does not allow fails with the
 * status of the rule it breaks.
 *
 * An access that fails puts both QPs in ERR; where a test goes on after
 * one, both sides take their QP through RESET back to RTS.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

#define FILLER 0xee /* bytes nobody may write */
#define W_OFF 8192 /* the window's place in the responder's buffer */
#define W_LEN 4096
#define W_SEED 7 /* the window's bytes are pattern W_SEED */
#define LOCAL_OFF 65536 /* requester: source of WRITEs, target of READs */
#define RESULT_OFF 61440 /* requester: where atomics return the old value */
#define RECV_OFF 131072 /* responder: receive buffers */
#define ADD 0x1000000001ull /* what FETCH_AND_ADDs add */

#define MW_ALL                                                                 \
	(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE |                     \
	 IBV_ACCESS_REMOTE_ATOMIC)
/* The responder's buffer: everything, and windows may be bound to it. */
#define MR_BINDABLE (E2E_ACCESS_ALL | IBV_ACCESS_MW_BIND)

#define WR IBV_WR_RDMA_WRITE
#define RD IBV_WR_RDMA_READ
#define FAA IBV_WR_ATOMIC_FETCH_AND_ADD
#define CAS IBV_WR_ATOMIC_CMP_AND_SWP

/* A window as the responder announces it. */
struct win {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

static uint64_t get_u64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void put_u64(void *p, uint64_t v)
{
	memcpy(p, &v, sizeof(v));
}

static bool is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static enum ibv_wc_opcode wc_opcode_of(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	default:
		return IBV_WC_SEND;
	}
}

/* ---- the responder's memory ---------------------------------------------- */

/*
 * The responder's buffer and the image of what it must hold: filler, and
 * pattern W_SEED where the window goes.
 */
static uint8_t *resp_init(struct e2e_side *s)
{
	uint8_t *want = malloc(s->o.buf_len);

	if (!want) {
		FAIL("out of memory");
		return NULL;
	}
	memset(s->buf, FILLER, s->o.buf_len);
	fill(s->buf + W_OFF, W_LEN, W_SEED);
	memcpy(want, s->buf, s->o.buf_len);
	return want;
}

/* What a successful WRITE of the requester (see do_access) leaves. */
static void want_write(uint8_t *want, uint64_t off, uint32_t len, uint64_t wr_id)
{
	fill(want + off, len, (uint32_t)wr_id);
}

static void want_add(uint8_t *want, uint64_t off)
{
	put_u64(want + off, get_u64(want + off) + ADD);
}

/* The whole buffer, byte for byte, is what the image says. */
static int resp_check(struct e2e_side *s, const uint8_t *want, const char *what)
{
	return check_bytes(s->buf, want, s->o.buf_len, what);
}

/* ---- binding, invalidating ----------------------------------------------- */

static struct ibv_mw *alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ibv_mw *mw = ibv_alloc_mw(pd, type);

	if (!mw)
		FAIL("ibv_alloc_mw(type %d): %s", type, strerror(errno));
	else if (mw->type != type || mw->pd != pd)
		FAIL("ibv_alloc_mw: type %d pd %p, asked %d %p", mw->type,
		     (void *)mw->pd, type, (void *)pd);
	else if (!(mw->rkey >> 8))
		FAIL("ibv_alloc_mw: rkey %#x has no index", mw->rkey);
	else
		return mw;
	return NULL;
}

static int expect_local_ok(struct e2e_side *s, struct ibv_qp *qp, uint64_t wr_id,
			   enum ibv_wc_opcode op, const char *what)
{
	struct wc_want w = {
		.wr_id = wr_id,
		.status = IBV_WC_SUCCESS,
		.opcode = op,
		.qp_num = qp->qp_num,
	};

	return expect_wc(scq_of(s), &w, what);
}

/*
 * ibv_bind_mw of a type 1 window: posted, the window takes the next key
 * (ibv_inc_rkey), and the bind completes with IBV_WC_BIND_MW.
 */
static int bind1(struct e2e_side *s, struct ibv_qp *qp, struct ibv_mw *mw,
		 struct ibv_mr *mr, uint64_t addr, uint64_t len,
		 unsigned int access, uint64_t wr_id)
{
	struct ibv_mw_bind bind = {
		.wr_id = wr_id,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = addr, .length = len,
			       .mw_access_flags = access },
	};
	uint32_t old = mw->rkey;
	int ret = ibv_bind_mw(qp, mw, &bind);

	CHECK(!ret, "ibv_bind_mw: %s", strerror(ret));
	CHECK(mw->rkey == ibv_inc_rkey(old) && mw->rkey != old,
	      "after ibv_bind_mw the window's rkey is %#x, was %#x: expected %#x",
	      mw->rkey, old, ibv_inc_rkey(old));
	return expect_local_ok(s, qp, wr_id, IBV_WC_BIND_MW, "ibv_bind_mw");
}

/* Post IBV_WR_BIND_MW (type 2): the window is to take rkey. */
static int post_bind2(struct ibv_qp *qp, struct ibv_mw *mw, uint32_t rkey,
		      struct ibv_mr *mr, uint64_t addr, uint64_t len,
		      unsigned int access, uint64_t wr_id)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = IBV_SEND_SIGNALED,
	};

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = mr, .addr = addr, .length = len, .mw_access_flags = access,
	};
	return post_send1(qp, &wr);
}

static int bind2(struct e2e_side *s, struct ibv_qp *qp, struct ibv_mw *mw,
		 uint32_t rkey, struct ibv_mr *mr, uint64_t addr, uint64_t len,
		 unsigned int access, uint64_t wr_id)
{
	TRY(post_bind2(qp, mw, rkey, mr, addr, len, access, wr_id));
	return expect_local_ok(s, qp, wr_id, IBV_WC_BIND_MW, "IBV_WR_BIND_MW");
}

static int post_local_inv(struct ibv_qp *qp, uint32_t rkey, uint64_t wr_id)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.opcode = IBV_WR_LOCAL_INV,
		.send_flags = IBV_SEND_SIGNALED,
		.invalidate_rkey = rkey,
	};

	return post_send1(qp, &wr);
}

/* The window over [W_OFF, W_OFF + W_LEN) of the responder's buffer. */
static int bind_window(struct e2e_side *s, struct ibv_mw *mw, unsigned int access,
		       uint64_t wr_id, uint32_t *rkey)
{
	uint64_t addr = s->base + W_OFF;

	if (mw->type == IBV_MW_TYPE_1) {
		TRY(bind1(s, s->qp, mw, s->mr, addr, W_LEN, access, wr_id));
		*rkey = mw->rkey;
		return 0;
	}
	*rkey = ibv_inc_rkey(mw->rkey);
	return bind2(s, s->qp, mw, *rkey, s->mr, addr, W_LEN, access, wr_id);
}

static int send_win(struct e2e_side *s, uint32_t rkey)
{
	struct win w = { s->base + W_OFF, rkey, W_LEN };

	return msg_send(s->p->peer, &w, sizeof(w));
}

static int recv_win(struct e2e_side *s, struct win *w)
{
	TRY(msg_recv(s->p->peer, w, sizeof(*w), E2E_WAIT_MS));
	CHECK(w->rkey != s->rem.rkey, "the window's rkey %#x is the MR's",
	      w->rkey);
	return 0;
}

/* ---- the requester's accesses -------------------------------------------- */

/*
 * One RDMA access to raddr through rkey from qp, completing with want.
 * A WRITE carries pattern wr_id; a READ's data is checked against the
 * responder's pattern (raddr is win_off into it, at W_OFF); a
 * FETCH_AND_ADD adds ADD and must return what the pattern held there.
 */
static int do_access(struct e2e_side *s, struct ibv_qp *qp, uint64_t wr_id,
		     enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
		     uint32_t len, int64_t win_off, enum ibv_wc_status want)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_sge sge;
	struct wc_want w = {
		.wr_id = wr_id,
		.status = want,
		.opcode = wc_opcode_of(op),
		.byte_len = len,
		.qp_num = qp->qp_num,
		.flush = want != IBV_WC_SUCCESS,
	};
	uint8_t image[W_LEN];
	char what[96];

	CHECK(len <= W_LEN, "test bug: an access of %u bytes", len);
	wr.sg_list = &sge;
	if (is_atomic(op)) {
		sge = sge_of(s, RESULT_OFF, 8);
		memset(s->buf + RESULT_OFF, FILLER, 8);
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = ADD;
	} else {
		sge = sge_of(s, LOCAL_OFF, len);
		if (op == IBV_WR_RDMA_WRITE)
			fill(s->buf + LOCAL_OFF, len, (uint32_t)wr_id);
		else
			memset(s->buf + LOCAL_OFF, FILLER, len);
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	snprintf(what, sizeof(what), "opcode %d of %u bytes at pattern offset %lld, rkey %#x",
		 op, len, (long long)win_off, rkey);
	TRY(post_send1(qp, &wr));
	TRY(expect_wc(scq_of(s), &w, what));
	if (want != IBV_WC_SUCCESS) {
		/* Nothing came back: a READ's or atomic's target is filler. */
		uint32_t n = is_atomic(op) ? 8 : len;

		if (op == IBV_WR_RDMA_WRITE)
			return 0;
		memset(image, FILLER, n);
		return check_bytes(s->buf + sge.addr - s->base, image, n,
				   "local memory of a failed access");
	}
	fill(image, W_LEN, W_SEED);
	if (op == IBV_WR_RDMA_READ)
		return check_bytes(s->buf + LOCAL_OFF, image + win_off, len,
				   "data READ through the window");
	if (is_atomic(op))
		CHECK(get_u64(s->buf + RESULT_OFF) == get_u64(image + win_off),
		      "FETCH_AND_ADD through the window returned %#llx, expected %#llx",
		      (unsigned long long)get_u64(s->buf + RESULT_OFF),
		      (unsigned long long)get_u64(image + win_off));
	return 0;
}

/*
 * The same, at offset off of the announced window (which lies somewhere
 * in the responder's pattern at W_OFF).
 */
static int win_access(struct e2e_side *s, struct ibv_qp *qp, const struct win *w,
		      uint64_t wr_id, enum ibv_wr_opcode op, int64_t off,
		      uint32_t len, enum ibv_wc_status want)
{
	int64_t pat_off = (int64_t)(w->addr - s->rem.addr) - W_OFF + off;

	return do_access(s, qp, wr_id, op, w->addr + off, w->rkey, len, pat_off,
			 want);
}

/* After a failed access: the requester's QP in ERR, back to RTS. */
static int req_recover(struct e2e_side *s, struct ibv_qp *qp, uint32_t dest_qpn)
{
	return e2e_recover(s, qp, dest_qpn);
}

/* The responder's side of it: the access error it saw, then RTS again. */
static int resp_recover(struct e2e_side *s, struct ibv_qp *qp, uint32_t dest_qpn)
{
	TRY(expect_async(s->ctx, qp, IBV_EVENT_QP_ACCESS_ERR, E2E_WAIT_MS));
	return e2e_recover(s, qp, dest_qpn);
}

static void resp_opts(struct e2e_opts *o)
{
	e2e_default_opts(o);
	o->mr_access = MR_BINDABLE;
}

/* ====================================================== type 1: access */

/*
 * WRITE, READ and FETCH_AND_ADD through a bound type 1 window reach the
 * bytes of the MR the window names, and only those.  The window's rkey is
 * not the MR's, and binding changed it by one key byte.
 */
static int type1_access_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct win w;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(recv_win(&s, &w));
	TRY(win_access(&s, s.qp, &w, 0x11, IBV_WR_RDMA_WRITE, 100, 1000,
		       IBV_WC_SUCCESS));
	TRY(win_access(&s, s.qp, &w, 0x12, IBV_WR_RDMA_READ, 2000, 2096,
		       IBV_WC_SUCCESS));
	TRY(win_access(&s, s.qp, &w, 0x13, IBV_WR_ATOMIC_FETCH_AND_ADD,
		       W_LEN - 8, 8, IBV_WC_SUCCESS));
	/* The first bytes and the last byte of the window. */
	TRY(win_access(&s, s.qp, &w, 0x14, IBV_WR_RDMA_WRITE, 0, 1,
		       IBV_WC_SUCCESS));
	TRY(win_access(&s, s.qp, &w, 0x15, IBV_WR_RDMA_WRITE, W_LEN - 1, 1,
		       IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int type1_access_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mw *mw;
	uint32_t rkey, alloc_rkey;
	uint8_t *want;

	resp_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	want = resp_init(&s);
	TRY(!want);
	mw = alloc_mw(s.pd, IBV_MW_TYPE_1);
	TRY(!mw);
	alloc_rkey = mw->rkey;
	TRY(bind_window(&s, mw, MW_ALL, 0x21, &rkey));
	CHECK(rkey >> 8 == alloc_rkey >> 8,
	      "binding moved the window's key index: %#x -> %#x", alloc_rkey, rkey);
	TRY(send_win(&s, rkey));
	TRY(e2e_sync(p, "end"));
	want_write(want, W_OFF + 100, 1000, 0x11);
	want_add(want, W_OFF + W_LEN - 8);
	want_write(want, W_OFF, 1, 0x14);
	want_write(want, W_OFF + W_LEN - 1, 1, 0x15);
	TRY(resp_check(&s, want, "responder buffer"));
	/* A window's key is for remote access: no local SGE takes it. */
	{
		struct ibv_sge sge = { s.base + W_OFF, 64, rkey };
		struct ibv_send_wr wr = { .wr_id = 0x22, .sg_list = &sge,
					  .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED };

		TRY(post_send1(s.qp, &wr));
		TRY(expect_err(scq_of(&s), 0x22, IBV_WC_LOC_PROT_ERR,
			       s.qp->qp_num, "a SEND from a window's key"));
	}
	CHECK(!ibv_dealloc_mw(mw), "ibv_dealloc_mw failed");
	free(want);
	return e2e_close(&s);
}

/*
 * A type 1 window is bound to no QP: requests arriving at any QP of its
 * PD reach it, those arriving at a QP of another PD do not.
 */
static int type1_any_qp_req(struct e2e_proc *p)
{
	struct ibv_qp *qpb, *qpc;
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t dest_b, dest_c;
	struct win w;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(e2e_extra_qp(&s, s.pd, &qpb, &dest_b));
	TRY(e2e_extra_qp(&s, s.pd, &qpc, &dest_c));
	TRY(recv_win(&s, &w));
	TRY(win_access(&s, qpb, &w, 0x26, WR, 300, 200, IBV_WC_SUCCESS));
	TRY(win_access(&s, s.qp, &w, 0x27, RD, 2000, 300, IBV_WC_SUCCESS));
	TRY(win_access(&s, qpb, &w, 0x28, FAA, 1024, 8, IBV_WC_SUCCESS));
	TRY(win_access(&s, qpc, &w, 0x29, WR, 3000, 64, IBV_WC_REM_ACCESS_ERR));
	TRY(expect_qp_state(qpc, IBV_QPS_ERR));
	TRY(e2e_sync(p, "end"));
	CHECK(!ibv_destroy_qp(qpb) && !ibv_destroy_qp(qpc), "ibv_destroy_qp failed");
	return e2e_close(&s);
}

static int type1_any_qp_resp(struct e2e_proc *p)
{
	struct ibv_qp *qpb, *qpc;
	struct ibv_pd *other;
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mw *mw;
	uint32_t dest_b, dest_c, rkey;
	uint8_t *want;

	resp_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	other = ibv_alloc_pd(s.ctx);
	CHECK(other, "ibv_alloc_pd: %s", strerror(errno));
	TRY(e2e_extra_qp(&s, s.pd, &qpb, &dest_b));
	TRY(e2e_extra_qp(&s, other, &qpc, &dest_c));
	want = resp_init(&s);
	TRY(!want);
	mw = alloc_mw(s.pd, IBV_MW_TYPE_1);
	TRY(!mw);
	TRY(bind_window(&s, mw, MW_ALL, 0x2a, &rkey));
	TRY(send_win(&s, rkey));
	TRY(expect_async(s.ctx, qpc, IBV_EVENT_QP_ACCESS_ERR, E2E_WAIT_MS));
	TRY(e2e_sync(p, "end"));
	TRY(expect_qp_state(s.qp, IBV_QPS_RTS));
	TRY(expect_qp_state(qpb, IBV_QPS_RTS));
	want_write(want, W_OFF + 300, 200, 0x26);
	want_add(want, W_OFF + 1024);
	TRY(resp_check(&s, want, "responder buffer"));
	CHECK(!ibv_dealloc_mw(mw), "ibv_dealloc_mw failed");
	CHECK(!ibv_destroy_qp(qpb) && !ibv_destroy_qp(qpc), "ibv_destroy_qp failed");
	CHECK(!ibv_dealloc_pd(other), "ibv_dealloc_pd failed");
	free(want);
	return e2e_close(&s);
}

/* ====================================================== type 1: rebind */

#define REBIND_OFF 2048 /* the rebound window: the second half of the first */

/*
 * Rebinding a type 1 window gives it the next key byte (ibv_inc_rkey) and
 * the new range: the new key reaches the new range; the old key fails
 * even inside the new range, and the new key outside it.
 */
static int type1_rebind_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct win w1, w2, stale;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(recv_win(&s, &w1));
	TRY(win_access(&s, s.qp, &w1, 0x31, IBV_WR_RDMA_WRITE, 16, 100,
		       IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "rebind now"));
	TRY(recv_win(&s, &w2));
	CHECK(w2.rkey == ibv_inc_rkey(w1.rkey),
	      "rebound rkey %#x, expected ibv_inc_rkey(%#x) = %#x", w2.rkey,
	      w1.rkey, ibv_inc_rkey(w1.rkey));
	TRY(win_access(&s, s.qp, &w2, 0x32, IBV_WR_RDMA_WRITE, 0, 64,
		       IBV_WC_SUCCESS));
	TRY(win_access(&s, s.qp, &w2, 0x33, IBV_WR_RDMA_READ, 64, 1024,
		       IBV_WC_SUCCESS));
	/* The old key, at an address the window covers now. */
	stale = w2;
	stale.rkey = w1.rkey;
	TRY(win_access(&s, s.qp, &stale, 0x34, IBV_WR_RDMA_WRITE, 128, 64,
		       IBV_WC_REM_ACCESS_ERR));
	TRY(req_recover(&s, s.qp, s.rem.qpn));
	/* The new key where only the old range was. */
	stale = w1;
	stale.rkey = w2.rkey;
	TRY(win_access(&s, s.qp, &stale, 0x35, IBV_WR_RDMA_READ, 0, 64,
		       IBV_WC_REM_ACCESS_ERR));
	TRY(req_recover(&s, s.qp, s.rem.qpn));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int type1_rebind_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mw *mw;
	uint32_t rkey;
	uint8_t *want;
	struct win w;

	resp_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	want = resp_init(&s);
	TRY(!want);
	mw = alloc_mw(s.pd, IBV_MW_TYPE_1);
	TRY(!mw);
	TRY(bind_window(&s, mw, MW_ALL, 0x41, &rkey));
	TRY(send_win(&s, rkey));
	TRY(e2e_sync(p, "rebind now"));
	TRY(bind1(&s, s.qp, mw, s.mr, s.base + W_OFF + REBIND_OFF,
		  W_LEN - REBIND_OFF, MW_ALL, 0x42));
	w = (struct win){ s.base + W_OFF + REBIND_OFF, mw->rkey,
			  W_LEN - REBIND_OFF };
	TRY(msg_send(p->peer, &w, sizeof(w)));
	TRY(resp_recover(&s, s.qp, s.rem.qpn));
	TRY(resp_recover(&s, s.qp, s.rem.qpn));
	TRY(e2e_sync(p, "end"));
	want_write(want, W_OFF + 16, 100, 0x31);
	want_write(want, W_OFF + REBIND_OFF, 64, 0x32);
	TRY(resp_check(&s, want, "responder buffer"));
	CHECK(!ibv_dealloc_mw(mw), "ibv_dealloc_mw failed");
	free(want);
	return e2e_close(&s);
}

/* ========================================= outside a window's range, rights */

/*
 * One access the window allows, then one it does not: outside its range
 * (but inside the MR), or beyond its rights (which the MR has).  The last
 * cases bind over an MR with local write and MW_BIND only: the IB spec
 * (and rxe, mlx5) ask no remote right of the MR, only local write for a
 * window that grants remote write; the window's rights are what count.
 */
#define MR_LOCAL_BIND (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND)

struct acc_case {
	const char *name;
	enum ibv_mw_type type;
	unsigned int mr_access; /* the responder's MR's; 0: MR_BINDABLE */
	unsigned int access; /* the window's rights */
	enum ibv_wr_opcode good_op;
	int64_t good_off; /* from the window's start */
	uint32_t good_len;
	enum ibv_wr_opcode bad_op;
	int64_t bad_off;
	uint32_t bad_len;
};

static const struct acc_case acc_cases[] = {
	{ "type1_write_past_end", IBV_MW_TYPE_1, 0, MW_ALL, WR, 0, W_LEN, WR, 1,
	  W_LEN },
	{ "type1_read_before_start", IBV_MW_TYPE_1, 0, MW_ALL, RD, 0, W_LEN, RD,
	  -1, 2 },
	{ "type1_atomic_past_end", IBV_MW_TYPE_1, 0, MW_ALL, FAA, W_LEN - 8, 8,
	  FAA, W_LEN, 8 },
	{ "type1_no_write_right", IBV_MW_TYPE_1, 0, IBV_ACCESS_REMOTE_READ, RD, 0,
	  64, WR, 0, 64 },
	{ "type1_no_read_right", IBV_MW_TYPE_1, 0, IBV_ACCESS_REMOTE_WRITE, WR, 0,
	  64, RD, 0, 64 },
	{ "type1_no_atomic_right", IBV_MW_TYPE_1, 0,
	  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE, WR, 0, 8, CAS, 0, 8 },
	{ "type2_write_past_end", IBV_MW_TYPE_2, 0, MW_ALL, WR, 0, W_LEN, WR, 1,
	  W_LEN },
	{ "type2_no_write_right", IBV_MW_TYPE_2, 0, IBV_ACCESS_REMOTE_READ, RD, 0,
	  64, WR, 0, 64 },
	{ "type1_mr_local_write_only", IBV_MW_TYPE_1, MR_LOCAL_BIND,
	  IBV_ACCESS_REMOTE_WRITE, WR, 0, 64, RD, 0, 64 },
	{ "type2_mr_local_write_only", IBV_MW_TYPE_2, MR_LOCAL_BIND,
	  IBV_ACCESS_REMOTE_WRITE, WR, 0, 64, RD, 0, 64 },
	/* Local write among a window's rights, as rdma-core's own tests bind
	 * one: rxe and mlx5 take it; a window grants only remote rights. */
	{ "type1_rights_with_local_write", IBV_MW_TYPE_1, MR_LOCAL_BIND,
	  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, WR, 0, 64, RD, 0,
	  64 },
	{ "type2_rights_with_local_write", IBV_MW_TYPE_2, MR_LOCAL_BIND,
	  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, WR, 0, 64, RD, 0,
	  64 },
};

#define N_ACC_CASES (sizeof(acc_cases) / sizeof(acc_cases[0]))

static int acc_req(struct e2e_proc *p, const struct acc_case *c)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct win w;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(recv_win(&s, &w));
	TRY(win_access(&s, s.qp, &w, 0x51, c->good_op, c->good_off, c->good_len,
		       IBV_WC_SUCCESS));
	TRY(win_access(&s, s.qp, &w, 0x52, c->bad_op, c->bad_off, c->bad_len,
		       IBV_WC_REM_ACCESS_ERR));
	TRY(expect_qp_state(s.qp, IBV_QPS_ERR));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int acc_resp(struct e2e_proc *p, const struct acc_case *c)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mw *mw;
	uint32_t rkey;
	uint8_t *want;

	resp_opts(&o);
	if (c->mr_access)
		o.mr_access = c->mr_access;
	TRY(e2e_setup(&s, p, &o));
	want = resp_init(&s);
	TRY(!want);
	mw = alloc_mw(s.pd, c->type);
	TRY(!mw);
	TRY(bind_window(&s, mw, c->access, 0x61, &rkey));
	TRY(send_win(&s, rkey));
	TRY(expect_async(s.ctx, s.qp, IBV_EVENT_QP_ACCESS_ERR, E2E_WAIT_MS));
	TRY(expect_qp_state(s.qp, IBV_QPS_ERR));
	TRY(e2e_sync(p, "end"));
	if (c->good_op == WR)
		want_write(want, W_OFF + c->good_off, c->good_len, 0x51);
	if (c->good_op == FAA)
		want_add(want, W_OFF + c->good_off);
	TRY(resp_check(&s, want, "responder buffer"));
	CHECK(!ibv_dealloc_mw(mw), "ibv_dealloc_mw failed");
	free(want);
	return e2e_close(&s);
}

#define ACC_FNS(i)                                                             \
	static int acc_req_##i(struct e2e_proc *p)                             \
	{                                                                      \
		return acc_req(p, &acc_cases[i]);                              \
	}                                                                      \
	static int acc_resp_##i(struct e2e_proc *p)                            \
	{                                                                      \
		return acc_resp(p, &acc_cases[i]);                             \
	}
ACC_FNS(0) ACC_FNS(1) ACC_FNS(2) ACC_FNS(3) ACC_FNS(4) ACC_FNS(5) ACC_FNS(6)
ACC_FNS(7) ACC_FNS(8) ACC_FNS(9) ACC_FNS(10) ACC_FNS(11)
_Static_assert(N_ACC_CASES == 12, "one ACC_FNS per case");

/* ================================================= unbound windows */

/*
 * A window never bound, and a type 1 window unbound again (ibv_bind_mw
 * with no MR and length 0): their rkeys reach nothing, though the MR's
 * own rkey reaches the same bytes.
 */
static int unbound_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct win never, unbound, mr;
	int i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(msg_recv(p->peer, &never, sizeof(never), E2E_WAIT_MS));
	TRY(recv_win(&s, &unbound));
	mr = never;
	mr.rkey = s.rem.rkey;
	TRY(win_access(&s, s.qp, &mr, 0x71, WR, 0, 64, IBV_WC_SUCCESS));
	TRY(win_access(&s, s.qp, &unbound, 0x72, WR, 64, 64, IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "unbind now"));
	/* The key the window has after unbinding. */
	TRY(recv_win(&s, &unbound));
	for (i = 0; i < 2; i++) {
		const struct win *w = i ? &unbound : &never;

		TRY(win_access(&s, s.qp, w, 0x73 + i, i ? RD : WR, 128, 64,
			       IBV_WC_REM_ACCESS_ERR));
		TRY(req_recover(&s, s.qp, s.rem.qpn));
	}
	TRY(win_access(&s, s.qp, &mr, 0x75, RD, 1024, 64, IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int unbound_resp(struct e2e_proc *p)
{
	struct ibv_mw_bind unbind = { .wr_id = 0x82,
				      .send_flags = IBV_SEND_SIGNALED };
	struct ibv_mw *never, *mw;
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t rkey;
	uint8_t *want;
	struct win w;
	int ret, i;

	resp_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	want = resp_init(&s);
	TRY(!want);
	never = alloc_mw(s.pd, IBV_MW_TYPE_1);
	TRY(!never);
	mw = alloc_mw(s.pd, IBV_MW_TYPE_1);
	TRY(!mw);
	w = (struct win){ s.base + W_OFF, never->rkey, W_LEN };
	TRY(msg_send(p->peer, &w, sizeof(w)));
	TRY(bind_window(&s, mw, MW_ALL, 0x81, &rkey));
	TRY(send_win(&s, rkey));
	TRY(e2e_sync(p, "unbind now"));
	ret = ibv_bind_mw(s.qp, mw, &unbind);
	CHECK(!ret, "ibv_bind_mw to no MR: %s", strerror(ret));
	TRY(expect_local_ok(&s, s.qp, 0x82, IBV_WC_BIND_MW, "unbinding ibv_bind_mw"));
	/* The unbinding bind moved the key on too. */
	CHECK(mw->rkey == ibv_inc_rkey(rkey), "rkey %#x after unbinding, expected %#x",
	      mw->rkey, ibv_inc_rkey(rkey));
	TRY(send_win(&s, mw->rkey));
	for (i = 0; i < 2; i++)
		TRY(resp_recover(&s, s.qp, s.rem.qpn));
	TRY(e2e_sync(p, "end"));
	want_write(want, W_OFF, 64, 0x71);
	want_write(want, W_OFF + 64, 64, 0x72);
	TRY(resp_check(&s, want, "responder buffer"));
	CHECK(!ibv_dealloc_mw(never) && !ibv_dealloc_mw(mw), "ibv_dealloc_mw failed");
	free(want);
	return e2e_close(&s);
}

/* ============================================================ bind errors */

/*
 * Binds that break a rule complete with IBV_WC_MW_BIND_ERR (and, as any
 * failed WR, put the QP in ERR: the SEND behind is flushed).  Each case
 * first makes the same bind with that one rule kept, which succeeds.  One
 * process, its QP connected to itself.
 */
enum bind_break {
	NO_MW_BIND, /* the MR was registered without IBV_ACCESS_MW_BIND */
	MR_OTHER_PD, /* the MR is of another PD than the window and QP */
	QP_OTHER_PD, /* window and MR are of another PD than the QP */
	MW_OTHER_PD, /* the window is of another PD than the QP and MR */
	PAST_MR, /* the range runs past the MR's end */
	BEFORE_MR, /* the range starts before the MR */
	NO_LOCAL_WRITE, /* remote writers, but the MR has no local write */
	BOUND_TWICE, /* a bound type 2 window, not invalidated */
};

struct bind_case {
	const char *name;
	enum ibv_mw_type type;
	enum bind_break rule;
	unsigned int access; /* the failing bind's rights */
};

static const struct bind_case bind_cases[] = {
	{ "bind_err_type1_no_mw_bind", IBV_MW_TYPE_1, NO_MW_BIND, MW_ALL },
	{ "bind_err_type2_no_mw_bind", IBV_MW_TYPE_2, NO_MW_BIND, MW_ALL },
	{ "bind_err_type2_mr_other_pd", IBV_MW_TYPE_2, MR_OTHER_PD, MW_ALL },
	{ "bind_err_type1_qp_other_pd", IBV_MW_TYPE_1, QP_OTHER_PD, MW_ALL },
	{ "bind_err_type2_mw_other_pd", IBV_MW_TYPE_2, MW_OTHER_PD, MW_ALL },
	{ "bind_err_type1_past_mr", IBV_MW_TYPE_1, PAST_MR, MW_ALL },
	{ "bind_err_type2_before_mr", IBV_MW_TYPE_2, BEFORE_MR, MW_ALL },
	{ "bind_err_type1_write_no_local_write", IBV_MW_TYPE_1, NO_LOCAL_WRITE,
	  IBV_ACCESS_REMOTE_WRITE },
	{ "bind_err_type2_atomic_no_local_write", IBV_MW_TYPE_2, NO_LOCAL_WRITE,
	  IBV_ACCESS_REMOTE_ATOMIC },
	{ "bind_err_type2_bound_twice", IBV_MW_TYPE_2, BOUND_TWICE, MW_ALL },
};

#define N_BIND_CASES (sizeof(bind_cases) / sizeof(bind_cases[0]))
#define BIND_MR_LEN 65536 /* the MRs bound to: the start of the buffer */

/* A QP connected to itself, in RTS. */
static int self_connect(struct e2e_side *s, struct e2e_proc *p,
			const struct e2e_opts *o)
{
	TRY(e2e_open(s, p, o));
	s->rem = (struct e2e_remote){
		.qpn = s->qp->qp_num,
		.rkey = s->mr->rkey,
		.addr = s->base,
		.len = s->o.buf_len,
		.psn = s->o.psn,
	};
	memcpy(s->rem.gid, s->gid.raw, 16);
	return e2e_connect(s);
}

/* Bind mw as the case's type binds; the completion is checked by the caller. */
static int post_bind(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mr *mr,
		     uint64_t addr, uint64_t len, unsigned int access,
		     uint64_t wr_id)
{
	struct ibv_mw_bind bind = {
		.wr_id = wr_id,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mr, .addr = addr, .length = len,
			       .mw_access_flags = access },
	};
	int ret;

	if (mw->type == IBV_MW_TYPE_2)
		return post_bind2(qp, mw, ibv_inc_rkey(mw->rkey), mr, addr, len,
				  access, wr_id);
	ret = ibv_bind_mw(qp, mw, &bind);
	CHECK(!ret, "ibv_bind_mw: %s", strerror(ret));
	return 0;
}

static int bind_err(struct e2e_proc *p, const struct bind_case *c)
{
	unsigned int mr_access = MR_BINDABLE, ctl_access = c->access;
	struct ibv_pd *other = NULL, *mw_pd, *mr_pd;
	struct ibv_mw *ctl, *mw;
	struct ibv_mr *mr;
	uint64_t addr, len = 4096;
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_sge sge;
	struct ibv_send_wr wr = { .wr_id = 3, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	uint32_t qpn;

	resp_opts(&o);
	TRY(self_connect(&s, p, &o));
	qpn = s.qp->qp_num;
	mw_pd = mr_pd = s.pd;
	if (c->rule == MR_OTHER_PD || c->rule == QP_OTHER_PD ||
	    c->rule == MW_OTHER_PD) {
		other = ibv_alloc_pd(s.ctx);
		CHECK(other, "ibv_alloc_pd: %s", strerror(errno));
		if (c->rule != MW_OTHER_PD)
			mr_pd = other;
		if (c->rule != MR_OTHER_PD)
			mw_pd = other;
	}
	if (c->rule == NO_MW_BIND)
		mr_access = E2E_ACCESS_ALL;
	if (c->rule == NO_LOCAL_WRITE) {
		mr_access = IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND;
		ctl_access = IBV_ACCESS_REMOTE_READ;
	}
	mr = e2e_reg(mr_pd, s.buf, BIND_MR_LEN, mr_access);
	TRY(!mr);
	addr = (uintptr_t)s.buf + 4096;
	if (c->rule == PAST_MR)
		addr = (uintptr_t)s.buf + BIND_MR_LEN - len + 1;
	if (c->rule == BEFORE_MR)
		addr = (uintptr_t)s.buf - 1;

	/*
	 * The control: a window of the QP's PD, bound with the rule kept (to
	 * the MR itself where only the range or rights break the rule).
	 */
	ctl = alloc_mw(s.pd, c->type);
	TRY(!ctl);
	if (c->rule == PAST_MR || c->rule == BEFORE_MR ||
	    c->rule == NO_LOCAL_WRITE || c->rule == BOUND_TWICE)
		TRY(post_bind(s.qp, ctl, mr, (uintptr_t)s.buf + 4096, len,
			      ctl_access, 1));
	else
		TRY(post_bind(s.qp, ctl, s.mr, (uintptr_t)s.buf + 4096, len,
			      ctl_access, 1));
	TRY(expect_local_ok(&s, s.qp, 1, IBV_WC_BIND_MW, "the control bind"));

	mw = c->rule == BOUND_TWICE ? ctl : alloc_mw(mw_pd, c->type);
	TRY(!mw);
	if (c->rule == MR_OTHER_PD) {
		/* libibverbs refuses a type 1 bind to an MR of another PD. */
		struct ibv_mw *mw1 = alloc_mw(s.pd, IBV_MW_TYPE_1);
		struct ibv_mw_bind bind = {
			.wr_id = 9,
			.send_flags = IBV_SEND_SIGNALED,
			.bind_info = { .mr = mr, .addr = addr, .length = len,
				       .mw_access_flags = c->access },
		};
		int ret;

		TRY(!mw1);
		ret = ibv_bind_mw(s.qp, mw1, &bind);
		CHECK(ret == EPERM, "ibv_bind_mw to an MR of another PD returned %d (%s), expected EPERM",
		      ret, strerror(ret));
		TRY(expect_no_wc(scq_of(&s), 20, "after a refused ibv_bind_mw"));
		CHECK(!ibv_dealloc_mw(mw1), "ibv_dealloc_mw failed");
	}
	TRY(post_bind(s.qp, mw, mr, addr, len, c->access, 2));
	sge = sge_of(&s, 0, 16);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_err(scq_of(&s), 2, IBV_WC_MW_BIND_ERR, qpn, "the bind that breaks the rule"));
	TRY(expect_err(scq_of(&s), 3, IBV_WC_WR_FLUSH_ERR, qpn, "the SEND behind it"));
	TRY(expect_qp_state(s.qp, IBV_QPS_ERR));
	TRY(expect_no_wc(scq_of(&s), 10, "send CQ"));

	if (mw != ctl)
		CHECK(!ibv_dealloc_mw(mw), "ibv_dealloc_mw failed");
	CHECK(!ibv_dealloc_mw(ctl), "ibv_dealloc_mw failed");
	CHECK(!ibv_dereg_mr(mr), "ibv_dereg_mr failed");
	if (other)
		CHECK(!ibv_dealloc_pd(other), "ibv_dealloc_pd failed");
	return e2e_close(&s);
}

#define BIND_FNS(i)                                                            \
	static int bind_err_##i(struct e2e_proc *p)                            \
	{                                                                      \
		return bind_err(p, &bind_cases[i]);                            \
	}
BIND_FNS(0) BIND_FNS(1) BIND_FNS(2) BIND_FNS(3) BIND_FNS(4) BIND_FNS(5)
BIND_FNS(6) BIND_FNS(7) BIND_FNS(8) BIND_FNS(9)
_Static_assert(N_BIND_CASES == 10, "one BIND_FNS per case");

/* ================================================ type 2: bound to a QP */

/*
 * A type 2 window bound through the responder's QP A answers requests
 * arriving at A, and not those arriving at QP B of the same PD (whose
 * MRs B reaches).
 */
static int type2_qp_req(struct e2e_proc *p)
{
	struct ibv_qp *qpb;
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t dest_b;
	struct win w, mr;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(e2e_extra_qp(&s, s.pd, &qpb, &dest_b));
	TRY(recv_win(&s, &w));
	mr = w;
	mr.rkey = s.rem.rkey;
	TRY(win_access(&s, s.qp, &w, 0x91, WR, 8, 200, IBV_WC_SUCCESS));
	TRY(win_access(&s, s.qp, &w, 0x92, RD, 1024, 512, IBV_WC_SUCCESS));
	TRY(win_access(&s, qpb, &mr, 0x93, WR, 2048, 16, IBV_WC_SUCCESS));
	TRY(win_access(&s, qpb, &w, 0x94, WR, 3000, 16, IBV_WC_REM_ACCESS_ERR));
	TRY(expect_qp_state(qpb, IBV_QPS_ERR));
	TRY(e2e_sync(p, "failed on B"));
	/* A still works, through the window. */
	TRY(win_access(&s, s.qp, &w, 0x95, FAA, 512, 8, IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "end"));
	CHECK(!ibv_destroy_qp(qpb), "ibv_destroy_qp failed");
	return e2e_close(&s);
}

static int type2_qp_resp(struct e2e_proc *p)
{
	struct ibv_qp *qpb;
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mw *mw;
	uint32_t dest_b, rkey;
	uint8_t *want;

	resp_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(e2e_extra_qp(&s, s.pd, &qpb, &dest_b));
	want = resp_init(&s);
	TRY(!want);
	mw = alloc_mw(s.pd, IBV_MW_TYPE_2);
	TRY(!mw);
	TRY(bind_window(&s, mw, MW_ALL, 0xa1, &rkey));
	TRY(send_win(&s, rkey));
	TRY(expect_async(s.ctx, qpb, IBV_EVENT_QP_ACCESS_ERR, E2E_WAIT_MS));
	TRY(expect_qp_state(qpb, IBV_QPS_ERR));
	TRY(expect_qp_state(s.qp, IBV_QPS_RTS));
	TRY(e2e_sync(p, "failed on B"));
	TRY(e2e_sync(p, "end"));
	want_write(want, W_OFF + 8, 200, 0x91);
	want_write(want, W_OFF + 2048, 16, 0x93);
	want_add(want, W_OFF + 512);
	TRY(resp_check(&s, want, "responder buffer"));
	CHECK(!ibv_dealloc_mw(mw), "ibv_dealloc_mw failed");
	CHECK(!ibv_destroy_qp(qpb), "ibv_destroy_qp failed");
	free(want);
	return e2e_close(&s);
}

/* ============================================== type 2: LOCAL_INV */

/*
 * LOCAL_INV of a bound type 2 window completes with IBV_WC_LOCAL_INV and
 * its rkey reaches nothing from then on; invalidating it again fails with
 * IBV_WC_LOC_QP_OP_ERR (rxe's status); the window, free again, binds
 * with the next key, which works, while the old one still fails.
 */
static int local_inv_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct win w1, w2;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(recv_win(&s, &w1));
	TRY(win_access(&s, s.qp, &w1, 0xb1, WR, 0, 64, IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "invalidate now"));
	TRY(e2e_sync(p, "invalidated"));
	TRY(win_access(&s, s.qp, &w1, 0xb2, WR, 64, 64, IBV_WC_REM_ACCESS_ERR));
	TRY(req_recover(&s, s.qp, s.rem.qpn));
	TRY(recv_win(&s, &w2));
	CHECK(w2.rkey == ibv_inc_rkey(w1.rkey), "rebound with %#x, expected %#x",
	      w2.rkey, ibv_inc_rkey(w1.rkey));
	TRY(win_access(&s, s.qp, &w2, 0xb3, WR, 128, 64, IBV_WC_SUCCESS));
	TRY(win_access(&s, s.qp, &w1, 0xb4, RD, 0, 64, IBV_WC_REM_ACCESS_ERR));
	TRY(req_recover(&s, s.qp, s.rem.qpn));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int local_inv_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mw *mw;
	uint32_t rkey, qpn;
	uint8_t *want;

	resp_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qpn = s.qp->qp_num;
	want = resp_init(&s);
	TRY(!want);
	mw = alloc_mw(s.pd, IBV_MW_TYPE_2);
	TRY(!mw);
	TRY(bind_window(&s, mw, MW_ALL, 0xc1, &rkey));
	TRY(send_win(&s, rkey));
	TRY(e2e_sync(p, "invalidate now"));
	TRY(post_local_inv(s.qp, rkey, 0xc2));
	TRY(expect_local_ok(&s, s.qp, 0xc2, IBV_WC_LOCAL_INV, "LOCAL_INV"));
	TRY(e2e_sync(p, "invalidated"));
	TRY(expect_async(s.ctx, s.qp, IBV_EVENT_QP_ACCESS_ERR, E2E_WAIT_MS));
	/* Invalidated already: nothing to invalidate. */
	TRY(e2e_reset_qp(&s, s.qp, s.rem.qpn));
	TRY(post_local_inv(s.qp, rkey, 0xc3));
	TRY(expect_err(scq_of(&s), 0xc3, IBV_WC_LOC_QP_OP_ERR, qpn,
		       "LOCAL_INV of an invalidated window"));
	TRY(expect_qp_state(s.qp, IBV_QPS_ERR));
	TRY(e2e_reset_qp(&s, s.qp, s.rem.qpn));
	TRY(e2e_sync(p, "recovered"));
	/* Free again: bound with the next key. */
	mw->rkey = rkey;
	TRY(bind_window(&s, mw, MW_ALL, 0xc4, &rkey));
	TRY(send_win(&s, rkey));
	TRY(resp_recover(&s, s.qp, s.rem.qpn));
	TRY(e2e_sync(p, "end"));
	want_write(want, W_OFF, 64, 0xb1);
	want_write(want, W_OFF + 128, 64, 0xb3);
	TRY(resp_check(&s, want, "responder buffer"));
	CHECK(!ibv_dealloc_mw(mw), "ibv_dealloc_mw failed");
	free(want);
	return e2e_close(&s);
}

/*
 * LOCAL_INV of anything but a bound type 2 window fails with
 * IBV_WC_LOC_QP_OP_ERR, as in rxe: a type 1 window's key, an MR's key, a
 * type 2 window's that is not bound.  A bound one is invalidated.  One
 * process, its QP connected to itself.
 */
static int local_inv_other(struct e2e_proc *p)
{
	struct ibv_mw *mw1, *mw2;
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t key[3], k2;
	int i;

	resp_opts(&o);
	TRY(self_connect(&s, p, &o));
	mw1 = alloc_mw(s.pd, IBV_MW_TYPE_1);
	TRY(!mw1);
	mw2 = alloc_mw(s.pd, IBV_MW_TYPE_2);
	TRY(!mw2);
	TRY(bind_window(&s, mw1, MW_ALL, 0x1a1, &key[0]));
	key[1] = s.mr->rkey;
	key[2] = mw2->rkey;
	for (i = 0; i < 3; i++) {
		TRY(post_local_inv(s.qp, key[i], 0x1a2 + i));
		TRY(expect_err(scq_of(&s), 0x1a2 + i, IBV_WC_LOC_QP_OP_ERR,
			       s.qp->qp_num, "LOCAL_INV of what it cannot invalidate"));
		TRY(expect_qp_state(s.qp, IBV_QPS_ERR));
		TRY(e2e_reset_qp(&s, s.qp, s.qp->qp_num));
	}
	TRY(bind_window(&s, mw2, MW_ALL, 0x1a5, &k2));
	TRY(post_local_inv(s.qp, k2, 0x1a6));
	TRY(expect_local_ok(&s, s.qp, 0x1a6, IBV_WC_LOCAL_INV, "LOCAL_INV"));
	TRY(expect_no_wc(scq_of(&s), 10, "send CQ"));
	CHECK(!ibv_dealloc_mw(mw1) && !ibv_dealloc_mw(mw2), "ibv_dealloc_mw failed");
	return e2e_close(&s);
}

/* ============================================ type 2: SEND_WITH_INV */

#define INV_LEN 300

static int post_send_inv(struct e2e_side *s, uint64_t wr_id, uint32_t rkey)
{
	struct ibv_sge sge = sge_of(s, LOCAL_OFF, INV_LEN);
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_INV,
		.send_flags = IBV_SEND_SIGNALED,
		.invalidate_rkey = rkey,
	};

	fill(s->buf + LOCAL_OFF, INV_LEN, (uint32_t)wr_id);
	return post_send1(s->qp, &wr);
}

/* The receive a SEND_WITH_INV of INV_LEN bytes completed. */
static int expect_recv_inv(struct e2e_side *s, uint64_t wr_id, uint32_t rkey)
{
	struct wc_want w = {
		.wr_id = wr_id,
		.status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV,
		.byte_len = INV_LEN,
		.qp_num = s->qp->qp_num,
		.recv = true,
		.src_qp = s->rem.qpn,
		.inv = true,
		.invalidated_rkey = rkey,
	};

	return expect_wc(rcq_of(s), &w, "receive of a SEND_WITH_INV");
}

/*
 * The receive completion of a SEND_WITH_INV says IBV_WC_WITH_INV and
 * names the key (in ibv_wc.invalidated_rkey, or ibv_wc_read_invalidated_rkey
 * of an ibv_cq_ex); the window's rkey reaches nothing afterwards.
 */
static int send_inv_req(struct e2e_proc *p, bool cq_ex)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct win w;

	e2e_default_opts(&o);
	o.cq_ex = cq_ex;
	TRY(e2e_setup(&s, p, &o));
	TRY(recv_win(&s, &w));
	TRY(win_access(&s, s.qp, &w, 0xd1, WR, 500, 100, IBV_WC_SUCCESS));
	TRY(post_send_inv(&s, 0xd2, w.rkey));
	TRY(expect_send_ok(&s, 0xd2, IBV_WC_SEND, INV_LEN));
	TRY(e2e_sync(p, "sent"));
	/* A WRITE, or (the ibv_cq_ex run) an atomic: refused either way. */
	TRY(win_access(&s, s.qp, &w, 0xd3, cq_ex ? FAA : WR, cq_ex ? 504 : 500,
		       cq_ex ? 8 : 100, IBV_WC_REM_ACCESS_ERR));
	TRY(expect_qp_state(s.qp, IBV_QPS_ERR));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int send_inv_resp(struct e2e_proc *p, bool cq_ex)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mw *mw;
	uint32_t rkey;
	uint8_t *want;

	resp_opts(&o);
	o.cq_ex = cq_ex;
	TRY(e2e_setup(&s, p, &o));
	want = resp_init(&s);
	TRY(!want);
	mw = alloc_mw(s.pd, IBV_MW_TYPE_2);
	TRY(!mw);
	TRY(bind_window(&s, mw, MW_ALL, 0xe1, &rkey));
	TRY(post_recv_buf(&s, 0xe2, RECV_OFF, 4096));
	TRY(send_win(&s, rkey));
	TRY(expect_recv_inv(&s, 0xe2, rkey));
	TRY(e2e_sync(p, "sent"));
	TRY(expect_async(s.ctx, s.qp, IBV_EVENT_QP_ACCESS_ERR, E2E_WAIT_MS));
	TRY(e2e_sync(p, "end"));
	want_write(want, W_OFF + 500, 100, 0xd1);
	want_write(want, RECV_OFF, INV_LEN, 0xd2);
	TRY(resp_check(&s, want, "responder buffer"));
	CHECK(!ibv_dealloc_mw(mw), "ibv_dealloc_mw failed");
	free(want);
	return e2e_close(&s);
}

#define INV_FNS(name, cq_ex)                                                   \
	static int name##_req(struct e2e_proc *p)                              \
	{                                                                      \
		return send_inv_req(p, cq_ex);                                 \
	}                                                                      \
	static int name##_resp(struct e2e_proc *p)                             \
	{                                                                      \
		return send_inv_resp(p, cq_ex);                                \
	}
INV_FNS(send_inv_plain, false)
INV_FNS(send_inv_ex, true)

/*
 * SEND_WITH_INV of a key the responder cannot invalidate (a type 1
 * window's, an MR's, a type 2 window's that is not bound): as rxe, the
 * requester's SEND succeeds, the responder's receive completes with
 * IBV_WC_REM_INV_REQ_ERR and its QP goes to ERR.  What the key names is
 * left as it was.
 */
enum inv_key {
	INV_TYPE1,
	INV_TYPE1_WR, /* the same, sent with ibv_wr_send_inv */
	INV_MR,
	INV_UNBOUND,
};

static int inv_bad_req(struct e2e_proc *p, enum inv_key key)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct win w;
	int ret;

	e2e_default_opts(&o);
	o.qp_ex = key == INV_TYPE1_WR;
	TRY(e2e_setup(&s, p, &o));
	TRY(msg_recv(p->peer, &w, sizeof(w), E2E_WAIT_MS));
	if (key == INV_TYPE1_WR) {
		fill(s.buf + LOCAL_OFF, INV_LEN, 0xf1);
		ibv_wr_start(s.qpx);
		s.qpx->wr_id = 0xf1;
		s.qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send_inv(s.qpx, w.rkey);
		ibv_wr_set_sge(s.qpx, s.mr->lkey, s.base + LOCAL_OFF, INV_LEN);
		ret = ibv_wr_complete(s.qpx);
		CHECK(!ret, "ibv_wr_complete: %s", strerror(ret));
	} else {
		TRY(post_send_inv(&s, 0xf1, w.rkey));
	}
	TRY(expect_send_ok(&s, 0xf1, IBV_WC_SEND, INV_LEN));
	TRY(expect_qp_state(s.qp, IBV_QPS_RTS));
	TRY(e2e_sync(p, "sent"));
	TRY(e2e_reset_qp(&s, s.qp, s.rem.qpn));
	TRY(e2e_sync(p, "recovered"));
	if (key == INV_UNBOUND)
		TRY(recv_win(&s, &w));
	TRY(win_access(&s, s.qp, &w, 0xf2, WR, 32, 32, IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int inv_bad_resp(struct e2e_proc *p, enum inv_key key)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mw *mw = NULL;
	uint32_t rkey, qpn;
	uint8_t *want;
	struct win w;

	resp_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qpn = s.qp->qp_num;
	want = resp_init(&s);
	TRY(!want);
	if (key == INV_MR) {
		rkey = s.mr->rkey;
	} else {
		mw = alloc_mw(s.pd, key == INV_UNBOUND ? IBV_MW_TYPE_2 :
							 IBV_MW_TYPE_1);
		TRY(!mw);
		rkey = mw->rkey;
		if (key != INV_UNBOUND)
			TRY(bind_window(&s, mw, MW_ALL, 0x121, &rkey));
	}
	TRY(post_recv_buf(&s, 0x122, RECV_OFF, 4096));
	TRY(post_recv_buf(&s, 0x123, RECV_OFF + 4096, 4096));
	w = (struct win){ s.base + W_OFF, rkey, W_LEN };
	TRY(msg_send(p->peer, &w, sizeof(w)));
	TRY(e2e_sync(p, "sent"));
	TRY(expect_err(rcq_of(&s), 0x122, IBV_WC_REM_INV_REQ_ERR, qpn,
		       "receive of a SEND_WITH_INV that cannot invalidate"));
	TRY(expect_err(rcq_of(&s), 0x123, IBV_WC_WR_FLUSH_ERR, qpn,
		       "the receive behind it"));
	TRY(expect_qp_state(s.qp, IBV_QPS_ERR));
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ"));
	TRY(e2e_reset_qp(&s, s.qp, s.rem.qpn));
	TRY(e2e_sync(p, "recovered"));
	/* A free type 2 window stayed free: it binds. */
	if (key == INV_UNBOUND) {
		TRY(bind_window(&s, mw, MW_ALL, 0x124, &rkey));
		TRY(send_win(&s, rkey));
	}
	TRY(e2e_sync(p, "end"));
	/* The data of the failed receive is not checked: its status is an error. */
	memcpy(want + RECV_OFF, s.buf + RECV_OFF, INV_LEN);
	want_write(want, W_OFF + 32, 32, 0xf2);
	TRY(resp_check(&s, want, "responder buffer"));
	if (mw)
		CHECK(!ibv_dealloc_mw(mw), "ibv_dealloc_mw failed");
	free(want);
	return e2e_close(&s);
}

#define INV_BAD_FNS(name, key)                                                 \
	static int name##_req(struct e2e_proc *p)                              \
	{                                                                      \
		return inv_bad_req(p, key);                                    \
	}                                                                      \
	static int name##_resp(struct e2e_proc *p)                             \
	{                                                                      \
		return inv_bad_resp(p, key);                                   \
	}
INV_BAD_FNS(inv_type1, INV_TYPE1)
INV_BAD_FNS(inv_type1_wr, INV_TYPE1_WR)
INV_BAD_FNS(inv_mr, INV_MR)
INV_BAD_FNS(inv_unbound, INV_UNBOUND)

/* ================================================== the ibv_wr_* API */

/* One signaled WR of the ibv_wr_* API that needs no data, and its completion. */
static int wrx_complete(struct e2e_side *s, uint64_t wr_id, enum ibv_wc_opcode op,
			uint32_t byte_len, const char *what)
{
	int ret = ibv_wr_complete(s->qpx);
	struct wc_want w = {
		.wr_id = wr_id,
		.status = IBV_WC_SUCCESS,
		.opcode = op,
		.byte_len = byte_len,
		.qp_num = s->qp->qp_num,
	};

	CHECK(!ret, "%s: ibv_wr_complete: %s", what, strerror(ret));
	return expect_wc(scq_of(s), &w, what);
}

static void wrx_begin(struct e2e_side *s, uint64_t wr_id)
{
	ibv_wr_start(s->qpx);
	s->qpx->wr_id = wr_id;
	s->qpx->wr_flags = IBV_SEND_SIGNALED;
}

static int wrx_bind(struct e2e_side *s, struct ibv_mw *mw, uint32_t rkey,
		    uint64_t wr_id)
{
	struct ibv_mw_bind_info info = {
		.mr = s->mr,
		.addr = s->base + W_OFF,
		.length = W_LEN,
		.mw_access_flags = MW_ALL,
	};

	wrx_begin(s, wr_id);
	ibv_wr_bind_mw(s->qpx, mw, rkey, &info);
	return wrx_complete(s, wr_id, IBV_WC_BIND_MW, 0, "ibv_wr_bind_mw");
}

static int wrx_write(struct e2e_side *s, const struct win *w, uint64_t wr_id,
		     uint32_t off, uint32_t len)
{
	fill(s->buf + LOCAL_OFF, len, (uint32_t)wr_id);
	wrx_begin(s, wr_id);
	ibv_wr_rdma_write(s->qpx, w->rkey, w->addr + off);
	ibv_wr_set_sge(s->qpx, s->mr->lkey, s->base + LOCAL_OFF, len);
	return wrx_complete(s, wr_id, IBV_WC_RDMA_WRITE, len, "ibv_wr_rdma_write");
}

/*
 * ibv_wr_bind_mw binds, ibv_wr_send_inv invalidates at the responder (the
 * window binds again afterwards: it is free), ibv_wr_local_inv
 * invalidates locally; keys then fail as with ibv_post_send.
 */
static int wr_api_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct win w1, w2;

	e2e_default_opts(&o);
	o.qp_ex = true;
	TRY(e2e_setup(&s, p, &o));
	TRY(recv_win(&s, &w1));
	TRY(wrx_write(&s, &w1, 0x131, 0, 40));
	fill(s.buf + LOCAL_OFF, INV_LEN, 0x132);
	wrx_begin(&s, 0x132);
	ibv_wr_send_inv(s.qpx, w1.rkey);
	ibv_wr_set_sge(s.qpx, s.mr->lkey, s.base + LOCAL_OFF, INV_LEN);
	TRY(wrx_complete(&s, 0x132, IBV_WC_SEND, INV_LEN, "ibv_wr_send_inv"));
	TRY(e2e_sync(p, "sent inv"));
	TRY(recv_win(&s, &w2));
	CHECK(w2.rkey == ibv_inc_rkey(w1.rkey), "rebound with %#x, expected %#x",
	      w2.rkey, ibv_inc_rkey(w1.rkey));
	TRY(wrx_write(&s, &w2, 0x133, 40, 40));
	TRY(e2e_sync(p, "written"));
	TRY(e2e_sync(p, "invalidated"));
	TRY(win_access(&s, s.qp, &w2, 0x134, WR, 80, 40, IBV_WC_REM_ACCESS_ERR));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int wr_api_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mw *mw;
	uint32_t k1, k2;
	uint8_t *want;

	resp_opts(&o);
	o.qp_ex = true;
	TRY(e2e_setup(&s, p, &o));
	want = resp_init(&s);
	TRY(!want);
	mw = alloc_mw(s.pd, IBV_MW_TYPE_2);
	TRY(!mw);
	k1 = ibv_inc_rkey(mw->rkey);
	TRY(wrx_bind(&s, mw, k1, 0x141));
	TRY(post_recv_buf(&s, 0x142, RECV_OFF, 4096));
	TRY(send_win(&s, k1));
	TRY(e2e_sync(p, "sent inv"));
	TRY(expect_recv_inv(&s, 0x142, k1));
	k2 = ibv_inc_rkey(k1);
	TRY(wrx_bind(&s, mw, k2, 0x143));
	TRY(send_win(&s, k2));
	TRY(e2e_sync(p, "written"));
	wrx_begin(&s, 0x144);
	ibv_wr_local_inv(s.qpx, k2);
	TRY(wrx_complete(&s, 0x144, IBV_WC_LOCAL_INV, 0, "ibv_wr_local_inv"));
	TRY(e2e_sync(p, "invalidated"));
	TRY(expect_async(s.ctx, s.qp, IBV_EVENT_QP_ACCESS_ERR, E2E_WAIT_MS));
	TRY(e2e_sync(p, "end"));
	want_write(want, W_OFF, 40, 0x131);
	want_write(want, RECV_OFF, INV_LEN, 0x132);
	want_write(want, W_OFF + 40, 40, 0x133);
	TRY(resp_check(&s, want, "responder buffer"));
	CHECK(!ibv_dealloc_mw(mw), "ibv_dealloc_mw failed");
	free(want);
	return e2e_close(&s);
}

/* ============================================ dereg and dealloc while bound */

/* A second MR over the responder's buffer, to bind windows to and deregister. */
static struct ibv_mr *bindable_mr(struct e2e_side *s)
{
	return e2e_reg(s->pd, s->buf, s->o.buf_len, MR_BINDABLE);
}

/* Type 1 and type 2 windows over [W_OFF, +W_LEN) of mr, announced with mr. */
static int bind_both(struct e2e_side *s, struct ibv_mr *mr, struct ibv_mw *mw[2],
		     uint32_t *k2)
{
	struct win w[3];

	mw[0] = alloc_mw(s->pd, IBV_MW_TYPE_1);
	TRY(!mw[0]);
	mw[1] = alloc_mw(s->pd, IBV_MW_TYPE_2);
	TRY(!mw[1]);
	TRY(bind1(s, s->qp, mw[0], mr, (uintptr_t)s->buf + W_OFF, W_LEN, MW_ALL,
		  0x151));
	*k2 = ibv_inc_rkey(mw[1]->rkey);
	TRY(bind2(s, s->qp, mw[1], *k2, mr, (uintptr_t)s->buf + W_OFF, W_LEN,
		  MW_ALL, 0x152));
	w[0] = (struct win){ (uintptr_t)s->buf + W_OFF, mr->rkey, W_LEN };
	w[1] = (struct win){ (uintptr_t)s->buf + W_OFF, mw[0]->rkey, W_LEN };
	w[2] = (struct win){ (uintptr_t)s->buf + W_OFF, *k2, W_LEN };
	return msg_send(s->p->peer, w, sizeof(w));
}

/*
 * ibv_dereg_mr of an MR windows are bound to fails with EBUSY and leaves
 * it working; it succeeds once the last window is unbound (a type 1 by a
 * zero-length bind, a type 2 by LOCAL_INV), and the MR's rkey then
 * reaches nothing.
 */
static int dereg_busy_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct win w[3];
	int i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(msg_recv(p->peer, w, sizeof(w), E2E_WAIT_MS));
	TRY(e2e_sync(p, "dereg refused"));
	for (i = 0; i < 3; i++)
		TRY(win_access(&s, s.qp, &w[i], 0x161 + i, WR, 64 * i, 64,
			       IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "written"));
	TRY(e2e_sync(p, "deregistered"));
	TRY(win_access(&s, s.qp, &w[0], 0x164, RD, 0, 64, IBV_WC_REM_ACCESS_ERR));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int dereg_busy_resp(struct e2e_proc *p)
{
	struct ibv_mw_bind unbind = { .wr_id = 0x171,
				      .send_flags = IBV_SEND_SIGNALED };
	struct ibv_mw *mw[2];
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mr *mr;
	uint8_t *want;
	uint32_t k2;
	int ret, i;

	resp_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	want = resp_init(&s);
	TRY(!want);
	mr = bindable_mr(&s);
	TRY(!mr);
	TRY(bind_both(&s, mr, mw, &k2));
	ret = ibv_dereg_mr(mr);
	CHECK(ret == EBUSY, "ibv_dereg_mr with two windows bound returned %d (%s), expected EBUSY",
	      ret, strerror(ret));
	TRY(e2e_sync(p, "dereg refused"));
	TRY(e2e_sync(p, "written"));
	ret = ibv_bind_mw(s.qp, mw[0], &unbind);
	CHECK(!ret, "ibv_bind_mw to no MR: %s", strerror(ret));
	TRY(expect_local_ok(&s, s.qp, 0x171, IBV_WC_BIND_MW, "unbinding ibv_bind_mw"));
	ret = ibv_dereg_mr(mr);
	CHECK(ret == EBUSY, "ibv_dereg_mr with a type 2 window bound returned %d (%s), expected EBUSY",
	      ret, strerror(ret));
	TRY(post_local_inv(s.qp, k2, 0x172));
	TRY(expect_local_ok(&s, s.qp, 0x172, IBV_WC_LOCAL_INV, "LOCAL_INV"));
	ret = ibv_dereg_mr(mr);
	CHECK(!ret, "ibv_dereg_mr with no window bound: %s", strerror(ret));
	TRY(e2e_sync(p, "deregistered"));
	TRY(expect_async(s.ctx, s.qp, IBV_EVENT_QP_ACCESS_ERR, E2E_WAIT_MS));
	TRY(e2e_sync(p, "end"));
	for (i = 0; i < 3; i++)
		want_write(want, W_OFF + 64 * i, 64, 0x161 + i);
	TRY(resp_check(&s, want, "responder buffer"));
	CHECK(!ibv_dealloc_mw(mw[0]) && !ibv_dealloc_mw(mw[1]),
	      "ibv_dealloc_mw failed");
	free(want);
	return e2e_close(&s);
}

/*
 * ibv_dealloc_mw of a bound window (either type) succeeds; its rkey
 * reaches nothing afterwards, the MR's still works, and the MR is no
 * longer held (ibv_dereg_mr succeeds).
 */
static int dealloc_bound_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct win w[3];
	int i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(msg_recv(p->peer, w, sizeof(w), E2E_WAIT_MS));
	for (i = 1; i < 3; i++)
		TRY(win_access(&s, s.qp, &w[i], 0x181 + i, WR, 64 * i, 64,
			       IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "written"));
	TRY(e2e_sync(p, "deallocated"));
	for (i = 1; i < 3; i++) {
		TRY(win_access(&s, s.qp, &w[i], 0x184 + i, WR, 1024, 64,
			       IBV_WC_REM_ACCESS_ERR));
		TRY(req_recover(&s, s.qp, s.rem.qpn));
	}
	TRY(win_access(&s, s.qp, &w[0], 0x187, WR, 3000, 64, IBV_WC_SUCCESS));
	TRY(win_access(&s, s.qp, &w[0], 0x188, RD, 2048, 512, IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int dealloc_bound_resp(struct e2e_proc *p)
{
	struct ibv_mw *mw[2];
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mr *mr;
	uint8_t *want;
	uint32_t k2;
	int ret, i;

	resp_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	want = resp_init(&s);
	TRY(!want);
	mr = bindable_mr(&s);
	TRY(!mr);
	TRY(bind_both(&s, mr, mw, &k2));
	TRY(e2e_sync(p, "written"));
	for (i = 0; i < 2; i++) {
		ret = ibv_dealloc_mw(mw[i]);
		CHECK(!ret, "ibv_dealloc_mw of a bound type %d window: %s", i + 1,
		      strerror(ret));
	}
	TRY(e2e_sync(p, "deallocated"));
	for (i = 0; i < 2; i++)
		TRY(resp_recover(&s, s.qp, s.rem.qpn));
	TRY(e2e_sync(p, "end"));
	ret = ibv_dereg_mr(mr);
	CHECK(!ret, "ibv_dereg_mr after its windows were deallocated: %s",
	      strerror(ret));
	for (i = 1; i < 3; i++)
		want_write(want, W_OFF + 64 * i, 64, 0x181 + i);
	want_write(want, W_OFF + 3000, 64, 0x187);
	TRY(resp_check(&s, want, "responder buffer"));
	free(want);
	return e2e_close(&s);
}

/* ================================================================== table */

#define PAIR(n, req, resp)                                                     \
	{ .group = "mw", .name = n, .nroles = 2, .role = { req, resp } }
#define ONE(n, fn) { .group = "mw", .name = n, .nroles = 1, .role = { fn } }

/* The case tables' entries follow them, in order and by name. */
const struct e2e_test e2e_mw_tests[] = {
	PAIR("type1_access", type1_access_req, type1_access_resp),
	PAIR("type1_any_qp", type1_any_qp_req, type1_any_qp_resp),
	PAIR("type1_rebind", type1_rebind_req, type1_rebind_resp),
	PAIR("type1_write_past_end", acc_req_0, acc_resp_0),
	PAIR("type1_read_before_start", acc_req_1, acc_resp_1),
	PAIR("type1_atomic_past_end", acc_req_2, acc_resp_2),
	PAIR("type1_no_write_right", acc_req_3, acc_resp_3),
	PAIR("type1_no_read_right", acc_req_4, acc_resp_4),
	PAIR("type1_no_atomic_right", acc_req_5, acc_resp_5),
	PAIR("type2_write_past_end", acc_req_6, acc_resp_6),
	PAIR("type2_no_write_right", acc_req_7, acc_resp_7),
	PAIR("type1_mr_local_write_only", acc_req_8, acc_resp_8),
	PAIR("type2_mr_local_write_only", acc_req_9, acc_resp_9),
	PAIR("type1_rights_with_local_write", acc_req_10, acc_resp_10),
	PAIR("type2_rights_with_local_write", acc_req_11, acc_resp_11),
	PAIR("unbound", unbound_req, unbound_resp),
	ONE("bind_err_type1_no_mw_bind", bind_err_0),
	ONE("bind_err_type2_no_mw_bind", bind_err_1),
	ONE("bind_err_type2_mr_other_pd", bind_err_2),
	ONE("bind_err_type1_qp_other_pd", bind_err_3),
	ONE("bind_err_type2_mw_other_pd", bind_err_4),
	ONE("bind_err_type1_past_mr", bind_err_5),
	ONE("bind_err_type2_before_mr", bind_err_6),
	ONE("bind_err_type1_write_no_local_write", bind_err_7),
	ONE("bind_err_type2_atomic_no_local_write", bind_err_8),
	ONE("bind_err_type2_bound_twice", bind_err_9),
	PAIR("type2_qp", type2_qp_req, type2_qp_resp),
	PAIR("type2_local_inv", local_inv_req, local_inv_resp),
	ONE("local_inv_not_bound_type2", local_inv_other),
	PAIR("send_with_inv", send_inv_plain_req, send_inv_plain_resp),
	PAIR("send_with_inv_cq_ex", send_inv_ex_req, send_inv_ex_resp),
	PAIR("send_inv_type1_key", inv_type1_req, inv_type1_resp),
	PAIR("send_inv_type1_key_wr_api", inv_type1_wr_req, inv_type1_wr_resp),
	PAIR("send_inv_mr_key", inv_mr_req, inv_mr_resp),
	PAIR("send_inv_unbound_key", inv_unbound_req, inv_unbound_resp),
	PAIR("wr_api", wr_api_req, wr_api_resp),
	PAIR("dereg_busy", dereg_busy_req, dereg_busy_resp),
	PAIR("dealloc_bound", dealloc_bound_req, dealloc_bound_resp),
	{ 0 },
};
