// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Objects and their limits:
 *  - group "objects": what ibv_query_device_ex promises (SRQs, windows,
 *    AHs, XRC), ibv_query_qp_data_in_order, ibv_resize_cq with
 *    completions queued, and every verb ringnic does not offer answering
 *    EOPNOTSUPP;
 *  - group "accounting": a send queue, receive queue or SRQ takes exactly
 *    the WRs its create call granted, whatever their size; the next post
 *    fails with ENOMEM at the first WR that does not fit, after the WRs
 *    before it were posted, and the room comes back as WRs complete
 *    (ringnicdv_query_sq_window says the same).
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/ringnicdv.h>

#include "e2e.h"

#define FILLER 0xee
#define LOCAL_OFF 65536
#define RECV_OFF 131072

/* ================================================================ device */

/*
 * ibv_query_device_ex promises SRQs, memory windows of both types, AHs
 * and XRC, with limits that hold: an SRQ of max_srq_wr WRs of
 * max_srq_sge SGEs can be made and one WR more cannot; a window of each
 * type and an AH can be made, but not an AH without a GRH.
 */
static int device_caps(struct e2e_proc *p)
{
	const uint64_t flags = IBV_DEVICE_XRC | IBV_DEVICE_MEM_WINDOW |
			       IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	struct ibv_srq_init_attr sa = { 0 };
	struct ibv_device_attr_ex ax;
	struct ibv_device_attr a;
	struct ibv_context *ctx;
	struct ibv_ah_attr ah_attr = {
		.is_global = 1,
		.port_num = 1,
		.grh = { .hop_limit = 1 },
	};
	struct ibv_srq *srq;
	struct ibv_mw *mw;
	struct ibv_ah *ah;
	struct ibv_pd *pd;
	int ret;

	(void)p;
	TRY(e2e_open_device(&ctx));
	ret = ibv_query_device_ex(ctx, NULL, &ax);
	CHECK(!ret, "ibv_query_device_ex: %s", strerror(ret));
	a = ax.orig_attr;
	CHECK(a.max_srq > 0 && a.max_srq_wr > 0 && a.max_srq_sge > 0,
	      "max_srq %d max_srq_wr %d max_srq_sge %d", a.max_srq, a.max_srq_wr,
	      a.max_srq_sge);
	CHECK(a.max_mw > 0 && a.max_ah > 0, "max_mw %d max_ah %d", a.max_mw,
	      a.max_ah);
	CHECK((a.device_cap_flags & flags) == flags,
	      "device_cap_flags %#x lack XRC, MEM_WINDOW or MEM_WINDOW_TYPE_2B",
	      a.device_cap_flags);
	ret = ibv_query_device(ctx, &a);
	CHECK(!ret, "ibv_query_device: %s", strerror(ret));
	CHECK(!memcmp(&a, &ax.orig_attr, sizeof(a)),
	      "ibv_query_device and ibv_query_device_ex disagree");

	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "ibv_alloc_pd: %s", strerror(errno));
	sa.attr.max_wr = a.max_srq_wr;
	sa.attr.max_sge = a.max_srq_sge;
	srq = ibv_create_srq(pd, &sa);
	CHECK(srq, "ibv_create_srq(max_srq_wr %d, max_srq_sge %d): %s",
	      a.max_srq_wr, a.max_srq_sge, strerror(errno));
	CHECK(!ibv_destroy_srq(srq), "ibv_destroy_srq failed");
	sa.attr.max_wr = a.max_srq_wr + 1;
	srq = ibv_create_srq(pd, &sa);
	CHECK(!srq && errno == EINVAL,
	      "ibv_create_srq of max_srq_wr + 1 WRs: %s, expected EINVAL",
	      srq ? "created" : strerror(errno));
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	CHECK(mw, "ibv_alloc_mw type 1: %s", strerror(errno));
	CHECK(!ibv_dealloc_mw(mw), "ibv_dealloc_mw failed");
	mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	CHECK(mw, "ibv_alloc_mw type 2: %s", strerror(errno));
	CHECK(!ibv_dealloc_mw(mw), "ibv_dealloc_mw failed");
	CHECK(!ibv_query_gid(ctx, 1, 0, &ah_attr.grh.dgid), "ibv_query_gid: %s",
	      strerror(errno));
	ah = ibv_create_ah(pd, &ah_attr);
	CHECK(ah, "ibv_create_ah: %s", strerror(errno));
	CHECK(!ibv_destroy_ah(ah), "ibv_destroy_ah failed");
	/* RoCE has no LIDs: an AH must carry a GRH, as the kernel insists. */
	ah_attr.is_global = 0;
	ah = ibv_create_ah(pd, &ah_attr);
	CHECK(!ah && errno == EINVAL, "ibv_create_ah without a GRH: %s, "
	      "expected EINVAL", ah ? "created" : strerror(errno));
	CHECK(!ibv_dealloc_pd(pd), "ibv_dealloc_pd failed");
	ret = ibv_close_device(ctx);
	CHECK(!ret, "ibv_close_device: %s", strerror(ret));
	return 0;
}

/*
 * ibv_query_qp_data_in_order (rdma-core 44: flags must be 0): the device
 * writes every message's data in order, so 1 for every operation; flags
 * it does not know get the safe answer, 0.
 */
