// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The wire's RC transport (wire/requester.c, completer.c, responder.c)
 * driven with packets in memory: an RC QP of the fixture's device is
 * connected to 198.18.0.2, which is not the device's, so it is on the
 * wire.  Its requester runs alone (never the engine's pass, which would
 * flush), and the packets it builds are read from the transmit batch and
 * parsed with packet.c.  What the peer answers, and the requests it makes,
 * are built with packet.c's builder and handed to the completer or the
 * responder as netio.c would.  Last, two wire QPs of the device talk to
 * each other (--local-on-wire) through a loop that carries, or drops,
 * their packets.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "device_fixture.h"

#define ALL_ACCESS                                                             \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                     \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

#define PEER_QPN 0x000abcu
#define SQ_PSN 0x1000u /* what w sends from */
#define RQ_PSN 0x2000u /* what w expects */
#define MTU 256u /* IBV_MTU_256 */
#define BUDGET 64u

struct env {
	struct fx *fx;
	struct fx_cq cq;
	struct fx_qp w; /* on the wire, to PEER_QPN at 198.18.0.2 */
	struct fx_mr la, rb; /* w's buffers: what it sends, where requests land */
	struct fx_conn conn;
};

/* Packets taken from the transmit batch (static: 64 of 4 KiB). */
static struct fx_pkt pk[RN_WIRE_TX_BATCH];

/* w on a CQ of this many entries, not connected yet. */
static int setup_cq(void **state, uint32_t cq_entries)
{
	struct env *e = calloc(1, sizeof(*e));
	unsigned int i;

	assert_non_null(e);
	e->fx = fx_new();
	fx_cq_new(e->fx, cq_entries, &e->cq);
	fx_qp_new(e->fx, &e->cq, &e->cq, NULL, &e->w);
	fx_mr_new(e->fx, 16384, ALL_ACCESS, 0, &e->la);
	fx_mr_new(e->fx, 16384, ALL_ACCESS, 0, &e->rb);
	for (i = 0; i < e->la.len; i++)
		e->la.buf[i] = (uint8_t)(i * 11 + i / 253);
	e->conn = fx_conn_default(PEER_QPN);
	e->conn.dgid = FX_REMOTE_GID;
	e->conn.sq_psn = SQ_PSN;
	e->conn.rq_psn = RQ_PSN;
	e->conn.path_mtu = IBV_MTU_256;
	*state = e;
	return 0;
}

static int setup(void **state)
{
	return setup_cq(state, 64);
}

static int setup_connected(void **state)
{
	struct env *e;

	setup(state);
	e = *state;
	fx_qp_connect(&e->w, &e->conn);
	return 0;
}

/* Connected, on a CQ of one entry: its second completion overruns it. */
static int setup_cq_of_one(void **state)
{
	struct env *e;

	setup_cq(state, 1);
	e = *state;
	fx_qp_connect(&e->w, &e->conn);
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	/* Nothing ever left for a socket. */
	assert_int_equal(e->fx->dev.engines[0]->counters[RN_CNT_SEND_ERR], 0);
	assert_int_equal(e->fx->dev.engines[0]->counters[RN_CNT_NO_ROUTE], 0);
	fx_free(e->fx);
	free(e);
	return 0;
}

/* ---- helpers ------------------------------------------------------------------ */

static unsigned int take(struct env *e)
{
	return fx_wire_take(e->fx, pk, RN_WIRE_TX_BATCH);
}

/* Run w's requester and take what it sent. */
static unsigned int send_some(struct env *e)
{
	fx_wire_run(&e->w, BUDGET);
	return take(e);
}

/* The READ responses and atomic ACKs the responder has to send. */
static unsigned int replies(struct env *e)
{
	rn_wire_reply(e->fx->dev.engines[0]->wire, rn_now_ns());
	return take(e);
}

static struct rn_pkt to_w(struct env *e, uint8_t opnum, uint32_t psn)
{
	return (struct rn_pkt){ .opcode = RN_PKT_RC | opnum, .dqpn = e->w.qpn,
				.psn = psn };
}

/* An ACK (or NAK) from the peer. */
static void aeth(struct env *e, uint8_t syndrome, uint32_t psn)
{
	struct rn_pkt p = to_w(e, RN_PKT_OP_ACK, psn);

	p.aeth.syndrome = syndrome;
	fx_wire_deliver(&e->w, &p);
}

static void ack(struct env *e, uint32_t psn)
{
	aeth(e, rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT), psn);
}

static void assert_pkt(const struct fx_pkt *x, uint8_t opnum, uint32_t psn,
		       uint32_t payload_len)
{
	assert_int_equal(x->p.opcode, RN_PKT_RC | opnum);
	assert_int_equal(x->p.psn, psn);
	assert_int_equal(x->p.dqpn, PEER_QPN);
	assert_int_equal(x->p.payload_len, payload_len);
}

/* An ACK or NAK w sent. */
static void assert_aeth(const struct fx_pkt *x, uint8_t syndrome, uint32_t psn)
{
	assert_pkt(x, RN_PKT_OP_ACK, psn, 0);
	assert_int_equal(x->p.aeth.syndrome, syndrome);
}

static struct rn_cqe cqe(struct env *e)
{
	struct rn_cqe c;

	assert_true(fx_poll(&e->cq, &c));
	return c;
}

static void assert_no_cqe(struct env *e)
{
	struct rn_cqe c;

	assert_false(fx_poll(&e->cq, &c));
}

static void post_op(struct fx_qp *qp, uint64_t wr_id, uint8_t opcode,
		    const struct rn_sge *sge, uint64_t raddr, uint32_t rkey)
{
	fx_post_send(qp, &(struct rn_send_wqe){ .wr_id = wr_id, .opcode = opcode,
		.flags = RN_WQE_SIGNALED, .num_sge = 1, .remote_addr = raddr,
		.rkey = rkey }, sge);
	fx_ring(qp);
}

/* A remote address of the peer's: the requester only copies it. */
#define PEER_VA 0x7f0000001000ull
#define PEER_RKEY 0x4242u

/* ---- the requester and the completer ------------------------------------------- */

/*
 * A WRITE of 1000 bytes at a path MTU of 256: FIRST (with the RETH),
 * MIDDLE, MIDDLE, LAST (asking for the ACK), across the 24-bit PSN wrap,
 * its payload the source byte for byte, the ICRC sealed for 127.0.0.1 to
 * 198.18.0.2.  The ACK of its last PSN completes it.
 */
static void test_write_segmented(void **state)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 0, 1000);
	static const uint8_t ops[4] = { RN_PKT_OP_WRITE_FIRST,
		RN_PKT_OP_WRITE_MIDDLE, RN_PKT_OP_WRITE_MIDDLE,
		RN_PKT_OP_WRITE_LAST };
	const struct rn_icrc_flow4 flow = {
		.saddr.s_addr = htonl(0x7f000001),
		.daddr.s_addr = htonl(0xc6120002),
		.sport = RN_PKT_UDP_DPORT,
		.dport = RN_PKT_UDP_DPORT,
	};
	struct rn_cqe c;
	unsigned int i;

	e->conn.sq_psn = 0xfffffe;
	fx_qp_connect(&e->w, &e->conn);
	assert_int_equal(e->w.dq->wire->mtu, MTU);
	post_op(&e->w, 1, RN_OP_WRITE, &ls, PEER_VA, PEER_RKEY);
	assert_int_equal(send_some(e), 4);
	for (i = 0; i < 4; i++) {
		struct rn_icrc_ipid id;

		assert_pkt(&pk[i], ops[i], (0xfffffe + i) & RN_PKT_MASK24,
			   i < 3 ? MTU : 1000 - 3 * MTU);
		assert_memory_equal(pk[i].p.payload, e->la.buf + i * MTU,
				    pk[i].p.payload_len);
		assert_int_equal(pk[i].p.ackreq, i == 3);
		assert_int_equal(!!(pk[i].p.hdrs & RN_PKT_H_RETH), i == 0);
		assert_int_equal(rn_icrc_check_ipv4(&e->fx->dev.engines[0]->wire->solver,
						    &flow, pk[i].buf, pk[i].len,
						    &id), RN_PKT_OK);
		assert_true(id.df);
	}
	assert_int_equal(pk[0].p.reth.va, PEER_VA);
	assert_int_equal(pk[0].p.reth.rkey, PEER_RKEY);
	assert_int_equal(pk[0].p.reth.len, 1000);
	assert_int_equal(fx_counter(e->fx, RN_CNT_SENT_PKTS), 4);
	/* The retransmit timer runs; nothing completes before the ACK. */
	assert_true(rn_timer_armed(&e->w.dq->wire->retrans_timer));
	assert_int_equal(send_some(e), 0);
	assert_no_cqe(e);

	/* An ACK of a middle packet completes nothing. */
	ack(e, 0xffffff);
	assert_no_cqe(e);
	assert_int_equal(e->w.dq->wire->una, 0);
	ack(e, 1);
	c = cqe(e);
	assert_int_equal(c.wr_id, 1);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
	assert_int_equal(c.opcode, IBV_WC_RDMA_WRITE);
	assert_int_equal(c.byte_len, 1000);
	assert_int_equal(fx_counter(e->fx, RN_CNT_REQ_COMPLETED), 1);
	assert_false(rn_timer_armed(&e->w.dq->wire->retrans_timer));
	assert_int_equal(e->w.ctrl->sq_wr_cons, 1);
}

