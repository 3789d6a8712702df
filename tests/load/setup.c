// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A client's verbs objects and its connection: open ringnic0, make a PD,
 * a send and a receive CQ shared by all QPs, and per QP a local buffer and
 * a window (each its own MR) and the QP itself; then exchange QPNs,
 * windows and GIDs with the other side and bring the QPs to RTS.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

/* ---- setup ------------------------------------------------------------------ */

static int open_device(struct client *c)
{
	struct ibv_device **list;
	int i, n;

	list = ibv_get_device_list(&n);
	CHECK(list, "ibv_get_device_list: %s", strerror(errno));
	for (i = 0; i < n && !c->ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), LOAD_DEVICE))
			c->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	CHECK(c->ctx, "cannot open %s (%d devices; under ringnic-run?)", LOAD_DEVICE, n);
	/* Async events are checked, not waited for. */
	i = fcntl(c->ctx->async_fd, F_GETFL);
	CHECK(i >= 0 && !fcntl(c->ctx->async_fd, F_SETFL, i | O_NONBLOCK),
	      "async fd: %s", strerror(errno));
	return 0;
}

static struct ibv_qp *create_qp(struct client *c, bool ex)
{
	struct ibv_qp_cap cap = {
		.max_send_wr = SQ_DEPTH,
		.max_recv_wr = RQ_DEPTH,
		.max_send_sge = OP_MAX_SGE,
		.max_recv_sge = OP_MAX_SGE,
		.max_inline_data = OP_MAX_INLINE,
	};
	struct ibv_qp_init_attr_ex attr = {
		.send_cq = c->scq,
		.recv_cq = c->rcq,
		.cap = cap,
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = c->pd,
	};

	if (ex) {
		attr.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		attr.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
				      IBV_QP_EX_WITH_RDMA_WRITE |
				      IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				      IBV_QP_EX_WITH_RDMA_READ |
				      IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				      IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	}
	return ibv_create_qp_ex(c->ctx, &attr);
}

static uint8_t *alloc_buf(size_t len)
{
	uint8_t *b = aligned_alloc(4096, (len + 4095) & ~(size_t)4095);

	if (b)
		memset(b, 0, len);
	return b;
}

static int setup_qp(struct client *c, struct qp_res *r)
{
	const unsigned int all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	uint64_t rx_key = lane_key(c->p->pair_seed, !c->p->side, r->idx);
	uint64_t counter = lane_counter0(rx_key);

	r->local = alloc_buf(LOCAL_BYTES);
	r->win = alloc_buf(WIN_BYTES);
	CHECK(r->local && r->win, "out of memory");
	/* What the peer's READs and atomics of this QP will find. */
	pattern_fill(r->win + WIN_READ_OFF, READ_SRC_BYTES, read_src_key(rx_key), 0);
	memcpy(r->win + WIN_COUNTER_OFF, &counter, sizeof(counter));
	r->lmr = ibv_reg_mr(c->pd, r->local, LOCAL_BYTES, IBV_ACCESS_LOCAL_WRITE);
	CHECK(r->lmr, "ibv_reg_mr (local): %s", strerror(errno));
	c->rep->mrs++;
	r->wmr = ibv_reg_mr(c->pd, r->win, WIN_BYTES, all);
	CHECK(r->wmr, "ibv_reg_mr (window): %s", strerror(errno));
	c->rep->mrs++;
	r->qp = create_qp(c, r->idx & 1);
	CHECK(r->qp, "ibv_create_qp_ex: %s", strerror(errno));
	c->rep->qps++;
	if (r->idx & 1) {
		r->qpx = ibv_qp_to_qp_ex(r->qp);
		CHECK(r->qpx, "ibv_qp_to_qp_ex returned NULL");
	}
	lane_gen_init(&r->tx.gen, lane_key(c->p->pair_seed, c->p->side, r->idx));
	lane_gen_init(&r->rx.gen, rx_key);
	return 0;
}

int setup(struct client *c)
{
	unsigned int i, cqe = c->nqps * (SQ_DEPTH + RQ_DEPTH);

	c->rep->phase = PHASE_SETUP;
	TRY(open_device(c));
	c->pd = ibv_alloc_pd(c->ctx);
	CHECK(c->pd, "ibv_alloc_pd: %s", strerror(errno));
	c->scq = ibv_create_cq(c->ctx, (int)cqe, NULL, NULL, 0);
	c->rcq = ibv_create_cq(c->ctx, (int)cqe, NULL, NULL, 0);
	CHECK(c->scq && c->rcq, "ibv_create_cq: %s", strerror(errno));
	c->scratch = alloc_buf(64 << 10);
	CHECK(c->scratch, "out of memory");
	for (i = 0; i < c->nqps; i++) {
		c->q[i].idx = i;
		TRY(setup_qp(c, &c->q[i]));
	}
	CHECK(!ibv_query_gid(c->ctx, 1, 0, &c->gid), "ibv_query_gid: %s",
	      strerror(errno));
	return 0;
}

