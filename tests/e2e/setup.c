// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Helpers every role uses: opening ringnic0, creating and connecting an RC
 * QP towards the peer, posting, and checking completions field by field.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

void e2e_default_opts(struct e2e_opts *o)
{
	*o = (struct e2e_opts){
		.max_send_wr = 64,
		.max_recv_wr = 64,
		.max_send_sge = 4,
		.max_recv_sge = 4,
		.max_inline = 0,
		.cqe = 256,
		.qp_access = E2E_ACCESS_ALL,
		.mr_access = E2E_ACCESS_ALL,
		.buf_len = 256 << 10,
		.mtu = IBV_MTU_4096,
		.timeout = 14, /* 67 ms */
		.retry_cnt = 7,
		.rnr_retry = 7,
		.min_rnr_timer = 1, /* 10 us */
		.state = IBV_QPS_RTS,
		.qp_type = IBV_QPT_RC,
	};
}

const char *e2e_device = E2E_DEVICE;

int e2e_open_device(struct ibv_context **ctx)
{
	struct ibv_device **list;
	int i, n;

	list = ibv_get_device_list(&n);
	CHECK(list, "ibv_get_device_list: %s", strerror(errno));
	*ctx = NULL;
	for (i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), e2e_device))
			continue;
		*ctx = ibv_open_device(list[i]);
		if (!*ctx) {
			int err = errno;

			ibv_free_device_list(list);
			return FAIL("ibv_open_device(%s): %s", e2e_device,
				    strerror(err));
		}
		break;
	}
	ibv_free_device_list(list);
	CHECK(*ctx, "no device %s among %d (run under ringnic-run)", e2e_device, n);
	return 0;
}

uint8_t *e2e_alloc(size_t len)
{
	size_t rounded = (len + 4095) & ~(size_t)4095;
	uint8_t *buf = aligned_alloc(4096, rounded ? rounded : 4096);

	if (buf)
		memset(buf, 0, rounded);
	else
		FAIL("out of memory (%zu bytes)", len);
	return buf;
}

struct ibv_mr *e2e_reg(struct ibv_pd *pd, void *addr, size_t len,
		       unsigned int access)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, access);

	if (!mr)
		FAIL("ibv_reg_mr(%zu bytes, access %#x): %s", len, access,
		     strerror(errno));
	return mr;
}

static int create_cqs(struct e2e_side *s)
{
	if (s->o.channel) {
		s->channel = ibv_create_comp_channel(s->ctx);
		CHECK(s->channel, "ibv_create_comp_channel: %s", strerror(errno));
	}
	if (s->o.cq_ex) {
		struct ibv_cq_init_attr_ex attr = {
			.cqe = s->o.cqe,
			.channel = s->channel,
			.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |
				    IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP,
		};

		s->scqx = ibv_create_cq_ex(s->ctx, &attr);
		CHECK(s->scqx, "ibv_create_cq_ex: %s", strerror(errno));
		s->rcqx = ibv_create_cq_ex(s->ctx, &attr);
		CHECK(s->rcqx, "ibv_create_cq_ex: %s", strerror(errno));
		s->scq = ibv_cq_ex_to_cq(s->scqx);
		s->rcq = ibv_cq_ex_to_cq(s->rcqx);
		return 0;
	}
	s->scq = ibv_create_cq(s->ctx, s->o.cqe, NULL, s->channel, 0);
	CHECK(s->scq, "ibv_create_cq: %s", strerror(errno));
	s->rcq = ibv_create_cq(s->ctx, s->o.cqe, NULL, s->channel, 0);
	CHECK(s->rcq, "ibv_create_cq: %s", strerror(errno));
	return 0;
}