/* One ACK for the last of several messages completes all of them. */
static void test_coalesced_ack(void **state)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 0, 100);
	struct rn_cqe c;
	unsigned int i;

	for (i = 0; i < 3; i++)
		post_op(&e->w, 10 + i, RN_OP_SEND, &ls, 0, 0);
	assert_int_equal(send_some(e), 3);
	for (i = 0; i < 3; i++) {
		assert_pkt(&pk[i], RN_PKT_OP_SEND_ONLY, SQ_PSN + i, 100);
		assert_true(pk[i].p.ackreq);
	}
	ack(e, SQ_PSN + 2);
	for (i = 0; i < 3; i++) {
		c = cqe(e);
		assert_int_equal(c.wr_id, 10 + i);
		assert_int_equal(c.status, IBV_WC_SUCCESS);
		assert_int_equal(c.opcode, IBV_WC_SEND);
	}
	assert_no_cqe(e);
	/* An ACK for a PSN never sent is counted and ignored. */
	ack(e, SQ_PSN + 10);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RX_UNEXPECTED), 1);
}

/*
 * A sequence NAK at the second of three: the first completes, the
 * requester goes back to the NAK's PSN and sends the rest again.
 */
static void test_sequence_nak(void **state)
{
	struct env *e = *state;
	struct rn_sge ls[3] = { fx_sge(&e->la, 0, 10), fx_sge(&e->la, 100, 20),
				fx_sge(&e->la, 200, 30) };
	struct rn_cqe c;
	unsigned int i;

	for (i = 0; i < 3; i++)
		post_op(&e->w, i, RN_OP_SEND, &ls[i], 0, 0);
	assert_int_equal(send_some(e), 3);
	aeth(e, rn_pkt_aeth_nak(RN_PKT_NAK_PSN_SEQ), SQ_PSN + 1);
	c = cqe(e);
	assert_int_equal(c.wr_id, 0);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
	assert_no_cqe(e);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RCVD_SEQ), 1);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RETRIES), 1);
	assert_int_equal(e->w.ctrl->seq_naks, 1);

	assert_int_equal(send_some(e), 2);
	assert_pkt(&pk[0], RN_PKT_OP_SEND_ONLY, SQ_PSN + 1, 20);
	assert_memory_equal(pk[0].p.payload, e->la.buf + 100, 20);
	assert_pkt(&pk[1], RN_PKT_OP_SEND_ONLY, SQ_PSN + 2, 30);
	assert_memory_equal(pk[1].p.payload, e->la.buf + 200, 30);
	ack(e, SQ_PSN + 2);
	assert_int_equal(cqe(e).wr_id, 1);
	assert_int_equal(cqe(e).wr_id, 2);
	assert_no_cqe(e);
}

/*
 * An RNR NAK: nothing is sent until the timer its code names has run out
 * (code 5: 60 us), then the SEND goes again from its PSN.
 */
static void test_rnr_nak_timer(void **state)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 0, 50);
	struct rn_wire_qp *wq = e->w.dq->wire;
	uint64_t before = rn_now_ns();

	post_op(&e->w, 1, RN_OP_SEND, &ls, 0, 0);
	assert_int_equal(send_some(e), 1);
	aeth(e, rn_pkt_aeth_rnr_nak(5), SQ_PSN);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RCVD_RNR), 1);
	assert_int_equal(e->w.ctrl->rnr_naks, 1);
	assert_true(wq->rnr_wait);
	assert_true(rn_timer_armed(&wq->rnr_timer));
	assert_false(rn_timer_armed(&wq->retrans_timer));
	assert_true(wq->rnr_timer.when >= before + rn_rnr_timer_ns(5));
	assert_true(wq->rnr_timer.when <= rn_now_ns() + rn_rnr_timer_ns(5));
	assert_int_equal(send_some(e), 0);

	assert_false(rn_timers_run(&e->fx->dev.engines[0]->timers, wq->rnr_timer.when - 1));
	assert_int_equal(send_some(e), 0);
	assert_true(rn_timers_run(&e->fx->dev.engines[0]->timers, wq->rnr_timer.when));
	assert_false(wq->rnr_wait);
	assert_int_equal(send_some(e), 1);
	assert_pkt(&pk[0], RN_PKT_OP_SEND_ONLY, SQ_PSN, 50);
	ack(e, SQ_PSN);
	assert_int_equal(cqe(e).status, IBV_WC_SUCCESS);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RNR_RETRY_EXC), 0);
}

/* rnr_retry 0: the first RNR NAK fails the WQE. */
static void test_rnr_retry_exceeded(void **state)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 0, 50);
	struct rn_cqe c;

	e->conn.rnr_retry = 0;
	fx_qp_connect(&e->w, &e->conn);
	post_op(&e->w, 1, RN_OP_SEND, &ls, 0, 0);
	post_op(&e->w, 2, RN_OP_SEND, &ls, 0, 0);
	assert_int_equal(send_some(e), 2);
	aeth(e, rn_pkt_aeth_rnr_nak(5), SQ_PSN);
	c = cqe(e);
	assert_int_equal(c.wr_id, 1);
	assert_int_equal(c.status, IBV_WC_RNR_RETRY_EXC_ERR);
	c = cqe(e);
	assert_int_equal(c.wr_id, 2);
	assert_int_equal(c.status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(fx_qp_state(&e->w), IBV_QPS_ERR);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RNR_RETRY_EXC), 1);
	fx_assert_no_event(e->fx);
}

/*
 * NAKs of a request the target refuses: the WQE fails with the status
 * the NAK's code gives (IB spec 9.7.5.2: invalid request, remote access,
 * remote operational), counted; the QP goes to ERR and the WQE after it is
 * flushed: never retried.
 */
static void refused(void **state, enum rn_pkt_nak code,
		    enum ibv_wc_status status, enum rn_counter cnt)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 0, 300);
	struct rn_cqe c;

	post_op(&e->w, 1, RN_OP_WRITE, &ls, PEER_VA, PEER_RKEY);
	post_op(&e->w, 2, RN_OP_WRITE, &ls, PEER_VA, PEER_RKEY);
	assert_int_equal(send_some(e), 4);
	aeth(e, rn_pkt_aeth_nak(code), SQ_PSN);
	c = cqe(e);
	assert_int_equal(c.wr_id, 1);
	assert_int_equal(c.status, status);
	assert_int_equal(c.opcode, IBV_WC_RDMA_WRITE);
	c = cqe(e);
	assert_int_equal(c.wr_id, 2);
	assert_int_equal(c.status, IBV_WC_WR_FLUSH_ERR);
	assert_no_cqe(e);
	assert_int_equal(fx_qp_state(&e->w), IBV_QPS_ERR);
	assert_int_equal(fx_counter(e->fx, cnt), 1);
	assert_int_equal(e->w.ctrl->remote_naks, 1);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RETRIES), 0);
	fx_assert_no_event(e->fx);
	assert_int_equal(send_some(e), 0);
}

static void test_nak_remote_access(void **state)
{
	refused(state, RN_PKT_NAK_REM_ACCESS, IBV_WC_REM_ACCESS_ERR,
		RN_CNT_NAK_ACCESS);
}

