// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Data movement that succeeds: every opcode, every way of describing data
 * (SGE lists, inline, zero length, iova), signaling rules, the ibv_wr_* and
 * ibv_cq_ex APIs, and the query verbs.  Data is checked byte for byte and
 * every completion field by field.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

#define FILLER 0xee /* bytes nobody may write */

/* Bytes [off, off + len) of buf all equal FILLER. */
static int check_untouched(const uint8_t *buf, size_t off, size_t len,
			   const char *what)
{
	size_t i;

	for (i = off; i < off + len; i++)
		CHECK(buf[i] == FILLER, "%s: byte at offset %zu was written (%#04x)",
		      what, i, buf[i]);
	return 0;
}

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

static struct ibv_send_wr rdma_wr(uint64_t wr_id, enum ibv_wr_opcode op,
				  struct ibv_sge *sge, int nsge, uint64_t raddr,
				  uint32_t rkey)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = sge,
		.num_sge = nsge,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	};

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return wr;
}

static struct ibv_send_wr atomic_wr(uint64_t wr_id, enum ibv_wr_opcode op,
				    struct ibv_sge *sge, uint64_t raddr,
				    uint32_t rkey, uint64_t compare_add,
				    uint64_t swap)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	};

	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	return wr;
}

/* ================================================================== query */

static const uint8_t loopback_gid[16] = { 0, 0, 0, 0, 0, 0, 0, 0,
					  0, 0, 0xff, 0xff, 127, 0, 0, 1 };

static int query_device(struct e2e_proc *p)
{
	struct ibv_device_attr_ex ax;
	struct ibv_device_attr a;
	struct ibv_port_attr port;
	struct ibv_context *ctx;
	union ibv_gid gid;
	__be16 pkey;
	int ret;

	(void)p;
	TRY(e2e_open_device(&ctx));
	CHECK(ctx->device->transport_type == IBV_TRANSPORT_IB,
	      "transport type %d", ctx->device->transport_type);
	CHECK(ctx->device->node_type == IBV_NODE_CA, "node type %d",
	      ctx->device->node_type);

	ret = ibv_query_device(ctx, &a);
	CHECK(!ret, "ibv_query_device: %s", strerror(ret));
	CHECK(a.fw_ver[0], "empty fw_ver");
	CHECK(a.node_guid, "node_guid 0");
	CHECK(a.phys_port_cnt == 1, "phys_port_cnt %u", a.phys_port_cnt);
	CHECK(a.max_qp >= 64 && a.max_cq >= 64 && a.max_mr >= 64 && a.max_pd >= 1,
	      "max_qp %d max_cq %d max_mr %d max_pd %d", a.max_qp, a.max_cq,
	      a.max_mr, a.max_pd);
	CHECK(a.max_qp_wr >= 1024, "max_qp_wr %d", a.max_qp_wr);
	CHECK(a.max_sge >= 16 && a.max_sge_rd >= 16, "max_sge %d max_sge_rd %d",
	      a.max_sge, a.max_sge_rd);
	CHECK(a.max_cqe >= 4096, "max_cqe %d", a.max_cqe);
	CHECK(a.max_mr_size >= (1ull << 32), "max_mr_size %#llx",
	      (unsigned long long)a.max_mr_size);
	CHECK(a.page_size_cap & 4096, "page_size_cap %#llx",
	      (unsigned long long)a.page_size_cap);
	CHECK(a.atomic_cap == IBV_ATOMIC_HCA || a.atomic_cap == IBV_ATOMIC_GLOB,
	      "atomic_cap %d: atomics are supported", a.atomic_cap);
	CHECK(a.max_qp_rd_atom >= 1 && a.max_qp_init_rd_atom >= 1,
	      "max_qp_rd_atom %d max_qp_init_rd_atom %d", a.max_qp_rd_atom,
	      a.max_qp_init_rd_atom);
	CHECK(a.max_pkeys >= 1, "max_pkeys %u", a.max_pkeys);

	ret = ibv_query_device_ex(ctx, NULL, &ax);
	CHECK(!ret, "ibv_query_device_ex: %s", strerror(ret));
	CHECK(!memcmp(&ax.orig_attr, &a, sizeof(a)),
	      "ibv_query_device_ex and ibv_query_device disagree");

	ret = ibv_query_port(ctx, 1, &port);
	CHECK(!ret, "ibv_query_port(1): %s", strerror(ret));
	CHECK(port.state == IBV_PORT_ACTIVE, "port state %d", port.state);
	/* active_mtu follows the netdev (tests/netdev): 4096 on lo. */
	CHECK(port.max_mtu == IBV_MTU_4096 && port.active_mtu >= IBV_MTU_1024 &&
	      port.active_mtu <= port.max_mtu,
	      "max_mtu %d active_mtu %d", port.max_mtu, port.active_mtu);
	CHECK(port.gid_tbl_len >= 1, "gid_tbl_len %d", port.gid_tbl_len);
	CHECK(port.pkey_tbl_len >= 1, "pkey_tbl_len %u", port.pkey_tbl_len);
	CHECK(port.link_layer == IBV_LINK_LAYER_ETHERNET, "link_layer %u",
	      port.link_layer);
	CHECK(port.max_msg_sz >= (1u << 20), "max_msg_sz %u", port.max_msg_sz);
	CHECK(ibv_query_port(ctx, 2, &port), "ibv_query_port(2) succeeded");

	CHECK(!ibv_query_gid(ctx, 1, 0, &gid), "ibv_query_gid(1, 0): %s",
	      strerror(errno));
	CHECK(!memcmp(gid.raw, loopback_gid, 16),
	      "GID 0 is not ::ffff:127.0.0.1 (%02x%02x...%02x%02x%02x%02x)",
	      gid.raw[0], gid.raw[1], gid.raw[12], gid.raw[13], gid.raw[14],
	      gid.raw[15]);
	CHECK(!ibv_query_pkey(ctx, 1, 0, &pkey), "ibv_query_pkey: %s",
	      strerror(errno));
	CHECK(be16toh(pkey) == 0xffff, "pkey 0 is %#x", be16toh(pkey));

	ret = ibv_close_device(ctx);
	CHECK(!ret, "ibv_close_device: %s", strerror(ret));
	return 0;
}