/* The SRQ the QP receives from, when the options ask for one. */
static int create_srq(struct e2e_side *s)
{
	struct ibv_srq_init_attr attr = {
		.attr = { .max_wr = s->o.srq_max_wr, .max_sge = s->o.srq_max_sge },
	};

	if (!s->o.srq_max_wr)
		return 0;
	s->srq = ibv_create_srq(s->pd, &attr);
	CHECK(s->srq, "ibv_create_srq(max_wr %u, max_sge %u): %s",
	      s->o.srq_max_wr, s->o.srq_max_sge, strerror(errno));
	CHECK(attr.attr.max_wr >= s->o.srq_max_wr &&
	      attr.attr.max_sge >= s->o.srq_max_sge,
	      "ibv_create_srq granted less than asked: wr %u sge %u",
	      attr.attr.max_wr, attr.attr.max_sge);
	s->srq_attr = attr.attr;
	return 0;
}

static int create_qp(struct e2e_side *s)
{
	/* A QP on an SRQ has no receive queue of its own. */
	struct ibv_qp_cap cap = {
		.max_send_wr = s->o.max_send_wr,
		.max_recv_wr = s->srq ? 0 : s->o.max_recv_wr,
		.max_send_sge = s->o.max_send_sge,
		.max_recv_sge = s->srq ? 0 : s->o.max_recv_sge,
		.max_inline_data = s->o.max_inline,
	};

	if (s->o.qp_ex) {
		struct ibv_qp_init_attr_ex attr = {
			.send_cq = s->scq,
			.recv_cq = s->rcq,
			.srq = s->srq,
			.cap = cap,
			.qp_type = s->o.qp_type,
			.sq_sig_all = s->o.sig_all,
			.comp_mask = IBV_QP_INIT_ATTR_PD |
				     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.pd = s->pd,
			.send_ops_flags = IBV_QP_EX_WITH_SEND |
					  IBV_QP_EX_WITH_SEND_WITH_IMM |
					  IBV_QP_EX_WITH_RDMA_WRITE |
					  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
					  IBV_QP_EX_WITH_RDMA_READ |
					  IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
					  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
					  IBV_QP_EX_WITH_SEND_WITH_INV |
					  IBV_QP_EX_WITH_LOCAL_INV |
					  IBV_QP_EX_WITH_BIND_MW,
		};

		s->qp = ibv_create_qp_ex(s->ctx, &attr);
		CHECK(s->qp, "ibv_create_qp_ex: %s", strerror(errno));
		s->qpx = ibv_qp_to_qp_ex(s->qp);
		CHECK(s->qpx, "ibv_qp_to_qp_ex returned NULL");
		s->cap = attr.cap;
	} else {
		struct ibv_qp_init_attr attr = {
			.send_cq = s->scq,
			.recv_cq = s->rcq,
			.srq = s->srq,
			.cap = cap,
			.qp_type = s->o.qp_type,
			.sq_sig_all = s->o.sig_all,
		};

		s->qp = ibv_create_qp(s->pd, &attr);
		CHECK(s->qp, "ibv_create_qp: %s", strerror(errno));
		s->cap = attr.cap;
	}
	CHECK(s->cap.max_send_wr >= cap.max_send_wr &&
	      s->cap.max_recv_wr >= cap.max_recv_wr &&
	      s->cap.max_send_sge >= cap.max_send_sge &&
	      s->cap.max_recv_sge >= cap.max_recv_sge &&
	      s->cap.max_inline_data >= cap.max_inline_data,
	      "create_qp granted less than asked: wr %u/%u sge %u/%u inline %u",
	      s->cap.max_send_wr, s->cap.max_recv_wr, s->cap.max_send_sge,
	      s->cap.max_recv_sge, s->cap.max_inline_data);
	CHECK(s->qp->qp_num > 1 && s->qp->qp_num < (1u << 24),
	      "QP number %#x out of range", s->qp->qp_num);
	CHECK(s->qp->state == IBV_QPS_RESET, "a new QP is in state %d",
	      s->qp->state);
	return 0;
}

/*
 * The port's active MTU: 4096 on lo, what the link carries between hosts
 * (1024 on a veth pair of MTU 1500, tests/wire).
 */
enum ibv_mtu e2e_port_mtu(struct ibv_context *ctx)
{
	struct ibv_port_attr port;

	if (ibv_query_port(ctx, 1, &port))
		return IBV_MTU_1024;
	return port.active_mtu;
}

