// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * XRC: domains shared by the processes that open the same file (with the
 * kernel's O_CREAT / O_EXCL answers), XRC SRQs and their numbers, target
 * QPs that other processes of the domain can open, initiator QPs whose
 * messages name the SRQ they go to (ibv_send_wr and ibv_wr_set_xrc_srqn),
 * RDMA through a target QP against the SRQ's PD.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "e2e.h"

#define SLOT 1024

struct xrc_side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_xrcd *xrcd;
	struct ibv_cq *cq[2];
	struct ibv_srq *srq[2];
	struct ibv_qp *qp;
	uint8_t *buf;
	struct ibv_mr *mr;
	union ibv_gid gid;
};

/* What the target side tells the initiator. */
struct xrc_target {
	uint32_t qpn;
	uint32_t srqn[2];
	uint32_t rkey;
	uint64_t addr;
	uint8_t gid[16];
};

static struct ibv_xrcd *open_xrcd(struct ibv_context *ctx, int fd, int oflags)
{
	struct ibv_xrcd_init_attr attr = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = fd,
		.oflags = oflags,
	};

	return ibv_open_xrcd(ctx, &attr);
}

static int open_side(struct xrc_side *x, int fd)
{
	memset(x, 0, sizeof(*x));
	TRY(e2e_open_device(&x->ctx));
	x->pd = ibv_alloc_pd(x->ctx);
	CHECK(x->pd, "ibv_alloc_pd");
	x->xrcd = open_xrcd(x->ctx, fd, O_CREAT);
	CHECK(x->xrcd, "ibv_open_xrcd(fd %d, O_CREAT): %s", fd, strerror(errno));
	x->buf = e2e_alloc(1 << 16);
	TRY(!x->buf);
	x->mr = e2e_reg(x->pd, x->buf, 1 << 16, E2E_ACCESS_ALL);
	TRY(!x->mr);
	CHECK(!ibv_query_gid(x->ctx, 1, 0, &x->gid), "ibv_query_gid");
	return 0;
}

static int close_side(struct xrc_side *x)
{
	int i;

	if (x->qp)
		CHECK(!ibv_destroy_qp(x->qp), "ibv_destroy_qp");
	for (i = 0; i < 2; i++) {
		if (x->srq[i])
			CHECK(!ibv_destroy_srq(x->srq[i]), "ibv_destroy_srq");
		if (x->cq[i])
			CHECK(!ibv_destroy_cq(x->cq[i]), "ibv_destroy_cq");
	}
	CHECK(!ibv_dereg_mr(x->mr), "ibv_dereg_mr");
	CHECK(!ibv_close_xrcd(x->xrcd), "ibv_close_xrcd: %s", strerror(errno));
	CHECK(!ibv_dealloc_pd(x->pd), "ibv_dealloc_pd");
	CHECK(!ibv_close_device(x->ctx), "ibv_close_device");
	free(x->buf);
	return 0;
}

/* Two XRC SRQs of the domain, each completing into a CQ of its own. */
static int make_srqs(struct xrc_side *x)
{
	int i;

	for (i = 0; i < 2; i++) {
		struct ibv_srq_init_attr_ex attr = {
			.attr = { .max_wr = 32, .max_sge = 1 },
			.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
				     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
			.srq_type = IBV_SRQT_XRC,
			.pd = x->pd,
		};

		x->cq[i] = ibv_create_cq(x->ctx, 64, NULL, NULL, 0);
		CHECK(x->cq[i], "ibv_create_cq");
		attr.xrcd = x->xrcd;
		attr.cq = x->cq[i];
		x->srq[i] = ibv_create_srq_ex(x->ctx, &attr);
		CHECK(x->srq[i], "ibv_create_srq_ex(XRC): %s", strerror(errno));
	}
	return 0;
}

static int make_target_qp(struct xrc_side *x)
{
	struct ibv_qp_init_attr_ex attr = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = x->xrcd,
	};

	x->qp = ibv_create_qp_ex(x->ctx, &attr);
	CHECK(x->qp, "ibv_create_qp_ex(XRC_RECV): %s", strerror(errno));
	return 0;
}