static void test_nak_remote_op(void **state)
{
	refused(state, RN_PKT_NAK_REM_OP, IBV_WC_REM_OP_ERR, RN_CNT_NAK_OP);
}

static void test_nak_invalid_request(void **state)
{
	refused(state, RN_PKT_NAK_INV_REQ, IBV_WC_REM_INV_REQ_ERR,
		RN_CNT_NAK_INV_REQ);
}

/* A READ response of this placement, payload from data. */
static void read_response(struct env *e, uint8_t opnum, uint32_t psn,
			  const uint8_t *data, uint32_t len)
{
	struct rn_pkt p = to_w(e, opnum, psn);

	p.aeth.syndrome = rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT);
	p.payload = data;
	p.payload_len = len;
	fx_wire_deliver(&e->w, &p);
}

/*
 * A READ of 1000 bytes: one request for 4 PSNs.  Its third response is
 * lost: the fourth is an implied NAK, and the requester asks again for
 * the rest only (from the third PSN, 488 bytes further on); the data
 * lands byte for byte.
 */
static void test_read_response_lost(void **state)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 8192, 1000);
	uint8_t remote[1000];
	struct rn_cqe c;
	unsigned int i;

	for (i = 0; i < sizeof(remote); i++)
		remote[i] = (uint8_t)(0xa5 ^ i * 3);
	memset(e->la.buf + 8192, 0, 1000);
	post_op(&e->w, 7, RN_OP_READ, &ls, PEER_VA, PEER_RKEY);
	assert_int_equal(send_some(e), 1);
	assert_pkt(&pk[0], RN_PKT_OP_READ_REQUEST, SQ_PSN, 0);
	assert_int_equal(pk[0].p.reth.va, PEER_VA);
	assert_int_equal(pk[0].p.reth.rkey, PEER_RKEY);
	assert_int_equal(pk[0].p.reth.len, 1000);
	assert_true(pk[0].p.ackreq);
	assert_int_equal(e->w.dq->wire->next_psn, SQ_PSN + 4);

	read_response(e, RN_PKT_OP_READ_RESP_FIRST, SQ_PSN, remote, MTU);
	read_response(e, RN_PKT_OP_READ_RESP_MIDDLE, SQ_PSN + 1, remote + MTU, MTU);
	read_response(e, RN_PKT_OP_READ_RESP_LAST, SQ_PSN + 3, remote + 3 * MTU,
		      1000 - 3 * MTU);
	assert_no_cqe(e);
	assert_int_equal(fx_counter(e->fx, RN_CNT_IMPLIED_NAK), 1);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RETRIES), 1);
	assert_int_equal(e->w.ctrl->seq_naks, 1);

	assert_int_equal(send_some(e), 1);
	assert_pkt(&pk[0], RN_PKT_OP_READ_REQUEST, SQ_PSN + 2, 0);
	assert_int_equal(pk[0].p.reth.va, PEER_VA + 2 * MTU);
	assert_int_equal(pk[0].p.reth.len, 1000 - 2 * MTU);
	read_response(e, RN_PKT_OP_READ_RESP_MIDDLE, SQ_PSN + 2,
		      remote + 2 * MTU, MTU);
	read_response(e, RN_PKT_OP_READ_RESP_LAST, SQ_PSN + 3, remote + 3 * MTU,
		      1000 - 3 * MTU);
	c = cqe(e);
	assert_int_equal(c.wr_id, 7);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
	assert_int_equal(c.opcode, IBV_WC_RDMA_READ);
	assert_int_equal(c.byte_len, 1000);
	assert_memory_equal(e->la.buf + 8192, remote, 1000);
	assert_int_equal(fx_counter(e->fx, RN_CNT_REQ_COMPLETED), 1);
	/* A response for nothing outstanding now. */
	read_response(e, RN_PKT_OP_READ_RESP_ONLY, SQ_PSN + 4, remote, 8);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RX_UNEXPECTED), 1);
}

/* A response of the wrong length is not taken (counted, the READ waits). */
static void test_read_response_wrong_length(void **state)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 0, 100);
	uint8_t remote[100] = { 1, 2, 3 };

	post_op(&e->w, 7, RN_OP_READ, &ls, PEER_VA, PEER_RKEY);
	assert_int_equal(send_some(e), 1);
	read_response(e, RN_PKT_OP_READ_RESP_ONLY, SQ_PSN, remote, 96);
	assert_no_cqe(e);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RX_UNEXPECTED), 1);
	read_response(e, RN_PKT_OP_READ_RESP_ONLY, SQ_PSN, remote, 100);
	assert_int_equal(cqe(e).status, IBV_WC_SUCCESS);
	assert_memory_equal(e->la.buf, remote, 100);
}

/* Fetch-add: the AtomicETH out, the original value back from the ATOMIC ACK. */
static void test_atomic_ack(void **state)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 64, 8);
	struct rn_pkt p;
	uint64_t got;
	struct rn_cqe c;

	fx_post_send(&e->w, &(struct rn_send_wqe){ .wr_id = 3,
		.opcode = RN_OP_FETCH_ADD, .flags = RN_WQE_SIGNALED,
		.num_sge = 1, .remote_addr = PEER_VA + 8, .rkey = PEER_RKEY,
		.compare_add = 41 }, &ls);
	fx_ring(&e->w);
	assert_int_equal(send_some(e), 1);
	assert_pkt(&pk[0], RN_PKT_OP_FETCH_ADD, SQ_PSN, 0);
	assert_int_equal(pk[0].p.atomic.va, PEER_VA + 8);
	assert_int_equal(pk[0].p.atomic.rkey, PEER_RKEY);
	assert_int_equal(pk[0].p.atomic.swap_add, 41);
	assert_int_equal(pk[0].p.atomic.compare, 0);

	p = to_w(e, RN_PKT_OP_ATOMIC_ACK, SQ_PSN);
	p.aeth.syndrome = rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT);
	p.atomic_ack = 0x1122334455667788ull;
	fx_wire_deliver(&e->w, &p);
	c = cqe(e);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
	assert_int_equal(c.opcode, IBV_WC_FETCH_ADD);
	assert_int_equal(c.byte_len, 8);
	memcpy(&got, e->la.buf + 64, 8);
	assert_int_equal(got, 0x1122334455667788ull);
}

/*
 * No answer at all: the retransmit timer goes back to the oldest PSN
 * unacknowledged (retry_cnt 1), and on the next expiry the WQE fails.
 */
static void test_ack_timeout(void **state)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 0, 600);
	struct rn_wire_qp *wq;
	struct rn_cqe c;

	e->conn.retry_cnt = 1;
	fx_qp_connect(&e->w, &e->conn);
	wq = e->w.dq->wire;
	post_op(&e->w, 1, RN_OP_WRITE, &ls, PEER_VA, PEER_RKEY);
	assert_int_equal(send_some(e), 3);
	ack(e, SQ_PSN); /* the first packet arrived */
	assert_int_equal(wq->una, SQ_PSN + 1);

	assert_true(rn_timers_run(&e->fx->dev.engines[0]->timers, wq->retrans_timer.when));
	assert_int_equal(fx_counter(e->fx, RN_CNT_ACK_TIMEOUT), 1);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RETRIES), 1);
	assert_int_equal(e->w.ctrl->ack_timeouts, 1);
	assert_int_equal(send_some(e), 2);
	assert_pkt(&pk[0], RN_PKT_OP_WRITE_MIDDLE, SQ_PSN + 1, MTU);
	assert_memory_equal(pk[0].p.payload, e->la.buf + MTU, MTU);
	assert_pkt(&pk[1], RN_PKT_OP_WRITE_LAST, SQ_PSN + 2, 600 - 2 * MTU);
	assert_no_cqe(e);

	assert_true(rn_timers_run(&e->fx->dev.engines[0]->timers, wq->retrans_timer.when));
	c = cqe(e);
	assert_int_equal(c.status, IBV_WC_RETRY_EXC_ERR);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RETRY_EXC), 1);
	assert_int_equal(fx_qp_state(&e->w), IBV_QPS_ERR);
}