int e2e_open(struct e2e_side *s, struct e2e_proc *p, const struct e2e_opts *o)
{
	memset(s, 0, sizeof(*s));
	s->p = p;
	s->o = *o;
	if (!s->o.psn)
		s->o.psn = 0x10101 * (p->role + 1) + 0x7a;
	TRY(e2e_open_device(&s->ctx));
	if (s->o.mtu > e2e_port_mtu(s->ctx))
		s->o.mtu = e2e_port_mtu(s->ctx);
	s->pd = ibv_alloc_pd(s->ctx);
	CHECK(s->pd, "ibv_alloc_pd: %s", strerror(errno));
	TRY(create_srq(s));
	TRY(create_cqs(s));
	TRY(create_qp(s));
	s->buf = e2e_alloc(s->o.buf_len);
	TRY(!s->buf);
	if (s->o.iova) {
		s->mr = ibv_reg_mr_iova2(s->pd, s->buf, s->o.buf_len, E2E_IOVA,
					 s->o.mr_access);
		CHECK(s->mr, "ibv_reg_mr_iova2: %s", strerror(errno));
		s->base = E2E_IOVA;
	} else {
		s->mr = e2e_reg(s->pd, s->buf, s->o.buf_len, s->o.mr_access);
		TRY(!s->mr);
		s->base = (uintptr_t)s->buf;
	}
	CHECK(!ibv_query_gid(s->ctx, 1, 0, &s->gid), "ibv_query_gid: %s",
	      strerror(errno));
	return 0;
}

int e2e_exchange(struct e2e_side *s)
{
	struct e2e_remote mine = {
		.qpn = s->qp->qp_num,
		.rkey = s->mr->rkey,
		.addr = s->base,
		.len = s->o.buf_len,
		.psn = s->o.psn,
	};

	memcpy(mine.gid, s->gid.raw, sizeof(mine.gid));
	return msg_xchg(s->p->peer, &mine, &s->rem, sizeof(mine));
}

int qp_to_state(struct ibv_qp *qp, enum ibv_qp_state state)
{
	struct ibv_qp_attr attr = { .qp_state = state };
	int ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE);

	CHECK(!ret, "modify_qp to state %d: %s", state, strerror(ret));
	return 0;
}

int qp_to_init(struct ibv_qp *qp, unsigned int access)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qp_access_flags = access,
		.qkey = E2E_QKEY,
	};
	/* UD QPs have a Q_Key where connected ones have rights. */
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		   (qp->qp_type == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS);
	int ret = ibv_modify_qp(qp, &attr, mask);

	CHECK(!ret, "modify_qp RESET->INIT: %s", strerror(ret));
	return 0;
}

/* An AH of the PD towards gid (sgid index 0). */
struct ibv_ah *e2e_ah(struct ibv_pd *pd, const uint8_t *gid)
{
	struct ibv_ah_attr attr = {
		.is_global = 1,
		.grh = { .sgid_index = 0, .hop_limit = 64 },
		.port_num = 1,
	};
	struct ibv_ah *ah;

	memcpy(attr.grh.dgid.raw, gid, 16);
	ah = ibv_create_ah(pd, &attr);
	if (!ah)
		FAIL("ibv_create_ah: %s", strerror(errno));
	return ah;
}

static int rtr_of(struct e2e_side *s, struct ibv_qp *qp, uint32_t dest_qpn,
		  uint32_t rq_psn)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = s->o.mtu,
		.dest_qp_num = dest_qpn,
		.rq_psn = rq_psn,
		.max_dest_rd_atomic = 4,
		.min_rnr_timer = s->o.min_rnr_timer,
		.ah_attr = {
			.is_global = 1,
			.grh = { .sgid_index = 0, .hop_limit = 64 },
			.port_num = 1,
		},
	};
	int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		   IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	int ret;

	/* UC has no reads to answer nor RNR; UD no connection at all. */
	if (qp->qp_type == IBV_QPT_UC)
		mask &= ~(IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (qp->qp_type == IBV_QPT_UD)
		mask = IBV_QP_STATE;
	memcpy(attr.ah_attr.grh.dgid.raw, s->rem.gid, 16);
	ret = ibv_modify_qp(qp, &attr, mask);
	CHECK(!ret, "modify_qp INIT->RTR: %s", strerror(ret));
	return 0;
}

