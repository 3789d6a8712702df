// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Shared receive queues: several QPs (RC, UC, UD) take their receives from
 * one SRQ in the order they were posted; ibv_post_srq_recv takes exactly
 * max_wr WRs; resize and query; the limit event once per arm;
 * LAST_WQE_REACHED for a QP that enters ERR, whose error never flushes the
 * receives the other QPs need; destroy refused while a QP uses the SRQ.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

#define SLOT 256

static void srq_opts(struct e2e_opts *o, enum ibv_qp_type type)
{
	e2e_default_opts(o);
	o->qp_type = type;
	o->srq_max_wr = 64;
	o->srq_max_sge = o->max_recv_sge;
}

/* The next async event, whatever it names, within timeout_ms. */
static int next_async(struct ibv_context *ctx, struct ibv_async_event *ev,
		      int timeout_ms)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	int r;

	do
		r = poll(&pfd, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	if (r != 1)
		return 1; /* none */
	CHECK(!ibv_get_async_event(ctx, ev), "ibv_get_async_event: %s",
	      strerror(errno));
	ibv_ack_async_event(ev);
	return 0;
}

static int expect_srq_event(struct ibv_context *ctx, struct ibv_srq *srq)
{
	struct ibv_async_event ev;
	int r = next_async(ctx, &ev, E2E_WAIT_MS);

	TRY(r < 0);
	CHECK(!r, "no IBV_EVENT_SRQ_LIMIT_REACHED");
	CHECK(ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED &&
	      ev.element.srq == srq, "async event %s, expected SRQ_LIMIT_REACHED",
	      ibv_event_type_str(ev.event_type));
	return 0;
}

static int expect_no_async(struct ibv_context *ctx, int ms, const char *what)
{
	struct ibv_async_event ev;
	int r = next_async(ctx, &ev, ms);

	TRY(r < 0);
	CHECK(r, "%s: unexpected async event %s", what,
	      ibv_event_type_str(ev.event_type));
	return 0;
}

static struct ibv_send_wr send_to(uint64_t wr_id, struct ibv_sge *sge,
				  struct e2e_side *s)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};

	if (s->ah) {
		wr.wr.ud.ah = s->ah;
		wr.wr.ud.remote_qpn = s->rem.qpn;
		wr.wr.ud.remote_qkey = E2E_QKEY;
	}
	return wr;
}

/* ====================================================== two QPs, one SRQ */

/*
 * Role 0 has two QPs of the type, connected to role 1's two QPs, which
 * share an SRQ: SENDs on both, alternating, take the SRQ's WQEs in the
 * order they were posted.
 */
struct srq_pair {
	struct e2e_side s;
	struct ibv_qp *qp2; /* the second QP, on the same PD, CQs and SRQ */
	uint32_t rem_qpn2;
	struct ibv_ah *ah2;
};

static int second_qp(struct srq_pair *sp)
{
	struct e2e_side *s = &sp->s;
	struct ibv_qp_init_attr attr = {
		.send_cq = s->scq,
		.recv_cq = s->rcq,
		.srq = s->srq,
		.cap = { .max_send_wr = 16, .max_send_sge = 1 },
		.qp_type = s->o.qp_type,
	};
	struct ibv_qp *first = s->qp;
	uint32_t qpn;

	if (!s->srq)
		attr.cap.max_recv_wr = 16, attr.cap.max_recv_sge = 1;
	sp->qp2 = ibv_create_qp(s->pd, &attr);
	CHECK(sp->qp2, "ibv_create_qp: %s", strerror(errno));
	qpn = sp->qp2->qp_num;
	TRY(msg_xchg(s->p->peer, &qpn, &sp->rem_qpn2, sizeof(qpn)));
	/* Connect it as the harness connected the first one. */
	s->qp = sp->qp2;
	TRY(qp_to_init(s->qp, s->o.qp_access));
	TRY(qp_to_rtr(s, sp->rem_qpn2, s->rem.psn));
	TRY(qp_to_rts(s));
	s->qp = first;
	return e2e_sync(s->p, "second QP connected");
}

static int shared_req(struct e2e_proc *p, enum ibv_qp_type type)
{
	struct srq_pair sp;
	struct e2e_side *s = &sp.s;
	struct e2e_opts o;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	int i;

	e2e_default_opts(&o);
	o.qp_type = type;
	TRY(e2e_setup(s, p, &o));
	TRY(second_qp(&sp));
	TRY(e2e_sync(p, "receives posted"));
	for (i = 0; i < 8; i++) {
		struct ibv_qp *qp = i % 2 ? sp.qp2 : s->qp;

		fill(s->buf + i * SLOT, 100 + i, 20 + i);
		sge = sge_of(s, i * SLOT, 100 + i);
		wr = send_to(i, &sge, s);
		if (i % 2 && s->ah)
			wr.wr.ud.remote_qpn = sp.rem_qpn2;
		TRY(post_send1(qp, &wr));
		/* One at a time: the order the SRQ sees is the posting order. */
		TRY(poll_one(scq_of(s), &wc, E2E_WAIT_MS));
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i,
		      "send %d: %s", i, ibv_wc_status_str(wc.status));
	}
	TRY(e2e_sync(p, "received"));
	CHECK(!ibv_destroy_qp(sp.qp2), "ibv_destroy_qp");
	return e2e_close(s);
}