/*
 * A spurious timeout: the retransmit timer goes back to a READ, then an
 * atomic, whose answers were only late, and the answers come before
 * anything is sent again.  Each completes, and the next WQE goes out at
 * its own PSN, its timer running: the cursor moves forward past what the
 * late answer completed, as after a late ACK.  (It stayed behind, so the
 * FETCH_ADD after the READ went out at the READ's PSN, was never
 * answered, and no timer ran for it: the QP waited for ever.)
 */
static void test_late_answer_after_timeout(void **state)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 0, 2 * MTU);
	struct rn_sge as = fx_sge(&e->la, 4096, 8);
	struct rn_wire_qp *wq = e->w.dq->wire;
	uint8_t remote[2 * MTU] = { 7 };
	struct rn_pkt p;

	post_op(&e->w, 1, RN_OP_READ, &ls, PEER_VA, PEER_RKEY);
	assert_int_equal(send_some(e), 1);
	assert_true(rn_timers_run(&e->fx->dev.engines[0]->timers, wq->retrans_timer.when));
	assert_int_equal(fx_counter(e->fx, RN_CNT_ACK_TIMEOUT), 1);
	read_response(e, RN_PKT_OP_READ_RESP_FIRST, SQ_PSN, remote, MTU);
	read_response(e, RN_PKT_OP_READ_RESP_LAST, SQ_PSN + 1, remote + MTU, MTU);
	assert_int_equal(cqe(e).status, IBV_WC_SUCCESS);

	fx_post_send(&e->w, &(struct rn_send_wqe){ .wr_id = 2,
		.opcode = RN_OP_FETCH_ADD, .flags = RN_WQE_SIGNALED,
		.num_sge = 1, .remote_addr = PEER_VA, .rkey = PEER_RKEY,
		.compare_add = 1 }, &as);
	fx_ring(&e->w);
	assert_int_equal(send_some(e), 1);
	assert_pkt(&pk[0], RN_PKT_OP_FETCH_ADD, SQ_PSN + 2, 0);
	assert_true(rn_timer_armed(&wq->retrans_timer));

	/* The same with the atomic late. */
	assert_true(rn_timers_run(&e->fx->dev.engines[0]->timers, wq->retrans_timer.when));
	assert_int_equal(fx_counter(e->fx, RN_CNT_ACK_TIMEOUT), 2);
	p = to_w(e, RN_PKT_OP_ATOMIC_ACK, SQ_PSN + 2);
	p.aeth.syndrome = rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT);
	fx_wire_deliver(&e->w, &p);
	assert_int_equal(cqe(e).status, IBV_WC_SUCCESS);
	post_op(&e->w, 3, RN_OP_READ, &ls, PEER_VA, PEER_RKEY);
	assert_int_equal(send_some(e), 1);
	assert_pkt(&pk[0], RN_PKT_OP_READ_REQUEST, SQ_PSN + 3, 0);
	assert_true(rn_timer_armed(&wq->retrans_timer));
}

/*
 * A READ of 300 responses is asked in parts of RN_WIRE_READ_PART (256):
 * with max_rd_atomic 1 the second part's request waits for the first
 * part's last response (its READ credit), then asks for the rest.
 */
static void test_read_in_parts(void **state)
{
	struct env *e = *state;
	const uint32_t len = 299 * MTU + 200, part = RN_WIRE_READ_PART;
	struct fx_mr big;
	struct rn_sge ls;
	uint8_t *remote;
	uint32_t i;

	e->conn.max_rd_atomic = 1;
	fx_qp_connect(&e->w, &e->conn);
	fx_mr_new(e->fx, len, ALL_ACCESS, 0, &big);
	ls = fx_sge(&big, 0, len);
	remote = malloc(len);
	assert_non_null(remote);
	for (i = 0; i < len; i++)
		remote[i] = (uint8_t)(i * 7 ^ i >> 9);
	post_op(&e->w, 1, RN_OP_READ, &ls, PEER_VA, PEER_RKEY);
	assert_int_equal(send_some(e), 1);
	assert_pkt(&pk[0], RN_PKT_OP_READ_REQUEST, SQ_PSN, 0);
	assert_int_equal(pk[0].p.reth.len, part * MTU);
	for (i = 0; i < part; i++) {
		read_response(e, i == 0 ? RN_PKT_OP_READ_RESP_FIRST :
			      i == part - 1 ? RN_PKT_OP_READ_RESP_LAST :
					      RN_PKT_OP_READ_RESP_MIDDLE,
			      SQ_PSN + i, remote + i * MTU, MTU);
		/* No second request while the first part is unanswered. */
		if (i == part - 2)
			assert_int_equal(send_some(e), 0);
	}
	assert_int_equal(send_some(e), 1);
	assert_pkt(&pk[0], RN_PKT_OP_READ_REQUEST, SQ_PSN + part, 0);
	assert_int_equal(pk[0].p.reth.va, PEER_VA + part * MTU);
	assert_int_equal(pk[0].p.reth.len, len - part * MTU);
	assert_no_cqe(e);
	for (i = part; i < 300; i++)
		read_response(e, i == part ? RN_PKT_OP_READ_RESP_FIRST :
			      i == 299 ? RN_PKT_OP_READ_RESP_LAST :
					 RN_PKT_OP_READ_RESP_MIDDLE,
			      SQ_PSN + i, remote + i * MTU, i == 299 ? 200 : MTU);
	assert_int_equal(cqe(e).byte_len, len);
	assert_memory_equal(big.buf, remote, len);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RX_UNEXPECTED), 0);
	free(remote);
}

/*
 * The window: at most RN_WIRE_WINDOW (512) PSNs unacknowledged.  A WRITE
 * of 520 packets stops at 512, asking for an ACK every 64; an ACK of the
 * first 10 lets 8 more go.
 */
static void test_window(void **state)
{
	struct env *e = *state;
	const uint32_t npkt = 520, len = npkt * MTU;
	struct fx_mr big;
	struct rn_sge ls;
	uint32_t sent = 0, n, i;

	fx_mr_new(e->fx, len, ALL_ACCESS, 0x11, &big);
	ls = fx_sge(&big, 0, len);
	post_op(&e->w, 1, RN_OP_WRITE, &ls, PEER_VA, PEER_RKEY);
	while ((n = send_some(e))) {
		for (i = 0; i < n; i++) {
			assert_int_equal(pk[i].p.psn, SQ_PSN + sent + i);
			assert_int_equal(pk[i].p.ackreq, (sent + i + 1) % 64 == 0);
		}
		sent += n;
	}
	assert_int_equal(sent, RN_WIRE_WINDOW);
	ack(e, SQ_PSN + 9);
	assert_int_equal(send_some(e), 8);
	assert_pkt(&pk[7], RN_PKT_OP_WRITE_LAST, SQ_PSN + npkt - 1, MTU);
	assert_true(pk[7].p.ackreq);
	ack(e, SQ_PSN + npkt - 1);
	assert_int_equal(cqe(e).byte_len, len);
}

/*
 * RTS to SQD with the drained event asked for: nothing new starts, and
 * the event comes once the WQE in flight is acknowledged; back in RTS the
 * next WQE goes.
 */
static void test_sqd_drained(void **state)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 0, 100);
	struct rn_ctl_modify_qp_req req = {
		.handle = e->w.handle,
		.attr_mask = IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY,
		.attr = { .qp_state = IBV_QPS_SQD, .en_sqd_async_notify = 1 },
	};

	post_op(&e->w, 1, RN_OP_WRITE, &ls, PEER_VA, PEER_RKEY);
	assert_int_equal(send_some(e), 1);
	assert_int_equal(rn_qp_modify(e->fx->client, &req), 0);
	fx_assert_no_event(e->fx);
	post_op(&e->w, 2, RN_OP_WRITE, &ls, PEER_VA, PEER_RKEY);
	assert_int_equal(send_some(e), 0);
	ack(e, SQ_PSN);
	assert_int_equal(cqe(e).wr_id, 1);
	fx_assert_event(e->fx, IBV_EVENT_SQ_DRAINED, &e->w);
	assert_int_equal(send_some(e), 0);

	req.attr_mask = IBV_QP_STATE;
	req.attr.qp_state = IBV_QPS_RTS;
	assert_int_equal(rn_qp_modify(e->fx->client, &req), 0);
	assert_int_equal(send_some(e), 1);
	assert_pkt(&pk[0], RN_PKT_OP_WRITE_ONLY, SQ_PSN + 1, 100);
	fx_assert_no_event(e->fx);
}