int qp_to_rtr(struct e2e_side *s, uint32_t dest_qpn, uint32_t rq_psn)
{
	return rtr_of(s, s->qp, dest_qpn, rq_psn);
}

static int rts_of(struct e2e_side *s, struct ibv_qp *qp)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTS,
		.sq_psn = s->o.psn,
		.timeout = s->o.timeout,
		.retry_cnt = s->o.retry_cnt,
		.rnr_retry = s->o.rnr_retry,
		.max_rd_atomic = 4,
	};
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	int ret;

	/* Only a reliable QP has retries and reads to issue. */
	if (qp->qp_type == IBV_QPT_RC)
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	ret = ibv_modify_qp(qp, &attr, mask);
	CHECK(!ret, "modify_qp RTR->RTS: %s", strerror(ret));
	return 0;
}

int qp_to_rts(struct e2e_side *s)
{
	return rts_of(s, s->qp);
}

int e2e_connect(struct e2e_side *s)
{
	if (s->o.state == IBV_QPS_RESET)
		return 0;
	TRY(qp_to_init(s->qp, s->o.qp_access));
	if (s->o.state == IBV_QPS_INIT)
		return 0;
	TRY(qp_to_rtr(s, s->rem.qpn, s->rem.psn));
	if (s->qp->qp_type == IBV_QPT_UD) {
		s->ah = e2e_ah(s->pd, s->rem.gid);
		TRY(!s->ah);
	}
	if (s->o.state == IBV_QPS_RTR)
		return 0;
	return qp_to_rts(s);
}

int e2e_setup(struct e2e_side *s, struct e2e_proc *p, const struct e2e_opts *o)
{
	TRY(e2e_open(s, p, o));
	TRY(e2e_exchange(s));
	TRY(e2e_connect(s));
	/* Nobody posts before both QPs are where they should be. */
	return e2e_sync(p, "connected");
}

static int connect_qp(struct e2e_side *s, struct ibv_qp *qp, uint32_t dest_qpn)
{
	TRY(qp_to_init(qp, s->o.qp_access));
	TRY(rtr_of(s, qp, dest_qpn, s->rem.psn));
	return rts_of(s, qp);
}

int e2e_reset_qp(struct e2e_side *s, struct ibv_qp *qp, uint32_t dest_qpn)
{
	TRY(qp_to_state(qp, IBV_QPS_RESET));
	return connect_qp(s, qp, dest_qpn);
}

int e2e_recover(struct e2e_side *s, struct ibv_qp *qp, uint32_t dest_qpn)
{
	TRY(expect_qp_state(qp, IBV_QPS_ERR));
	TRY(e2e_reset_qp(s, qp, dest_qpn));
	return e2e_sync(s->p, "recovered");
}

int e2e_extra_qp(struct e2e_side *s, struct ibv_pd *pd, struct ibv_qp **qp,
		 uint32_t *dest_qpn)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = s->scq,
		.recv_cq = s->rcq,
		.cap = {
			.max_send_wr = s->o.max_send_wr,
			.max_recv_wr = s->o.max_recv_wr,
			.max_send_sge = s->o.max_send_sge,
			.max_recv_sge = s->o.max_recv_sge,
			.max_inline_data = s->o.max_inline,
		},
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = s->o.sig_all,
	};
	uint64_t qpn;

	*qp = ibv_create_qp(pd, &attr);
	CHECK(*qp, "ibv_create_qp: %s", strerror(errno));
	TRY(send_u64(s->p->peer, (*qp)->qp_num));
	TRY(recv_u64(s->p->peer, &qpn, E2E_WAIT_MS));
	*dest_qpn = (uint32_t)qpn;
	TRY(connect_qp(s, *qp, *dest_qpn));
	return e2e_sync(s->p, "extra QP connected");
}

