// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Injected faults (ringnicdv_set_qp_faults): each kind gives the effect
 * the IB spec gives the real fault (a retry after the ACK timeout, a
 * sequence error NAK and go-back-N, an RNR wait, a NAK's completion
 * status, an error completion), with every message delivered once and
 * intact, the same on the local path as on the wire (tests/wire runs this
 * group across two devices), and the same twice under the same seed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <infiniband/ringnicdv.h>

#include "e2e.h"

#define TIMEOUT 14 /* 67 ms: the ACK timeout a lost packet costs */

enum side { REQUESTER, RESPONDER };

/* What the QP's counters must say after the case; -1: not checked. */
struct counts {
	int ack_timeouts, seq_naks, retries, rnr_naks, remote_naks;
	int duplicate_requests, out_of_seq_requests, naks_sent, injected;
};

struct fault_case {
	enum side side; /* whose QP has the rule */
	struct ringnicdv_fault rule;
	uint32_t len; /* of the one SEND */
	enum ibv_wc_status status; /* of the SEND */
	bool delivered; /* the receive completes, else it is flushed (ERR)
			 * or never used */
	bool responder_fails; /* the responder goes to ERR */
	struct counts req, resp;
	/* The rules are cleared this long after the SEND is posted (0: not),
	 * while what they did is still pending.
	 */
	unsigned int clear_after_ms;
};

#define RULE(k, n, v) { .kind = k, .nth = n, .value = v }
#define EVERY(k, v) { .kind = k, .share = 1000000, .value = v }
#define ANY -1
#define NO_COUNTS                                                              \
	{ 0, 0, 0, 0, 0, 0, 0, 0, 0 }

static const struct fault_case cases[] = {
	{ REQUESTER, RULE(RINGNICDV_FAULT_DROP, 1, 0), 100,
	  IBV_WC_SUCCESS, true, false,
	  { 1, 0, 1, 0, 0, 0, 0, 0, 1 }, NO_COUNTS, 0 },
	{ RESPONDER, RULE(RINGNICDV_FAULT_DROP, 1, 0), 100,
	  IBV_WC_SUCCESS, true, false,
	  { 1, 0, 1, 0, 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0, 1, 0, 0, 1 }, 0 },
	/* The second of three packets: the third comes after a gap. */
	{ REQUESTER, RULE(RINGNICDV_FAULT_DROP, 2, 0), 3000,
	  IBV_WC_SUCCESS, true, false,
	  { 0, 1, 1, 0, 0, 0, 0, 0, 1 }, { 0, 0, 0, 0, 0, 0, 1, 0, 0 }, 0 },
	{ REQUESTER, RULE(RINGNICDV_FAULT_CORRUPT_ICRC, 1, 0), 100,
	  IBV_WC_SUCCESS, true, false,
	  { 1, 0, 1, 0, 0, 0, 0, 0, 1 }, NO_COUNTS, 0 },
	{ REQUESTER, RULE(RINGNICDV_FAULT_DUPLICATE, 1, 0), 100,
	  IBV_WC_SUCCESS, true, false,
	  { 0, 0, 0, 0, 0, 0, 0, 0, 1 }, { 0, 0, 0, 0, 0, 1, 0, 0, 0 }, 0 },
	/* Held behind the next packet: a gap, then go-back-N (how many NAKs
	 * depends on when the requester reads them). */
	{ REQUESTER, RULE(RINGNICDV_FAULT_REORDER, 1, 0), 3000,
	  IBV_WC_SUCCESS, true, false,
	  { 0, ANY, ANY, 0, 0, 0, 0, 0, 1 }, { 0, 0, 0, 0, 0, ANY, ANY, 0, 0 }, 0 },
	/* Late, within the ACK timeout: no retry. */
	{ REQUESTER, RULE(RINGNICDV_FAULT_DELAY, 1, 20000), 100,
	  IBV_WC_SUCCESS, true, false,
	  { 0, 0, 0, 0, 0, 0, 0, 0, 1 }, NO_COUNTS, 0 },
	{ RESPONDER, RULE(RINGNICDV_FAULT_RNR, 1, 0), 100, IBV_WC_SUCCESS,
	  true, false,
	  { 0, 0, 0, 1, 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0, 0, 1 }, 0 },
	{ RESPONDER,
	  RULE(RINGNICDV_FAULT_NAK, 1, RINGNICDV_NAK_PSN_SEQUENCE), 100,
	  IBV_WC_SUCCESS, true, false,
	  { 0, 1, 1, 0, 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0, 0, 1 }, 0 },
	{ RESPONDER,
	  RULE(RINGNICDV_FAULT_NAK, 1, RINGNICDV_NAK_REMOTE_ACCESS), 100,
	  IBV_WC_REM_ACCESS_ERR, false, true,
	  { 0, 0, 0, 0, 1, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0, 0, 1 }, 0 },
	{ RESPONDER,
	  RULE(RINGNICDV_FAULT_NAK, 1, RINGNICDV_NAK_INVALID_REQUEST), 100,
	  IBV_WC_REM_INV_REQ_ERR, false, true,
	  { 0, 0, 0, 0, 1, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0, 0, 0, 0, 1 }, 0 },
	{ REQUESTER,
	  RULE(RINGNICDV_FAULT_WR_ERROR, 1, IBV_WC_LOC_PROT_ERR), 100,
	  IBV_WC_LOC_PROT_ERR, false, false,
	  { 0, 0, 0, 0, 0, 0, 0, 0, 1 }, NO_COUNTS, 0 },
	/* The ACK lost, the rules gone before the retry: still once. */
	{ RESPONDER, RULE(RINGNICDV_FAULT_DROP, 1, 0), 100, IBV_WC_SUCCESS,
	  true, false,
	  { 1, 0, 1, 0, 0, 0, 0, 0, 0 }, { 0, 0, 0, 0, 0, 1, 0, 0, 1 }, 10 },
	/* Every packet late, the retries' too: it arrives all the same. */
	{ REQUESTER, EVERY(RINGNICDV_FAULT_DELAY, 1000), 3000, IBV_WC_SUCCESS,
	  true, false,
	  { ANY, ANY, ANY, 0, 0, 0, 0, 0, ANY }, { 0, 0, 0, 0, 0, ANY, ANY, 0, 0 }, 0 },
};
#define N_CASES (sizeof(cases) / sizeof(cases[0]))