/* ---- the responder ---------------------------------------------------------------- */

static struct rn_pkt request(struct env *e, uint8_t opnum, uint32_t psn,
			     const void *payload, uint32_t len)
{
	struct rn_pkt p = to_w(e, opnum, psn);

	p.payload = payload;
	p.payload_len = len;
	return p;
}

/*
 * In order: a SEND of two packets in one receive batch (one ACK, for its
 * last PSN), then a WRITE whose data lands in the MR.
 */
static void test_resp_send_write(void **state)
{
	struct env *e = *state;
	struct rn_sge rs = fx_sge(&e->rb, 0, 600);
	struct rn_pkt p;
	struct rn_cqe c;

	fx_post_recv(&e->w, 0x77, &rs, 1);
	p = request(e, RN_PKT_OP_SEND_FIRST, RQ_PSN, e->la.buf, MTU);
	fx_wire_recv(&e->w, &p);
	p = request(e, RN_PKT_OP_SEND_LAST, RQ_PSN + 1, e->la.buf + MTU, 100);
	p.ackreq = true;
	fx_wire_recv(&e->w, &p);
	fx_wire_batch_end(e->fx);
	c = cqe(e);
	assert_int_equal(c.wr_id, 0x77);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
	assert_int_equal(c.opcode, IBV_WC_RECV);
	assert_int_equal(c.byte_len, MTU + 100);
	assert_int_equal(c.src_qp, PEER_QPN);
	assert_int_equal(c.qp_num, e->w.qpn);
	assert_memory_equal(e->rb.buf, e->la.buf, MTU + 100);
	assert_int_equal(e->rb.buf[MTU + 100], 0);
	assert_int_equal(take(e), 1);
	assert_aeth(&pk[0], rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT), RQ_PSN + 1);
	assert_int_equal(pk[0].p.aeth.msn, 1);

	p = request(e, RN_PKT_OP_WRITE_ONLY, RQ_PSN + 2, e->la.buf + 1000, 200);
	p.reth = (struct rn_pkt_reth){ (uintptr_t)e->rb.buf + 4096, e->rb.rkey,
				       200 };
	p.ackreq = true;
	fx_wire_deliver(&e->w, &p);
	assert_memory_equal(e->rb.buf + 4096, e->la.buf + 1000, 200);
	assert_int_equal(e->rb.buf[4296], 0);
	assert_no_cqe(e);
	assert_int_equal(take(e), 1);
	assert_aeth(&pk[0], rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT), RQ_PSN + 2);
	assert_int_equal(pk[0].p.aeth.msn, 2);
	assert_int_equal(e->w.dq->wire->epsn, RQ_PSN + 3);
	assert_int_equal(fx_counter(e->fx, RN_CNT_DUP_REQ), 0);
	assert_int_equal(fx_counter(e->fx, RN_CNT_OOS_REQ), 0);
}

/* Duplicates are ACKed again and never executed again. */
static void test_resp_duplicate(void **state)
{
	struct env *e = *state;
	struct rn_sge rs0 = fx_sge(&e->rb, 0, 100), rs1 = fx_sge(&e->rb, 200, 100);
	static const uint8_t other[100] = { 0xee, 0xee, 0xee };
	struct rn_pkt send, write;

	fx_post_recv(&e->w, 1, &rs0, 1);
	fx_post_recv(&e->w, 2, &rs1, 1);
	send = request(e, RN_PKT_OP_SEND_ONLY, RQ_PSN, e->la.buf, 100);
	send.ackreq = true;
	write = request(e, RN_PKT_OP_WRITE_ONLY, RQ_PSN + 1, e->la.buf, 100);
	write.reth = (struct rn_pkt_reth){ (uintptr_t)e->rb.buf + 1000,
					   e->rb.rkey, 100 };
	write.ackreq = true;
	fx_wire_deliver(&e->w, &send);
	fx_wire_deliver(&e->w, &write);
	assert_int_equal(take(e), 2);
	assert_int_equal(cqe(e).wr_id, 1);

	/* Both again, with other data: ACKed for the last PSN taken. */
	send.payload = other;
	write.payload = other;
	fx_wire_deliver(&e->w, &send);
	assert_int_equal(take(e), 1);
	assert_aeth(&pk[0], rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT), RQ_PSN + 1);
	fx_wire_deliver(&e->w, &write);
	assert_int_equal(take(e), 1);
	assert_aeth(&pk[0], rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT), RQ_PSN + 1);
	assert_int_equal(fx_counter(e->fx, RN_CNT_DUP_REQ), 2);
	assert_int_equal(e->w.ctrl->duplicate_requests, 2);
	assert_no_cqe(e);
	assert_int_equal(e->w.ctrl->rq_wr_cons, 1);
	assert_memory_equal(e->rb.buf, e->la.buf, 100);
	assert_memory_equal(e->rb.buf + 1000, e->la.buf, 100);
	assert_int_equal(e->rb.buf[200], 0);
	assert_int_equal(e->w.dq->wire->epsn, RQ_PSN + 2);
}

/*
 * Out of sequence: one sequence NAK for the expected PSN, then silence
 * (each counted) until the expected PSN comes.
 */
static void test_resp_out_of_sequence(void **state)
{
	struct env *e = *state;
	struct rn_sge rs = fx_sge(&e->rb, 0, 100);
	struct rn_pkt p;

	fx_post_recv(&e->w, 1, &rs, 1);
	p = request(e, RN_PKT_OP_SEND_ONLY, RQ_PSN + 2, e->la.buf, 10);
	p.ackreq = true;
	fx_wire_deliver(&e->w, &p);
	assert_int_equal(take(e), 1);
	assert_aeth(&pk[0], rn_pkt_aeth_nak(RN_PKT_NAK_PSN_SEQ), RQ_PSN);
	p.psn = RQ_PSN + 3;
	fx_wire_deliver(&e->w, &p);
	assert_int_equal(take(e), 0);
	assert_int_equal(fx_counter(e->fx, RN_CNT_OOS_REQ), 2);
	assert_int_equal(e->w.ctrl->out_of_seq_requests, 2);
	assert_no_cqe(e);
	assert_int_equal(e->w.ctrl->rq_wr_cons, 0);

	p.psn = RQ_PSN;
	fx_wire_deliver(&e->w, &p);
	assert_int_equal(take(e), 1);
	assert_aeth(&pk[0], rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT), RQ_PSN);
	assert_int_equal(cqe(e).byte_len, 10);
}

/*
 * The middle packet of a three-packet SEND is lost: the last one draws a
 * sequence NAK for it; the retransmission from there completes the
 * receive with all of its bytes.
 */
static void test_resp_missing_middle(void **state)
{
	struct env *e = *state;
	struct rn_sge rs = fx_sge(&e->rb, 0, 1000);
	struct rn_pkt first, middle, last;
	struct rn_cqe c;

	fx_post_recv(&e->w, 9, &rs, 1);
	first = request(e, RN_PKT_OP_SEND_FIRST, RQ_PSN, e->la.buf, MTU);
	middle = request(e, RN_PKT_OP_SEND_MIDDLE, RQ_PSN + 1, e->la.buf + MTU,
			 MTU);
	last = request(e, RN_PKT_OP_SEND_LAST, RQ_PSN + 2, e->la.buf + 2 * MTU, 44);
	last.ackreq = true;
	fx_wire_recv(&e->w, &first);
	fx_wire_recv(&e->w, &last);
	fx_wire_batch_end(e->fx);
	assert_int_equal(take(e), 1);
	assert_aeth(&pk[0], rn_pkt_aeth_nak(RN_PKT_NAK_PSN_SEQ), RQ_PSN + 1);
	assert_no_cqe(e);
	assert_int_equal(fx_counter(e->fx, RN_CNT_OOS_REQ), 1);

	fx_wire_recv(&e->w, &middle);
	fx_wire_recv(&e->w, &last);
	fx_wire_batch_end(e->fx);
	c = cqe(e);
	assert_int_equal(c.wr_id, 9);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
	assert_int_equal(c.byte_len, 2 * MTU + 44);
	assert_memory_equal(e->rb.buf, e->la.buf, 2 * MTU + 44);
	assert_int_equal(take(e), 1);
	assert_aeth(&pk[0], rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT), RQ_PSN + 2);
}