/* Every attribute set on the way to RTS, as ibv_query_qp returns it. */
static int query_qp_side(struct e2e_proc *p)
{
	const unsigned int access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a, q;
	struct e2e_opts o;
	struct e2e_side s;
	int ret;

	e2e_default_opts(&o);
	o.max_send_wr = 20;
	o.max_recv_wr = 30;
	o.max_send_sge = 3;
	o.max_recv_sge = 5;
	o.max_inline = 100;
	o.sig_all = true;
	TRY(e2e_open(&s, p, &o));
	TRY(e2e_exchange(&s));

	ret = ibv_query_qp(s.qp, &q, IBV_QP_STATE | IBV_QP_CAP, &init);
	CHECK(!ret, "ibv_query_qp: %s", strerror(ret));
	CHECK(q.qp_state == IBV_QPS_RESET, "new QP queried in state %d",
	      q.qp_state);
	CHECK(init.qp_type == IBV_QPT_RC && init.sq_sig_all == 1 &&
	      init.send_cq == s.scq && init.recv_cq == s.rcq,
	      "init_attr: qp_type %d sq_sig_all %d send_cq %s recv_cq %s",
	      init.qp_type, init.sq_sig_all,
	      init.send_cq == s.scq ? "ok" : "wrong",
	      init.recv_cq == s.rcq ? "ok" : "wrong");
	CHECK(!memcmp(&q.cap, &s.cap, sizeof(q.cap)) &&
	      !memcmp(&init.cap, &s.cap, sizeof(init.cap)),
	      "queried caps (%u %u %u %u %u) differ from create_qp's (%u %u %u %u %u)",
	      q.cap.max_send_wr, q.cap.max_recv_wr, q.cap.max_send_sge,
	      q.cap.max_recv_sge, q.cap.max_inline_data, s.cap.max_send_wr,
	      s.cap.max_recv_wr, s.cap.max_send_sge, s.cap.max_recv_sge,
	      s.cap.max_inline_data);

	TRY(qp_to_init(s.qp, access));
	ret = ibv_query_qp(s.qp, &q, IBV_QP_STATE | IBV_QP_ACCESS_FLAGS |
					      IBV_QP_PORT | IBV_QP_PKEY_INDEX,
			   &init);
	CHECK(!ret, "ibv_query_qp: %s", strerror(ret));
	CHECK(q.qp_state == IBV_QPS_INIT && q.qp_access_flags == access &&
	      q.port_num == 1 && q.pkey_index == 0,
	      "INIT: state %d access %#x port %u pkey_index %u", q.qp_state,
	      q.qp_access_flags, q.port_num, q.pkey_index);

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = s.rem.qpn;
	a.rq_psn = s.rem.psn;
	a.max_dest_rd_atomic = 3;
	a.min_rnr_timer = 9;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 0;
	a.ah_attr.grh.hop_limit = 17;
	a.ah_attr.grh.traffic_class = 0x20;
	a.ah_attr.grh.flow_label = 0x12345;
	a.ah_attr.sl = 2;
	memcpy(a.ah_attr.grh.dgid.raw, s.rem.gid, 16);
	ret = ibv_modify_qp(s.qp, &a,
			    IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				    IBV_QP_MAX_DEST_RD_ATOMIC |
				    IBV_QP_MIN_RNR_TIMER);
	CHECK(!ret, "modify_qp INIT->RTR: %s", strerror(ret));

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = s.o.psn;
	a.timeout = 12;
	a.retry_cnt = 5;
	a.rnr_retry = 4;
	a.max_rd_atomic = 2;
	ret = ibv_modify_qp(s.qp, &a,
			    IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				    IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(!ret, "modify_qp RTR->RTS: %s", strerror(ret));

	memset(&q, 0, sizeof(q));
	ret = ibv_query_qp(s.qp, &q, IBV_QP_STATE | IBV_QP_CUR_STATE |
					      IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
					      IBV_QP_RQ_PSN | IBV_QP_SQ_PSN |
					      IBV_QP_AV | IBV_QP_TIMEOUT |
					      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					      IBV_QP_MIN_RNR_TIMER |
					      IBV_QP_MAX_QP_RD_ATOMIC |
					      IBV_QP_MAX_DEST_RD_ATOMIC |
					      IBV_QP_ACCESS_FLAGS | IBV_QP_PORT,
			   &init);
	CHECK(!ret, "ibv_query_qp: %s", strerror(ret));
	CHECK(q.qp_state == IBV_QPS_RTS && q.cur_qp_state == IBV_QPS_RTS,
	      "state %d cur_state %d", q.qp_state, q.cur_qp_state);
	CHECK(q.path_mtu == IBV_MTU_1024, "path_mtu %d", q.path_mtu);
	CHECK(q.dest_qp_num == s.rem.qpn, "dest_qp_num %#x, set %#x",
	      q.dest_qp_num, s.rem.qpn);
	CHECK(q.rq_psn == s.rem.psn && q.sq_psn == s.o.psn,
	      "rq_psn %#x sq_psn %#x, set %#x %#x", q.rq_psn, q.sq_psn,
	      s.rem.psn, s.o.psn);
	CHECK(q.timeout == 12 && q.retry_cnt == 5 && q.rnr_retry == 4 &&
	      q.min_rnr_timer == 9,
	      "timeout %u retry_cnt %u rnr_retry %u min_rnr_timer %u, set 12 5 4 9",
	      q.timeout, q.retry_cnt, q.rnr_retry, q.min_rnr_timer);
	CHECK(q.max_rd_atomic == 2 && q.max_dest_rd_atomic == 3,
	      "max_rd_atomic %u max_dest_rd_atomic %u, set 2 3", q.max_rd_atomic,
	      q.max_dest_rd_atomic);
	CHECK(q.qp_access_flags == access && q.port_num == 1,
	      "access %#x port %u", q.qp_access_flags, q.port_num);
	CHECK(q.ah_attr.is_global == 1 && q.ah_attr.port_num == 1 &&
	      q.ah_attr.sl == 2 && q.ah_attr.grh.sgid_index == 0 &&
	      q.ah_attr.grh.hop_limit == 17 &&
	      q.ah_attr.grh.traffic_class == 0x20 &&
	      q.ah_attr.grh.flow_label == 0x12345 &&
	      !memcmp(q.ah_attr.grh.dgid.raw, s.rem.gid, 16),
	      "ah_attr: is_global %u port %u sl %u sgid_index %u hop_limit %u tclass %#x flow_label %#x dgid %s",
	      q.ah_attr.is_global, q.ah_attr.port_num, q.ah_attr.sl,
	      q.ah_attr.grh.sgid_index, q.ah_attr.grh.hop_limit,
	      q.ah_attr.grh.traffic_class, q.ah_attr.grh.flow_label,
	      memcmp(q.ah_attr.grh.dgid.raw, s.rem.gid, 16) ? "differs" : "ok");
	CHECK(init.sq_sig_all == 1, "sq_sig_all %d", init.sq_sig_all);

	/* RTS -> RTS changes what it may.  Flags that mean something for an
	 * MR only (a QP of ODP MRs often passes ON_DEMAND) are taken and kept,
	 * as rxe and mlx5 do.
	 */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.min_rnr_timer = 3;
	a.qp_access_flags = E2E_ACCESS_ALL | IBV_ACCESS_ON_DEMAND |
			    IBV_ACCESS_MW_BIND;
	ret = ibv_modify_qp(s.qp, &a, IBV_QP_STATE | IBV_QP_MIN_RNR_TIMER |
					      IBV_QP_ACCESS_FLAGS);
	CHECK(!ret, "modify_qp RTS->RTS: %s", strerror(ret));
	ret = ibv_query_qp(s.qp, &q, IBV_QP_MIN_RNR_TIMER | IBV_QP_ACCESS_FLAGS,
			   &init);
	CHECK(!ret, "ibv_query_qp: %s", strerror(ret));
	CHECK(q.min_rnr_timer == 3 &&
	      q.qp_access_flags == (E2E_ACCESS_ALL | IBV_ACCESS_ON_DEMAND |
				    IBV_ACCESS_MW_BIND),
	      "after RTS->RTS: min_rnr_timer %u access %#x", q.min_rnr_timer,
	      q.qp_access_flags);

	/* The connection works with the 1024-byte MTU: a multi-packet SEND. */
	TRY(post_recv_buf(&s, 2, 8192, 8192));
	TRY(e2e_sync(p, "recv posted"));
	fill(s.buf, 5000, 40 + p->role);
	{
		struct ibv_sge sge = sge_of(&s, 0, 5000);
		struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge,
					  .num_sge = 1, .opcode = IBV_WR_SEND };

		TRY(post_send1(s.qp, &wr));
	}
	TRY(expect_send_ok(&s, 1, IBV_WC_SEND, 5000));
	TRY(expect_recv_ok(&s, 2, IBV_WC_RECV, 5000, false, 0));
	TRY(check_fill(s.buf + 8192, 5000, 40 + (p->role ^ 1), "received data"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* ========================================================= SEND and IMM */

static const uint32_t msg_sizes[] = { 1, 63, 4096, 4097, 65536, 1 << 20 };
#define N_SIZES (sizeof(msg_sizes) / sizeof(msg_sizes[0]))
#define BIG_BUF (2u << 20)

static uint32_t imm_of(unsigned int i)
{
	return htobe32(0xa5000000u | i);
}

static int send_req(struct e2e_proc *p, bool imm)
{
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int i;

	e2e_default_opts(&o);
	o.buf_len = BIG_BUF;
	TRY(e2e_setup(&s, p, &o));
	for (i = 0; i < N_SIZES; i++) {
		struct ibv_sge sge = sge_of(&s, 8, msg_sizes[i]);
		struct ibv_send_wr wr = {
			.wr_id = 0x1000 + i,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED,
			.imm_data = imm_of(i),
		};

		fill(s.buf + 8, msg_sizes[i], i + 1);
		TRY(e2e_sync(p, "recv posted"));
		TRY(post_send1(s.qp, &wr));
		TRY(expect_send_ok(&s, 0x1000 + i, IBV_WC_SEND, msg_sizes[i]));
	}
	TRY(expect_no_wc(scq_of(&s), 10, "send CQ"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int send_resp(struct e2e_proc *p, bool imm)
{
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int i;

	e2e_default_opts(&o);
	o.buf_len = BIG_BUF;
	TRY(e2e_setup(&s, p, &o));
	for (i = 0; i < N_SIZES; i++) {
		uint32_t len = msg_sizes[i];

		/* A receive larger than the message, at an odd offset. */
		memset(s.buf, FILLER, BIG_BUF);
		TRY(post_recv_buf(&s, 0x2000 + i, 3, BIG_BUF - 3));
		TRY(e2e_sync(p, "recv posted"));
		TRY(expect_recv_ok(&s, 0x2000 + i, IBV_WC_RECV, len, imm,
				   imm_of(i)));
		TRY(check_fill(s.buf + 3, len, i + 1, "received data"));
		TRY(check_untouched(s.buf, 0, 3, "before the receive buffer"));
		TRY(check_untouched(s.buf, 3 + len, BIG_BUF - 3 - len < 4096 ?
						     BIG_BUF - 3 - len : 4096,
				    "after the message"));
	}
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int send_plain_req(struct e2e_proc *p) { return send_req(p, false); }
static int send_plain_resp(struct e2e_proc *p) { return send_resp(p, false); }
static int send_imm_req(struct e2e_proc *p) { return send_req(p, true); }
static int send_imm_resp(struct e2e_proc *p) { return send_resp(p, true); }

/* ================================================== RDMA WRITE [WITH IMM] */

#define WRITE_OFF 101 /* where in the responder's buffer writes land */
#define RECV_AREA (BIG_BUF + 8192) /* receive buffer of WRITE_WITH_IMM */

static int write_req(struct e2e_proc *p, bool imm)
{
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int i;

	e2e_default_opts(&o);
	o.buf_len = BIG_BUF + 16384;
	TRY(e2e_setup(&s, p, &o));
	for (i = 0; i < N_SIZES; i++) {
		struct ibv_sge sge = sge_of(&s, 0, msg_sizes[i]);
		struct ibv_send_wr wr = rdma_wr(0x3000 + i,
						imm ? IBV_WR_RDMA_WRITE_WITH_IMM :
						      IBV_WR_RDMA_WRITE,
						&sge, 1, s.rem.addr + WRITE_OFF,
						s.rem.rkey);

		wr.imm_data = imm_of(i);
		fill(s.buf, msg_sizes[i], 100 + i);
		TRY(e2e_sync(p, "ready"));
		TRY(post_send1(s.qp, &wr));
		TRY(expect_send_ok(&s, 0x3000 + i, IBV_WC_RDMA_WRITE, msg_sizes[i]));
		TRY(e2e_sync(p, "written"));
	}
	TRY(expect_no_wc(scq_of(&s), 10, "send CQ"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int write_resp(struct e2e_proc *p, bool imm)
{
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int i;

	e2e_default_opts(&o);
	o.buf_len = BIG_BUF + 16384;
	TRY(e2e_setup(&s, p, &o));
	for (i = 0; i < N_SIZES; i++) {
		uint32_t len = msg_sizes[i];

		memset(s.buf, FILLER, o.buf_len);
		if (imm)
			TRY(post_recv_buf(&s, 0x4000 + i, RECV_AREA, 4096));
		TRY(e2e_sync(p, "ready"));
		if (imm)
			TRY(expect_recv_ok(&s, 0x4000 + i, IBV_WC_RECV_RDMA_WITH_IMM,
					   len, true, imm_of(i)));
		TRY(e2e_sync(p, "written"));
		TRY(check_fill(s.buf + WRITE_OFF, len, 100 + i, "written data"));
		TRY(check_untouched(s.buf, 0, WRITE_OFF, "before the target"));
		TRY(check_untouched(s.buf, WRITE_OFF + len, 4096, "after the target"));
		TRY(check_untouched(s.buf, RECV_AREA, 4096,
				    "the receive buffer of WRITE_WITH_IMM"));
	}
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int write_plain_req(struct e2e_proc *p) { return write_req(p, false); }
static int write_plain_resp(struct e2e_proc *p) { return write_resp(p, false); }
static int write_imm_req(struct e2e_proc *p) { return write_req(p, true); }
static int write_imm_resp(struct e2e_proc *p) { return write_resp(p, true); }

/* ================================================= runs of small WRITEs */

/*
 * Runs of small WRITEs, posted as lists, their sources adjacent: the
 * wire reads such a run ahead with one call and the responder writes the
 * payload of in-order WRITEs to adjacent addresses with one call.  Some
 * pieces span several packets, every RUN_GAP-th leaves a gap at the
 * responder (the writes there are not adjacent), and each round changes
 * the sources after the round before completed: no byte of an earlier
 * round may arrive, none may be lost.
 */
#define RUN_PIECES 96 /* a multiple of RUN_LIST */
#define RUN_LIST 32 /* WRs per ibv_post_send, the last signaled */
#define RUN_ROUNDS 3
#define RUN_GAP 7
#define RUN_DST 64 /* where the responder's image starts */
#define RUN_MAX (128u << 10) /* bytes the sources and the image may take */

static uint32_t run_piece_len(unsigned int k)
{
	static const uint32_t lens[] = { 64, 64, 8, 200, 1500, 64, 1, 4096 };

	return lens[k % (sizeof(lens) / sizeof(lens[0]))];
}

/* Where piece k comes from (adjacent) and lands (gaps); the total span. */
static size_t run_layout(unsigned int k, size_t *src, size_t *dst)
{
	size_t s = 0, d = RUN_DST;
	unsigned int i;

	for (i = 0; i <= k; i++) {
		if (i % RUN_GAP == RUN_GAP - 1)
			d += 16;
		if (i == k)
			break;
		s += run_piece_len(i);
		d += run_piece_len(i);
	}
	if (src)
		*src = s;
	if (dst)
		*dst = d;
	return d + run_piece_len(k);
}

/* The bytes all pieces take at their source, adjacent. */
static size_t run_total(void)
{
	size_t src;

	run_layout(RUN_PIECES - 1, &src, NULL);
	return src + run_piece_len(RUN_PIECES - 1);
}

/*
 * The responder's checked region: where the pieces land and 64 bytes past
 * them, which no piece may touch.  Fails if it or the sources do not fit.
 */
static int run_checked_span(const struct e2e_opts *o, size_t *span)
{
	size_t total = run_total();

	*span = run_layout(RUN_PIECES - 1, NULL, NULL) + 64;
	CHECK(total <= RUN_MAX && *span <= RUN_MAX && *span <= o->buf_len,
	      "the run (%zu bytes, %zu spanned) does not fit", total, *span);
	return 0;
}

/* The responder's buffer holds want over the checked span, byte for byte. */
static int run_check_image(const struct e2e_side *s, const uint8_t *want,
			   size_t span, unsigned int round)
{
	size_t i;

	for (i = 0; i < span; i++)
		CHECK(s->buf[i] == want[i],
		      "round %u: byte %zu is %#04x, expected %#04x", round, i,
		      s->buf[i], want[i]);
	return 0;
}

static int write_run_req(struct e2e_proc *p)
{
	struct ibv_send_wr wr[RUN_LIST];
	struct ibv_sge sge[RUN_LIST];
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int round, c, k, j;
	size_t src, dst, total;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	total = run_total();
	for (round = 0; round < RUN_ROUNDS; round++) {
		fill(s.buf, total, 300 + round);
		TRY(e2e_sync(p, "ready"));
		for (c = 0; c < RUN_PIECES / RUN_LIST; c++) {
			/* Odd rounds go backwards: their first list reads
			 * what the round before read last.
			 */
			k = (round % 2 ? RUN_PIECES / RUN_LIST - 1 - c : c) *
			    RUN_LIST;
			for (j = 0; j < RUN_LIST; j++) {
				run_layout(k + j, &src, &dst);
				sge[j] = sge_of(&s, src, run_piece_len(k + j));
				wr[j] = rdma_wr(0x9000 + k + j, IBV_WR_RDMA_WRITE,
						&sge[j], 1, s.rem.addr + dst,
						s.rem.rkey);
				wr[j].send_flags = j == RUN_LIST - 1 ?
							   IBV_SEND_SIGNALED : 0;
				wr[j].next = j + 1 < RUN_LIST ? &wr[j + 1] : NULL;
			}
			TRY(post_send1(s.qp, wr));
			TRY(expect_send_ok(&s, 0x9000 + k + RUN_LIST - 1,
					   IBV_WC_RDMA_WRITE,
					   run_piece_len(k + RUN_LIST - 1)));
		}
		TRY(e2e_sync(p, "written"));
	}
	TRY(expect_no_wc(scq_of(&s), 10, "send CQ"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int write_run_resp(struct e2e_proc *p)
{
	static uint8_t image[RUN_MAX], want[RUN_MAX];
	size_t span, src, dst, total = run_total();
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int round, k;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(run_checked_span(&o, &span));
	for (round = 0; round < RUN_ROUNDS; round++) {
		memset(s.buf, FILLER, span);
		fill(image, total, 300 + round);
		memset(want, FILLER, span);
		for (k = 0; k < RUN_PIECES; k++) {
			run_layout(k, &src, &dst);
			memcpy(want + dst, image + src, run_piece_len(k));
		}
		TRY(e2e_sync(p, "ready"));
		TRY(e2e_sync(p, "written"));
		TRY(run_check_image(&s, want, span, round));
	}
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* ================================================== a run of small SENDs */

/*
 * RUN_PIECES SENDs of the write run's pieces, posted in lists of RUN_LIST
 * one after another, every third with an immediate, into receives posted
 * where the write run's pieces land (adjacent, with a gap every RUN_GAP)
 * in the first round, and all adjacent in the others.  On the wire such
 * SENDs share one write and their receive completions wait for it
 * (device/wire/stage.c): each completion must come in order, with its
 * length and immediate, and only once its bytes are there.
 */
static bool send_run_imm(unsigned int k)
{
	return k % 3 == 2;
}

/* Where SEND k of round lands in the responder's buffer. */
static size_t send_run_dst(unsigned int round, unsigned int k)
{
	size_t src, dst;

	run_layout(k, &src, &dst);
	return round ? RUN_DST + src : dst;
}

static int send_run_req(struct e2e_proc *p)
{
	struct ibv_send_wr wr[RUN_LIST];
	struct ibv_sge sge[RUN_LIST];
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int round, c, k = 0, j;
	size_t src, total;

	e2e_default_opts(&o);
	o.max_send_wr = RUN_PIECES;
	TRY(e2e_setup(&s, p, &o));
	total = run_total();
	for (round = 0; round < RUN_ROUNDS; round++) {
		fill(s.buf, total, 400 + round);
		TRY(e2e_sync(p, "recv posted"));
		for (c = 0; c < RUN_PIECES / RUN_LIST; c++) {
			for (j = 0; j < RUN_LIST; j++) {
				k = c * RUN_LIST + j;
				run_layout(k, &src, NULL);
				sge[j] = sge_of(&s, src, run_piece_len(k));
				wr[j] = (struct ibv_send_wr){
					.wr_id = 0xa000 + k,
					.sg_list = &sge[j],
					.num_sge = 1,
					.opcode = send_run_imm(k) ?
							  IBV_WR_SEND_WITH_IMM :
							  IBV_WR_SEND,
					.send_flags = j == RUN_LIST - 1 ?
							      IBV_SEND_SIGNALED :
							      0,
					.imm_data = imm_of(k),
					.next = j + 1 < RUN_LIST ? &wr[j + 1] :
								   NULL,
				};
			}
			TRY(post_send1(s.qp, wr));
		}
		for (c = 0; c < RUN_PIECES / RUN_LIST; c++) {
			k = c * RUN_LIST + RUN_LIST - 1;
			TRY(expect_send_ok(&s, 0xa000 + k, IBV_WC_SEND,
					   run_piece_len(k)));
		}
		TRY(e2e_sync(p, "received"));
	}
	TRY(expect_no_wc(scq_of(&s), 10, "send CQ"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int send_run_resp(struct e2e_proc *p)
{
	static uint8_t image[RUN_MAX], want[RUN_MAX];
	size_t span, src, dst, total = run_total();
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int round, k;

	e2e_default_opts(&o);
	o.max_recv_wr = RUN_PIECES;
	TRY(e2e_setup(&s, p, &o));
	TRY(run_checked_span(&o, &span));
	for (round = 0; round < RUN_ROUNDS; round++) {
		memset(s.buf, FILLER, span);
		fill(image, total, 400 + round);
		memset(want, FILLER, span);
		for (k = 0; k < RUN_PIECES; k++) {
			run_layout(k, &src, NULL);
			dst = send_run_dst(round, k);
			memcpy(want + dst, image + src, run_piece_len(k));
			TRY(post_recv_buf(&s, 0xb000 + k, dst, run_piece_len(k)));
		}
		TRY(e2e_sync(p, "recv posted"));
		for (k = 0; k < RUN_PIECES; k++) {
			dst = send_run_dst(round, k);
			TRY(expect_recv_ok(&s, 0xb000 + k, IBV_WC_RECV,
					   run_piece_len(k), send_run_imm(k),
					   imm_of(k)));
			CHECK(!memcmp(s.buf + dst, want + dst, run_piece_len(k)),
			      "round %u: SEND %u completed before its bytes",
			      round, k);
		}
		TRY(run_check_image(&s, want, span, round));
		TRY(e2e_sync(p, "received"));
	}
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* ================================================= FENCE after a READ */

/*
 * A SEND, then a SEND with FENCE of the buffer a READ just before them
 * fills: the fenced SEND carries what the READ brought, never what the
 * buffer held before, even where its source follows on from the SEND
 * before it (the wire reads such runs ahead).
 */
#define FENCE_LEN 4096
#define FENCE_A 0 /* the first SEND's source, 64 bytes */
#define FENCE_B 64 /* the READ's target, the fenced SEND's source */
#define FENCE_R 8192 /* the responder's bytes the READ takes */

static int fence_req(struct e2e_proc *p)
{
	struct ibv_sge sge[3];
	struct ibv_send_wr wr[3];
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	fill(s.buf + FENCE_A, 64, 41);
	fill(s.buf + FENCE_B, FENCE_LEN, 42);
	sge[0] = sge_of(&s, FENCE_B, FENCE_LEN);
	wr[0] = rdma_wr(0xa0, IBV_WR_RDMA_READ, &sge[0], 1,
			s.rem.addr + FENCE_R, s.rem.rkey);
	sge[1] = sge_of(&s, FENCE_A, 64);
	wr[1] = rdma_wr(0xa1, IBV_WR_SEND, &sge[1], 1, 0, 0);
	sge[2] = sge_of(&s, FENCE_B, FENCE_LEN);
	wr[2] = rdma_wr(0xa2, IBV_WR_SEND, &sge[2], 1, 0, 0);
	wr[2].send_flags |= IBV_SEND_FENCE;
	wr[0].next = &wr[1];
	wr[1].next = &wr[2];
	TRY(e2e_sync(p, "ready"));
	TRY(post_send1(s.qp, wr));
	TRY(expect_send_ok(&s, 0xa0, IBV_WC_RDMA_READ, FENCE_LEN));
	TRY(expect_send_ok(&s, 0xa1, IBV_WC_SEND, 64));
	TRY(expect_send_ok(&s, 0xa2, IBV_WC_SEND, FENCE_LEN));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int fence_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	memset(s.buf, FILLER, 2 * FENCE_R);
	fill(s.buf + FENCE_R, FENCE_LEN, 43);
	TRY(post_recv_buf(&s, 0xb0, 0, 64));
	TRY(post_recv_buf(&s, 0xb1, 64, FENCE_LEN));
	TRY(e2e_sync(p, "ready"));
	TRY(expect_recv_ok(&s, 0xb0, IBV_WC_RECV, 64, false, 0));
	TRY(expect_recv_ok(&s, 0xb1, IBV_WC_RECV, FENCE_LEN, false, 0));
	TRY(check_fill(s.buf, 64, 41, "the first SEND"));
	TRY(check_fill(s.buf + 64, FENCE_LEN, 43,
		       "the fenced SEND (what the READ brought)"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* ================================================= SQD: drain, resume */

#define DRAIN_WRS 5
#define DRAIN_LEN (256u << 10)

/*
 * RDMA WRITEs posted, the QP moved to SQD at once with
 * en_sqd_async_notify: what had started completes, then comes
 * IBV_EVENT_SQ_DRAINED, and nothing more starts until RTS; then the rest
 * completes, in order, every byte written.  On the wire the WRITEs are
 * still in flight when SQD comes (tests/wire).
 */
static int drain_req(struct e2e_proc *p)
{
	struct ibv_qp_attr attr = { .qp_state = IBV_QPS_SQD,
				    .en_sqd_async_notify = 1 };
	struct ibv_send_wr wr[DRAIN_WRS];
	struct ibv_sge sge[DRAIN_WRS];
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_wc wc;
	unsigned int i, done;
	int ret;

	e2e_default_opts(&o);
	o.buf_len = DRAIN_WRS * DRAIN_LEN;
	TRY(e2e_setup(&s, p, &o));
	for (i = 0; i < DRAIN_WRS; i++) {
		fill(s.buf + i * DRAIN_LEN, DRAIN_LEN, 50 + i);
		sge[i] = sge_of(&s, i * DRAIN_LEN, DRAIN_LEN);
		wr[i] = rdma_wr(0x7000 + i, IBV_WR_RDMA_WRITE, &sge[i], 1,
				s.rem.addr + i * DRAIN_LEN, s.rem.rkey);
		wr[i].next = i + 1 < DRAIN_WRS ? &wr[i + 1] : NULL;
	}
	TRY(post_send1(s.qp, wr));
	/* Once the first is done, the next ones are under way. */
	TRY(expect_send_ok(&s, 0x7000, IBV_WC_RDMA_WRITE, DRAIN_LEN));
	done = 1;
	ret = ibv_modify_qp(s.qp, &attr,
			    IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY);
	CHECK(!ret, "modify_qp RTS->SQD: %s", strerror(ret));
	TRY(expect_async(s.ctx, s.qp, IBV_EVENT_SQ_DRAINED, E2E_WAIT_MS));
	/* What started is complete by now; nothing else may start. */
	while (ibv_poll_cq(s.scq, 1, &wc) == 1) {
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 0x7000 + done,
		      "in SQD: wr_id %#llx status %s, expected %#x success",
		      (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status),
		      0x7000 + done);
		done++;
	}
	TRY(expect_no_wc(scq_of(&s), 50, "send CQ of a drained QP"));
	TRY(expect_qp_state(s.qp, IBV_QPS_SQD));
	TRY(qp_to_state(s.qp, IBV_QPS_RTS));
	for (; done < DRAIN_WRS; done++)
		TRY(expect_send_ok(&s, 0x7000 + done, IBV_WC_RDMA_WRITE,
				   DRAIN_LEN));
	TRY(e2e_sync(p, "written"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int drain_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int i;

	e2e_default_opts(&o);
	o.buf_len = DRAIN_WRS * DRAIN_LEN;
	TRY(e2e_setup(&s, p, &o));
	TRY(e2e_sync(p, "written"));
	for (i = 0; i < DRAIN_WRS; i++)
		TRY(check_fill(s.buf + i * DRAIN_LEN, DRAIN_LEN, 50 + i,
			       "written before and after SQD"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* ============================================================ RDMA READ */

#define READ_SRC 77

static int read_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int i;

	e2e_default_opts(&o);
	o.buf_len = BIG_BUF + 8192;
	TRY(e2e_setup(&s, p, &o));
	for (i = 0; i < N_SIZES; i++) {
		uint32_t len = msg_sizes[i];
		struct ibv_sge sge = sge_of(&s, 5, len);
		struct ibv_send_wr wr = rdma_wr(0x5000 + i, IBV_WR_RDMA_READ, &sge,
						1, s.rem.addr + READ_SRC,
						s.rem.rkey);

		memset(s.buf, FILLER, o.buf_len);
		TRY(e2e_sync(p, "filled"));
		TRY(post_send1(s.qp, &wr));
		TRY(expect_send_ok(&s, 0x5000 + i, IBV_WC_RDMA_READ, len));
		TRY(check_fill(s.buf + 5, len, 200 + i, "read data"));
		TRY(check_untouched(s.buf, 0, 5, "before the read buffer"));
		TRY(check_untouched(s.buf, 5 + len, 4096, "after the read buffer"));
		TRY(e2e_sync(p, "read"));
	}
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int read_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int i;

	e2e_default_opts(&o);
	o.buf_len = BIG_BUF + 8192;
	TRY(e2e_setup(&s, p, &o));
	for (i = 0; i < N_SIZES; i++) {
		fill(s.buf + READ_SRC, msg_sizes[i], 200 + i);
		TRY(e2e_sync(p, "filled"));
		TRY(e2e_sync(p, "read"));
	}
	TRY(e2e_sync(p, "end"));
	/* A READ leaves the responder's memory and receive queue alone. */
	TRY(check_fill(s.buf + READ_SRC, msg_sizes[N_SIZES - 1], 200 + N_SIZES - 1,
		       "the read source"));
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ"));
	return e2e_close(&s);
}

/* ============================================================== atomics */

#define ATOMIC_OFF 64 /* 8-aligned target in the responder's buffer */
#define RESULT_OFF 512 /* where the original value lands locally */
#define V0 0x0123456789abcdefull
#define V1 0xfedcba9876543210ull

/* One atomic; checks the returned original value and the remote value. */
static int do_atomic(struct e2e_side *s, uint64_t wr_id, enum ibv_wr_opcode op,
		     uint64_t compare_add, uint64_t swap, uint64_t expect_old,
		     uint64_t expect_new)
{
	struct ibv_sge sge = sge_of(s, RESULT_OFF, 8);
	struct ibv_send_wr wr = atomic_wr(wr_id, op, &sge,
					  s->rem.addr + ATOMIC_OFF, s->rem.rkey,
					  compare_add, swap);
	uint64_t remote;

	memset(s->buf + RESULT_OFF, FILLER, 16);
	TRY(post_send1(s->qp, &wr));
	TRY(expect_send_ok(s, wr_id, op == IBV_WR_ATOMIC_CMP_AND_SWP ?
					     IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD,
			   8));
	CHECK(get_u64(s->buf + RESULT_OFF) == expect_old,
	      "wr %#llx: original value returned %#llx, expected %#llx",
	      (unsigned long long)wr_id,
	      (unsigned long long)get_u64(s->buf + RESULT_OFF),
	      (unsigned long long)expect_old);
	TRY(check_untouched(s->buf, RESULT_OFF + 8, 8, "after the atomic result"));
	TRY(e2e_sync(s->p, "atomic done"));
	TRY(recv_u64(s->p->peer, &remote, E2E_WAIT_MS));
	CHECK(remote == expect_new,
	      "wr %#llx: remote value afterwards %#llx, expected %#llx",
	      (unsigned long long)wr_id, (unsigned long long)remote,
	      (unsigned long long)expect_new);
	return 0;
}

static int atomic_req(struct e2e_proc *p, bool cas)
{
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(e2e_sync(p, "initialised"));
	if (cas) {
		/* Equal: swapped.  Not equal: unchanged.  Both return the old. */
		TRY(do_atomic(&s, 0x61, IBV_WR_ATOMIC_CMP_AND_SWP, V0, V1, V0, V1));
		TRY(do_atomic(&s, 0x62, IBV_WR_ATOMIC_CMP_AND_SWP, V0, 42, V1, V1));
		TRY(do_atomic(&s, 0x63, IBV_WR_ATOMIC_CMP_AND_SWP, V1, V0, V1, V0));
	} else {
		TRY(do_atomic(&s, 0x71, IBV_WR_ATOMIC_FETCH_AND_ADD, 0x1111, 0, V0,
			      V0 + 0x1111));
		/* Carries across all 64 bits, wraps around. */
		TRY(do_atomic(&s, 0x72, IBV_WR_ATOMIC_FETCH_AND_ADD,
			      0xff00000000000000ull, 0, V0 + 0x1111,
			      V0 + 0x1111 + 0xff00000000000000ull));
		TRY(do_atomic(&s, 0x73, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 0,
			      V0 + 0x1111 + 0xff00000000000000ull,
			      V0 + 0x1111 + 0xff00000000000000ull));
	}
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int atomic_resp(struct e2e_proc *p, int rounds)
{
	struct e2e_opts o;
	struct e2e_side s;
	int i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	memset(s.buf, FILLER, o.buf_len);
	put_u64(s.buf + ATOMIC_OFF, V0);
	TRY(e2e_sync(p, "initialised"));
	for (i = 0; i < rounds; i++) {
		TRY(e2e_sync(p, "atomic done"));
		TRY(send_u64(p->peer, get_u64(s.buf + ATOMIC_OFF)));
		TRY(check_untouched(s.buf, ATOMIC_OFF - 8, 8, "before the target"));
		TRY(check_untouched(s.buf, ATOMIC_OFF + 8, 8, "after the target"));
	}
	TRY(e2e_sync(p, "end"));
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ"));
	return e2e_close(&s);
}

static int cas_req(struct e2e_proc *p) { return atomic_req(p, true); }
static int faa_req(struct e2e_proc *p) { return atomic_req(p, false); }
static int atomic3_resp(struct e2e_proc *p) { return atomic_resp(p, 3); }

/* ===================================================== responder in RTR */

/* RC responders answer in RTR: every opcode against a QP never moved to RTS. */
static int rtr_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(e2e_sync(p, "ready"));

	fill(s.buf, 3000, 7);
	sge = sge_of(&s, 0, 3000);
	wr = rdma_wr(1, IBV_WR_SEND_WITH_IMM, &sge, 1, 0, 0);
	wr.imm_data = htobe32(77);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 1, IBV_WC_SEND, 3000));
	wr = rdma_wr(2, IBV_WR_RDMA_WRITE, &sge, 1, s.rem.addr + 8192, s.rem.rkey);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 2, IBV_WC_RDMA_WRITE, 3000));
	sge = sge_of(&s, 16384, 1000);
	wr = rdma_wr(3, IBV_WR_RDMA_READ, &sge, 1, s.rem.addr + 32768, s.rem.rkey);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 3, IBV_WC_RDMA_READ, 1000));
	TRY(check_fill(s.buf + 16384, 1000, 8, "read data"));
	TRY(do_atomic(&s, 4, IBV_WR_ATOMIC_FETCH_AND_ADD, 5, 0, V0, V0 + 5));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int rtr_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	o.state = IBV_QPS_RTR;
	TRY(e2e_setup(&s, p, &o));
	TRY(expect_qp_state(s.qp, IBV_QPS_RTR));
	fill(s.buf + 32768, 1000, 8);
	put_u64(s.buf + ATOMIC_OFF, V0);
	TRY(post_recv_buf(&s, 9, 4096, 4096));
	TRY(e2e_sync(p, "ready"));
	TRY(expect_recv_ok(&s, 9, IBV_WC_RECV, 3000, true, htobe32(77)));
	TRY(check_fill(s.buf + 4096, 3000, 7, "received data"));
	TRY(e2e_sync(p, "atomic done"));
	TRY(send_u64(p->peer, get_u64(s.buf + ATOMIC_OFF)));
	TRY(e2e_sync(p, "end"));
	TRY(check_fill(s.buf + 8192, 3000, 7, "written data"));
	TRY(expect_qp_state(s.qp, IBV_QPS_RTR));
	return e2e_close(&s);
}

/* ===================================================================== SGEs */

/* Odd sizes and odd places: 16 gather pieces and 16 scatter pieces. */
static const uint32_t gather_len[16] = { 1, 7, 13, 4095, 33, 1, 511, 4097,
					 3, 999, 17, 65, 129, 1023, 9, 2049 };
static const uint32_t scatter_len[16] = { 5, 11, 3001, 1, 77, 8191, 3, 2,
					  1500, 13, 999, 7, 31, 2047, 1, 9000 };
#define SGE_GAP 5 /* bytes left between pieces */
#define SGE_MSG_OFF (256u << 10) /* the contiguous side of WRITE and READ */

static uint32_t total_of(const uint32_t *len, unsigned int n)
{
	uint32_t t = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		t += len[i];
	return t;
}

/*
 * n pieces of the given lengths starting at buffer offset 3, SGE_GAP apart;
 * with seed != 0 they are filled so that their concatenation is the pattern.
 */
static void pieces(struct e2e_side *s, const uint32_t *len, unsigned int n,
		   struct ibv_sge *sge, uint32_t seed)
{
	size_t off = 3, msg = 0;
	unsigned int i, k;

	for (i = 0; i < n; i++) {
		sge[i] = sge_of(s, off, len[i]);
		if (seed)
			for (k = 0; k < len[i]; k++)
				s->buf[off + k] = pat(seed, msg + k);
		msg += len[i];
		off += len[i] + SGE_GAP;
	}
}

/* The concatenation of the pieces is the pattern; the gaps are untouched. */
static int check_pieces(struct e2e_side *s, const uint32_t *len, unsigned int n,
			uint32_t seed, uint32_t msg_len, const char *what)
{
	size_t off = 3, msg = 0;
	unsigned int i, k;

	TRY(check_untouched(s->buf, 0, 3, what));
	for (i = 0; i < n; i++) {
		for (k = 0; k < len[i]; k++, msg++) {
			uint8_t want = msg < msg_len ? pat(seed, msg) : FILLER;

			CHECK(s->buf[off + k] == want,
			      "%s: piece %u byte %u (message byte %zu) is %#04x, expected %#04x",
			      what, i, k, msg, s->buf[off + k], want);
		}
		off += len[i];
		TRY(check_untouched(s->buf, off, SGE_GAP, what));
		off += SGE_GAP;
	}
	return 0;
}

/* Lengths for n pieces (n up to the QP's limit), cycling through a table. */
static void lens_n(const uint32_t *table, unsigned int n, uint32_t *out)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		out[i] = table[i % 16] + i / 16;
}

#define MAX_PIECES 64

static int sge_send_req(struct e2e_proc *p)
{
	struct ibv_sge sge[MAX_PIECES];
	uint32_t len[MAX_PIECES];
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int n, round;

	e2e_default_opts(&o);
	o.max_send_sge = 16;
	o.max_recv_sge = 16;
	o.buf_len = 512 << 10;
	TRY(e2e_setup(&s, p, &o));
	CHECK(s.cap.max_send_sge <= MAX_PIECES, "max_send_sge %u",
	      s.cap.max_send_sge);
	/* 16 pieces, then as many as the QP allows. */
	for (round = 0; round < 2; round++) {
		struct ibv_send_wr wr = { .wr_id = 10 + round, .sg_list = sge,
					  .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED };

		n = round ? s.cap.max_send_sge : 16;
		lens_n(gather_len, n, len);
		memset(s.buf, FILLER, o.buf_len);
		pieces(&s, len, n, sge, 300 + round);
		wr.num_sge = n;
		TRY(e2e_sync(p, "recv posted"));
		TRY(post_send1(s.qp, &wr));
		TRY(expect_send_ok(&s, 10 + round, IBV_WC_SEND, total_of(len, n)));
		TRY(send_u64(p->peer, n));
	}
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int sge_send_resp(struct e2e_proc *p)
{
	uint32_t len[MAX_PIECES], glen[MAX_PIECES];
	struct ibv_sge sge[MAX_PIECES];
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int n, round;
	uint64_t sent;

	e2e_default_opts(&o);
	o.max_send_sge = 16;
	o.max_recv_sge = 16;
	o.buf_len = 512 << 10;
	TRY(e2e_setup(&s, p, &o));
	CHECK(s.cap.max_recv_sge <= MAX_PIECES, "max_recv_sge %u",
	      s.cap.max_recv_sge);
	for (round = 0; round < 2; round++) {
		n = round ? s.cap.max_recv_sge : 16;
		lens_n(scatter_len, n, len);
		memset(s.buf, FILLER, o.buf_len);
		pieces(&s, len, n, sge, 0);
		TRY(post_recv1(s.qp, 20 + round, sge, n));
		TRY(e2e_sync(p, "recv posted"));
		TRY(recv_u64(p->peer, &sent, E2E_WAIT_MS));
		lens_n(gather_len, sent, glen);
		CHECK(total_of(glen, sent) <= total_of(len, n),
		      "test bug: message larger than the receive");
		TRY(expect_recv_ok(&s, 20 + round, IBV_WC_RECV, total_of(glen, sent),
				   false, 0));
		TRY(check_pieces(&s, len, n, 300 + round, total_of(glen, sent),
				 "scattered receive"));
	}
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* WRITE gathers 16 (then max_send_sge) pieces; READ scatters into them. */
static int sge_rdma_req(struct e2e_proc *p, bool read)
{
	struct ibv_sge sge[MAX_PIECES];
	uint32_t len[MAX_PIECES];
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int n, round;

	e2e_default_opts(&o);
	o.max_send_sge = 16;
	o.buf_len = 512 << 10;
	TRY(e2e_setup(&s, p, &o));
	CHECK(s.cap.max_send_sge <= MAX_PIECES, "max_send_sge %u",
	      s.cap.max_send_sge);
	for (round = 0; round < 2; round++) {
		uint32_t seed = 400 + round, total;
		struct ibv_send_wr wr;

		n = round ? s.cap.max_send_sge : 16;
		lens_n(read ? scatter_len : gather_len, n, len);
		total = total_of(len, n);
		memset(s.buf, FILLER, o.buf_len);
		pieces(&s, len, n, sge, read ? 0 : seed);
		wr = rdma_wr(30 + round, read ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
			     sge, n, s.rem.addr + SGE_MSG_OFF + 1, s.rem.rkey);
		TRY(e2e_sync(p, "ready"));
		TRY(post_send1(s.qp, &wr));
		TRY(expect_send_ok(&s, 30 + round,
				   read ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE,
				   total));
		if (read)
			TRY(check_pieces(&s, len, n, seed, total, "scattered READ"));
		TRY(send_u64(p->peer, total));
	}
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int sge_rdma_resp(struct e2e_proc *p, bool read)
{
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int round;
	uint64_t total;

	e2e_default_opts(&o);
	o.max_send_sge = 16;
	o.buf_len = 512 << 10;
	TRY(e2e_setup(&s, p, &o));
	for (round = 0; round < 2; round++) {
		memset(s.buf, FILLER, o.buf_len);
		if (read)
			fill(s.buf + SGE_MSG_OFF + 1, 128 << 10, 400 + round);
		TRY(e2e_sync(p, "ready"));
		TRY(recv_u64(p->peer, &total, E2E_WAIT_MS));
		if (read)
			continue;
		TRY(check_fill(s.buf + SGE_MSG_OFF + 1, total, 400 + round,
			       "gathered WRITE"));
		TRY(check_untouched(s.buf, SGE_MSG_OFF, 1, "before the target"));
		TRY(check_untouched(s.buf, SGE_MSG_OFF + 1 + total, 4096,
				    "after the target"));
	}
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int sge_write_req(struct e2e_proc *p) { return sge_rdma_req(p, false); }
static int sge_write_resp(struct e2e_proc *p) { return sge_rdma_resp(p, false); }
static int sge_read_req(struct e2e_proc *p) { return sge_rdma_req(p, true); }
static int sge_read_resp(struct e2e_proc *p) { return sge_rdma_resp(p, true); }

/* ================================================================== inline */

/* Where the inline WRITE of a wr_id lands: one place each. */
#define INLINE_TARGET(wr_id) (0x20000 + (wr_id) * 2048)

/*
 * Inline data comes from memory that is not registered (a bogus lkey) and
 * may be reused as soon as the post returns.
 */
static int inline_post(struct e2e_side *s, uint64_t wr_id, enum ibv_wr_opcode op,
		       const uint32_t *len, unsigned int n, uint32_t seed,
		       int *ret)
{
	struct ibv_send_wr wr = rdma_wr(wr_id, op, NULL, n,
					s->rem.addr + INLINE_TARGET(wr_id),
					s->rem.rkey);
	struct ibv_sge sge[4];
	struct ibv_send_wr *bad = NULL;
	uint8_t *tmp[4];
	size_t msg = 0;
	unsigned int i, k;

	wr.send_flags |= IBV_SEND_INLINE;
	wr.imm_data = htobe32(seed);
	wr.sg_list = sge;
	for (i = 0; i < n; i++) {
		tmp[i] = malloc(len[i] + 1);
		CHECK(tmp[i], "out of memory");
		for (k = 0; k < len[i]; k++)
			tmp[i][k] = pat(seed, msg + k);
		msg += len[i];
		sge[i] = (struct ibv_sge){ (uintptr_t)tmp[i], len[i], 0xbad0bad0 };
	}
	*ret = ibv_post_send(s->qp, &wr, &bad);
	for (i = 0; i < n; i++) {
		memset(tmp[i], 0x5a, len[i]);
		free(tmp[i]);
	}
	if (*ret)
		CHECK(bad == &wr, "post failed with %s but bad_wr is %p, not %p",
		      strerror(*ret), (void *)bad, (void *)&wr);
	return 0;
}

static int inline_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t max, len[3];
	int ret;

	e2e_default_opts(&o);
	o.max_inline = 256;
	TRY(e2e_setup(&s, p, &o));
	max = s.cap.max_inline_data;
	CHECK(max >= 256, "max_inline_data %u < 256 asked", max);
	TRY(send_u64(p->peer, max));

	/* SEND of 1, 255 and max_inline_data bytes. */
	len[0] = 1;
	TRY(inline_post(&s, 1, IBV_WR_SEND, len, 1, 501, &ret));
	CHECK(!ret, "inline SEND of 1 byte: %s", strerror(ret));
	TRY(expect_send_ok(&s, 1, IBV_WC_SEND, 1));
	len[0] = 255;
	TRY(inline_post(&s, 2, IBV_WR_SEND, len, 1, 502, &ret));
	CHECK(!ret, "inline SEND of 255 bytes: %s", strerror(ret));
	TRY(expect_send_ok(&s, 2, IBV_WC_SEND, 255));
	len[0] = max;
	TRY(inline_post(&s, 3, IBV_WR_SEND_WITH_IMM, len, 1, 503, &ret));
	CHECK(!ret, "inline SEND_WITH_IMM of %u bytes: %s", max, strerror(ret));
	TRY(expect_send_ok(&s, 3, IBV_WC_SEND, max));
	/* Three buffers gathered inline, max_inline_data in all. */
	len[0] = 7;
	len[1] = max - 7 - 100;
	len[2] = 100;
	TRY(inline_post(&s, 4, IBV_WR_SEND, len, 3, 504, &ret));
	CHECK(!ret, "inline SEND of 3 pieces: %s", strerror(ret));
	TRY(expect_send_ok(&s, 4, IBV_WC_SEND, max));
	TRY(e2e_sync(p, "sends done"));

	/* WRITE and WRITE_WITH_IMM inline, to remote offset 64. */
	len[0] = max;
	TRY(inline_post(&s, 5, IBV_WR_RDMA_WRITE, len, 1, 505, &ret));
	CHECK(!ret, "inline WRITE of %u bytes: %s", max, strerror(ret));
	TRY(expect_send_ok(&s, 5, IBV_WC_RDMA_WRITE, max));
	TRY(e2e_sync(p, "write done"));
	len[0] = 33;
	TRY(inline_post(&s, 6, IBV_WR_RDMA_WRITE_WITH_IMM, len, 1, 506, &ret));
	CHECK(!ret, "inline WRITE_WITH_IMM: %s", strerror(ret));
	TRY(expect_send_ok(&s, 6, IBV_WC_RDMA_WRITE, 33));
	TRY(e2e_sync(p, "write imm done"));

	/* One byte more than max_inline_data: refused, nothing happens. */
	len[0] = max + 1;
	TRY(inline_post(&s, 7, IBV_WR_SEND, len, 1, 507, &ret));
	CHECK(ret == EINVAL, "inline SEND of max_inline_data + 1 bytes returned %d (%s), expected EINVAL",
	      ret, strerror(ret));
	TRY(expect_no_wc(scq_of(&s), 20, "after a refused inline post"));
	TRY(expect_qp_state(s.qp, IBV_QPS_RTS));
	len[0] = 10;
	TRY(inline_post(&s, 8, IBV_WR_SEND, len, 1, 508, &ret));
	CHECK(!ret, "inline SEND after the refused one: %s", strerror(ret));
	TRY(expect_send_ok(&s, 8, IBV_WC_SEND, 10));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int inline_resp(struct e2e_proc *p)
{
	static const struct {
		uint32_t seed;
		bool imm;
	} msgs[] = { { 501, false }, { 502, false }, { 503, true }, { 504, false } };
	const uint32_t lens[4] = { 1, 255, 0, 0 };
	struct e2e_opts o;
	struct e2e_side s;
	uint64_t max;
	unsigned int i;

	e2e_default_opts(&o);
	o.max_inline = 256;
	TRY(e2e_setup(&s, p, &o));
	TRY(recv_u64(p->peer, &max, E2E_WAIT_MS));
	memset(s.buf, FILLER, o.buf_len);
	for (i = 0; i < 4; i++)
		TRY(post_recv_buf(&s, 40 + i, 8192 * (i + 1), 4096));
	TRY(post_recv_buf(&s, 44, 8192 * 5, 4096)); /* WRITE_WITH_IMM */
	TRY(post_recv_buf(&s, 45, 8192 * 6, 4096)); /* the last SEND */
	TRY(e2e_sync(p, "sends done"));
	for (i = 0; i < 4; i++) {
		uint32_t len = lens[i] ? lens[i] : max;

		TRY(expect_recv_ok(&s, 40 + i, IBV_WC_RECV, len, msgs[i].imm,
				   htobe32(msgs[i].seed)));
		TRY(check_fill(s.buf + 8192 * (i + 1), len, msgs[i].seed,
			       "inline data received"));
	}
	TRY(e2e_sync(p, "write done"));
	TRY(check_fill(s.buf + INLINE_TARGET(5), max, 505, "inline WRITE data"));
	TRY(check_untouched(s.buf, INLINE_TARGET(5) + max, 64,
			    "after the inline WRITE"));
	TRY(e2e_sync(p, "write imm done"));
	TRY(expect_recv_ok(&s, 44, IBV_WC_RECV_RDMA_WITH_IMM, 33, true,
			   htobe32(506)));
	TRY(check_fill(s.buf + INLINE_TARGET(6), 33, 506,
		       "inline WRITE_WITH_IMM data"));
	TRY(check_untouched(s.buf, INLINE_TARGET(6) + 33, 64,
			    "after the inline WRITE_WITH_IMM"));
	TRY(e2e_sync(p, "end"));
	TRY(expect_recv_ok(&s, 45, IBV_WC_RECV, 10, false, 0));
	TRY(check_fill(s.buf + 8192 * 6, 10, 508, "inline data received"));
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ"));
	return e2e_close(&s);
}

/* ============================================================= zero length */

static int zero_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(e2e_sync(p, "recv posted"));
	/* SEND with no SGE, SEND with one empty SGE, SEND_WITH_IMM empty. */
	wr = rdma_wr(1, IBV_WR_SEND, NULL, 0, 0, 0);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 1, IBV_WC_SEND, 0));
	sge = sge_of(&s, 0, 0);
	wr = rdma_wr(2, IBV_WR_SEND, &sge, 1, 0, 0);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 2, IBV_WC_SEND, 0));
	wr = rdma_wr(3, IBV_WR_SEND_WITH_IMM, NULL, 0, 0, 0);
	wr.imm_data = htobe32(0xabcdef01);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 3, IBV_WC_SEND, 0));
	/* Zero-length WRITE, WRITE_WITH_IMM and READ. */
	wr = rdma_wr(4, IBV_WR_RDMA_WRITE, NULL, 0, s.rem.addr, s.rem.rkey);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 4, IBV_WC_RDMA_WRITE, 0));
	wr = rdma_wr(5, IBV_WR_RDMA_WRITE_WITH_IMM, NULL, 0, s.rem.addr,
		     s.rem.rkey);
	wr.imm_data = htobe32(0x01020304);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 5, IBV_WC_RDMA_WRITE, 0));
	wr = rdma_wr(6, IBV_WR_RDMA_READ, NULL, 0, s.rem.addr, s.rem.rkey);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 6, IBV_WC_RDMA_READ, 0));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int zero_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	memset(s.buf, FILLER, o.buf_len);
	TRY(post_recv_buf(&s, 11, 0, 64));
	TRY(post_recv1(s.qp, 12, NULL, 0)); /* a receive with no SGE */
	TRY(post_recv_buf(&s, 13, 128, 64));
	TRY(post_recv_buf(&s, 14, 256, 64));
	TRY(e2e_sync(p, "recv posted"));
	TRY(expect_recv_ok(&s, 11, IBV_WC_RECV, 0, false, 0));
	TRY(expect_recv_ok(&s, 12, IBV_WC_RECV, 0, false, 0));
	TRY(expect_recv_ok(&s, 13, IBV_WC_RECV, 0, true, htobe32(0xabcdef01)));
	TRY(expect_recv_ok(&s, 14, IBV_WC_RECV_RDMA_WITH_IMM, 0, true,
			   htobe32(0x01020304)));
	TRY(e2e_sync(p, "end"));
	TRY(check_untouched(s.buf, 0, 4096, "zero-length targets"));
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ"));
	return e2e_close(&s);
}

/* ============================================================== signaling */

/*
 * sq_sig_all = 0: unsignaled WRs complete silently (and free their slots),
 * a signaled one after them does complete.
 */
static int unsignaled_req(struct e2e_proc *p)
{
	struct ibv_send_wr wr[16];
	struct ibv_sge sge[16];
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int i, round;

	e2e_default_opts(&o);
	o.max_send_wr = 16;
	o.cqe = 4; /* unexpected completions would overrun it */
	TRY(e2e_setup(&s, p, &o));
	CHECK(s.cap.max_send_wr >= 16, "max_send_wr %u", s.cap.max_send_wr);
	/* Several rounds through the whole ring: slots must come back. */
	for (round = 0; round < 6; round++) {
		for (i = 0; i < 16; i++) {
			sge[i] = sge_of(&s, i * 64, 64);
			wr[i] = rdma_wr(round * 100 + i,
					i % 2 ? IBV_WR_SEND : IBV_WR_RDMA_WRITE,
					&sge[i], 1, s.rem.addr + 65536 + i * 64,
					s.rem.rkey);
			wr[i].send_flags = i == 15 ? IBV_SEND_SIGNALED : 0;
			wr[i].next = i < 15 ? &wr[i + 1] : NULL;
			fill(s.buf + i * 64, 64, round * 100 + i);
		}
		TRY(e2e_sync(p, "recv posted"));
		TRY(post_send1(s.qp, wr));
		TRY(expect_send_ok(&s, round * 100 + 15, IBV_WC_SEND, 64));
		TRY(expect_no_wc(scq_of(&s), 5, "after the signaled WR"));
		TRY(e2e_sync(p, "round done"));
	}
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int unsignaled_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int i, round;

	e2e_default_opts(&o);
	o.max_send_wr = 16;
	o.cqe = 16;
	TRY(e2e_setup(&s, p, &o));
	for (round = 0; round < 6; round++) {
		memset(s.buf, FILLER, o.buf_len);
		for (i = 1; i < 16; i += 2)
			TRY(post_recv_buf(&s, round * 100 + i, i * 64, 64));
		TRY(e2e_sync(p, "recv posted"));
		for (i = 1; i < 16; i += 2) {
			TRY(expect_recv_ok(&s, round * 100 + i, IBV_WC_RECV, 64,
					   false, 0));
			TRY(check_fill(s.buf + i * 64, 64, round * 100 + i,
				       "unsignaled SEND"));
		}
		TRY(e2e_sync(p, "round done"));
		for (i = 0; i < 16; i += 2)
			TRY(check_fill(s.buf + 65536 + i * 64, 64, round * 100 + i,
				       "unsignaled WRITE"));
	}
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* sq_sig_all = 1: every WR completes, signaled or not. */
static int sig_all_req(struct e2e_proc *p)
{
	struct ibv_send_wr wr[8];
	struct ibv_sge sge[8];
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int i;

	e2e_default_opts(&o);
	o.sig_all = true;
	TRY(e2e_setup(&s, p, &o));
	for (i = 0; i < 8; i++) {
		sge[i] = sge_of(&s, i * 64, 32);
		wr[i] = rdma_wr(0x900 + i, i % 2 ? IBV_WR_SEND : IBV_WR_RDMA_WRITE,
				&sge[i], 1, s.rem.addr + 8192, s.rem.rkey);
		wr[i].send_flags = i == 3 ? IBV_SEND_SIGNALED : 0;
		wr[i].next = i < 7 ? &wr[i + 1] : NULL;
	}
	TRY(e2e_sync(p, "recv posted"));
	TRY(post_send1(s.qp, wr));
	for (i = 0; i < 8; i++)
		TRY(expect_send_ok(&s, 0x900 + i,
				   i % 2 ? IBV_WC_SEND : IBV_WC_RDMA_WRITE, 32));
	TRY(expect_no_wc(scq_of(&s), 10, "send CQ"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int sig_all_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	for (i = 0; i < 4; i++)
		TRY(post_recv_buf(&s, i, i * 64, 64));
	TRY(e2e_sync(p, "recv posted"));
	for (i = 0; i < 4; i++)
		TRY(expect_recv_ok(&s, i, IBV_WC_RECV, 32, false, 0));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* ============================================================ ibv_wr_* API */

#define WR_WRITE_OFF 8192
#define WR_WRITE_IMM_OFF 12288
#define WR_READ_OFF 16384
#define WR_RESULT 60000 /* the atomics' results, requester side */

/* Every opcode in one batch, each with a different way of giving data. */
static int wr_api_req(struct e2e_proc *p)
{
	struct ibv_sge list[3];
	struct ibv_data_buf ilist[2];
	uint8_t inl[300], inl2[2][40];
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_qp_ex *x;
	int ret;

	e2e_default_opts(&o);
	o.qp_ex = true;
	o.max_send_sge = 3;
	o.max_inline = 256;
	TRY(e2e_setup(&s, p, &o));
	x = s.qpx;
	memset(s.buf, FILLER, o.buf_len);
	fill(s.buf, 1000, 601);
	fill(s.buf + 2000, 1500, 602);
	fill(inl, sizeof(inl), 603);
	fill(inl2[0], 40, 604);
	fill(inl2[1], 40, 605);
	list[0] = sge_of(&s, 2000, 500);
	list[1] = sge_of(&s, 2500, 1);
	list[2] = sge_of(&s, 2501, 999);
	ilist[0] = (struct ibv_data_buf){ inl2[0], 40 };
	ilist[1] = (struct ibv_data_buf){ inl2[1], 40 };
	TRY(e2e_sync(p, "recv posted"));

	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, s.mr->lkey, s.base, 1000);
	x->wr_id = 2;
	ibv_wr_send_imm(x, htobe32(0x22));
	ibv_wr_set_sge_list(x, 3, list);
	x->wr_id = 3;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	ibv_wr_rdma_write(x, s.rem.rkey, s.rem.addr + WR_WRITE_OFF);
	ibv_wr_set_inline_data(x, inl, s.cap.max_inline_data < 300 ?
					       s.cap.max_inline_data : 300);
	x->wr_id = 4;
	ibv_wr_rdma_write_imm(x, s.rem.rkey, s.rem.addr + WR_WRITE_IMM_OFF,
			      htobe32(0x44));
	ibv_wr_set_inline_data_list(x, 2, ilist);
	x->wr_id = 5;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_read(x, s.rem.rkey, s.rem.addr + WR_READ_OFF);
	ibv_wr_set_sge(x, s.mr->lkey, s.base + 8192, 777);
	x->wr_id = 6;
	ibv_wr_atomic_cmp_swp(x, s.rem.rkey, s.rem.addr + ATOMIC_OFF, V0, V1);
	ibv_wr_set_sge(x, s.mr->lkey, s.base + WR_RESULT, 8);
	x->wr_id = 7;
	ibv_wr_atomic_fetch_add(x, s.rem.rkey, s.rem.addr + ATOMIC_OFF, 3);
	ibv_wr_set_sge(x, s.mr->lkey, s.base + WR_RESULT + 8, 8);
	x->wr_id = 8;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, inl + 100, 50);
	ret = ibv_wr_complete(x);
	CHECK(!ret, "ibv_wr_complete: %s", strerror(ret));
	/* The inline buffers may change at once. */
	memset(inl, 0, sizeof(inl));
	memset(inl2, 0, sizeof(inl2));

	TRY(expect_send_ok(&s, 1, IBV_WC_SEND, 1000));
	TRY(expect_send_ok(&s, 2, IBV_WC_SEND, 1500));
	TRY(expect_send_ok(&s, 3, IBV_WC_RDMA_WRITE,
			   s.cap.max_inline_data < 300 ? s.cap.max_inline_data : 300));
	TRY(expect_send_ok(&s, 4, IBV_WC_RDMA_WRITE, 80));
	TRY(expect_send_ok(&s, 5, IBV_WC_RDMA_READ, 777));
	TRY(expect_send_ok(&s, 6, IBV_WC_COMP_SWAP, 8));
	TRY(expect_send_ok(&s, 7, IBV_WC_FETCH_ADD, 8));
	TRY(expect_send_ok(&s, 8, IBV_WC_SEND, 50));
	TRY(expect_no_wc(scq_of(&s), 10, "send CQ"));
	TRY(check_fill(s.buf + 8192, 777, 606, "READ through ibv_wr_rdma_read"));
	CHECK(get_u64(s.buf + WR_RESULT) == V0 &&
	      get_u64(s.buf + WR_RESULT + 8) == V1,
	      "atomics returned %#llx and %#llx, expected %#llx and %#llx",
	      (unsigned long long)get_u64(s.buf + WR_RESULT),
	      (unsigned long long)get_u64(s.buf + WR_RESULT + 8),
	      (unsigned long long)V0, (unsigned long long)V1);
	TRY(send_u64(p->peer, s.cap.max_inline_data < 300 ?
				      s.cap.max_inline_data : 300));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int wr_api_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	uint64_t wlen;
	uint8_t want[1500];

	e2e_default_opts(&o);
	o.qp_ex = true;
	o.max_send_sge = 3;
	o.max_inline = 256;
	TRY(e2e_setup(&s, p, &o));
	memset(s.buf, FILLER, o.buf_len);
	fill(s.buf + WR_READ_OFF, 777, 606);
	put_u64(s.buf + ATOMIC_OFF, V0);
	TRY(post_recv_buf(&s, 51, 32768, 4096));
	TRY(post_recv_buf(&s, 52, 40960, 4096));
	TRY(post_recv_buf(&s, 53, 49152, 4096));
	TRY(post_recv_buf(&s, 54, 57344, 4096));
	TRY(e2e_sync(p, "recv posted"));
	TRY(expect_recv_ok(&s, 51, IBV_WC_RECV, 1000, false, 0));
	TRY(check_fill(s.buf + 32768, 1000, 601, "ibv_wr_send data"));
	TRY(expect_recv_ok(&s, 52, IBV_WC_RECV, 1500, true, htobe32(0x22)));
	TRY(check_fill(s.buf + 40960, 1500, 602, "ibv_wr_send_imm data"));
	TRY(expect_recv_ok(&s, 53, IBV_WC_RECV_RDMA_WITH_IMM, 80, true,
			   htobe32(0x44)));
	TRY(expect_recv_ok(&s, 54, IBV_WC_RECV, 50, false, 0));
	fill(want, 300, 603);
	TRY(check_bytes(s.buf + 57344, want + 100, 50, "inline ibv_wr_send data"));
	TRY(recv_u64(p->peer, &wlen, E2E_WAIT_MS));
	TRY(check_bytes(s.buf + WR_WRITE_OFF, want, wlen, "inline ibv_wr_rdma_write data"));
	fill(want, 40, 604);
	fill(want + 40, 40, 605);
	TRY(check_bytes(s.buf + WR_WRITE_IMM_OFF, want, 80,
			"ibv_wr_set_inline_data_list data"));
	CHECK(get_u64(s.buf + ATOMIC_OFF) == V1 + 3,
	      "remote value after CAS and FAA %#llx, expected %#llx",
	      (unsigned long long)get_u64(s.buf + ATOMIC_OFF),
	      (unsigned long long)(V1 + 3));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/*
 * ibv_wr_abort posts nothing; an ibv_wr_complete that fails (here: inline
 * data over the limit in the batch) posts nothing of the batch either.
 */
static int wr_abort_req(struct e2e_proc *p)
{
	static uint8_t big[4096];
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_qp_ex *x;
	int ret;

	e2e_default_opts(&o);
	o.qp_ex = true;
	o.max_inline = 64;
	TRY(e2e_setup(&s, p, &o));
	x = s.qpx;
	memset(s.buf, FILLER, o.buf_len);
	fill(s.buf, 100, 701);
	fill(s.buf + 1024, 100, 702);
	TRY(e2e_sync(p, "recv posted"));

	ibv_wr_start(x);
	x->wr_id = 1;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, s.mr->lkey, s.base, 100);
	x->wr_id = 2;
	ibv_wr_rdma_write(x, s.rem.rkey, s.rem.addr + 8192);
	ibv_wr_set_sge(x, s.mr->lkey, s.base, 100);
	ibv_wr_abort(x);
	TRY(expect_no_wc(scq_of(&s), 30, "after ibv_wr_abort"));

	ibv_wr_start(x);
	x->wr_id = 3;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, s.mr->lkey, s.base, 100);
	x->wr_id = 4;
	x->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, big, s.cap.max_inline_data + 1);
	ret = ibv_wr_complete(x);
	CHECK(ret == EINVAL,
	      "ibv_wr_complete with too much inline data returned %d (%s), expected EINVAL",
	      ret, strerror(ret));
	TRY(expect_no_wc(scq_of(&s), 30, "after a failed ibv_wr_complete"));
	TRY(expect_qp_state(s.qp, IBV_QPS_RTS));

	ibv_wr_start(x);
	x->wr_id = 5;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, s.mr->lkey, s.base + 1024, 99);
	ret = ibv_wr_complete(x);
	CHECK(!ret, "ibv_wr_complete: %s", strerror(ret));
	TRY(expect_send_ok(&s, 5, IBV_WC_SEND, 99));
	TRY(expect_no_wc(scq_of(&s), 10, "send CQ"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int wr_abort_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	o.qp_ex = true;
	o.max_inline = 64;
	TRY(e2e_setup(&s, p, &o));
	memset(s.buf, FILLER, o.buf_len);
	TRY(post_recv_buf(&s, 61, 4096, 4096));
	TRY(post_recv_buf(&s, 62, 16384, 4096));
	TRY(e2e_sync(p, "recv posted"));
	/* The first receive gets the only message that was really posted. */
	TRY(expect_recv_ok(&s, 61, IBV_WC_RECV, 99, false, 0));
	TRY(check_fill(s.buf + 4096, 99, 702, "the message after the aborts"));
	TRY(e2e_sync(p, "end"));
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ"));
	TRY(check_untouched(s.buf, 8192, 100, "target of the aborted WRITE"));
	return e2e_close(&s);
}

/* ============================================================== ibv_cq_ex */

/* Drain want completions from an extended CQ through start/next/end_poll. */
static int poll_ex_n(struct ibv_cq_ex *cqx, struct ibv_wc *wc, int want)
{
	uint64_t deadline = e2e_now_ms() + E2E_WAIT_MS;
	int got = 0;

	while (got < want) {
		int n = poll_some((struct e2e_cq){ NULL, cqx }, wc + got, want - got);

		TRY(n < 0);
		got += n;
		CHECK(e2e_now_ms() < deadline, "%d of %d completions within %d ms",
		      got, want, E2E_WAIT_MS);
	}
	return 0;
}

static int cq_ex_req(struct e2e_proc *p)
{
	struct ibv_poll_cq_attr attr = { .comp_mask = 0 };
	struct ibv_send_wr wr[5];
	struct ibv_sge sge[5];
	struct ibv_wc wc[5];
	struct e2e_opts o;
	struct e2e_side s;
	unsigned int i;
	int ret;

	e2e_default_opts(&o);
	o.cq_ex = true;
	TRY(e2e_setup(&s, p, &o));
	ret = ibv_start_poll(s.scqx, &attr);
	CHECK(ret == ENOENT, "ibv_start_poll on an empty CQ returned %d", ret);
	fill(s.buf, 4096, 801);
	for (i = 0; i < 5; i++)
		sge[i] = sge_of(&s, i * 512, 100 * (i + 1));
	wr[0] = rdma_wr(0x81, IBV_WR_SEND_WITH_IMM, &sge[0], 1, 0, 0);
	wr[0].imm_data = htobe32(0x8181);
	wr[1] = rdma_wr(0x82, IBV_WR_RDMA_WRITE_WITH_IMM, &sge[1], 1,
			s.rem.addr + 8192, s.rem.rkey);
	wr[1].imm_data = htobe32(0x8282);
	wr[2] = rdma_wr(0x83, IBV_WR_RDMA_WRITE, &sge[2], 1, s.rem.addr + 16384,
			s.rem.rkey);
	sge[3] = sge_of(&s, 32768, 400);
	wr[3] = rdma_wr(0x84, IBV_WR_RDMA_READ, &sge[3], 1, s.rem.addr + 24576,
			s.rem.rkey);
	sge[4] = sge_of(&s, RESULT_OFF + 4096, 8);
	wr[4] = atomic_wr(0x85, IBV_WR_ATOMIC_FETCH_AND_ADD, &sge[4],
			  s.rem.addr + ATOMIC_OFF, s.rem.rkey, 1, 0);
	for (i = 0; i < 4; i++)
		wr[i].next = &wr[i + 1];
	TRY(e2e_sync(p, "recv posted"));
	TRY(post_send1(s.qp, wr));
	TRY(poll_ex_n(s.scqx, wc, 5));
	{
		static const enum ibv_wc_opcode ops[5] = {
			IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE,
			IBV_WC_RDMA_READ, IBV_WC_FETCH_ADD,
		};
		static const uint32_t lens[5] = { 100, 200, 300, 400, 8 };

		for (i = 0; i < 5; i++) {
			struct wc_want w = {
				.wr_id = 0x81 + i,
				.status = IBV_WC_SUCCESS,
				.opcode = ops[i],
				.byte_len = lens[i],
				.qp_num = s.qp->qp_num,
			};

			TRY(check_wc(&wc[i], &w, "ibv_cq_ex send completion"));
		}
	}
	TRY(check_fill(s.buf + 32768, 400, 802, "READ data"));
	CHECK(get_u64(s.buf + RESULT_OFF + 4096) == V0, "FETCH_ADD returned %#llx",
	      (unsigned long long)get_u64(s.buf + RESULT_OFF + 4096));
	TRY(expect_no_wc(scq_of(&s), 10, "send CQ"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int cq_ex_resp(struct e2e_proc *p)
{
	struct ibv_wc wc[2];
	struct e2e_opts o;
	struct e2e_side s;
	struct wc_want w = {
		.status = IBV_WC_SUCCESS,
		.recv = true,
		.imm = true,
	};

	e2e_default_opts(&o);
	o.cq_ex = true;
	TRY(e2e_setup(&s, p, &o));
	fill(s.buf + 24576, 400, 802);
	put_u64(s.buf + ATOMIC_OFF, V0);
	TRY(post_recv_buf(&s, 0x91, 40960, 4096));
	TRY(post_recv_buf(&s, 0x92, 49152, 4096));
	TRY(e2e_sync(p, "recv posted"));
	TRY(poll_ex_n(s.rcqx, wc, 2));
	w.qp_num = s.qp->qp_num;
	w.src_qp = s.rem.qpn;
	w.wr_id = 0x91;
	w.opcode = IBV_WC_RECV;
	w.byte_len = 100;
	w.imm_data = htobe32(0x8181);
	TRY(check_wc(&wc[0], &w, "ibv_cq_ex receive completion"));
	w.wr_id = 0x92;
	w.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
	w.byte_len = 200;
	w.imm_data = htobe32(0x8282);
	TRY(check_wc(&wc[1], &w, "ibv_cq_ex receive completion"));
	TRY(check_fill(s.buf + 40960, 100, 801, "SEND data"));
	TRY(e2e_sync(p, "end"));
	{
		uint8_t want[300];
		unsigned int k;

		for (k = 0; k < 200; k++)
			want[k] = pat(801, 512 + k);
		TRY(check_bytes(s.buf + 8192, want, 200, "WRITE_WITH_IMM data"));
		for (k = 0; k < 300; k++)
			want[k] = pat(801, 1024 + k);
		TRY(check_bytes(s.buf + 16384, want, 300, "WRITE data"));
	}
	CHECK(get_u64(s.buf + ATOMIC_OFF) == V0 + 1, "FETCH_ADD left %#llx",
	      (unsigned long long)get_u64(s.buf + ATOMIC_OFF));
	return e2e_close(&s);
}

/* ==================================================================== iova */

/*
 * Both sides register their buffer at E2E_IOVA, not at its address: every
 * address in a WR (local SGEs and remote addresses) is an iova.
 */
static int iova_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_sge sge;
	struct ibv_send_wr wr;

	e2e_default_opts(&o);
	o.iova = true;
	TRY(e2e_setup(&s, p, &o));
	CHECK(s.base != (uintptr_t)s.buf, "test bug: iova equals the address");
	CHECK(s.rem.addr == E2E_IOVA, "peer's iova %#llx",
	      (unsigned long long)s.rem.addr);
	fill(s.buf + 100, 5000, 901);
	TRY(e2e_sync(p, "ready"));
	sge = sge_of(&s, 100, 5000);
	wr = rdma_wr(1, IBV_WR_RDMA_WRITE, &sge, 1, s.rem.addr + 4000, s.rem.rkey);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 1, IBV_WC_RDMA_WRITE, 5000));
	wr = rdma_wr(2, IBV_WR_SEND, &sge, 1, 0, 0);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 2, IBV_WC_SEND, 5000));
	sge = sge_of(&s, 20000, 3000);
	wr = rdma_wr(3, IBV_WR_RDMA_READ, &sge, 1, s.rem.addr + 50000, s.rem.rkey);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 3, IBV_WC_RDMA_READ, 3000));
	TRY(check_fill(s.buf + 20000, 3000, 902, "READ by iova"));
	TRY(do_atomic(&s, 4, IBV_WR_ATOMIC_FETCH_AND_ADD, 9, 0, V0, V0 + 9));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int iova_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	o.iova = true;
	TRY(e2e_setup(&s, p, &o));
	CHECK(s.mr->addr == s.buf, "mr->addr %p, registered %p", s.mr->addr,
	      (void *)s.buf);
	memset(s.buf, FILLER, o.buf_len);
	fill(s.buf + 50000, 3000, 902);
	put_u64(s.buf + ATOMIC_OFF, V0);
	TRY(post_recv_buf(&s, 7, 100000, 8192));
	TRY(e2e_sync(p, "ready"));
	TRY(expect_recv_ok(&s, 7, IBV_WC_RECV, 5000, false, 0));
	TRY(check_fill(s.buf + 100000, 5000, 901, "SEND into an iova receive"));
	TRY(check_fill(s.buf + 4000, 5000, 901, "WRITE by iova"));
	TRY(check_untouched(s.buf, 3990, 10, "before the WRITE target"));
	TRY(check_untouched(s.buf, 9000, 10, "after the WRITE target"));
	TRY(e2e_sync(p, "atomic done"));
	TRY(send_u64(p->peer, get_u64(s.buf + ATOMIC_OFF)));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* ================================================================== table */

#define PAIR(g, n, req, resp)                                                  \
	{ .group = g, .name = n, .nroles = 2, .role = { req, resp } }

const struct e2e_test e2e_data_tests[] = {
	{ .group = "query", .name = "device", .nroles = 1, .role = { query_device } },
	PAIR("query", "query_qp", query_qp_side, query_qp_side),
	PAIR("query", "iova", iova_req, iova_resp),
	PAIR("ops", "send", send_plain_req, send_plain_resp),
	PAIR("ops", "send_imm", send_imm_req, send_imm_resp),
	PAIR("ops", "write", write_plain_req, write_plain_resp),
	PAIR("ops", "write_imm", write_imm_req, write_imm_resp),
	PAIR("ops", "read", read_req, read_resp),
	PAIR("ops", "write_run", write_run_req, write_run_resp),
	PAIR("ops", "send_run", send_run_req, send_run_resp),
	PAIR("ops", "fence_after_read", fence_req, fence_resp),
	PAIR("ops", "atomic_cmp_swp", cas_req, atomic3_resp),
	PAIR("ops", "atomic_fetch_add", faa_req, atomic3_resp),
	PAIR("ops", "responder_in_rtr", rtr_req, rtr_resp),
	PAIR("ops", "sq_drain", drain_req, drain_resp),
	PAIR("sge", "inline", inline_req, inline_resp),
	PAIR("sge", "send_16_sge", sge_send_req, sge_send_resp),
	PAIR("sge", "write_16_sge", sge_write_req, sge_write_resp),
	PAIR("sge", "read_16_sge", sge_read_req, sge_read_resp),
	PAIR("sge", "zero_length", zero_req, zero_resp),
	PAIR("signal", "unsignaled", unsignaled_req, unsignaled_resp),
	PAIR("signal", "sq_sig_all", sig_all_req, sig_all_resp),
	PAIR("wrapi", "all_opcodes", wr_api_req, wr_api_resp),
	PAIR("wrapi", "abort", wr_abort_req, wr_abort_resp),
	PAIR("wrapi", "cq_ex", cq_ex_req, cq_ex_resp),
	{ 0 },
};