static int set_rules(struct ibv_qp *qp, const struct ringnicdv_fault *rules,
		     uint32_t n, uint64_t seed)
{
	struct ringnicdv_faults f = { .seed = seed, .num_faults = n };
	int ret;

	if (n)
		memcpy(f.faults, rules, n * sizeof(*rules));
	ret = ringnicdv_set_qp_faults(qp, &f, sizeof(f));
	CHECK(!ret, "ringnicdv_set_qp_faults: %s", strerror(ret));
	return 0;
}

static int query(struct ibv_qp *qp, struct ringnicdv_qp_counters *c)
{
	int ret = ringnicdv_query_qp_counters(qp, c, sizeof(*c));

	CHECK(!ret, "ringnicdv_query_qp_counters: %s", strerror(ret));
	return 0;
}

static int expect_counts(struct ibv_qp *qp, const struct counts *want,
			 const char *who)
{
	struct ringnicdv_qp_counters c;
	const struct {
		const char *name;
		uint64_t got;
		int want;
	} f[] = {
		{ "ack_timeouts", 0, want->ack_timeouts },
		{ "seq_naks", 0, want->seq_naks },
		{ "retries", 0, want->retries },
		{ "rnr_naks", 0, want->rnr_naks },
		{ "remote_naks", 0, want->remote_naks },
		{ "duplicate_requests", 0, want->duplicate_requests },
		{ "out_of_seq_requests", 0, want->out_of_seq_requests },
		{ "naks_sent", 0, want->naks_sent },
		{ "injected_faults", 0, want->injected },
	};
	uint64_t got[9];
	size_t i;

	TRY(query(qp, &c));
	got[0] = c.ack_timeouts;
	got[1] = c.seq_naks;
	got[2] = c.retries;
	got[3] = c.rnr_naks;
	got[4] = c.remote_naks;
	got[5] = c.duplicate_requests;
	got[6] = c.out_of_seq_requests;
	got[7] = c.naks_sent;
	got[8] = c.injected_faults;
	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		CHECK(f[i].want == ANY || got[i] == (uint64_t)f[i].want,
		      "%s %s: %llu, expected %d", who, f[i].name,
		      (unsigned long long)got[i], f[i].want);
	return 0;
}

static void fault_opts(struct e2e_opts *o)
{
	e2e_default_opts(o);
	o->timeout = TIMEOUT;
	o->retry_cnt = 7;
	o->rnr_retry = 7;
	o->min_rnr_timer = 1;
	o->mtu = IBV_MTU_1024; /* 3000 bytes: three packets */
}