/*
 * No receive WQE: an RNR NAK with the QP's min_rnr_timer, the PSN not
 * taken; once a receive is posted, the SEND sent again is taken.
 */
static void test_resp_rnr(void **state)
{
	struct env *e = *state;
	struct rn_sge rs = fx_sge(&e->rb, 0, 100);
	struct rn_pkt p = request(e, RN_PKT_OP_SEND_ONLY, RQ_PSN, e->la.buf, 10);

	p.ackreq = true;
	fx_wire_deliver(&e->w, &p);
	assert_int_equal(take(e), 1);
	assert_aeth(&pk[0], rn_pkt_aeth_rnr_nak(e->conn.min_rnr_timer), RQ_PSN);
	assert_int_equal(fx_counter(e->fx, RN_CNT_SEND_RNR), 1);
	assert_int_equal(e->w.ctrl->naks_sent, 1);
	assert_int_equal(e->w.dq->wire->epsn, RQ_PSN);
	assert_int_equal(fx_qp_state(&e->w), IBV_QPS_RTS);

	fx_post_recv(&e->w, 4, &rs, 1);
	fx_wire_deliver(&e->w, &p);
	assert_int_equal(take(e), 1);
	assert_aeth(&pk[0], rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT), RQ_PSN);
	assert_int_equal(cqe(e).wr_id, 4);
	assert_memory_equal(e->rb.buf, e->la.buf, 10);
}

/*
 * A READ request for 1000 bytes is answered with a stream of responses:
 * FIRST, MIDDLE, MIDDLE, LAST at consecutive PSNs, the MR's bytes in
 * them; a duplicate from its third PSN is served again from there
 * (MIDDLE, LAST, as rxe replays).
 */
static void test_resp_read_stream(void **state)
{
	struct env *e = *state;
	static const uint8_t ops[4] = { RN_PKT_OP_READ_RESP_FIRST,
		RN_PKT_OP_READ_RESP_MIDDLE, RN_PKT_OP_READ_RESP_MIDDLE,
		RN_PKT_OP_READ_RESP_LAST };
	uint64_t va = (uintptr_t)e->rb.buf + 100;
	struct rn_pkt p = request(e, RN_PKT_OP_READ_REQUEST, RQ_PSN, NULL, 0);
	unsigned int i;

	memcpy(e->rb.buf + 100, e->la.buf, 1000);
	p.reth = (struct rn_pkt_reth){ va, e->rb.rkey, 1000 };
	p.ackreq = true;
	fx_wire_deliver(&e->w, &p);
	assert_int_equal(take(e), 0); /* no ACK for a READ: its responses */
	assert_int_equal(e->w.dq->wire->epsn, RQ_PSN + 4);
	assert_int_equal(replies(e), 4);
	for (i = 0; i < 4; i++) {
		assert_pkt(&pk[i], ops[i], RQ_PSN + i, i < 3 ? MTU : 1000 - 3 * MTU);
		assert_memory_equal(pk[i].p.payload, e->la.buf + i * MTU,
				    pk[i].p.payload_len);
		assert_int_equal(!!(pk[i].p.hdrs & RN_PKT_H_AETH), i == 0 || i == 3);
	}
	assert_int_equal(pk[3].p.aeth.msn, 1);
	assert_int_equal(replies(e), 0);

	p.psn = RQ_PSN + 2;
	p.reth = (struct rn_pkt_reth){ va + 2 * MTU, e->rb.rkey, 1000 - 2 * MTU };
	fx_wire_deliver(&e->w, &p);
	assert_int_equal(fx_counter(e->fx, RN_CNT_DUP_REQ), 1);
	assert_int_equal(replies(e), 2);
	assert_pkt(&pk[0], RN_PKT_OP_READ_RESP_MIDDLE, RQ_PSN + 2, MTU);
	assert_memory_equal(pk[0].p.payload, e->la.buf + 2 * MTU, MTU);
	assert_pkt(&pk[1], RN_PKT_OP_READ_RESP_LAST, RQ_PSN + 3, 1000 - 3 * MTU);
	assert_memory_equal(pk[1].p.payload, e->la.buf + 3 * MTU, 1000 - 3 * MTU);
	assert_int_equal(e->w.dq->wire->epsn, RQ_PSN + 4);
}

/* An atomic executes once; its duplicate gets the value it found then. */
static void test_resp_atomic(void **state)
{
	struct env *e = *state;
	struct rn_pkt p = request(e, RN_PKT_OP_COMPARE_SWAP, RQ_PSN, NULL, 0);
	uint64_t v = 77;

	memcpy(e->rb.buf + 8, &v, 8);
	p.atomic = (struct rn_pkt_atomiceth){ (uintptr_t)e->rb.buf + 8,
					      e->rb.rkey, 99, 77 };
	fx_wire_deliver(&e->w, &p);
	assert_int_equal(replies(e), 1);
	assert_pkt(&pk[0], RN_PKT_OP_ATOMIC_ACK, RQ_PSN, 0);
	assert_int_equal(pk[0].p.atomic_ack, 77);
	memcpy(&v, e->rb.buf + 8, 8);
	assert_int_equal(v, 99);

	/* Again: not swapped back (99 != 77), answered with 77 still. */
	fx_wire_deliver(&e->w, &p);
	assert_int_equal(replies(e), 1);
	assert_pkt(&pk[0], RN_PKT_OP_ATOMIC_ACK, RQ_PSN, 0);
	assert_int_equal(pk[0].p.atomic_ack, 77);
	memcpy(&v, e->rb.buf + 8, 8);
	assert_int_equal(v, 99);
	assert_int_equal(fx_counter(e->fx, RN_CNT_DUP_REQ), 1);
}

/* A WRITE to an rkey that names nothing: NAK remote access, QP fatal. */
static void test_resp_write_bad_rkey(void **state)
{
	struct env *e = *state;
	struct rn_pkt p = request(e, RN_PKT_OP_WRITE_ONLY, RQ_PSN, e->la.buf, 16);

	p.reth = (struct rn_pkt_reth){ (uintptr_t)e->rb.buf, e->rb.rkey + 1, 16 };
	p.ackreq = true;
	fx_wire_deliver(&e->w, &p);
	assert_int_equal(take(e), 1);
	assert_aeth(&pk[0], rn_pkt_aeth_nak(RN_PKT_NAK_REM_ACCESS), RQ_PSN);
	assert_int_equal(fx_qp_state(&e->w), IBV_QPS_ERR);
	fx_assert_event(e->fx, IBV_EVENT_QP_ACCESS_ERR, &e->w);
	assert_int_equal(fx_counter(e->fx, RN_CNT_NAK_SENT), 1);
	assert_int_equal(e->rb.buf[0], 0);
	/* In ERR, what comes is dropped and counted. */
	p.psn = RQ_PSN + 1;
	fx_wire_deliver(&e->w, &p);
	assert_int_equal(take(e), 0);
	assert_int_equal(fx_counter(e->fx, RN_CNT_NO_QP), 1);
}

/*
 * A SEND larger than its receive WQE: LOC_LEN_ERR for the receive, a NAK
 * invalid request (IB spec 9.7.5.2.2), the QP to ERR without an event.
 */
static void test_resp_recv_too_small(void **state)
{
	struct env *e = *state;
	struct rn_sge rs = fx_sge(&e->rb, 0, 100);
	struct rn_pkt p = request(e, RN_PKT_OP_SEND_ONLY, RQ_PSN, e->la.buf, 200);
	struct rn_cqe c;

	fx_post_recv(&e->w, 5, &rs, 1);
	p.ackreq = true;
	fx_wire_deliver(&e->w, &p);
	c = cqe(e);
	assert_int_equal(c.wr_id, 5);
	assert_int_equal(c.status, IBV_WC_LOC_LEN_ERR);
	assert_int_equal(take(e), 1);
	assert_aeth(&pk[0], rn_pkt_aeth_nak(RN_PKT_NAK_INV_REQ), RQ_PSN);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RX_LENGTH_ERRORS), 1);
	assert_int_equal(fx_qp_state(&e->w), IBV_QPS_ERR);
	fx_assert_no_event(e->fx);
}