static int data_in_order(struct e2e_proc *p)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_SEND_WITH_INV,
	};
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int i;
	int ret;

	e2e_default_opts(&o);
	TRY(e2e_open(&s, p, &o));
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		ret = ibv_query_qp_data_in_order(s.qp, ops[i], 0);
		CHECK(ret == 1, "ibv_query_qp_data_in_order(opcode %d, 0) = %d, expected 1",
		      ops[i], ret);
		ret = ibv_query_qp_data_in_order(s.qp, ops[i], 1);
		CHECK(ret == 0, "ibv_query_qp_data_in_order(opcode %d, flags 1) = %d, expected 0",
		      ops[i], ret);
	}
	return e2e_close(&s);
}

/* ========================================================= unsupported */

/* A constructor that must fail with EOPNOTSUPP. */
#define NOT_SUPPORTED(obj, what)                                               \
	do {                                                                   \
		errno = 0;                                                     \
		if ((obj))                                                     \
			return FAIL("%s succeeded", what);                     \
		CHECK(errno == EOPNOTSUPP, "%s: errno %d (%s), expected EOPNOTSUPP", \
		      what, errno, strerror(errno));                           \
	} while (0)

/* A verb returning an errno that must be EOPNOTSUPP. */
#define RET_NOT_SUPPORTED(expr, what)                                          \
	do {                                                                   \
		int ret_ = (expr);                                             \
		CHECK(ret_ == EOPNOTSUPP, "%s returned %d (%s), expected EOPNOTSUPP", \
		      what, ret_, strerror(ret_));                             \
	} while (0)

/*
 * What ringnic does not offer answers EOPNOTSUPP (never EINVAL, which
 * says the request was wrong): raw packet and driver QPs, device memory,
 * flows, WQs, RSS, thread and parent domains, counters, CQ moderation and
 * CQ flags, unknown QP create flags and send operations, completion
 * fields it cannot fill, tag-matching SRQs, DMA-buf MRs, null MRs,
 * multicast, ECE, rate limits, clock values.
 */