static struct ibv_send_wr send_of(struct ibv_sge *sge, uint64_t wr_id)
{
	return (struct ibv_send_wr){
		.wr_id = wr_id,
		.sg_list = sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
}

static int fault_req(struct e2e_proc *p, const struct fault_case *c)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct e2e_opts o;
	struct e2e_side s;
	uint64_t t0;

	fault_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	if (c->side == REQUESTER)
		TRY(set_rules(s.qp, &c->rule, 1, 0));
	fill(s.buf, c->len, 11);
	sge = sge_of(&s, 0, c->len);
	wr = send_of(&sge, 1);
	TRY(e2e_sync(p, "ready"));
	t0 = e2e_now_us();
	TRY(post_send1(s.qp, &wr));
	if (c->status == IBV_WC_SUCCESS)
		TRY(expect_send_ok(&s, 1, IBV_WC_SEND, c->len));
	else
		TRY(expect_err(scq_of(&s), 1, c->status, s.qp->qp_num,
			       "the faulty SEND"));
	/* The delay happened (a lower bound: never a timing assertion on
	 * speed).
	 */
	if (c->rule.kind == RINGNICDV_FAULT_DELAY)
		CHECK(e2e_now_us() - t0 >= c->rule.value,
		      "delayed SEND completed after %llu us",
		      (unsigned long long)(e2e_now_us() - t0));
	TRY(expect_counts(s.qp, &c->req, "requester"));
	TRY(e2e_sync(p, "sent"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int fault_resp(struct e2e_proc *p, const struct fault_case *c)
{
	struct e2e_opts o;
	struct e2e_side s;

	fault_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(post_recv_buf(&s, 9, 0, 4096));
	if (c->side == RESPONDER)
		TRY(set_rules(s.qp, &c->rule, 1, 0));
	TRY(e2e_sync(p, "ready"));
	if (c->clear_after_ms) {
		e2e_sleep_ms(c->clear_after_ms);
		TRY(set_rules(s.qp, NULL, 0, 0));
	}
	TRY(e2e_sync(p, "sent"));
	if (c->delivered) {
		TRY(expect_recv_ok(&s, 9, IBV_WC_RECV, c->len, false, 0));
		TRY(check_fill(s.buf, c->len, 11, "the message"));
	} else if (c->responder_fails) {
		TRY(expect_err(rcq_of(&s), 9, IBV_WC_WR_FLUSH_ERR,
			       s.qp->qp_num, "receive of a refused SEND"));
	}
	/* Once, whatever the retries and duplicates. */
	TRY(expect_no_wc(rcq_of(&s), 100, "receive CQ"));
	TRY(expect_qp_state(s.qp, c->responder_fails ? IBV_QPS_ERR :
						       IBV_QPS_RTS));
	TRY(expect_counts(s.qp, &c->resp, "responder"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

#define FAULT_FNS(i)                                                           \
	static int fault_req_##i(struct e2e_proc *p)                           \
	{                                                                      \
		return fault_req(p, &cases[i]);                                \
	}                                                                      \
	static int fault_resp_##i(struct e2e_proc *p)                          \
	{                                                                      \
		return fault_resp(p, &cases[i]);                               \
	}
FAULT_FNS(0) FAULT_FNS(1) FAULT_FNS(2) FAULT_FNS(3) FAULT_FNS(4) FAULT_FNS(5)
FAULT_FNS(6) FAULT_FNS(7) FAULT_FNS(8) FAULT_FNS(9) FAULT_FNS(10)
FAULT_FNS(11) FAULT_FNS(12) FAULT_FNS(13)
_Static_assert(N_CASES == 14, "one FAULT_FNS per case");

/* ============================================================ the seed */

#define SEEDED_SENDS 20

/*
 * A share of the requester's packets lost, drawn from a seed: messages
 * sent one at a time, so that the packets (and so the draws) come in the
 * same order.  Twice with the same seed: the same faults, the same
 * retries; every message arrives once.
 */
static int seeded_round(struct e2e_side *s, struct ringnicdv_qp_counters *d)
{
	struct ringnicdv_fault rule = { .kind = RINGNICDV_FAULT_DROP,
					.share = 300000 };
	struct ringnicdv_qp_counters before, after;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	int i;

	TRY(set_rules(s->qp, &rule, 1, 42));
	TRY(query(s->qp, &before));
	for (i = 0; i < SEEDED_SENDS; i++) {
		fill(s->buf, 64, i);
		sge = sge_of(s, 0, 64);
		wr = send_of(&sge, i);
		TRY(post_send1(s->qp, &wr));
		TRY(expect_send_ok(s, i, IBV_WC_SEND, 64));
	}
	TRY(query(s->qp, &after));
	d->injected_faults = after.injected_faults - before.injected_faults;
	d->ack_timeouts = after.ack_timeouts - before.ack_timeouts;
	d->retries = after.retries - before.retries;
	return 0;
}

static int seeded_req(struct e2e_proc *p)
{
	struct ringnicdv_qp_counters one, two;
	struct e2e_opts o;
	struct e2e_side s;

	fault_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(e2e_sync(p, "ready"));
	TRY(seeded_round(&s, &one));
	TRY(e2e_sync(p, "again"));
	TRY(seeded_round(&s, &two));
	CHECK(one.injected_faults > 0 && one.ack_timeouts == one.injected_faults &&
	      one.retries == one.injected_faults,
	      "%llu drops, %llu timeouts, %llu retries",
	      (unsigned long long)one.injected_faults,
	      (unsigned long long)one.ack_timeouts,
	      (unsigned long long)one.retries);
	CHECK(two.injected_faults == one.injected_faults &&
	      two.ack_timeouts == one.ack_timeouts,
	      "same seed: %llu drops then %llu",
	      (unsigned long long)one.injected_faults,
	      (unsigned long long)two.injected_faults);
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int seeded_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	int round, i;

	fault_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	for (round = 0; round < 2; round++) {
		for (i = 0; i < SEEDED_SENDS; i++)
			TRY(post_recv_buf(&s, i, (size_t)i * 64, 64));
		TRY(e2e_sync(p, round ? "again" : "ready"));
		for (i = 0; i < SEEDED_SENDS; i++) {
			char what[32];

			TRY(expect_recv_ok(&s, i, IBV_WC_RECV, 64, false, 0));
			snprintf(what, sizeof(what), "message %d", i);
			TRY(check_fill(s.buf + (size_t)i * 64, 64, i, what));
		}
	}
	TRY(expect_no_wc(rcq_of(&s), 100, "receive CQ"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* ================================================================== UD */

#define GRH 40
#define UD_SENDS 3

/*
 * Datagrams: the first lost, the second doubled.  The receiver gets the
 * second twice and the third, each whole; the sender's completions all
 * succeed (UD knows nothing of what happened on the way).
 */
static int ud_req(struct e2e_proc *p)
{
	static const struct ringnicdv_fault rules[] = {
		RULE(RINGNICDV_FAULT_DROP, 1, 0),
		RULE(RINGNICDV_FAULT_DUPLICATE, 2, 0),
	};
	struct ringnicdv_qp_counters c;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct e2e_opts o;
	struct e2e_side s;
	int i;

	e2e_default_opts(&o);
	o.qp_type = IBV_QPT_UD;
	TRY(e2e_setup(&s, p, &o));
	TRY(set_rules(s.qp, rules, 2, 0));
	TRY(e2e_sync(p, "ready"));
	for (i = 0; i < UD_SENDS; i++) {
		fill(s.buf + i * 256, 100, i);
		sge = sge_of(&s, i * 256, 100);
		wr = send_of(&sge, i);
		wr.wr.ud.ah = s.ah;
		wr.wr.ud.remote_qpn = s.rem.qpn;
		wr.wr.ud.remote_qkey = E2E_QKEY;
		TRY(post_send1(s.qp, &wr));
		TRY(expect_send_ok(&s, i, IBV_WC_SEND, 100));
	}
	TRY(query(s.qp, &c));
	CHECK(c.injected_faults == 2, "%llu faults injected, expected 2",
	      (unsigned long long)c.injected_faults);
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int ud_resp(struct e2e_proc *p)
{
	static const int seeds[] = { 1, 1, 2 }; /* what arrives, in order */
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_wc wc;
	int i;

	e2e_default_opts(&o);
	o.qp_type = IBV_QPT_UD;
	TRY(e2e_setup(&s, p, &o));
	for (i = 0; i < UD_SENDS + 1; i++)
		TRY(post_recv_buf(&s, i, (size_t)i * 256, 256));
	TRY(e2e_sync(p, "ready"));
	for (i = 0; i < UD_SENDS; i++) {
		char what[32];

		TRY(poll_one(rcq_of(&s), &wc, E2E_WAIT_MS));
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i &&
		      wc.byte_len == GRH + 100,
		      "datagram %d: status %s wr_id %llu byte_len %u", i,
		      ibv_wc_status_str(wc.status),
		      (unsigned long long)wc.wr_id, wc.byte_len);
		snprintf(what, sizeof(what), "datagram %d", i);
		TRY(check_fill(s.buf + i * 256 + GRH, 100, seeds[i], what));
	}
	TRY(expect_no_wc(rcq_of(&s), 100, "receive CQ"));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* ================================================================ refused */

/* What the verb refuses, and a QP of another device's provider. */
static int bad_rules(struct e2e_proc *p)
{
	static const struct ringnicdv_fault bad[] = {
		{ .nth = 1 }, /* no kind */
		{ .kind = RINGNICDV_FAULT_WR_ERROR + 1, .nth = 1 },
		{ .kind = RINGNICDV_FAULT_DROP }, /* neither nth nor share */
		{ .kind = RINGNICDV_FAULT_DROP, .share = 1000001 },
		RULE(RINGNICDV_FAULT_DROP, 1, 5), /* a value it takes none of */
		RULE(RINGNICDV_FAULT_DELAY, 1, 0), /* no delay */
		RULE(RINGNICDV_FAULT_NAK, 1, 4),
		RULE(RINGNICDV_FAULT_WR_ERROR, 1, 0), /* "fails" with SUCCESS */
		{ .kind = RINGNICDV_FAULT_DROP, .nth = 1, .reserved = 1 },
	};
	struct ringnicdv_faults f = { .num_faults = 1 };
	struct e2e_opts o;
	struct e2e_side s;
	size_t i;
	int ret;

	fault_opts(&o);
	TRY(e2e_open(&s, p, &o));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f.faults[0] = bad[i];
		ret = ringnicdv_set_qp_faults(s.qp, &f, sizeof(f));
		CHECK(ret == EINVAL, "rule %zu: %s, expected EINVAL", i,
		      strerror(ret));
	}
	f.faults[0] = (struct ringnicdv_fault)RULE(RINGNICDV_FAULT_DROP, 1, 0);
	f.num_faults = RINGNICDV_MAX_FAULTS + 1;
	ret = ringnicdv_set_qp_faults(s.qp, &f, sizeof(f));
	CHECK(ret == EINVAL, "%u rules: %s", f.num_faults, strerror(ret));
	f.num_faults = 1;
	f.comp_mask = 1;
	ret = ringnicdv_set_qp_faults(s.qp, &f, sizeof(f));
	CHECK(ret == EINVAL, "comp_mask 1: %s", strerror(ret));
	f.comp_mask = 0;
	ret = ringnicdv_set_qp_faults(s.qp, &f, sizeof(f));
	CHECK(!ret, "a good rule: %s", strerror(ret));
	f.num_faults = 0; /* clears */
	ret = ringnicdv_set_qp_faults(s.qp, &f, sizeof(f));
	CHECK(!ret, "no rules: %s", strerror(ret));
	return e2e_close(&s);
}

#define PAIR(n, req, resp)                                                     \
	{ .group = "faults", .name = n, .nroles = 2, .role = { req, resp } }
#define CASE(i, n) PAIR(n, fault_req_##i, fault_resp_##i)

/* In the order of cases[]. */
const struct e2e_test e2e_fault_tests[] = {
	CASE(0, "drop_request"),
	CASE(1, "drop_ack"),
	CASE(2, "drop_middle"),
	CASE(3, "corrupt_icrc"),
	CASE(4, "duplicate"),
	CASE(5, "reorder"),
	CASE(6, "delay"),
	CASE(7, "rnr"),
	CASE(8, "nak_sequence"),
	CASE(9, "nak_remote_access"),
	CASE(10, "nak_invalid_request"),
	CASE(11, "wr_error"),
	CASE(12, "drop_ack_then_clear"),
	CASE(13, "delay_every_packet"),
	PAIR("seeded_drops", seeded_req, seeded_resp),
	PAIR("ud_drop_duplicate", ud_req, ud_resp),
	{ .group = "faults", .name = "bad_rules", .nroles = 1,
	  .role = { bad_rules } },
	{ 0 },
};