/*
 * A WRITE where the SEND in progress must continue: the receive fails
 * with REM_INV_REQ_ERR, the requester gets a NAK invalid request, and the
 * QP is fatal (QP_REQ_ERR).
 */
static void test_resp_broken_sequence(void **state)
{
	struct env *e = *state;
	struct rn_sge rs = fx_sge(&e->rb, 0, 1000);
	struct rn_pkt p;
	struct rn_cqe c;

	fx_post_recv(&e->w, 6, &rs, 1);
	p = request(e, RN_PKT_OP_SEND_FIRST, RQ_PSN, e->la.buf, MTU);
	fx_wire_deliver(&e->w, &p);
	p = request(e, RN_PKT_OP_WRITE_ONLY, RQ_PSN + 1, e->la.buf, 8);
	p.reth = (struct rn_pkt_reth){ (uintptr_t)e->rb.buf + 2048, e->rb.rkey, 8 };
	fx_wire_deliver(&e->w, &p);
	c = cqe(e);
	assert_int_equal(c.wr_id, 6);
	assert_int_equal(c.status, IBV_WC_REM_INV_REQ_ERR);
	assert_int_equal(take(e), 1);
	assert_aeth(&pk[0], rn_pkt_aeth_nak(RN_PKT_NAK_INV_REQ), RQ_PSN + 1);
	assert_int_equal(fx_qp_state(&e->w), IBV_QPS_ERR);
	fx_assert_event(e->fx, IBV_EVENT_QP_REQ_ERR, &e->w);
	assert_int_equal(e->rb.buf[2048], 0);
}

/* ---- two wire QPs of the device, through a loop in memory ------------------------- */

/*
 * Carry every packet sent to the QP it names until nothing moves; drop
 * the packet number 'drop' of the whole run (counting from 0; -1: none).
 */
static void carry(struct env *e, struct fx_qp *x, struct fx_qp *y, int drop)
{
	static struct fx_pkt q[RN_WIRE_TX_BATCH];
	unsigned int n, i, rounds;
	int seen = 0;

	for (rounds = 0; rounds < 100; rounds++) {
		fx_wire_run(x, BUDGET);
		fx_wire_run(y, BUDGET);
		rn_wire_reply(e->fx->dev.engines[0]->wire, rn_now_ns());
		n = fx_wire_take(e->fx, q, RN_WIRE_TX_BATCH);
		if (!n)
			return;
		for (i = 0; i < n; i++, seen++) {
			if (seen == drop)
				continue;
			fx_wire_recv(q[i].p.dqpn == x->qpn ? x : y, &q[i].p);
		}
		fx_wire_batch_end(e->fx);
	}
	fail_msg("the QPs never went quiet");
}

/*
 * x and y, both of this device, on the wire (local_on_wire): a WRITE, a
 * SEND and a READ from x, every byte checked; then the same with one
 * WRITE packet lost (a sequence NAK and go-back-N recover it) and with
 * one READ response lost (an implied NAK).
 */
static void loopback(void **state, int drop)
{
	struct env *e = *state;
	struct fx_qp x, y;
	struct fx_conn cx, cy;
	struct rn_sge ws = fx_sge(&e->la, 0, 3000), ss = fx_sge(&e->la, 3000, 700),
		      rd = fx_sge(&e->la, 8192, 2000), rs = fx_sge(&e->rb, 12000, 1000);
	struct rn_cqe c;
	unsigned int i;

	e->fx->dev.local_on_wire = true;
	fx_qp_new(e->fx, &e->cq, &e->cq, NULL, &x);
	fx_qp_new(e->fx, &e->cq, &e->cq, NULL, &y);
	cx = fx_conn_default(y.qpn);
	cy = fx_conn_default(x.qpn);
	cx.path_mtu = cy.path_mtu = IBV_MTU_256;
	cx.sq_psn = cy.rq_psn = 0x3000;
	cy.sq_psn = cx.rq_psn = 0x4000;
	fx_qp_connect(&x, &cx);
	fx_qp_connect(&y, &cy);
	assert_non_null(x.dq->wire);
	for (i = 0; i < 2000; i++)
		e->rb.buf[6000 + i] = (uint8_t)(i ^ 0x3c);
	memset(e->la.buf + 8192, 0, 2000);

	fx_post_recv(&y, 0x99, &rs, 1);
	post_op(&x, 1, RN_OP_WRITE, &ws, (uintptr_t)e->rb.buf, e->rb.rkey);
	post_op(&x, 2, RN_OP_SEND, &ss, 0, 0);
	post_op(&x, 3, RN_OP_READ, &rd, (uintptr_t)e->rb.buf + 6000, e->rb.rkey);
	carry(e, &x, &y, drop);

	for (i = 0; i < 4; i++) {
		c = cqe(e);
		assert_int_equal(c.status, IBV_WC_SUCCESS);
		if (c.qp_num == y.qpn) {
			assert_int_equal(c.wr_id, 0x99);
			assert_int_equal(c.byte_len, 700);
		} else {
			assert_int_equal(c.qp_num, x.qpn);
		}
	}
	assert_no_cqe(e);
	assert_memory_equal(e->rb.buf, e->la.buf, 3000);
	assert_memory_equal(e->rb.buf + 12000, e->la.buf + 3000, 700);
	assert_memory_equal(e->la.buf + 8192, e->rb.buf + 6000, 2000);
	assert_int_equal(fx_qp_state(&x), IBV_QPS_RTS);
	assert_int_equal(fx_qp_state(&y), IBV_QPS_RTS);
	assert_int_equal(fx_counter(e->fx, RN_CNT_REQ_COMPLETED), 3);
}

static void test_loopback(void **state)
{
	struct env *e = *state;

	loopback(state, -1);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RETRIES), 0);
	assert_int_equal(fx_counter(e->fx, RN_CNT_OOS_REQ), 0);
}

/*
 * The second packet of all is the WRITE's second: lost.  The 14 packets
 * after it are out of sequence at y (one NAK for all of them).
 */
static void test_loopback_write_packet_lost(void **state)
{
	struct env *e = *state;

	loopback(state, 1);
	assert_int_equal(fx_counter(e->fx, RN_CNT_OOS_REQ), 14);
	assert_int_equal(fx_counter(e->fx, RN_CNT_NAK_SENT), 0);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RCVD_SEQ), 1);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RETRIES), 1);
}

/*
 * 12 WRITE packets, 3 SEND packets and the READ request go in the first
 * round; the READ's 8 responses come in the second: packet 16 + 3 is the
 * READ's fourth response.
 */
static void test_loopback_read_response_lost(void **state)
{
	struct env *e = *state;

	loopback(state, 16 + 3);
	/* The 4 responses after the gap are each counted; one retry. */
	assert_int_equal(fx_counter(e->fx, RN_CNT_IMPLIED_NAK), 4);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RETRIES), 1);
	assert_int_equal(fx_counter(e->fx, RN_CNT_DUP_REQ), 1);
}

/* ---- CQ overrun at the completer ---------------------------------------------------- */

/*
 * rn_wire_complete_head returns false when the CQE it pushes overruns the
 * send CQ (rn_sq_complete puts the QP in ERR), and acknowledge() stops
 * there.  It returned true, and acknowledge() took it for progress: it
 * re-armed the retransmit timer of the QP in ERR and put it back on the
 * engine's list.  Three SENDs, a send CQ of one entry, the first two
 * ACKed: the QP is in ERR, and its timer, left running, counted 8 ACK
 * timeouts, 7 retries and a retry exceeded (local_ack_timeout_err,
 * completer_retry_err, retry_exceeded_err) for a QP that sends nothing.
 */