static int connect_qp(struct ibv_qp *qp, const uint8_t *gid, uint32_t dest,
		      bool sender)
{
	struct ibv_qp_attr attr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = e2e_port_mtu(qp->context),
		.dest_qp_num = dest,
		.rq_psn = 0x42,
		.max_dest_rd_atomic = 4,
		.min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .sgid_index = 0, .hop_limit = 64 } },
	};
	int ret;

	TRY(qp_to_init(qp, E2E_ACCESS_ALL));
	memcpy(attr.ah_attr.grh.dgid.raw, gid, 16);
	/* As perftest does: the same attributes for both ends (the device
	 * drops what a type has no use for, as uverbs does).
	 */
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					       IBV_QP_MAX_DEST_RD_ATOMIC |
					       IBV_QP_MIN_RNR_TIMER);
	CHECK(!ret, "XRC QP to RTR: %s", strerror(ret));
	if (!sender)
		return 0;
	attr = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .sq_psn = 0x42,
				     .timeout = 14, .retry_cnt = 7,
				     .rnr_retry = 7, .max_rd_atomic = 4 };
	ret = ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN |
					       IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					       IBV_QP_RNR_RETRY |
					       IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(!ret, "XRC_SEND QP to RTS: %s", strerror(ret));
	return 0;
}

/* ================================================ one domain, two processes */

static int domain_a(struct e2e_proc *p)
{
	char path[] = "/tmp/rn-xrcd.XXXXXX", other[] = "/tmp/rn-xrcd.XXXXXX";
	struct ibv_qp_open_attr oa;
	struct ibv_xrcd *mine, *again;
	struct xrc_side x;
	struct ibv_qp *qp;
	char msg[32] = "";
	uint32_t qpn;
	int fd, fd2;

	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
	snprintf(msg, sizeof(msg), "%s", path);
	TRY(msg_send(p->peer, msg, sizeof(msg)));
	TRY(open_side(&x, fd));
	TRY(msg_recv(p->peer, &qpn, sizeof(qpn), E2E_WAIT_MS));

	/* B's target QP opens through our handle of the same domain. */
	oa = (struct ibv_qp_open_attr){
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE,
		.qp_num = qpn,
		.xrcd = x.xrcd,
		.qp_type = IBV_QPT_XRC_RECV,
	};
	qp = ibv_open_qp(x.ctx, &oa);
	CHECK(qp, "ibv_open_qp of B's target QP %#x: %s", qpn, strerror(errno));
	CHECK(qp->qp_num == qpn, "opened QP %#x, asked %#x", qp->qp_num, qpn);

	/* The kernel's answers: the domain exists (O_EXCL); a file no
	 * domain has, without O_CREAT.
	 */
	again = open_xrcd(x.ctx, fd, O_CREAT | O_EXCL);
	CHECK(!again && errno == EINVAL, "O_CREAT|O_EXCL on an existing domain: %s",
	      again ? "opened" : strerror(errno));
	fd2 = mkstemp(other);
	CHECK(fd2 >= 0, "mkstemp");
	again = open_xrcd(x.ctx, fd2, 0);
	CHECK(!again && errno == EAGAIN, "no domain, no O_CREAT: %s",
	      again ? "opened" : strerror(errno));
	/* A domain of ours alone does not reach B's QP. */
	mine = open_xrcd(x.ctx, -1, 0);
	CHECK(mine, "ibv_open_xrcd(private): %s", strerror(errno));
	oa.xrcd = mine;
	CHECK(!ibv_open_qp(x.ctx, &oa), "ibv_open_qp through another domain");
	CHECK(!ibv_close_xrcd(mine), "ibv_close_xrcd");

	CHECK(!ibv_destroy_qp(qp), "ibv_destroy_qp of an opened QP: %s",
	      strerror(errno));
	TRY(e2e_sync(p, "done"));
	close(fd2);
	unlink(other);
	TRY(close_side(&x));
	close(fd);
	unlink(path);
	return 0;
}

static int domain_b(struct e2e_proc *p)
{
	char path[32];
	struct xrc_side x;
	uint32_t qpn;
	int fd;

	TRY(msg_recv(p->peer, path, sizeof(path), E2E_WAIT_MS));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(fd >= 0, "open %s: %s", path, strerror(errno));
	TRY(open_side(&x, fd));
	TRY(make_target_qp(&x));
	qpn = x.qp->qp_num;
	TRY(msg_send(p->peer, &qpn, sizeof(qpn)));
	TRY(e2e_sync(p, "done"));
	/* The QP A opened and let go of is still ours. */
	TRY(expect_qp_state(x.qp, IBV_QPS_RESET));
	TRY(close_side(&x));
	close(fd);
	return 0;
}

/* ========================================== initiator to target, by SRQ */

static struct ibv_send_wr xrc_wr(uint64_t wr_id, enum ibv_wr_opcode op,
				 struct ibv_sge *sge, uint32_t srqn)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	};

	wr.qp_type.xrc.remote_srqn = srqn;
	return wr;
}