static int shared_resp(struct e2e_proc *p, enum ibv_qp_type type)
{
	uint32_t grh = type == IBV_QPT_UD ? 40 : 0;
	struct srq_pair sp;
	struct e2e_side *s = &sp.s;
	struct e2e_opts o;
	struct ibv_wc wc;
	int i, ret;

	srq_opts(&o, type);
	TRY(e2e_setup(s, p, &o));
	TRY(second_qp(&sp));
	for (i = 0; i < 8; i++)
		TRY(post_recv_buf(s, 1000 + i, i * SLOT, SLOT));
	TRY(e2e_sync(p, "receives posted"));
	for (i = 0; i < 8; i++) {
		struct ibv_qp *qp = i % 2 ? sp.qp2 : s->qp;

		TRY(poll_one(rcq_of(s), &wc, E2E_WAIT_MS));
		/* WQE i of the SRQ took message i, whichever QP it came on. */
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 1000u + i &&
		      wc.qp_num == qp->qp_num && wc.opcode == IBV_WC_RECV &&
		      wc.byte_len == grh + 100 + i,
		      "receive %d: status %s wr_id %llu qp %#x (want %#x) len %u",
		      i, ibv_wc_status_str(wc.status),
		      (unsigned long long)wc.wr_id, wc.qp_num, qp->qp_num,
		      wc.byte_len);
		TRY(check_fill(s->buf + i * SLOT + grh, 100 + i, 20 + i,
			       "message through the SRQ"));
	}
	/* Posting to the QP itself is not how a QP on an SRQ receives. */
	{
		struct ibv_sge sge = sge_of(s, 0, 8);
		struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		ret = ibv_post_recv(s->qp, &wr, &bad);
		CHECK(ret == EINVAL, "ibv_post_recv on a QP with an SRQ: %s",
		      strerror(ret));
	}
	/* Busy while a QP uses it. */
	ret = ibv_destroy_srq(s->srq);
	CHECK(ret == EBUSY, "ibv_destroy_srq with QPs on it: %s (want EBUSY)",
	      strerror(ret));
	TRY(e2e_sync(p, "received"));
	CHECK(!ibv_destroy_qp(sp.qp2), "ibv_destroy_qp");
	return e2e_close(s);
}

static int rc_req(struct e2e_proc *p) { return shared_req(p, IBV_QPT_RC); }
static int rc_resp(struct e2e_proc *p) { return shared_resp(p, IBV_QPT_RC); }
static int uc_req(struct e2e_proc *p) { return shared_req(p, IBV_QPT_UC); }
static int uc_resp(struct e2e_proc *p) { return shared_resp(p, IBV_QPT_UC); }
static int ud_req(struct e2e_proc *p) { return shared_req(p, IBV_QPT_UD); }
static int ud_resp(struct e2e_proc *p) { return shared_resp(p, IBV_QPT_UD); }

/* ============================================================ write_imm */

/*
 * A WRITE_WITH_IMM to an RC QP on an SRQ lands its data where the RETH
 * says and takes one SRQ receive for its immediate (libfabric's RxM with
 * a shared receive context: fi_rma_bw -o writedata).
 */
