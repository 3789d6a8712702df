// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * UC: SEND, SEND_WITH_IMM, RDMA_WRITE and RDMA_WRITE_WITH_IMM; no READ or
 * atomics (posting them is an error); no ACKs and no retries: a message
 * the responder cannot take (no receive, a bad rkey) is dropped there, the
 * responder's QP goes on, and the requester completes successfully.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "e2e.h"

static void uc_opts(struct e2e_opts *o)
{
	e2e_default_opts(o);
	o->qp_type = IBV_QPT_UC;
	o->max_inline = 64;
}

static struct ibv_send_wr uc_wr(uint64_t wr_id, enum ibv_wr_opcode op,
				struct ibv_sge *sge, struct e2e_side *s,
				uint64_t roff, uint32_t rkey)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	};

	wr.wr.rdma.remote_addr = s->rem.addr + roff;
	wr.wr.rdma.rkey = rkey;
	return wr;
}

static int ops_req(struct e2e_proc *p)
{
	static const enum ibv_wr_opcode refused[] = {
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
		IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_SEND_WITH_INV,
	};
	struct ibv_send_wr wr, *bad;
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_sge sge;
	size_t i;
	int ret;

	uc_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	fill(s.buf, 4 * 8192, 5);
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		sge = sge_of(&s, 0, 8);
		wr = uc_wr(1, refused[i], &sge, &s, 0, s.rem.rkey);
		ret = ibv_post_send(s.qp, &wr, &bad);
		CHECK(ret == EINVAL && bad == &wr, "opcode %d on UC: %s (want EINVAL)",
		      refused[i], strerror(ret));
	}
	TRY(e2e_sync(p, "receives posted"));
	sge = sge_of(&s, 0, 5000); /* several packets' worth */
	wr = uc_wr(1, IBV_WR_SEND, &sge, &s, 0, 0);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 1, IBV_WC_SEND, 5000));
	sge = sge_of(&s, 8192, 40);
	wr = uc_wr(2, IBV_WR_SEND_WITH_IMM, &sge, &s, 0, 0);
	wr.imm_data = htobe32(0xabcd0002);
	wr.send_flags |= IBV_SEND_INLINE;
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 2, IBV_WC_SEND, 40));
	sge = sge_of(&s, 16384, 3000);
	wr = uc_wr(3, IBV_WR_RDMA_WRITE, &sge, &s, 65536, s.rem.rkey);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 3, IBV_WC_RDMA_WRITE, 3000));
	sge = sge_of(&s, 24576, 100);
	wr = uc_wr(4, IBV_WR_RDMA_WRITE_WITH_IMM, &sge, &s, 2 * 65536, s.rem.rkey);
	wr.imm_data = htobe32(0xabcd0004);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 4, IBV_WC_RDMA_WRITE, 100));
	TRY(e2e_sync(p, "received"));
	return e2e_close(&s);
}

static int ops_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;

	uc_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(post_recv_buf(&s, 10, 0, 8192));
	TRY(post_recv_buf(&s, 11, 8192, 64));
	TRY(post_recv_buf(&s, 12, 16384, 8));
	TRY(e2e_sync(p, "receives posted"));
	TRY(expect_recv_ok(&s, 10, IBV_WC_RECV, 5000, false, 0));
	TRY(check_fill(s.buf, 5000, 5, "UC SEND"));
	TRY(expect_recv_ok(&s, 11, IBV_WC_RECV, 40, true, htobe32(0xabcd0002)));
	TRY(expect_recv_ok(&s, 12, IBV_WC_RECV_RDMA_WITH_IMM, 100, true,
			   htobe32(0xabcd0004)));
	TRY(e2e_sync(p, "received"));
	/* The requester filled its buffer with pattern 5 from offset 0. */
	{
		uint8_t want[3000];
		size_t i;

		for (i = 0; i < sizeof(want); i++)
			want[i] = pat(5, 16384 + i);
		TRY(check_bytes(s.buf + 65536, want, sizeof(want), "UC WRITE"));
		for (i = 0; i < 100; i++)
			want[i] = pat(5, 24576 + i);
		TRY(check_bytes(s.buf + 2 * 65536, want, 100, "UC WRITE_IMM"));
	}
	return e2e_close(&s);
}

/* What the responder cannot take is dropped; the requester never knows. */
static int drops_req(struct e2e_proc *p)
{
	struct ibv_send_wr wr;
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_sge sge;

	uc_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	fill(s.buf, 4096, 9);
	sge = sge_of(&s, 0, 64);
	/* No receive posted yet. */
	wr = uc_wr(1, IBV_WR_SEND, &sge, &s, 0, 0);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 1, IBV_WC_SEND, 64));
	/* An rkey the responder does not have, a range beyond its MR. */
	wr = uc_wr(2, IBV_WR_RDMA_WRITE, &sge, &s, 0, s.rem.rkey ^ 0x100);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 2, IBV_WC_RDMA_WRITE, 64));
	wr = uc_wr(3, IBV_WR_RDMA_WRITE, &sge, &s, s.rem.len - 32, s.rem.rkey);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 3, IBV_WC_RDMA_WRITE, 64));
	/* A WRITE_WITH_IMM finds no receive either. */
	wr = uc_wr(4, IBV_WR_RDMA_WRITE_WITH_IMM, &sge, &s, 0, s.rem.rkey);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 4, IBV_WC_RDMA_WRITE, 64));
	TRY(e2e_sync(p, "dropped"));
	TRY(e2e_sync(p, "receive posted"));
	/* The QPs go on: this one arrives. */
	wr = uc_wr(5, IBV_WR_SEND, &sge, &s, 0, 0);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 5, IBV_WC_SEND, 64));
	TRY(e2e_sync(p, "received"));
	return e2e_close(&s);
}

static int drops_resp(struct e2e_proc *p)
{
	static const uint8_t zero[256];
	struct e2e_opts o;
	struct e2e_side s;

	uc_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(e2e_sync(p, "dropped"));
	TRY(expect_no_wc(rcq_of(&s), 50, "receive CQ"));
	TRY(expect_qp_state(s.qp, IBV_QPS_RTS));
	TRY(check_bytes(s.buf, zero, sizeof(zero), "memory a dropped WRITE named"));
	TRY(check_bytes(s.buf + s.o.buf_len - 256, zero, sizeof(zero),
			"the end of the MR"));
	TRY(post_recv_buf(&s, 20, 1024, 128));
	TRY(e2e_sync(p, "receive posted"));
	TRY(expect_recv_ok(&s, 20, IBV_WC_RECV, 64, false, 0));
	TRY(check_fill(s.buf + 1024, 64, 9, "the SEND after the drops"));
	TRY(e2e_sync(p, "received"));
	return e2e_close(&s);
}

#define PAIR(n, req, resp)                                                     \
	{ .group = "uc", .name = n, .nroles = 2, .role = { req, resp } }

const struct e2e_test e2e_uc_tests[] = {
	PAIR("operations", ops_req, ops_resp),
	PAIR("responder_drops", drops_req, drops_resp),
	{ 0 },
};