/* len bytes equal to the pattern seed from offset 'from' on. */
static int check_pattern(const uint8_t *got, size_t len, uint32_t seed,
			 size_t from, const char *what)
{
	size_t i;

	for (i = 0; i < len; i++)
		CHECK(got[i] == pat(seed, from + i),
		      "%s: byte %zu is %#04x, expected %#04x", what, i, got[i],
		      pat(seed, from + i));
	return 0;
}

static int expect_ok(struct ibv_cq *cq, uint64_t wr_id, const char *what)
{
	struct ibv_wc wc;

	TRY(poll_one((struct e2e_cq){ cq, NULL }, &wc, E2E_WAIT_MS));
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == wr_id,
	      "%s: wr_id %llu status %s, expected %llu success", what,
	      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
	      (unsigned long long)wr_id);
	return 0;
}

static int send_initiator(struct e2e_proc *p)
{
	struct ibv_qp_init_attr_ex attr = {
		.cap = { .max_send_wr = 32, .max_send_sge = 1 },
		.qp_type = IBV_QPT_XRC_SEND,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_WRITE,
	};
	struct xrc_target t;
	struct ibv_send_wr wr;
	struct ibv_qp_ex *qpx;
	struct xrc_side x;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint32_t qpn;
	int i, ret;

	TRY(open_side(&x, -1));
	x.cq[0] = ibv_create_cq(x.ctx, 64, NULL, NULL, 0);
	CHECK(x.cq[0], "ibv_create_cq");
	attr.pd = x.pd;
	attr.send_cq = x.cq[0];
	x.qp = ibv_create_qp_ex(x.ctx, &attr);
	CHECK(x.qp, "ibv_create_qp_ex(XRC_SEND): %s", strerror(errno));
	qpn = x.qp->qp_num;
	TRY(msg_send(p->peer, &qpn, sizeof(qpn)));
	TRY(msg_send(p->peer, x.gid.raw, 16));
	TRY(msg_recv(p->peer, &t, sizeof(t), E2E_WAIT_MS));
	TRY(connect_qp(x.qp, t.gid, t.qpn, true));
	TRY(e2e_sync(p, "connected"));
	fill(x.buf, 8192, 71);

	/* To each SRQ in turn, by number. */
	for (i = 0; i < 4; i++) {
		sge = (struct ibv_sge){ (uintptr_t)x.buf + i * 100, 100 + i,
					x.mr->lkey };
		wr = xrc_wr(i, i == 2 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, &sge,
			    t.srqn[i % 2]);
		wr.imm_data = htobe32(0x5151);
		TRY(post_send1(x.qp, &wr));
		TRY(expect_ok(x.cq[0], i, "XRC SEND"));
	}
	/* RDMA against the SRQ's PD: WRITE, then READ it back. */
	sge = (struct ibv_sge){ (uintptr_t)x.buf + 4096, 2000, x.mr->lkey };
	wr = xrc_wr(10, IBV_WR_RDMA_WRITE, &sge, t.srqn[0]);
	wr.wr.rdma.remote_addr = t.addr + 8192;
	wr.wr.rdma.rkey = t.rkey;
	TRY(post_send1(x.qp, &wr));
	TRY(expect_ok(x.cq[0], 10, "XRC RDMA WRITE"));
	sge = (struct ibv_sge){ (uintptr_t)x.buf + 16384, 2000, x.mr->lkey };
	wr = xrc_wr(11, IBV_WR_RDMA_READ, &sge, t.srqn[0]);
	wr.wr.rdma.remote_addr = t.addr + 8192;
	wr.wr.rdma.rkey = t.rkey;
	TRY(post_send1(x.qp, &wr));
	TRY(expect_ok(x.cq[0], 11, "XRC RDMA READ"));
	TRY(check_bytes(x.buf + 16384, x.buf + 4096, 2000, "read back"));

	/* The ibv_wr_* API: the SRQ number through ibv_wr_set_xrc_srqn. */
	qpx = ibv_qp_to_qp_ex(x.qp);
	CHECK(qpx, "ibv_qp_to_qp_ex");
	ibv_wr_start(qpx);
	qpx->wr_id = 20;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(qpx);
	ibv_wr_set_xrc_srqn(qpx, t.srqn[1]);
	ibv_wr_set_sge(qpx, x.mr->lkey, (uintptr_t)x.buf + 7000, 33);
	ret = ibv_wr_complete(qpx);
	CHECK(!ret, "ibv_wr_complete: %s", strerror(ret));
	TRY(expect_ok(x.cq[0], 20, "SEND through ibv_wr_*"));
	TRY(e2e_sync(p, "received"));

	/* An SRQ number that is not the domain's: refused by the target. */
	sge = (struct ibv_sge){ (uintptr_t)x.buf, 8, x.mr->lkey };
	wr = xrc_wr(30, IBV_WR_SEND, &sge, t.srqn[0] + 1000);
	TRY(post_send1(x.qp, &wr));
	TRY(poll_one((struct e2e_cq){ x.cq[0], NULL }, &wc, E2E_WAIT_MS));
	CHECK(wc.wr_id == 30 && wc.status == IBV_WC_REM_INV_REQ_ERR,
	      "SEND to no SRQ: %s", ibv_wc_status_str(wc.status));
	TRY(e2e_sync(p, "end"));
	return close_side(&x);
}

