// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * UD: address handles, the GRH area of every receive (20 zero bytes and
 * the IPv4 header of the datagram, as rxe fills it), ibv_create_ah_from_wc,
 * the Q_Key rules, what the receiver drops (and counts), a send larger
 * than the path MTU, sends to self, one to many and many to one, and
 * sends posted just before their QP is destroyed.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "e2e.h"

#define GRH 40
#define MTU 4096 /* the largest path MTU: room for one datagram */

static void ud_opts(struct e2e_opts *o)
{
	e2e_default_opts(o);
	o->qp_type = IBV_QPT_UD;
	o->max_inline = 64;
}

static struct ibv_send_wr ud_wr(struct e2e_side *s, uint64_t wr_id,
				struct ibv_sge *sge, int n, struct ibv_ah *ah,
				uint32_t qpn, uint32_t qkey)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = sge,
		.num_sge = n,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};

	(void)s;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	return wr;
}

/* A UD receive: its completion, field by field. */
static int expect_ud_recv(struct e2e_side *s, struct ibv_qp *qp, uint64_t wr_id,
			  uint32_t len, uint32_t src_qp, bool imm,
			  uint32_t imm_data, struct ibv_wc *out)
{
	struct wc_want w = {
		.wr_id = wr_id,
		.status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV,
		.byte_len = GRH + len,
		.qp_num = qp->qp_num,
		.recv = true,
		.src_qp = src_qp,
		.imm = imm,
		.imm_data = imm_data,
		.flags = IBV_WC_GRH,
	};

	TRY(poll_one(rcq_of(s), out, E2E_WAIT_MS));
	TRY(check_wc(out, &w, "UD receive"));
	/* RoCEv2 over IPv4 says so in sl, as RoCE NICs do. */
	CHECK(out->sl == 2, "UD receive: sl %u, expected 2 (RoCEv2 IPv4)",
	      out->sl);
	CHECK(out->pkey_index == 0, "pkey_index %u", out->pkey_index);
	return 0;
}

static uint16_t ip_checksum(const uint8_t *h)
{
	uint32_t sum = 0;
	int i;

	for (i = 0; i < 20; i += 2)
		sum += (uint32_t)h[i] << 8 | h[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/*
 * The GRH area of a datagram from src to dst: 20 zero bytes, then the IPv4
 * header the packet had: no options, DF, TTL the hop limit, UDP, and a
 * total length of IP + UDP + BTH + DETH (+ ImmDt) + payload + pad + ICRC.
 */
static int check_grh(const uint8_t *grh, const uint8_t *src_gid,
		     const uint8_t *dst_gid, uint32_t len, bool imm,
		     uint8_t hop_limit)
{
	static const uint8_t zero[20];
	const uint8_t *ip = grh + 20;
	uint32_t total = 20 + 8 + 12 + 8 + (imm ? 4 : 0) + len + (-len & 3) + 4;

	TRY(check_bytes(grh, zero, 20, "GRH area before the IPv4 header"));
	CHECK(ip[0] == 0x45 && ip[1] == 0, "IPv4 version/IHL %#x TOS %#x",
	      ip[0], ip[1]);
	CHECK((uint32_t)(ip[2] << 8 | ip[3]) == total,
	      "IPv4 total length %u, expected %u",
	      ip[2] << 8 | ip[3], total);
	CHECK(ip[6] == 0x40 && ip[7] == 0, "IPv4 flags %#x %#x: DF only",
	      ip[6], ip[7]);
	CHECK(ip[8] == hop_limit && ip[9] == 17, "IPv4 TTL %u protocol %u",
	      ip[8], ip[9]);
	CHECK(ip_checksum(ip) == 0, "IPv4 header checksum does not verify");
	TRY(check_bytes(ip + 12, src_gid + 12, 4, "IPv4 source"));
	TRY(check_bytes(ip + 16, dst_gid + 12, 4, "IPv4 destination"));
	return 0;
}

/* ============================================================ send, GRH */

/* The path MTU of a UD QP: the port's active MTU (4096 on lo). */
static uint32_t path_mtu(const struct e2e_side *s)
{
	return 128u << s->o.mtu;
}

#define PATH_MTU UINT32_MAX /* a datagram of exactly the path MTU */
static const uint32_t basic_lens[] = { 1, 100, 0, 3, PATH_MTU };

static uint32_t basic_len(const struct e2e_side *s, size_t i)
{
	return basic_lens[i] == PATH_MTU ? path_mtu(s) : basic_lens[i];
}

static int basic_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	size_t i;

	ud_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	fill(s.buf, MTU, 7);
	TRY(e2e_sync(p, "receives posted"));
	for (i = 0; i < sizeof(basic_lens) / sizeof(basic_lens[0]); i++) {
		sge = sge_of(&s, 0, basic_len(&s, i));
		wr = ud_wr(&s, i, &sge, 1, s.ah, s.rem.qpn, E2E_QKEY);
		if (i == 1) { /* with an immediate */
			wr.opcode = IBV_WR_SEND_WITH_IMM;
			wr.imm_data = htobe32(0xfeed0000 + i);
		}
		if (i == 3) /* inline */
			wr.send_flags |= IBV_SEND_INLINE;
		TRY(post_send1(s.qp, &wr));
		TRY(expect_send_ok(&s, i, IBV_WC_SEND, basic_len(&s, i)));
	}
	/* A Q_Key with the high bit set means the QP's own (equal here). */
	sge = sge_of(&s, 0, 10);
	wr = ud_wr(&s, 9, &sge, 1, s.ah, s.rem.qpn, 0x80000000u);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 9, IBV_WC_SEND, 10));
	/* The answer, sent to an AH made from our datagram's completion. */
	TRY(post_recv_buf(&s, 100, MTU, GRH + 64));
	TRY(e2e_sync(p, "reply"));
	TRY(poll_one(rcq_of(&s), &wc, E2E_WAIT_MS));
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 100 &&
	      wc.src_qp == s.rem.qpn && wc.byte_len == GRH + 32,
	      "reply: status %s wr_id %llu src_qp %#x byte_len %u",
	      ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id,
	      wc.src_qp, wc.byte_len);
	TRY(check_fill(s.buf + MTU + GRH, 32, 99, "reply"));
	return e2e_close(&s);
}