int e2e_close(struct e2e_side *s)
{
	int ret;

	ret = ibv_destroy_qp(s->qp);
	CHECK(!ret, "ibv_destroy_qp: %s", strerror(ret));
	if (s->ah) {
		ret = ibv_destroy_ah(s->ah);
		CHECK(!ret, "ibv_destroy_ah: %s", strerror(ret));
	}
	if (s->srq) {
		ret = ibv_destroy_srq(s->srq);
		CHECK(!ret, "ibv_destroy_srq: %s", strerror(ret));
	}
	ret = ibv_destroy_cq(s->scq);
	CHECK(!ret, "ibv_destroy_cq: %s", strerror(ret));
	ret = ibv_destroy_cq(s->rcq);
	CHECK(!ret, "ibv_destroy_cq: %s", strerror(ret));
	if (s->channel) {
		ret = ibv_destroy_comp_channel(s->channel);
		CHECK(!ret, "ibv_destroy_comp_channel: %s", strerror(ret));
	}
	ret = ibv_dereg_mr(s->mr);
	CHECK(!ret, "ibv_dereg_mr: %s", strerror(ret));
	ret = ibv_dealloc_pd(s->pd);
	CHECK(!ret, "ibv_dealloc_pd: %s", strerror(ret));
	ret = ibv_close_device(s->ctx);
	CHECK(!ret, "ibv_close_device: %s", strerror(ret));
	free(s->buf);
	return 0;
}

int expect_qp_state(struct ibv_qp *qp, enum ibv_qp_state want)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	int ret = ibv_query_qp(qp, &attr, IBV_QP_STATE, &init);

	CHECK(!ret, "ibv_query_qp: %s", strerror(ret));
	CHECK(attr.qp_state == want, "QP %#x is in state %d, expected %d",
	      qp->qp_num, attr.qp_state, want);
	return 0;
}

/* ---- data ------------------------------------------------------------------ */

uint8_t pat(uint32_t seed, size_t i)
{
	uint32_t x = seed * 0x9e3779b1u + (uint32_t)i * 0x85ebca6bu +
		     (uint32_t)(i >> 32);

	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	return (uint8_t)x;
}

void fill(void *buf, size_t len, uint32_t seed)
{
	uint8_t *b = buf;
	size_t i;

	for (i = 0; i < len; i++)
		b[i] = pat(seed, i);
}

int check_fill(const void *buf, size_t len, uint32_t seed, const char *what)
{
	const uint8_t *b = buf;
	size_t i;

	for (i = 0; i < len; i++)
		CHECK(b[i] == pat(seed, i),
		      "%s: byte %zu of %zu is %#04x, expected %#04x", what, i, len,
		      b[i], pat(seed, i));
	return 0;
}

int check_bytes(const void *got, const void *want, size_t len, const char *what)
{
	const uint8_t *g = got, *w = want;
	size_t i;

	for (i = 0; i < len; i++)
		CHECK(g[i] == w[i], "%s: byte %zu of %zu is %#04x, expected %#04x",
		      what, i, len, g[i], w[i]);
	return 0;
}

/* ---- posting ---------------------------------------------------------------- */

struct ibv_sge sge_of(struct e2e_side *s, size_t off, size_t len)
{
	return (struct ibv_sge){ s->base + off, (uint32_t)len, s->mr->lkey };
}

int post_send1(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;
	int ret = ibv_post_send(qp, wr, &bad);

	CHECK(!ret, "ibv_post_send(wr_id %#llx, opcode %d): %s",
	      (unsigned long long)wr->wr_id, wr->opcode, strerror(ret));
	return 0;
}

int post_recv1(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge *sge, int n)
{
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = sge, .num_sge = n };
	struct ibv_recv_wr *bad = NULL;
	int ret = ibv_post_recv(qp, &wr, &bad);

	CHECK(!ret, "ibv_post_recv(wr_id %#llx): %s", (unsigned long long)wr_id,
	      strerror(ret));
	return 0;
}

int post_recv_buf(struct e2e_side *s, uint64_t wr_id, size_t off, size_t len)
{
	struct ibv_sge sge = sge_of(s, off, len);
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad = NULL;
	int ret;

	if (!s->srq)
		return post_recv1(s->qp, wr_id, &sge, 1);
	ret = ibv_post_srq_recv(s->srq, &wr, &bad);
	CHECK(!ret, "ibv_post_srq_recv(wr_id %#llx): %s",
	      (unsigned long long)wr_id, strerror(ret));
	return 0;
}