static int send_target(struct e2e_proc *p)
{
	struct xrc_target t = { 0 };
	struct xrc_side x;
	uint8_t peer_gid[16];
	struct ibv_wc wc;
	uint32_t ini;
	int i;

	TRY(open_side(&x, -1));
	TRY(make_srqs(&x));
	TRY(make_target_qp(&x));
	for (i = 0; i < 2; i++)
		CHECK(!ibv_get_srq_num(x.srq[i], &t.srqn[i]), "ibv_get_srq_num");
	CHECK(t.srqn[0] != t.srqn[1], "two SRQs, one number");
	for (i = 0; i < 8; i++) {
		struct ibv_sge sge = { (uintptr_t)x.buf + i * SLOT, SLOT,
				       x.mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 100 + i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		CHECK(!ibv_post_srq_recv(x.srq[i % 2], &wr, &bad),
		      "ibv_post_srq_recv");
	}
	t.qpn = x.qp->qp_num;
	t.rkey = x.mr->rkey;
	t.addr = (uintptr_t)x.buf;
	memcpy(t.gid, x.gid.raw, 16);
	TRY(msg_recv(p->peer, &ini, sizeof(ini), E2E_WAIT_MS));
	TRY(msg_recv(p->peer, peer_gid, 16, E2E_WAIT_MS));
	TRY(connect_qp(x.qp, peer_gid, ini, false));
	TRY(msg_send(p->peer, &t, sizeof(t)));
	TRY(e2e_sync(p, "connected"));

	/* SENDs 0 and 2 went to SRQ 0, 1 and 3 to SRQ 1, then one more there. */
	for (i = 0; i < 5; i++) {
		int q = i == 4 ? 1 : i % 2;
		uint64_t wr_id = i == 4 ? 105 : 100 + i;
		uint32_t len = i == 4 ? 33 : 100 + i;

		TRY(poll_one((struct e2e_cq){ x.cq[q], NULL }, &wc, E2E_WAIT_MS));
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == wr_id &&
		      wc.qp_num == x.qp->qp_num && wc.byte_len == len &&
		      wc.opcode == IBV_WC_RECV &&
		      !!(wc.wc_flags & IBV_WC_WITH_IMM) == (i == 2),
		      "receive %d on SRQ %d: status %s wr_id %llu qp %#x len %u",
		      i, q, ibv_wc_status_str(wc.status),
		      (unsigned long long)wc.wr_id, wc.qp_num, wc.byte_len);
	}
	for (i = 0; i < 2; i++)
		TRY(expect_no_wc((struct e2e_cq){ x.cq[i], NULL }, 20,
				 "SRQ CQ"));
	/* WQE k of SRQ q was at slot 2k + q; the data is the sender's. */
	for (i = 0; i < 5; i++) {
		size_t slot = i < 4 ? (size_t)i : 5, from = i < 4 ? i * 100 : 7000;

		TRY(check_pattern(x.buf + slot * SLOT, i < 4 ? 100 + i : 33, 71,
				  from, "message through the SRQ"));
	}
	TRY(e2e_sync(p, "received"));
	TRY(check_pattern(x.buf + 8192, 2000, 71, 4096, "XRC RDMA WRITE"));
	TRY(e2e_sync(p, "end"));
	return close_side(&x);
}

#define PAIR(n, a, b)                                                          \
	{ .group = "xrc", .name = n, .nroles = 2, .role = { a, b } }

const struct e2e_test e2e_xrc_tests[] = {
	/* One domain, two processes: one device by definition. */
	{ .group = "xrc", .name = "shared_domain", .nroles = 2,
	  .role = { domain_a, domain_b }, .one_device = true },
	PAIR("send_by_srqn", send_initiator, send_target),
	{ 0 },
};