static int basic_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	size_t i, slot = GRH + MTU;

	ud_opts(&o);
	o.buf_len = 8 * slot + 4096;
	TRY(e2e_setup(&s, p, &o));
	for (i = 0; i < 6; i++)
		TRY(post_recv_buf(&s, i, i * slot, slot));
	TRY(e2e_sync(p, "receives posted"));
	for (i = 0; i < sizeof(basic_lens) / sizeof(basic_lens[0]); i++) {
		char what[32];

		TRY(expect_ud_recv(&s, s.qp, i, basic_len(&s, i), s.rem.qpn,
				   i == 1, htobe32(0xfeed0000 + i), &wc));
		TRY(check_grh(s.buf + i * slot, s.rem.gid, s.gid.raw,
			      basic_len(&s, i), i == 1, 64));
		snprintf(what, sizeof(what), "datagram %zu", i);
		TRY(check_fill(s.buf + i * slot + GRH, basic_len(&s, i), 7, what));
	}
	TRY(expect_ud_recv(&s, s.qp, 5, 10, s.rem.qpn, false, 0, &wc));
	/* The way back, from what the receive says. */
	ah = ibv_create_ah_from_wc(s.pd, &wc, (struct ibv_grh *)(s.buf + 5 * slot),
				   1);
	CHECK(ah, "ibv_create_ah_from_wc: %s", strerror(errno));
	fill(s.buf + 7 * slot, 32, 99);
	sge = sge_of(&s, 7 * slot, 32);
	wr = ud_wr(&s, 200, &sge, 1, ah, wc.src_qp, E2E_QKEY);
	TRY(e2e_sync(p, "reply"));
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 200, IBV_WC_SEND, 32));
	CHECK(!ibv_destroy_ah(ah), "ibv_destroy_ah: %s", strerror(errno));
	return e2e_close(&s);
}

/* ============================================================== drops */

/* The port's qkey_viol_cntr. */
static uint32_t qkey_violations(struct ibv_context *ctx)
{
	struct ibv_port_attr a;

	if (ibv_query_port(ctx, 1, &a))
		return UINT32_MAX;
	return a.qkey_viol_cntr;
}

/*
 * A hw_counters file of the published tree (SYSFS_PATH, set by
 * ringnic-run); the device rewrites them when it goes idle.
 */