static int write_imm_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_sge sge;
	struct ibv_send_wr wr = {
		.wr_id = 0x77,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htobe32(0x1234abcd),
	};

	srq_opts(&o, IBV_QPT_RC);
	TRY(e2e_setup(&s, p, &o));
	fill(s.buf, 512, 0x51);
	sge = sge_of(&s, 0, 512);
	wr.wr.rdma.remote_addr = s.rem.addr + 4096;
	wr.wr.rdma.rkey = s.rem.rkey;
	TRY(e2e_sync(p, "posted"));
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 0x77, IBV_WC_RDMA_WRITE, 512));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int write_imm_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;

	srq_opts(&o, IBV_QPT_RC);
	TRY(e2e_setup(&s, p, &o));
	TRY(post_recv_buf(&s, 0x99, 0, 64));
	TRY(e2e_sync(p, "posted"));
	TRY(expect_recv_ok(&s, 0x99, IBV_WC_RECV_RDMA_WITH_IMM, 512, true,
			   htobe32(0x1234abcd)));
	TRY(check_fill(s.buf + 4096, 512, 0x51, "the written bytes"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* ================================================ limit, resize, ENOMEM */

/* The SRQ's limit event: once per arm, when fewer WRs than the limit remain. */
static int limit_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	int i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	sge = sge_of(&s, 0, 16);
	for (i = 0; i < 6; i++) {
		TRY(e2e_sync(p, "next"));
		wr = send_to(i, &sge, &s);
		TRY(post_send1(s.qp, &wr));
		TRY(expect_send_ok(&s, i, IBV_WC_SEND, 16));
	}
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int limit_resp(struct e2e_proc *p)
{
	struct ibv_srq_attr attr = { .srq_limit = 8 };
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_wc wc;
	int i, ret;

	srq_opts(&o, IBV_QPT_RC);
	o.srq_max_wr = 16;
	TRY(e2e_setup(&s, p, &o));
	for (i = 0; i < 10; i++)
		TRY(post_recv_buf(&s, i, i * SLOT, SLOT));
	ret = ibv_modify_srq(s.srq, &attr, IBV_SRQ_LIMIT);
	CHECK(!ret, "ibv_modify_srq(LIMIT 8): %s", strerror(ret));
	TRY(ibv_query_srq(s.srq, &attr) ? FAIL("ibv_query_srq") : 0);
	CHECK(attr.srq_limit == 8, "srq_limit %u after arming", attr.srq_limit);
	for (i = 0; i < 6; i++) {
		TRY(e2e_sync(p, "next"));
		TRY(poll_one(rcq_of(&s), &wc, E2E_WAIT_MS));
		CHECK(wc.status == IBV_WC_SUCCESS, "receive %d: %s", i,
		      ibv_wc_status_str(wc.status));
		/* 10 - (i + 1) WRs remain: the event comes at 7, once. */
		if (i == 2 || i == 4) {
			TRY(expect_srq_event(s.ctx, s.srq));
			TRY(ibv_query_srq(s.srq, &attr) ? FAIL("ibv_query_srq") : 0);
			CHECK(attr.srq_limit == 0, "srq_limit %u after the event",
			      attr.srq_limit);
		} else {
			TRY(expect_no_async(s.ctx, 20, "limit event"));
		}
		if (i == 3) { /* armed again: the next WR taken fires it */
			attr.srq_limit = 7;
			ret = ibv_modify_srq(s.srq, &attr, IBV_SRQ_LIMIT);
			CHECK(!ret, "ibv_modify_srq(LIMIT 7): %s", strerror(ret));
		}
	}
	TRY(e2e_sync(p, "end"));
	/* A limit above max_wr is refused. */
	attr.srq_limit = 17;
	ret = ibv_modify_srq(s.srq, &attr, IBV_SRQ_LIMIT);
	CHECK(ret == EINVAL, "srq_limit above max_wr: %s", strerror(ret));
	return e2e_close(&s);
}

/* Exactly max_wr WRs; resize and query; never below what it holds. */
static int capacity(struct e2e_proc *p)
{
	struct ibv_srq_init_attr_ex ax = {
		.attr = { .max_wr = 20, .max_sge = 2 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD,
		.srq_type = IBV_SRQT_BASIC,
	};
	struct ibv_recv_wr wr[256], *bad;
	struct ibv_srq_attr attr;
	struct ibv_context *ctx;
	struct ibv_sge sge = { 0, 8, 0 };
	struct ibv_srq *srq;
	uint32_t max;
	int i, ret;

	(void)p;
	TRY(e2e_open_device(&ctx));
	ax.pd = ibv_alloc_pd(ctx);
	CHECK(ax.pd, "ibv_alloc_pd");
	srq = ibv_create_srq_ex(ctx, &ax);
	CHECK(srq, "ibv_create_srq_ex(BASIC): %s", strerror(errno));
	max = ax.attr.max_wr;
	CHECK(max >= 20 && max < 128, "max_wr %u granted for 20", max);
	for (i = 0; i < 256; i++)
		wr[i] = (struct ibv_recv_wr){ .wr_id = i, .sg_list = &sge,
					      .num_sge = 1,
					      .next = i < 255 ? &wr[i + 1] : NULL };
	/* A list one longer than max_wr: all but the last go in. */
	wr[max].next = NULL;
	ret = ibv_post_srq_recv(srq, wr, &bad);
	CHECK(ret == ENOMEM && bad == &wr[max],
	      "posting %u WRs to an SRQ of %u: %s, bad_wr %ld", max + 1, max,
	      strerror(ret), bad ? (long)(bad - wr) : -1);
	wr[max].next = &wr[max + 1];
	/* Grown: exactly the difference more fits. */
	attr.max_wr = max + 10;
	ret = ibv_modify_srq(srq, &attr, IBV_SRQ_MAX_WR);
	CHECK(!ret, "ibv_modify_srq(MAX_WR %u): %s", max + 10, strerror(ret));
	CHECK(!ibv_query_srq(srq, &attr), "ibv_query_srq");
	CHECK(attr.max_wr >= max + 10 && attr.max_wr < 250,
	      "max_wr %u after growing to %u", attr.max_wr, max + 10);
	i = attr.max_wr - max;
	wr[max + i].next = NULL;
	ret = ibv_post_srq_recv(srq, &wr[max], &bad);
	CHECK(ret == ENOMEM && bad == &wr[max + i],
	      "posting after the resize: %s, bad_wr %ld", strerror(ret),
	      bad ? (long)(bad - wr) : -1);
	/* Never below what it holds. */
	attr.max_wr = max;
	ret = ibv_modify_srq(srq, &attr, IBV_SRQ_MAX_WR);
	CHECK(ret == EINVAL, "shrinking below the WRs held: %s", strerror(ret));
	CHECK(!ibv_destroy_srq(srq), "ibv_destroy_srq");
	CHECK(!ibv_dealloc_pd(ax.pd), "ibv_dealloc_pd");
	CHECK(!ibv_close_device(ctx), "ibv_close_device");
	return 0;
}

/* ============================================ an erroring QP on an SRQ */

/*
 * Role 1's QP A goes to ERR: LAST_WQE_REACHED, and nothing of the SRQ is
 * flushed: QP B keeps receiving into the WQEs that were there.
 */
static int last_wqe_req(struct e2e_proc *p)
{
	struct srq_pair sp;
	struct e2e_side *s = &sp.s;
	struct e2e_opts o;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	int i;

	e2e_default_opts(&o);
	TRY(e2e_setup(s, p, &o));
	TRY(second_qp(&sp));
	TRY(e2e_sync(p, "A in error"));
	for (i = 0; i < 4; i++) {
		fill(s->buf + i * SLOT, 64, 90 + i);
		sge = sge_of(s, i * SLOT, 64);
		wr = send_to(i, &sge, s);
		TRY(post_send1(sp.qp2, &wr));
	}
	for (i = 0; i < 4; i++)
		TRY(expect_wc(scq_of(s), &(struct wc_want){
			.wr_id = i, .status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_SEND, .byte_len = 64,
			.qp_num = sp.qp2->qp_num }, "send on B"));
	TRY(e2e_sync(p, "received"));
	CHECK(!ibv_destroy_qp(sp.qp2), "ibv_destroy_qp");
	return e2e_close(s);
}

static int last_wqe_resp(struct e2e_proc *p)
{
	struct srq_pair sp;
	struct e2e_side *s = &sp.s;
	struct e2e_opts o;
	struct ibv_wc wc;
	int i;

	srq_opts(&o, IBV_QPT_RC);
	TRY(e2e_setup(s, p, &o));
	TRY(second_qp(&sp));
	for (i = 0; i < 4; i++)
		TRY(post_recv_buf(s, 500 + i, i * SLOT, SLOT));
	TRY(qp_to_state(s->qp, IBV_QPS_ERR));
	TRY(expect_async(s->ctx, s->qp, IBV_EVENT_QP_LAST_WQE_REACHED,
			 E2E_WAIT_MS));
	/* No flush of the SRQ's WQEs on A's account. */
	TRY(expect_no_wc(rcq_of(s), 50, "receive CQ after A's error"));
	TRY(e2e_sync(p, "A in error"));
	for (i = 0; i < 4; i++) {
		TRY(poll_one(rcq_of(s), &wc, E2E_WAIT_MS));
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 500u + i &&
		      wc.qp_num == sp.qp2->qp_num && wc.byte_len == 64,
		      "receive %d on B: %s wr_id %llu qp %#x", i,
		      ibv_wc_status_str(wc.status),
		      (unsigned long long)wc.wr_id, wc.qp_num);
		TRY(check_fill(s->buf + i * SLOT, 64, 90 + i, "B's message"));
	}
	TRY(e2e_sync(p, "received"));
	CHECK(!ibv_destroy_qp(sp.qp2), "ibv_destroy_qp");
	return e2e_close(s);
}

#define PAIR(n, req, resp)                                                     \
	{ .group = "srq", .name = n, .nroles = 2, .role = { req, resp } }

const struct e2e_test e2e_srq_tests[] = {
	PAIR("rc_shared", rc_req, rc_resp),
	PAIR("write_imm", write_imm_req, write_imm_resp),
	PAIR("uc_shared", uc_req, uc_resp),
	PAIR("ud_shared", ud_req, ud_resp),
	PAIR("limit_event", limit_req, limit_resp),
	{ .group = "srq", .name = "capacity", .nroles = 1, .role = { capacity } },
	PAIR("last_wqe_reached", last_wqe_req, last_wqe_resp),
	{ 0 },
};