static void test_completer_cq_overrun(void **state)
{
	struct env *e = *state;
	struct rn_sge ls = fx_sge(&e->la, 0, 10);
	struct rn_wire_qp *wq;
	struct fx_cq small;
	struct fx_qp q;
	unsigned int i;

	fx_cq_new(e->fx, 1, &small);
	fx_qp_new(e->fx, &small, &small, NULL, &q);
	fx_qp_connect(&q, &e->conn);
	wq = q.dq->wire;
	for (i = 0; i < 3; i++)
		post_op(&q, i, RN_OP_SEND, &ls, 0, 0);
	fx_wire_run(&q, BUDGET);
	assert_int_equal(take(e), 3);
	for (i = 0; i < 2; i++) {
		struct rn_pkt p = {
			.opcode = RN_PKT_RC | RN_PKT_OP_ACK,
			.dqpn = q.qpn,
			.psn = SQ_PSN + i,
			.aeth.syndrome = rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT),
		};

		fx_wire_deliver(&q, &p);
	}
	assert_int_equal(fx_qp_state(&q), IBV_QPS_ERR);
	fx_assert_event(e->fx, IBV_EVENT_CQ_ERR, &small);
	assert_false(q.dq->active);
	assert_false(rn_timer_armed(&wq->retrans_timer));
	for (i = 0; i < 10 && rn_timer_armed(&wq->retrans_timer); i++)
		rn_timers_run(&e->fx->dev.engines[0]->timers, wq->retrans_timer.when);
	assert_int_equal(fx_counter(e->fx, RN_CNT_ACK_TIMEOUT), 0);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RETRIES), 0);
}

/*
 * w's send CQ (setup_cq_of_one) overran at a completion: w is in ERR, the
 * CQ in error, every one of the n WQEs retired once (the first with its
 * CQE, the rest flushed) and nothing of w runs any more: off the engine's
 * list, no timer armed, no retry counted.
 */
static void assert_overran(struct env *e, uint32_t n)
{
	struct rn_wire_qp *wq = e->w.dq->wire;
	struct rn_cqe c;

	assert_int_equal(fx_qp_state(&e->w), IBV_QPS_ERR);
	fx_assert_event(e->fx, IBV_EVENT_CQ_ERR, &e->cq);
	fx_assert_no_event(e->fx);
	c = cqe(e);
	assert_int_equal(c.wr_id, 0);
	assert_int_equal(c.status, IBV_WC_SUCCESS);
	assert_no_cqe(e);
	assert_int_equal(e->w.ctrl->sq_wr_cons, n);
	assert_int_equal(e->w.ctrl->sq_cons, e->w.sq_prod);
	assert_false(e->w.dq->active);
	assert_false(rn_timer_armed(&wq->retrans_timer));
	assert_false(rn_timer_armed(&wq->rnr_timer));
	assert_false(wq->rnr_wait);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RETRIES), 0);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RX_UNEXPECTED), 0);
	assert_int_equal(send_some(e), 0);
}

/*
 * A READ's own completion overruns the CQ: read_response stops there
 * (no progress(): the timer stays off, the QP off the list).  Three READs,
 * the first two answered.
 */
static void test_read_response_cq_overrun(void **state)
{
	struct env *e = *state;
	uint8_t remote[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	unsigned int i;

	for (i = 0; i < 3; i++) {
		struct rn_sge ls = fx_sge(&e->la, 8192 + i * 8, 8);

		post_op(&e->w, i, RN_OP_READ, &ls, PEER_VA + i * 8, PEER_RKEY);
	}
	assert_int_equal(send_some(e), 3);
	read_response(e, RN_PKT_OP_READ_RESP_ONLY, SQ_PSN, remote, 8);
	read_response(e, RN_PKT_OP_READ_RESP_ONLY, SQ_PSN + 1, remote, 8);
	assert_overran(e, 3);
	assert_memory_equal(e->la.buf + 8200, remote, 8);
}

/* The same with an atomic's completion (atomic_ack). */
static void test_atomic_ack_cq_overrun(void **state)
{
	struct env *e = *state;
	unsigned int i;

	for (i = 0; i < 3; i++) {
		struct rn_sge ls = fx_sge(&e->la, 64 + i * 8, 8);

		fx_post_send(&e->w, &(struct rn_send_wqe){ .wr_id = i,
			.opcode = RN_OP_FETCH_ADD, .flags = RN_WQE_SIGNALED,
			.num_sge = 1, .remote_addr = PEER_VA + i * 8,
			.rkey = PEER_RKEY, .compare_add = 1 }, &ls);
	}
	fx_ring(&e->w);
	assert_int_equal(send_some(e), 3);
	for (i = 0; i < 2; i++) {
		struct rn_pkt p = to_w(e, RN_PKT_OP_ATOMIC_ACK, SQ_PSN + i);

		p.aeth.syndrome = rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT);
		p.atomic_ack = 0x1000 + i;
		fx_wire_deliver(&e->w, &p);
	}
	assert_overran(e, 3);
}

/* Two SENDs, then a READ into la[8192, 8200) (zeroed), all sent. */
static void sends_then_read(struct env *e)
{
	struct rn_sge ls = fx_sge(&e->la, 0, 10), rd = fx_sge(&e->la, 8192, 8);

	memset(e->la.buf + 8192, 0, 8);
	post_op(&e->w, 0, RN_OP_SEND, &ls, 0, 0);
	post_op(&e->w, 1, RN_OP_SEND, &ls, 0, 0);
	post_op(&e->w, 2, RN_OP_READ, &rd, PEER_VA, PEER_RKEY);
	assert_int_equal(send_some(e), 3);
}

/*
 * A READ response acknowledges the two SENDs before it, and the second
 * SEND's CQE overruns the CQ: the response is done with there
 * (acknowledge_before).  The flushed READ's buffer is left alone, and
 * nothing is counted as unexpected.
 */
static void test_read_response_implied_ack_cq_overrun(void **state)
{
	struct env *e = *state;
	static const uint8_t remote[8] = { 9, 9, 9, 9, 9, 9, 9, 9 };
	static const uint8_t zero[8];

	sends_then_read(e);
	read_response(e, RN_PKT_OP_READ_RESP_ONLY, SQ_PSN + 2, remote, 8);
	assert_overran(e, 3);
	assert_memory_equal(e->la.buf + 8192, zero, 8);
}

/*
 * A sequence NAK, or an RNR NAK, at the READ's PSN acknowledges the
 * SENDs before it, and the second SEND's CQE overruns the CQ: the NAK is
 * done with there.  Nothing goes back, no retry and no RNR wait for the
 * QP in ERR.
 */
static void test_nak_implied_ack_cq_overrun(void **state)
{
	struct env *e = *state;

	sends_then_read(e);
	aeth(e, rn_pkt_aeth_nak(RN_PKT_NAK_PSN_SEQ), SQ_PSN + 2);
	assert_overran(e, 3);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RCVD_SEQ), 0);
}

static void test_rnr_nak_implied_ack_cq_overrun(void **state)
{
	struct env *e = *state;

	sends_then_read(e);
	aeth(e, rn_pkt_aeth_rnr_nak(5), SQ_PSN + 2);
	assert_overran(e, 3);
	assert_int_equal(fx_counter(e->fx, RN_CNT_RCVD_RNR), 0);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup_connected, teardown)
#define U(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
#define O(f) cmocka_unit_test_setup_teardown(f, setup_cq_of_one, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		U(test_write_segmented),
		T(test_coalesced_ack),
		T(test_sequence_nak),
		T(test_rnr_nak_timer),
		U(test_rnr_retry_exceeded),
		T(test_nak_remote_access),
		T(test_nak_remote_op),
		T(test_nak_invalid_request),
		T(test_read_response_lost),
		T(test_read_response_wrong_length),
		T(test_atomic_ack),
		U(test_ack_timeout),
		T(test_late_answer_after_timeout),
		U(test_read_in_parts),
		T(test_window),
		T(test_sqd_drained),
		T(test_resp_send_write),
		T(test_resp_duplicate),
		T(test_resp_out_of_sequence),
		T(test_resp_missing_middle),
		T(test_resp_rnr),
		T(test_resp_read_stream),
		T(test_resp_atomic),
		T(test_resp_write_bad_rkey),
		T(test_resp_recv_too_small),
		T(test_resp_broken_sequence),
		U(test_loopback),
		U(test_loopback_write_packet_lost),
		U(test_loopback_read_response_lost),
		T(test_completer_cq_overrun),
		O(test_read_response_cq_overrun),
		O(test_atomic_ack_cq_overrun),
		O(test_read_response_implied_ack_cq_overrun),
		O(test_nak_implied_ack_cq_overrun),
		O(test_rnr_nak_implied_ack_cq_overrun),
	};

	rn_log_init(true, false);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