static long long hw_counter(const char *name)
{
	const char *root = getenv("SYSFS_PATH");
	char path[512];
	long long v = -1;
	FILE *f;

	if (!root)
		return -1;
	snprintf(path, sizeof(path),
		 "%s/class/infiniband/%s/ports/1/hw_counters/%s", root,
		 e2e_device, name);
	f = fopen(path, "re");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Wait for the counter to reach want. */
static int expect_counter(const char *name, long long want)
{
	uint64_t deadline = e2e_now_ms() + E2E_WAIT_MS;
	long long v;

	while ((v = hw_counter(name)) != want && e2e_now_ms() < deadline)
		e2e_sleep_ms(5);
	CHECK(v == want, "hw_counters/%s is %lld, expected %lld", name, v, want);
	return 0;
}

/*
 * The receiver counts what it drops, on its own device (which is another
 * one when the pair crosses the wire, tests/wire): the sender says what it
 * sent, the receiver sees its counters move.
 */
static int drops_req(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	ud_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	fill(s.buf, MTU + 1, 3);
	TRY(e2e_sync(p, "counters read"));

	/* No receive posted: dropped at the receiver, counted, sent all the same. */
	sge = sge_of(&s, 0, 64);
	wr = ud_wr(&s, 1, &sge, 1, s.ah, s.rem.qpn, E2E_QKEY);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 1, IBV_WC_SEND, 64));
	TRY(e2e_sync(p, "no receive"));
	TRY(e2e_sync(p, "one receive posted"));

	/* The wrong Q_Key: dropped, counted in the port's qkey_viol_cntr. */
	wr = ud_wr(&s, 2, &sge, 1, s.ah, s.rem.qpn, E2E_QKEY + 1);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 2, IBV_WC_SEND, 64));
	TRY(e2e_sync(p, "wrong Q_Key"));

	/* Larger than the receive buffer (64 + GRH): dropped, counted. */
	sge = sge_of(&s, 0, 65);
	wr = ud_wr(&s, 3, &sge, 1, s.ah, s.rem.qpn, E2E_QKEY);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 3, IBV_WC_SEND, 65));
	TRY(e2e_sync(p, "too long"));

	/* To a QPN nobody has: dropped in the network. */
	wr = ud_wr(&s, 4, &sge, 1, s.ah, 0xfffff0, E2E_QKEY);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 4, IBV_WC_SEND, 65));

	/* What fits arrives, in the receive posted before all this. */
	sge = sge_of(&s, 0, 64);
	wr = ud_wr(&s, 5, &sge, 1, s.ah, s.rem.qpn, E2E_QKEY);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 5, IBV_WC_SEND, 64));
	TRY(e2e_sync(p, "received"));
	return e2e_close(&s);
}

static int drops_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_wc wc;
	long long oob, lendrop;
	uint64_t deadline;
	uint32_t qviol;

	ud_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	oob = hw_counter("out_of_buffer");
	lendrop = hw_counter("rx_length_drops");
	qviol = qkey_violations(s.ctx);
	CHECK(oob >= 0 && lendrop >= 0 && qviol != UINT32_MAX,
	      "counters not readable (SYSFS_PATH %s)", getenv("SYSFS_PATH"));
	TRY(e2e_sync(p, "counters read"));
	TRY(e2e_sync(p, "no receive"));
	TRY(expect_counter("out_of_buffer", oob + 1));
	TRY(post_recv_buf(&s, 7, 0, GRH + 64));
	TRY(e2e_sync(p, "one receive posted"));
	TRY(e2e_sync(p, "wrong Q_Key"));
	deadline = e2e_now_ms() + E2E_WAIT_MS;
	while (qkey_violations(s.ctx) != qviol + 1 && e2e_now_ms() < deadline)
		e2e_sleep_ms(5);
	CHECK(qkey_violations(s.ctx) == qviol + 1,
	      "qkey_viol_cntr %u, expected %u", qkey_violations(s.ctx), qviol + 1);
	TRY(e2e_sync(p, "too long"));
	TRY(expect_counter("rx_length_drops", lendrop + 1));
	TRY(expect_ud_recv(&s, s.qp, 7, 64, s.rem.qpn, false, 0, &wc));
	TRY(check_fill(s.buf + GRH, 64, 3, "the datagram that fit"));
	TRY(expect_no_wc(rcq_of(&s), 50, "receive CQ"));
	TRY(e2e_sync(p, "received"));
	return e2e_close(&s);
}