/* ---- completions ------------------------------------------------------------- */

struct e2e_cq scq_of(struct e2e_side *s)
{
	return (struct e2e_cq){ s->scq, s->scqx };
}

struct e2e_cq rcq_of(struct e2e_side *s)
{
	return (struct e2e_cq){ s->rcq, s->rcqx };
}

static void read_ex(struct ibv_cq_ex *cqx, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = cqx->wr_id;
	wc->status = cqx->status;
	wc->opcode = ibv_wc_read_opcode(cqx);
	wc->vendor_err = ibv_wc_read_vendor_err(cqx);
	wc->byte_len = ibv_wc_read_byte_len(cqx);
	wc->imm_data = ibv_wc_read_imm_data(cqx);
	wc->qp_num = ibv_wc_read_qp_num(cqx);
	wc->src_qp = ibv_wc_read_src_qp(cqx);
	wc->wc_flags = ibv_wc_read_wc_flags(cqx);
	/* The same field as the immediate, read by its own name. */
	if (wc->wc_flags & IBV_WC_WITH_INV)
		wc->invalidated_rkey = ibv_wc_read_invalidated_rkey(cqx);
}

int poll_some(struct e2e_cq cq, struct ibv_wc *wc, int max)
{
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	int n, ret;

	if (!cq.cqx) {
		n = ibv_poll_cq(cq.cq, max, wc);
		CHECK(n >= 0, "ibv_poll_cq returned %d", n);
		return n;
	}
	ret = ibv_start_poll(cq.cqx, &attr);
	if (ret == ENOENT)
		return 0;
	CHECK(!ret, "ibv_start_poll: %s", strerror(ret));
	read_ex(cq.cqx, &wc[0]);
	for (n = 1; n < max; n++) {
		ret = ibv_next_poll(cq.cqx);
		if (ret == ENOENT)
			break;
		if (ret) {
			ibv_end_poll(cq.cqx);
			return FAIL("ibv_next_poll: %s", strerror(ret));
		}
		read_ex(cq.cqx, &wc[n]);
	}
	ibv_end_poll(cq.cqx);
	return n;
}

int poll_one(struct e2e_cq cq, struct ibv_wc *wc, int timeout_ms)
{
	uint64_t deadline = e2e_now_ms() + timeout_ms;
	unsigned int spins = 0;

	for (;;) {
		int n = poll_some(cq, wc, 1);

		if (n)
			return n < 0 ? -1 : 0;
		if (e2e_now_ms() > deadline)
			return FAIL("no completion within %d ms", timeout_ms);
		/* Three busy processes on a small machine: let the device run. */
		if (++spins > 1000)
			e2e_sleep_ms(1);
		else
			sched_yield();
	}
}

int expect_no_wc(struct e2e_cq cq, unsigned int ms, const char *what)
{
	uint64_t deadline = e2e_now_ms() + ms;
	struct ibv_wc wc;

	do {
		int n = poll_some(cq, &wc, 1);

		TRY(n < 0);
		CHECK(!n, "%s: unexpected completion wr_id %#llx status %s opcode %d",
		      what, (unsigned long long)wc.wr_id,
		      ibv_wc_status_str(wc.status), wc.opcode);
		sched_yield();
	} while (e2e_now_ms() < deadline);
	return 0;
}

const char *wc_status_name(int status)
{
	return ibv_wc_status_str((enum ibv_wc_status)status);
}