static int unsupported(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RAW_PACKET,
	};
	struct ibv_qp_init_attr_ex qx;
	struct ibv_alloc_dm_attr dm = { .length = 4096 };
	struct {
		struct ibv_flow_attr attr;
		struct ibv_flow_spec_eth eth;
	} flow = {
		.attr = { .type = IBV_FLOW_ATTR_NORMAL,
			  .size = sizeof(flow),
			  .num_of_specs = 1,
			  .port = 1 },
		.eth = { .type = IBV_FLOW_SPEC_ETH,
			 .size = sizeof(struct ibv_flow_spec_eth) },
	};
	struct ibv_wq_init_attr wq = {
		.wq_type = IBV_WQT_RQ,
		.max_wr = 4,
		.max_sge = 1,
	};
	struct ibv_rwq_ind_table_init_attr ind = { .log_ind_tbl_size = 0 };
	struct ibv_td_init_attr td = { 0 };
	struct ibv_parent_domain_init_attr pdom = { 0 };
	struct ibv_counters_init_attr cnt = { 0 };
	struct ibv_modify_cq_attr mcq = {
		.attr_mask = IBV_CQ_ATTR_MODERATE,
		.moderate = { .cq_count = 1, .cq_period = 1 },
	};
	struct ibv_cq_init_attr_ex cqx = { .cqe = 16 };
	struct ibv_srq_init_attr_ex srqx = {
		.attr = { .max_wr = 4, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM,
		.srq_type = IBV_SRQT_TM,
		.tm_cap = { .max_num_tags = 4, .max_ops = 4 },
	};
	struct ibv_qp_rate_limit_attr rl = { .rate_limit = 1000 };
	struct ibv_values_ex values = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };
	struct ibv_ece ece = { 0 };
	union ibv_gid gid;

	e2e_default_opts(&o);
	TRY(e2e_open(&s, p, &o));
	qa.send_cq = s.scq;
	qa.recv_cq = s.rcq;
	NOT_SUPPORTED(ibv_create_qp(s.pd, &qa), "ibv_create_qp(IBV_QPT_RAW_PACKET)");
	qa.qp_type = IBV_QPT_DRIVER;
	NOT_SUPPORTED(ibv_create_qp(s.pd, &qa), "ibv_create_qp(IBV_QPT_DRIVER)");

	/* ibv_create_qp_ex: a create flag, a send operation, an attribute. */
	memset(&qx, 0, sizeof(qx));
	qx.send_cq = s.scq;
	qx.recv_cq = s.rcq;
	qx.cap = qa.cap;
	qx.qp_type = IBV_QPT_RC;
	qx.pd = s.pd;
	qx.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS;
	qx.create_flags = IBV_QP_CREATE_SCATTER_FCS;
	NOT_SUPPORTED(ibv_create_qp_ex(s.ctx, &qx),
		      "ibv_create_qp_ex with IBV_QP_CREATE_SCATTER_FCS");
	qx.create_flags = 1u << 30;
	NOT_SUPPORTED(ibv_create_qp_ex(s.ctx, &qx),
		      "ibv_create_qp_ex with an unknown create flag");
	qx.create_flags = 0;
	qx.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	qx.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO;
	NOT_SUPPORTED(ibv_create_qp_ex(s.ctx, &qx),
		      "ibv_create_qp_ex with IBV_QP_EX_WITH_TSO");
	qx.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_MAX_TSO_HEADER;
	qx.max_tso_header = 64;
	NOT_SUPPORTED(ibv_create_qp_ex(s.ctx, &qx),
		      "ibv_create_qp_ex with IBV_QP_INIT_ATTR_MAX_TSO_HEADER");
	qx.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_RX_HASH;
	qx.max_tso_header = 0;
	qx.rx_hash_conf.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
	NOT_SUPPORTED(ibv_create_qp_ex(s.ctx, &qx),
		      "ibv_create_qp_ex with IBV_QP_INIT_ATTR_RX_HASH");

	/* CQs: fields the device cannot fill, moderation. */
	cqx.wc_flags = IBV_WC_EX_WITH_BYTE_LEN |
		       IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
	NOT_SUPPORTED(ibv_create_cq_ex(s.ctx, &cqx),
		      "ibv_create_cq_ex with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP");
	cqx.wc_flags = IBV_WC_EX_WITH_FLOW_TAG;
	NOT_SUPPORTED(ibv_create_cq_ex(s.ctx, &cqx),
		      "ibv_create_cq_ex with IBV_WC_EX_WITH_FLOW_TAG");
	cqx.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | (1ull << 40);
	NOT_SUPPORTED(ibv_create_cq_ex(s.ctx, &cqx),
		      "ibv_create_cq_ex with an unknown wc flag");
	cqx.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;
	cqx.comp_mask = IBV_CQ_INIT_ATTR_MASK_FLAGS;
	cqx.flags = IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN;
	NOT_SUPPORTED(ibv_create_cq_ex(s.ctx, &cqx),
		      "ibv_create_cq_ex with IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN");
	cqx.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	cqx.flags = 0;
	cqx.parent_domain = s.pd;
	NOT_SUPPORTED(ibv_create_cq_ex(s.ctx, &cqx),
		      "ibv_create_cq_ex in a parent domain");
	RET_NOT_SUPPORTED(ibv_modify_cq(s.scq, &mcq), "ibv_modify_cq");

	srqx.pd = s.pd;
	srqx.cq = s.rcq;
	NOT_SUPPORTED(ibv_create_srq_ex(s.ctx, &srqx),
		      "ibv_create_srq_ex(IBV_SRQT_TM)");

	NOT_SUPPORTED(ibv_alloc_dm(s.ctx, &dm), "ibv_alloc_dm");
	NOT_SUPPORTED(ibv_create_flow(s.qp, &flow.attr), "ibv_create_flow");
	wq.pd = s.pd;
	wq.cq = s.rcq;
	NOT_SUPPORTED(ibv_create_wq(s.ctx, &wq), "ibv_create_wq");
	NOT_SUPPORTED(ibv_create_rwq_ind_table(s.ctx, &ind),
		      "ibv_create_rwq_ind_table");
	NOT_SUPPORTED(ibv_alloc_td(s.ctx, &td), "ibv_alloc_td");
	pdom.pd = s.pd;
	NOT_SUPPORTED(ibv_alloc_parent_domain(s.ctx, &pdom),
		      "ibv_alloc_parent_domain");
	NOT_SUPPORTED(ibv_create_counters(s.ctx, &cnt), "ibv_create_counters");
	NOT_SUPPORTED(ibv_reg_dmabuf_mr(s.pd, 0, 4096, 0, 0,
					IBV_ACCESS_LOCAL_WRITE),
		      "ibv_reg_dmabuf_mr");
	NOT_SUPPORTED(ibv_alloc_null_mr(s.pd), "ibv_alloc_null_mr");

	memset(&gid, 0, sizeof(gid));
	gid.raw[0] = 0xff;
	RET_NOT_SUPPORTED(ibv_attach_mcast(s.qp, &gid, 0), "ibv_attach_mcast");
	RET_NOT_SUPPORTED(ibv_modify_qp_rate_limit(s.qp, &rl),
			  "ibv_modify_qp_rate_limit");
	RET_NOT_SUPPORTED(ibv_query_ece(s.qp, &ece), "ibv_query_ece");
	RET_NOT_SUPPORTED(ibv_set_ece(s.qp, &ece), "ibv_set_ece");
	RET_NOT_SUPPORTED(ibv_query_rt_values_ex(s.ctx, &values),
			  "ibv_query_rt_values_ex");

	/* Nothing of it was made: the QP still works as made. */
	TRY(expect_qp_state(s.qp, IBV_QPS_RESET));
	return e2e_close(&s);
}

/* ============================================================= resize_cq */

#define RESIZE_MSGS 62

static uint32_t msg_len(unsigned int i)
{
	return 16 + i * 3;
}

static uint32_t msg_imm(unsigned int i)
{
	return htobe32(0xc0de0000u + i);
}

/* SEND_WITH_IMM messages first .. first + n - 1, each completed. */
static int send_msgs(struct e2e_side *s, unsigned int first, unsigned int n)
{
	unsigned int i;

	for (i = first; i < first + n; i++) {
		struct ibv_sge sge = sge_of(s, LOCAL_OFF + i * 512, msg_len(i));
		struct ibv_send_wr wr = {
			.wr_id = 0x1000 + i,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IBV_WR_SEND_WITH_IMM,
			.send_flags = IBV_SEND_SIGNALED,
			.imm_data = msg_imm(i),
		};

		fill(s->buf + LOCAL_OFF + i * 512, msg_len(i), i);
		TRY(post_send1(s->qp, &wr));
	}
	for (i = first; i < first + n; i++)
		TRY(expect_send_ok(s, 0x1000 + i, IBV_WC_SEND, msg_len(i)));
	return 0;
}

static int post_recvs(struct e2e_side *s, unsigned int first, unsigned int n)
{
	unsigned int i;

	for (i = first; i < first + n; i++)
		TRY(post_recv_buf(s, 0x2000 + i, RECV_OFF + i * 512, 512));
	return 0;
}