/* ================================================= sender's own errors */

static int sender_errors(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_send_wr wr, *bad;
	struct ibv_qp_attr attr;
	struct ibv_pd *other;
	struct ibv_ah *foreign;
	struct ibv_sge sge;
	struct ibv_wc wc;
	int ret;

	ud_opts(&o);
	o.buf_len = 2 * MTU;
	TRY(e2e_open(&s, p, &o));
	memcpy(s.rem.gid, s.gid.raw, 16); /* to ourselves */
	s.rem.qpn = s.qp->qp_num;
	TRY(e2e_connect(&s));
	TRY(post_recv_buf(&s, 50, MTU, MTU));

	/* Reads and atomics have no place on UD: refused when posted. */
	sge = sge_of(&s, 0, 8);
	wr = ud_wr(&s, 1, &sge, 1, s.ah, s.qp->qp_num, E2E_QKEY);
	wr.opcode = IBV_WR_RDMA_READ;
	ret = ibv_post_send(s.qp, &wr, &bad);
	CHECK(ret == EINVAL && bad == &wr, "RDMA READ on UD: %s", strerror(ret));

	/* Larger than the path MTU: an error completion, and SQE. */
	sge = sge_of(&s, 0, path_mtu(&s) + 1);
	wr = ud_wr(&s, 2, &sge, 1, s.ah, s.qp->qp_num, E2E_QKEY);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_err(scq_of(&s), 2, IBV_WC_LOC_LEN_ERR, s.qp->qp_num,
		       "send larger than the MTU"));
	TRY(expect_qp_state(s.qp, IBV_QPS_SQE));
	/* In SQE sends are flushed... */
	sge = sge_of(&s, 0, 16);
	wr = ud_wr(&s, 3, &sge, 1, s.ah, s.qp->qp_num, E2E_QKEY);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_err(scq_of(&s), 3, IBV_WC_WR_FLUSH_ERR, s.qp->qp_num,
		       "send in SQE"));
	/* ... and modify_qp brings the QP back to RTS. */
	attr = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS,
				     .cur_qp_state = IBV_QPS_SQE };
	ret = ibv_modify_qp(s.qp, &attr, IBV_QP_STATE | IBV_QP_CUR_STATE);
	CHECK(!ret, "modify_qp SQE -> RTS: %s", strerror(ret));

	/* An AH of another PD: a local QP error. */
	other = ibv_alloc_pd(s.ctx);
	CHECK(other, "ibv_alloc_pd: %s", strerror(errno));
	foreign = e2e_ah(other, s.gid.raw);
	TRY(!foreign);
	wr = ud_wr(&s, 4, &sge, 1, foreign, s.qp->qp_num, E2E_QKEY);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_err(scq_of(&s), 4, IBV_WC_LOC_QP_OP_ERR, s.qp->qp_num,
		       "AH of another PD"));
	TRY(expect_qp_state(s.qp, IBV_QPS_SQE));
	ret = ibv_modify_qp(s.qp, &attr, IBV_QP_STATE);
	CHECK(!ret, "modify_qp SQE -> RTS: %s", strerror(ret));
	CHECK(!ibv_destroy_ah(foreign), "ibv_destroy_ah");
	CHECK(!ibv_dealloc_pd(other), "ibv_dealloc_pd");

	/* To itself: the receive posted at the start takes it. */
	fill(s.buf, 16, 11);
	wr = ud_wr(&s, 5, &sge, 1, s.ah, s.qp->qp_num, E2E_QKEY);
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 5, IBV_WC_SEND, 16));
	TRY(expect_ud_recv(&s, s.qp, 50, 16, s.qp->qp_num, false, 0, &wc));
	TRY(check_grh(s.buf + MTU, s.gid.raw, s.gid.raw, 16, false, 64));
	TRY(check_fill(s.buf + MTU + GRH, 16, 11, "sent to self"));
	return e2e_close(&s);
}

/* =============================================== one to many, many to one */

#define FAN 3