/* ---- connecting --------------------------------------------------------------- */

static uint32_t psn_of(const struct client *c, int side, unsigned int q)
{
	return (uint32_t)mix64(c->p->pair_seed ^ ((uint64_t)side << 40 | q)) & 0xffffff;
}

static int connect_qp(struct client *c, struct qp_res *r)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};
	int ret;

	ret = ibv_modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	CHECK(!ret, "QP %u to INIT: %s", r->idx, strerror(ret));
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_4096,
		.dest_qp_num = r->peer_qpn,
		.rq_psn = psn_of(c, !c->p->side, r->idx),
		.max_dest_rd_atomic = 16,
		.min_rnr_timer = 1,
		.ah_attr = {
			.is_global = 1,
			.grh = { .sgid_index = 0, .hop_limit = 64 },
			.port_num = 1,
		},
	};
	memcpy(a.ah_attr.grh.dgid.raw, c->peer_gid, 16);
	ret = ibv_modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					       IBV_QP_MAX_DEST_RD_ATOMIC |
					       IBV_QP_MIN_RNR_TIMER);
	CHECK(!ret, "QP %u to RTR: %s", r->idx, strerror(ret));
	/*
	 * A dead peer costs 4 tries of 4.2 ms.  rnr_retry 0: the responder
	 * posts a batch's receives before it lets the batch start, so an RNR
	 * NAK would be a lost receive, and fails at once.
	 */
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTS,
		.sq_psn = psn_of(c, c->p->side, r->idx),
		.timeout = 10,
		.retry_cnt = 3,
		.rnr_retry = 0,
		.max_rd_atomic = 16,
	};
	ret = ibv_modify_qp(r->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					       IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(!ret, "QP %u to RTS: %s", r->idx, strerror(ret));
	return 0;
}

static int exchange(struct client *c)
{
	struct msg_hello mine = { .type = WIRE_HELLO, .nqps = c->nqps }, theirs;
	uint64_t deadline = now_ns() + STALL_NS;
	size_t len = 0;
	unsigned int i;
	int r = 0;

	memcpy(mine.gid, c->gid.raw, 16);
	for (i = 0; i < c->nqps; i++) {
		mine.qp[i].qpn = c->q[i].qp->qp_num;
		mine.qp[i].rkey = c->q[i].wmr->rkey;
		mine.qp[i].addr = (uintptr_t)c->q[i].win;
	}
	TRY(send_msg(c, &mine, sizeof(mine)));
	while (!c->peer_dead && (r = recv_msg(c, &theirs, sizeof(theirs), &len, 100)) == 0)
		CHECK(now_ns() < deadline, "no HELLO from the peer");
	if (r <= 0)
		return r; /* dead peer: nothing to connect to */
	CHECK(len == sizeof(theirs) && theirs.type == WIRE_HELLO &&
	      theirs.nqps == c->nqps, "bad HELLO (%zu bytes, type %u)", len, theirs.type);
	memcpy(c->peer_gid, theirs.gid, 16);
	for (i = 0; i < c->nqps; i++) {
		c->q[i].peer_qpn = theirs.qp[i].qpn;
		c->q[i].peer_rkey = theirs.qp[i].rkey;
		c->q[i].peer_win = theirs.qp[i].addr;
	}
	return 0;
}

/* Both sides connected, with the first batch's receives posted. */
int connect_all(struct client *c)
{
	struct msg_lane ready = { .type = WIRE_READY };
	uint64_t deadline = now_ns() + STALL_NS;
	unsigned int i;
	int got;

	c->rep->phase = PHASE_CONNECT;
	TRY(exchange(c));
	if (c->peer_dead)
		return 0;
	for (i = 0; i < c->nqps; i++)
		TRY(connect_qp(c, &c->q[i]));
	c->connected = true;
	for (i = 0; i < c->nqps; i++)
		TRY(rx_post_batch(&c->q[i]));
	TRY(send_msg(c, &ready, sizeof(ready)));
	while (!c->peer_ready && !c->peer_dead) {
		got = 0;
		TRY(read_msgs(c, &got));
		CHECK(now_ns() < deadline, "no READY from the peer");
		if (!got)
			poll(NULL, 0, 1);
	}
	return 0;
}