/* The receives of messages first .. first + n - 1, in order, intact. */
static int poll_msgs(struct e2e_side *s, unsigned int first, unsigned int n)
{
	unsigned int i;

	for (i = first; i < first + n; i++) {
		TRY(expect_recv_ok(s, 0x2000 + i, IBV_WC_RECV, msg_len(i), true,
				   msg_imm(i)));
		TRY(check_fill(s->buf + RECV_OFF + i * 512, msg_len(i), i,
			       "received message"));
	}
	return 0;
}

static int resize(struct ibv_cq *cq, int cqe, int want)
{
	int ret = ibv_resize_cq(cq, cqe);

	CHECK(ret == want, "ibv_resize_cq(%d): %d (%s), expected %d (%s)", cqe,
	      ret, strerror(ret), want, strerror(want));
	if (!ret)
		CHECK(cq->cqe >= cqe, "ibv_resize_cq(%d) left cq->cqe %d", cqe,
		      cq->cqe);
	return 0;
}

/* One completion event, for cq, within the usual wait. */
static int expect_cq_event(struct e2e_side *s, struct ibv_cq *want)
{
	struct pollfd pfd = { .fd = s->channel->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *cq_ctx;
	int r;

	do
		r = poll(&pfd, 1, E2E_WAIT_MS);
	while (r < 0 && errno == EINTR);
	CHECK(r == 1, "no completion event within %d ms", E2E_WAIT_MS);
	CHECK(!ibv_get_cq_event(s->channel, &cq, &cq_ctx),
	      "ibv_get_cq_event: %s", strerror(errno));
	ibv_ack_cq_events(cq, 1);
	CHECK(cq == want, "completion event for CQ %p, expected %p", (void *)cq,
	      (void *)want);
	return 0;
}

static int resize_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(e2e_sync(p, "posted"));
	TRY(send_msgs(&s, 0, 10));
	TRY(e2e_sync(p, "sent 0-9"));
	TRY(e2e_sync(p, "resized"));
	TRY(send_msgs(&s, 10, 2));
	TRY(e2e_sync(p, "sent 10-11"));
	TRY(e2e_sync(p, "armed"));
	TRY(send_msgs(&s, 12, 1));
	TRY(e2e_sync(p, "armed again"));
	TRY(send_msgs(&s, 13, 1));
	for (i = 14; i < RESIZE_MSGS; i += 8) {
		TRY(e2e_sync(p, "batch"));
		TRY(send_msgs(&s, i, 8));
		TRY(e2e_sync(p, "batch sent"));
	}
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/*
 * ibv_resize_cq keeps what is queued, growing or shrinking (to exactly the
 * queued count), and refuses with EINVAL to go below it; the completions
 * come out in order with every field intact; an arm made before a resize
 * still fires, arming after one too; the resized ring wraps.
 */
static int resize_resp(struct e2e_proc *p, bool cq_ex)
{
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int i;
	int ret;

	e2e_default_opts(&o);
	o.cqe = 16;
	o.channel = true;
	o.cq_ex = cq_ex;
	TRY(e2e_setup(&s, p, &o));
	TRY(post_recvs(&s, 0, 12));
	TRY(e2e_sync(p, "posted"));
	TRY(e2e_sync(p, "sent 0-9"));
	/* 10 queued: bigger, then down to exactly what is queued. */
	TRY(resize(s.rcq, 64, 0));
	TRY(poll_msgs(&s, 0, 3));
	TRY(resize(s.rcq, 7, 0));
	CHECK(s.rcq->cqe < 64, "shrunk to 7, cq->cqe is %d", s.rcq->cqe);
	TRY(poll_msgs(&s, 3, 4));
	/* 3 queued: 2 is too few, and refusing changes nothing. */
	TRY(resize(s.rcq, 2, EINVAL));
	TRY(resize(s.rcq, 0, EINVAL));
	TRY(resize(s.rcq, 5, 0));
	TRY(e2e_sync(p, "resized"));
	TRY(e2e_sync(p, "sent 10-11"));
	TRY(poll_msgs(&s, 7, 5));
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ"));

	/* Armed, then resized: the arm holds. */
	ret = ibv_req_notify_cq(s.rcq, 0);
	CHECK(!ret, "ibv_req_notify_cq: %s", strerror(ret));
	TRY(resize(s.rcq, 32, 0));
	TRY(post_recvs(&s, 12, 2));
	TRY(e2e_sync(p, "armed"));
	TRY(expect_cq_event(&s, s.rcq));
	TRY(poll_msgs(&s, 12, 1));
	ret = ibv_req_notify_cq(s.rcq, 0);
	CHECK(!ret, "ibv_req_notify_cq: %s", strerror(ret));
	TRY(e2e_sync(p, "armed again"));
	TRY(expect_cq_event(&s, s.rcq));
	TRY(poll_msgs(&s, 13, 1));

	/* Round and round the resized ring. */
	TRY(post_recvs(&s, 14, RESIZE_MSGS - 14));
	for (i = 14; i < RESIZE_MSGS; i += 8) {
		TRY(e2e_sync(p, "batch"));
		TRY(e2e_sync(p, "batch sent"));
		TRY(poll_msgs(&s, i, 8));
	}
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* The same with an ibv_cq_ex, read with start_poll/next_poll/end_poll. */
static int resize_plain_resp(struct e2e_proc *p) { return resize_resp(p, false); }
static int resize_ex_resp(struct e2e_proc *p) { return resize_resp(p, true); }

/* ============================================================ accounting */

#define ACC_MAX 64 /* the most WRs a queue of these tests may grant */
#define SQ_ROUNDS 3 /* the third through the ibv_wr_* API */

static int sq_window(struct ibv_qp *qp, uint32_t want_free, uint32_t want_max,
		     const char *what)
{
	struct ringnicdv_sq_window w;
	int ret = ringnicdv_query_sq_window(qp, &w, sizeof(w));

	CHECK(!ret, "ringnicdv_query_sq_window: %s", strerror(ret));
	CHECK(w.free_wr == want_free && w.max_wr == want_max,
	      "%s: the SQ window says free_wr %u max_wr %u, expected %u %u", what,
	      w.free_wr, w.max_wr, want_free, want_max);
	return 0;
}

static uint32_t acc_seed(unsigned int round, unsigned int i)
{
	return 1000 * (round + 1) + i;
}

#define ACC_LEN 64 /* every message */
#define ACC_SGE 8 /* the most SGEs a WR of these tests may have */

/* WRs first .. first + n - 1 of the round as one ibv_wr_* batch. */
static int wr_batch(struct e2e_side *s, unsigned int round, unsigned int first,
		    unsigned int n)
{
	unsigned int i;

	ibv_wr_start(s->qpx);
	for (i = first; i < first + n; i++) {
		fill(s->buf + LOCAL_OFF + i * 256, ACC_LEN, acc_seed(round, i));
		s->qpx->wr_id = acc_seed(round, i);
		s->qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(s->qpx);
		ibv_wr_set_sge(s->qpx, s->mr->lkey, s->base + LOCAL_OFF + i * 256,
			       ACC_LEN);
	}
	return ibv_wr_complete(s->qpx);
}

/*
 * Through the ibv_wr_* API: a batch of max_send_wr + 1 fails with ENOMEM
 * and, as a failed ibv_wr_complete does, posts none of it; a batch of
 * max_send_wr fits; one more then fails.
 */
static int sq_fill_wr_api(struct e2e_side *s, unsigned int round, unsigned int n)
{
	int ret;

	ret = wr_batch(s, round, 0, n + 1);
	CHECK(ret == ENOMEM, "ibv_wr_complete of %u WRs to a queue of %u: %d (%s), expected ENOMEM",
	      n + 1, n, ret, strerror(ret));
	TRY(sq_window(s->qp, n, n, "after a refused batch"));
	TRY(expect_no_wc(scq_of(s), 10, "a refused batch"));
	ret = wr_batch(s, round, 0, n);
	CHECK(!ret, "ibv_wr_complete of %u WRs to a queue of %u: %s", n, n,
	      strerror(ret));
	TRY(sq_window(s->qp, 0, n, "a full queue"));
	ret = wr_batch(s, round, n, 1);
	CHECK(ret == ENOMEM, "ibv_wr_complete of one WR more: %d (%s), expected ENOMEM",
	      ret, strerror(ret));
	return 0;
}

/*
 * The send queue of max_send_wr 16 and max_send_sge 4 (the issue's
 * example): its peer has no receive yet, so the first SEND waits (RNR,
 * retried forever) and nothing retires.  A list of max_send_wr + 1
 * signaled WRs posts max_send_wr of them and fails at the last with
 * ENOMEM, whether each has one SGE, four or inline data; one more post
 * fails the same way; once the peer receives, every posted WR completes,
 * in order, and the room is back.  The same through the ibv_wr_* API.
 */
/*
 * Through ibv_post_send: a list of max_send_wr + 1 WRs posts all but its
 * last (ENOMEM, bad_wr there); one WR more alone fails the same way.
 * Round 0 has one SGE a WR; round 1 as many SGEs as the QP takes, or
 * inline data, the largest WRs there are.
 */
static int sq_fill_list(struct e2e_side *s, unsigned int round, unsigned int n)
{
	struct ibv_send_wr wr[ACC_MAX + 1], extra, *bad;
	struct ibv_sge sge[ACC_MAX + 1][ACC_SGE];
	unsigned int i, k, nsge = s->cap.max_send_sge;
	int ret;

	CHECK(nsge >= 4 && nsge <= ACC_SGE, "max_send_sge %u granted for 4", nsge);
	for (i = 0; i <= n; i++) {
		size_t off = LOCAL_OFF + i * 256;

		fill(s->buf + off, ACC_LEN, acc_seed(round, i));
		wr[i] = (struct ibv_send_wr){
			.wr_id = acc_seed(round, i),
			.sg_list = sge[i],
			.num_sge = 1,
			.opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED,
			.next = i < n ? &wr[i + 1] : NULL,
		};
		sge[i][0] = sge_of(s, off, ACC_LEN);
		if (round == 1 && i % 2) {
			/* The message in nsge pieces: 8 bytes, ..., the rest. */
			for (k = 0; k < nsge; k++)
				sge[i][k] = sge_of(s, off + k * 8,
						   k + 1 < nsge ? 8 :
								  ACC_LEN - 8 * k);
			wr[i].num_sge = nsge;
		} else if (round == 1) {
			wr[i].send_flags |= IBV_SEND_INLINE;
		}
	}
	bad = NULL;
	ret = ibv_post_send(s->qp, wr, &bad);
	CHECK(ret == ENOMEM && bad == &wr[n],
	      "round %u: posting %u WRs to a queue of %u: %d (%s), bad_wr %p, expected ENOMEM at %p",
	      round, n + 1, n, ret, strerror(ret), (void *)bad, (void *)&wr[n]);
	TRY(sq_window(s->qp, 0, n, "a full queue"));
	extra = wr[n];
	bad = NULL;
	ret = ibv_post_send(s->qp, &extra, &bad);
	CHECK(ret == ENOMEM && bad == &extra,
	      "round %u: one WR more: %d (%s), expected ENOMEM", round, ret,
	      strerror(ret));
	return 0;
}

static int sq_acc_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int round, i, n;

	e2e_default_opts(&o);
	o.max_send_wr = 16;
	o.max_send_sge = 4;
	o.max_inline = ACC_LEN;
	o.rnr_retry = 7;
	o.qp_ex = true;
	TRY(e2e_setup(&s, p, &o));
	n = s.cap.max_send_wr;
	CHECK(n >= 16 && n <= ACC_MAX, "max_send_wr %u granted for 16", n);
	TRY(send_u64(p->peer, n));
	TRY(sq_window(s.qp, n, n, "a new QP"));
	for (round = 0; round < SQ_ROUNDS; round++) {
		if (round == 2)
			TRY(sq_fill_wr_api(&s, round, n));
		else
			TRY(sq_fill_list(&s, round, n));
		TRY(expect_qp_state(s.qp, IBV_QPS_RTS));
		TRY(e2e_sync(p, "full"));
		for (i = 0; i < n; i++)
			TRY(expect_send_ok(&s, acc_seed(round, i), IBV_WC_SEND,
					   ACC_LEN));
		TRY(expect_no_wc(scq_of(&s), 10, "the WRs that did not fit"));
		TRY(sq_window(s.qp, n, n, "a queue whose WRs completed"));
		TRY(e2e_sync(p, "round done"));
	}
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* The receiving side: n messages of the round, in order, byte for byte. */
static int expect_msgs(struct e2e_side *s, unsigned int round, unsigned int n,
		       bool four_sge)
{
	unsigned int i, k;

	for (i = 0; i < n; i++) {
		TRY(expect_recv_ok(s, acc_seed(round, i) + 0x10000, IBV_WC_RECV,
				   ACC_LEN, false, 0));
		for (k = 0; k < (four_sge ? 4u : 1u); k++) {
			uint8_t want[ACC_LEN];
			uint32_t len = four_sge ? 16 : ACC_LEN;

			fill(want, ACC_LEN, acc_seed(round, i));
			TRY(check_bytes(s->buf + RECV_OFF + i * 256 + k * 32,
					want + k * 16, len, "received message"));
		}
	}
	return 0;
}

static int sq_acc_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int round, i;
	uint64_t n;

	e2e_default_opts(&o);
	o.min_rnr_timer = 4; /* 40 us */
	TRY(e2e_setup(&s, p, &o));
	TRY(recv_u64(p->peer, &n, E2E_WAIT_MS));
	CHECK(n <= s.cap.max_recv_wr, "test bug: %llu messages, %u receives",
	      (unsigned long long)n, s.cap.max_recv_wr);
	for (round = 0; round < SQ_ROUNDS; round++) {
		TRY(e2e_sync(p, "full"));
		for (i = 0; i < n; i++)
			TRY(post_recv_buf(&s, acc_seed(round, i) + 0x10000,
					  RECV_OFF + i * 256, 256));
		TRY(expect_msgs(&s, round, n, false));
		TRY(e2e_sync(p, "round done"));
	}
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* Sends the messages of each round as the receiver asks. */
static int rq_acc_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int round, i;
	uint64_t rounds, n;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(recv_u64(p->peer, &rounds, E2E_WAIT_MS));
	for (round = 0; round < rounds; round++) {
		TRY(recv_u64(p->peer, &n, E2E_WAIT_MS));
		CHECK(n <= s.cap.max_send_wr, "test bug: %llu messages, %u WRs",
		      (unsigned long long)n, s.cap.max_send_wr);
		TRY(e2e_sync(p, "posted"));
		for (i = 0; i < n; i++) {
			size_t off = LOCAL_OFF + i * 256;
			struct ibv_sge sge = sge_of(&s, off, ACC_LEN);
			struct ibv_send_wr wr = {
				.wr_id = acc_seed(round, i),
				.sg_list = &sge,
				.num_sge = 1,
				.opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED,
			};

			fill(s.buf + off, ACC_LEN, acc_seed(round, i));
			TRY(post_send1(s.qp, &wr));
		}
		for (i = 0; i < n; i++)
			TRY(expect_send_ok(&s, acc_seed(round, i), IBV_WC_SEND,
					   ACC_LEN));
		TRY(e2e_sync(p, "sent"));
	}
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* The SRQ's max_wr as ibv_query_srq says it. */
static int srq_max_wr(struct ibv_srq *srq, uint32_t want)
{
	struct ibv_srq_attr a;
	int ret = ibv_query_srq(srq, &a);

	CHECK(!ret, "ibv_query_srq: %s", strerror(ret));
	CHECK(a.max_wr == want, "ibv_query_srq says max_wr %u, expected %u",
	      a.max_wr, want);
	return 0;
}

/*
 * A receive queue (the QP's own or an SRQ) of 16 WRs of up to 4 SGEs
 * takes exactly what create granted, with one SGE each or as many as
 * granted: a list of one more fails with ENOMEM at its last, one more
 * alone too; the posted ones take the messages in order; then the same
 * number fits again.  An SRQ resized to 32 (ibv_modify_srq) takes
 * exactly its new max_wr.
 */
static int rq_acc_resp(struct e2e_proc *p, bool srq)
{
	struct ibv_recv_wr rwr[ACC_MAX + 1], extra, *bad;
	struct ibv_sge sge[ACC_MAX + 1][ACC_SGE];
	unsigned int round, rounds = srq ? 3 : 2, i, k, n, nsge;
	struct e2e_opts o;
	struct e2e_side s;
	int ret;

	e2e_default_opts(&o);
	if (srq) {
		o.srq_max_wr = 16;
		o.srq_max_sge = 4;
	} else {
		o.max_recv_wr = 16;
		o.max_recv_sge = 4;
	}
	TRY(e2e_setup(&s, p, &o));
	if (srq) {
		n = s.srq_attr.max_wr;
		nsge = s.srq_attr.max_sge;
		TRY(srq_max_wr(s.srq, n));
	} else {
		n = s.cap.max_recv_wr;
		nsge = s.cap.max_recv_sge;
	}
	CHECK(n >= 16 && n <= ACC_MAX, "%u receive WRs granted for 16", n);
	CHECK(nsge >= 4 && nsge <= ACC_SGE, "%u receive SGEs granted for 4", nsge);
	TRY(send_u64(p->peer, rounds));
	for (round = 0; round < rounds; round++) {
		if (round == 2) {
			struct ibv_srq_attr a = { .max_wr = 32 };

			ret = ibv_modify_srq(s.srq, &a, IBV_SRQ_MAX_WR);
			CHECK(!ret, "ibv_modify_srq(max_wr 32): %s", strerror(ret));
			n = a.max_wr;
			CHECK(n >= 32 && n <= ACC_MAX, "%u SRQ WRs granted for 32", n);
			TRY(srq_max_wr(s.srq, n));
		}
		TRY(send_u64(p->peer, n));
		memset(s.buf + RECV_OFF, FILLER, (n + 1) * 256);
		for (i = 0; i <= n; i++) {
			rwr[i] = (struct ibv_recv_wr){
				.wr_id = acc_seed(round, i) + 0x10000,
				.sg_list = sge[i],
				.num_sge = round == 1 ? nsge : 1,
				.next = i < n ? &rwr[i + 1] : NULL,
			};
			/* Round 1: as many SGEs as granted, 16 bytes 32 apart. */
			sge[i][0] = sge_of(&s, RECV_OFF + i * 256,
					   round == 1 ? 16 : 256);
			for (k = 1; k < nsge; k++)
				sge[i][k] = sge_of(&s, RECV_OFF + i * 256 + k * 32,
						   16);
		}
		bad = NULL;
		ret = srq ? ibv_post_srq_recv(s.srq, rwr, &bad) :
			    ibv_post_recv(s.qp, rwr, &bad);
		CHECK(ret == ENOMEM && bad == &rwr[n],
		      "round %u: posting %u receives to a queue of %u: %d (%s), bad_wr %p, expected ENOMEM at %p",
		      round, n + 1, n, ret, strerror(ret), (void *)bad,
		      (void *)&rwr[n]);
		extra = rwr[n];
		bad = NULL;
		ret = srq ? ibv_post_srq_recv(s.srq, &extra, &bad) :
			    ibv_post_recv(s.qp, &extra, &bad);
		CHECK(ret == ENOMEM && bad == &extra,
		      "round %u: one receive more: %d (%s), expected ENOMEM", round,
		      ret, strerror(ret));
		TRY(e2e_sync(p, "posted"));
		TRY(e2e_sync(p, "sent"));
		TRY(expect_msgs(&s, round, n, round == 1));
		TRY(expect_no_wc(rcq_of(&s), 10, "the receives that did not fit"));
	}
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int rq_acc_qp_resp(struct e2e_proc *p) { return rq_acc_resp(p, false); }
static int rq_acc_srq_resp(struct e2e_proc *p) { return rq_acc_resp(p, true); }

/* ========================================= destroy_qp_cqes, reset_qp_cqes */

/*
 * ibv_destroy_qp, and ibv_modify_qp to RESET, take the QP's completions
 * out of its CQs, as mlx5 does: QPs A and B share the responder's receive
 * CQ; four messages arrive, on A, B, A, B, and stay unpolled; once A is
 * destroyed or reset, the CQ gives B's two, in order, and nothing of A.
 */
static int destroy_cqes_req(struct e2e_proc *p)
{
	struct ibv_qp *qps[2];
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t dest_b;
	unsigned int i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qps[0] = s.qp;
	TRY(e2e_extra_qp(&s, s.pd, &qps[1], &dest_b));
	TRY(e2e_sync(p, "posted"));
	for (i = 0; i < 4; i++) {
		struct ibv_sge sge = sge_of(&s, LOCAL_OFF, 64);
		struct ibv_send_wr wr = {
			.wr_id = 0x2000 + i,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED,
		};

		struct wc_want w = {
			.wr_id = 0x2000 + i,
			.status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_SEND,
			.byte_len = 64,
			.qp_num = qps[i % 2]->qp_num,
		};

		TRY(post_send1(qps[i % 2], &wr));
		TRY(expect_wc(scq_of(&s), &w, "SEND"));
	}
	TRY(e2e_sync(p, "sent"));
	TRY(e2e_sync(p, "end"));
	CHECK(!ibv_destroy_qp(qps[1]), "ibv_destroy_qp failed");
	return e2e_close(&s);
}

static int gone_cqes_resp(struct e2e_proc *p, bool reset)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_RESET };
	struct ibv_qp *qps[2];
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t dest_b;
	unsigned int i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qps[0] = s.qp;
	TRY(e2e_extra_qp(&s, s.pd, &qps[1], &dest_b));
	for (i = 0; i < 4; i++) {
		struct ibv_sge sge = sge_of(&s, i * 4096, 4096);

		TRY(post_recv1(qps[i % 2], 0x3000 + i, &sge, 1));
	}
	TRY(e2e_sync(p, "posted"));
	TRY(e2e_sync(p, "sent"));
	if (reset)
		CHECK(!ibv_modify_qp(qps[0], &attr, IBV_QP_STATE),
		      "modify_qp to RESET failed");
	else
		CHECK(!ibv_destroy_qp(qps[0]), "ibv_destroy_qp failed");
	s.qp = qps[1];
	s.rem.qpn = dest_b;
	TRY(expect_recv_ok(&s, 0x3001, IBV_WC_RECV, 64, false, 0));
	TRY(expect_recv_ok(&s, 0x3003, IBV_WC_RECV, 64, false, 0));
	TRY(expect_no_wc(rcq_of(&s), 20, reset ? "receive CQ after the reset" :
						 "receive CQ after the destroy"));
	TRY(e2e_sync(p, "end"));
	if (reset)
		CHECK(!ibv_destroy_qp(qps[0]), "ibv_destroy_qp failed");
	return e2e_close(&s);
}

static int destroy_cqes_resp(struct e2e_proc *p)
{
	return gone_cqes_resp(p, false);
}

static int reset_cqes_resp(struct e2e_proc *p)
{
	return gone_cqes_resp(p, true);
}

/* ================================================================ destroy_qp_sends */

/*
 * A destroyed QP's send completions stay in its CQ, as on rxe (its
 * receives leave: destroy_qp_cqes).  libfabric's verbs provider closes an
 * endpoint by destroying its QP, then polls the CQ for the QP's last sends
 * and reports those it does not find as flushed: RxM's last send before
 * the peer disconnected failed although it had arrived
 * (fi_rdm_multi_client under load).  A SEND on a second QP is acknowledged
 * (the responder has it), left unpolled, and the QP destroyed: the CQ
 * still gives its success.
 */
static int destroy_sends_req(struct e2e_proc *p)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr = {
		.wr_id = 0x2100,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct wc_want w = {
		.wr_id = 0x2100,
		.status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_SEND,
		.byte_len = 64,
	};
	struct ibv_qp *extra;
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t dest_b;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(e2e_extra_qp(&s, s.pd, &extra, &dest_b));
	sge = sge_of(&s, LOCAL_OFF, 64);
	w.qp_num = extra->qp_num;
	TRY(e2e_sync(p, "posted"));
	TRY(post_send1(extra, &wr));
	TRY(e2e_sync(p, "received"));
	/* The responder has the message: its ACK has had time to come. */
	e2e_sleep_ms(200);
	CHECK(!ibv_destroy_qp(extra), "ibv_destroy_qp failed");
	TRY(expect_wc(scq_of(&s), &w, "SEND of the destroyed QP"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int destroy_sends_resp(struct e2e_proc *p)
{
	struct ibv_qp *extra, *qp;
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_sge sge;
	uint32_t dest_b, qpn;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(e2e_extra_qp(&s, s.pd, &extra, &dest_b));
	sge = sge_of(&s, 0, 4096);
	TRY(post_recv1(extra, 0x3100, &sge, 1));
	TRY(e2e_sync(p, "posted"));
	/* expect_recv_ok checks the completion against s's QP and peer. */
	qp = s.qp;
	qpn = s.rem.qpn;
	s.qp = extra;
	s.rem.qpn = dest_b;
	TRY(expect_recv_ok(&s, 0x3100, IBV_WC_RECV, 64, false, 0));
	s.qp = qp;
	s.rem.qpn = qpn;
	TRY(e2e_sync(p, "received"));
	TRY(e2e_sync(p, "end"));
	CHECK(!ibv_destroy_qp(extra), "ibv_destroy_qp failed");
	return e2e_close(&s);
}

/* ================================================================== table */

#define PAIR(g, n, req, resp)                                                  \
	{ .group = g, .name = n, .nroles = 2, .role = { req, resp } }
#define ONE(g, n, fn) { .group = g, .name = n, .nroles = 1, .role = { fn } }

const struct e2e_test e2e_object_tests[] = {
	ONE("objects", "device_caps", device_caps),
	ONE("objects", "data_in_order", data_in_order),
	ONE("objects", "unsupported", unsupported),
	PAIR("objects", "resize_cq", resize_req, resize_plain_resp),
	PAIR("objects", "destroy_qp_cqes", destroy_cqes_req, destroy_cqes_resp),
	PAIR("objects", "reset_qp_cqes", destroy_cqes_req, reset_cqes_resp),
	PAIR("objects", "destroy_qp_sends", destroy_sends_req,
	     destroy_sends_resp),
	PAIR("objects", "resize_cq_ex", resize_req, resize_ex_resp),
	PAIR("accounting", "send_queue", sq_acc_req, sq_acc_resp),
	PAIR("accounting", "recv_queue", rq_acc_req, rq_acc_qp_resp),
	PAIR("accounting", "srq", rq_acc_req, rq_acc_srq_resp),
	{ 0 },
};