/* FAN more UD QPs on the side's PD and CQs, in RTS. */
static int more_qps(struct e2e_side *s, struct ibv_qp **qp)
{
	struct ibv_qp_init_attr attr = {
		.send_cq = s->scq,
		.recv_cq = s->rcq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_qp_attr rtr = { .qp_state = IBV_QPS_RTR };
	struct ibv_qp_attr rts = { .qp_state = IBV_QPS_RTS, .sq_psn = 1 };
	int i;

	for (i = 0; i < FAN; i++) {
		qp[i] = ibv_create_qp(s->pd, &attr);
		CHECK(qp[i], "ibv_create_qp UD: %s", strerror(errno));
		TRY(qp_to_init(qp[i], 0));
		CHECK(!ibv_modify_qp(qp[i], &rtr, IBV_QP_STATE), "to RTR");
		CHECK(!ibv_modify_qp(qp[i], &rts, IBV_QP_STATE | IBV_QP_SQ_PSN),
		      "to RTS");
	}
	return 0;
}

static int destroy_qps(struct ibv_qp **qp)
{
	int i;

	for (i = 0; i < FAN; i++)
		CHECK(!ibv_destroy_qp(qp[i]), "ibv_destroy_qp");
	return 0;
}

/* Role 0 sends to the FAN QPs of role 1, one AH for all. */
static int fan_out_req(struct e2e_proc *p)
{
	uint32_t qpns[FAN];
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	int i;

	ud_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(msg_recv(p->peer, qpns, sizeof(qpns), E2E_WAIT_MS));
	for (i = 0; i < FAN; i++) {
		fill(s.buf + i * 256, 100 + i, 40 + i);
		sge = sge_of(&s, i * 256, 100 + i);
		wr = ud_wr(&s, i, &sge, 1, s.ah, qpns[i], E2E_QKEY);
		TRY(post_send1(s.qp, &wr));
	}
	for (i = 0; i < FAN; i++)
		TRY(expect_send_ok(&s, i, IBV_WC_SEND, 100 + i));
	TRY(e2e_sync(p, "received"));
	return e2e_close(&s);
}

static int fan_out_resp(struct e2e_proc *p)
{
	struct ibv_qp *qp[FAN];
	uint32_t qpns[FAN];
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_sge sge;
	struct ibv_wc wc;
	int i, j;

	ud_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(more_qps(&s, qp));
	for (i = 0; i < FAN; i++) {
		sge = sge_of(&s, i * 1024, 1024);
		TRY(post_recv1(qp[i], i, &sge, 1));
		qpns[i] = qp[i]->qp_num;
	}
	TRY(msg_send(p->peer, qpns, sizeof(qpns)));
	for (i = 0; i < FAN; i++) {
		TRY(poll_one(rcq_of(&s), &wc, E2E_WAIT_MS));
		j = (int)wc.wr_id;
		CHECK(wc.status == IBV_WC_SUCCESS && j < FAN &&
		      wc.qp_num == qp[j]->qp_num && wc.src_qp == s.rem.qpn &&
		      wc.byte_len == (uint32_t)(GRH + 100 + j) &&
		      wc.wc_flags & IBV_WC_GRH,
		      "fan-out receive: status %s wr_id %d qp %#x src %#x len %u",
		      ibv_wc_status_str(wc.status), j, wc.qp_num, wc.src_qp,
		      wc.byte_len);
		TRY(check_fill(s.buf + j * 1024 + GRH, 100 + j, 40 + j, "fan-out"));
	}
	TRY(e2e_sync(p, "received"));
	TRY(destroy_qps(qp));
	return e2e_close(&s);
}

/* The FAN QPs of role 0 all send to role 1's one QP. */
static int fan_in_req(struct e2e_proc *p)
{
	struct ibv_qp *qp[FAN];
	uint32_t qpns[FAN];
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	int i;

	ud_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(more_qps(&s, qp));
	for (i = 0; i < FAN; i++)
		qpns[i] = qp[i]->qp_num;
	TRY(msg_send(p->peer, qpns, sizeof(qpns)));
	TRY(e2e_sync(p, "receives posted"));
	for (i = 0; i < FAN; i++) {
		fill(s.buf + i * 256, 50, 60 + i);
		sge = sge_of(&s, i * 256, 50);
		wr = ud_wr(&s, i, &sge, 1, s.ah, s.rem.qpn, E2E_QKEY);
		TRY(post_send1(qp[i], &wr));
	}
	for (i = 0; i < FAN; i++) {
		TRY(poll_one(scq_of(&s), &wc, E2E_WAIT_MS));
		CHECK(wc.status == IBV_WC_SUCCESS, "send of QP %#x: %s",
		      wc.qp_num, ibv_wc_status_str(wc.status));
	}
	TRY(e2e_sync(p, "received"));
	TRY(destroy_qps(qp));
	return e2e_close(&s);
}

static int fan_in_resp(struct e2e_proc *p)
{
	uint32_t qpns[FAN];
	bool seen[FAN] = { false };
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_wc wc;
	int i, j, k;

	ud_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(msg_recv(p->peer, qpns, sizeof(qpns), E2E_WAIT_MS));
	for (i = 0; i < FAN; i++)
		TRY(post_recv_buf(&s, i, i * 256, 256));
	TRY(e2e_sync(p, "receives posted"));
	for (i = 0; i < FAN; i++) {
		TRY(poll_one(rcq_of(&s), &wc, E2E_WAIT_MS));
		CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == GRH + 50,
		      "fan-in receive: %s, %u bytes", ibv_wc_status_str(wc.status),
		      wc.byte_len);
		for (j = 0; j < FAN && qpns[j] != wc.src_qp; j++)
			;
		CHECK(j < FAN && !seen[j], "fan-in: src_qp %#x unknown or twice",
		      wc.src_qp);
		seen[j] = true;
		k = (int)wc.wr_id;
		TRY(check_fill(s.buf + k * 256 + GRH, 50, 60 + j, "fan-in"));
	}
	TRY(e2e_sync(p, "received"));
	return e2e_close(&s);
}