int check_wc(const struct ibv_wc *wc, const struct wc_want *w, const char *what)
{
	unsigned int flags = (w->imm ? IBV_WC_WITH_IMM : 0) |
			     (w->inv ? IBV_WC_WITH_INV : 0) | w->flags;

	CHECK(wc->status == w->status && wc->wr_id == w->wr_id,
	      "%s: completion wr_id %#llx status '%s' (vendor_err %u), expected wr_id %#llx status '%s'",
	      what, (unsigned long long)wc->wr_id, wc_status_name(wc->status),
	      wc->vendor_err, (unsigned long long)w->wr_id,
	      wc_status_name(w->status));
	CHECK(wc->qp_num == w->qp_num, "%s: qp_num %#x, expected %#x", what,
	      wc->qp_num, w->qp_num);
	if (w->flush)
		return 0;
	CHECK(wc->opcode == w->opcode, "%s: opcode %d, expected %d", what,
	      wc->opcode, w->opcode);
	CHECK(wc->byte_len == w->byte_len, "%s: byte_len %u, expected %u", what,
	      wc->byte_len, w->byte_len);
	CHECK(wc->wc_flags == flags, "%s: wc_flags %#x, expected %#x", what,
	      wc->wc_flags, flags);
	if (w->imm)
		CHECK(wc->imm_data == w->imm_data,
		      "%s: imm_data %#x, expected %#x (network order)", what,
		      wc->imm_data, w->imm_data);
	if (w->inv)
		CHECK(wc->invalidated_rkey == w->invalidated_rkey,
		      "%s: invalidated_rkey %#x, expected %#x", what,
		      wc->invalidated_rkey, w->invalidated_rkey);
	if (w->recv)
		CHECK(wc->src_qp == w->src_qp, "%s: src_qp %#x, expected %#x",
		      what, wc->src_qp, w->src_qp);
	return 0;
}

int expect_wc(struct e2e_cq cq, const struct wc_want *w, const char *what)
{
	struct ibv_wc wc;

	if (poll_one(cq, &wc, E2E_WAIT_MS))
		return FAIL("%s: no completion for wr_id %#llx within %d ms", what,
			    (unsigned long long)w->wr_id, E2E_WAIT_MS);
	return check_wc(&wc, w, what);
}

int expect_send_ok(struct e2e_side *s, uint64_t wr_id, enum ibv_wc_opcode op,
		   uint32_t byte_len)
{
	struct wc_want w = {
		.wr_id = wr_id,
		.status = IBV_WC_SUCCESS,
		.opcode = op,
		.byte_len = byte_len,
		.qp_num = s->qp->qp_num,
	};

	return expect_wc(scq_of(s), &w, "send completion");
}

int expect_recv_ok(struct e2e_side *s, uint64_t wr_id, enum ibv_wc_opcode op,
		   uint32_t byte_len, bool imm, uint32_t imm_data)
{
	struct wc_want w = {
		.wr_id = wr_id,
		.status = IBV_WC_SUCCESS,
		.opcode = op,
		.byte_len = byte_len,
		.qp_num = s->qp->qp_num,
		.recv = true,
		.src_qp = s->rem.qpn,
		.imm = imm,
		.imm_data = imm_data,
	};

	return expect_wc(rcq_of(s), &w, "receive completion");
}

int expect_err(struct e2e_cq cq, uint64_t wr_id, enum ibv_wc_status status,
	       uint32_t qpn, const char *what)
{
	struct wc_want w = {
		.wr_id = wr_id,
		.status = status,
		.qp_num = qpn,
		.flush = true,
	};

	return expect_wc(cq, &w, what);
}

int expect_async(struct ibv_context *ctx, struct ibv_qp *qp,
		 enum ibv_event_type type, int timeout_ms)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;
	int r;

	do
		r = poll(&pfd, 1, timeout_ms);
	while (r < 0 && errno == EINTR);
	CHECK(r == 1, "no async event %s (%d) within %d ms",
	      ibv_event_type_str(type), type, timeout_ms);
	CHECK(!ibv_get_async_event(ctx, &ev), "ibv_get_async_event: %s",
	      strerror(errno));
	ibv_ack_async_event(&ev);
	CHECK(ev.event_type == type, "async event %s (%d), expected %s (%d)",
	      ibv_event_type_str(ev.event_type), ev.event_type,
	      ibv_event_type_str(type), type);
	CHECK(ev.element.qp == qp, "async event %s names QP %p, expected %p",
	      ibv_event_type_str(type), (void *)ev.element.qp, (void *)qp);
	return 0;
}