/* ======================================== sends posted, then the QP goes */

#define GONE_ROUNDS 50

/*
 * Role 0 posts one datagram from each of FAN fresh QPs and destroys them at
 * once, before any completion: a rung doorbell is work the device took, as
 * a NIC's would be on the wire already.  libfabric's ofi_rxd acks its peer's
 * last message and closes its endpoint straight after.
 */
static int gone_req(struct e2e_proc *p)
{
	struct ibv_qp *qp[FAN];
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	int round, i;

	ud_opts(&o);
	o.sig_all = 0;
	TRY(e2e_setup(&s, p, &o));
	fill(s.buf, 64, 70);
	sge = sge_of(&s, 0, 64);
	for (round = 0; round < GONE_ROUNDS; round++) {
		TRY(e2e_sync(p, "receives posted"));
		TRY(more_qps(&s, qp));
		for (i = 0; i < FAN; i++) {
			wr = ud_wr(&s, i, &sge, 1, s.ah, s.rem.qpn, E2E_QKEY);
			wr.send_flags = 0;
			TRY(post_send1(qp[i], &wr));
		}
		TRY(destroy_qps(qp));
	}
	TRY(e2e_sync(p, "received"));
	return e2e_close(&s);
}

static int gone_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_wc wc;
	int round, i;

	ud_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	for (round = 0; round < GONE_ROUNDS; round++) {
		for (i = 0; i < FAN; i++)
			TRY(post_recv_buf(&s, i, i * 256, 256));
		TRY(e2e_sync(p, "receives posted"));
		for (i = 0; i < FAN; i++) {
			CHECK(!poll_one(rcq_of(&s), &wc, E2E_WAIT_MS),
			      "round %d: datagram %d of %d lost with its QP",
			      round, i + 1, FAN);
			CHECK(wc.status == IBV_WC_SUCCESS && wc.byte_len == GRH + 64,
			      "round %d: %s, %u bytes", round,
			      ibv_wc_status_str(wc.status), wc.byte_len);
			TRY(check_fill(s.buf + wc.wr_id * 256 + GRH, 64, 70,
				       "datagram of a destroyed QP"));
		}
	}
	TRY(e2e_sync(p, "received"));
	return e2e_close(&s);
}

#define PAIR(n, req, resp)                                                     \
	{ .group = "ud", .name = n, .nroles = 2, .role = { req, resp } }

const struct e2e_test e2e_ud_tests[] = {
	PAIR("send_grh", basic_req, basic_resp),
	PAIR("receiver_drops", drops_req, drops_resp),
	{ .group = "ud", .name = "sender_errors", .nroles = 1,
	  .role = { sender_errors } },
	PAIR("one_to_many", fan_out_req, fan_out_resp),
	PAIR("many_to_one", fan_in_req, fan_in_resp),
	PAIR("sent_then_destroyed", gone_req, gone_resp),
	{ 0 },
};
