// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: a device against a peer that lies.  A whole device in
 * this process (tests/unit/device_fixture.h) has an RC, a UC, a UD and an
 * XRC target QP on the wire, connected to 198.18.0.2, MRs and memory
 * windows in one arena with canaries between them, and the CM on QP1.  The
 * input is a run of records, each one of: a RoCEv2 packet (any opcode, to
 * any of those QPs, to QP1 or to a QPN of its choosing, from the peer's
 * address or another, its ICRC valid so that it gets past the parser, its
 * PSN, addresses, keys and lengths aimed at the edges: see packet()), the
 * end of a receive batch, work posted on the RC QP (so that responses and
 * ACKs find something outstanding), receives posted, or a QP moved to ERR
 * or reset and connected again.  The packets enter where the sockets'
 * datagrams do (rn_wire_receive_packet).
 *
 * After every record:
 *  - no byte of the arena the peer may not write has changed (canaries,
 *    MRs without remote write, the other PD's, the deregistered one's,
 *    the invalidated window's, the source of our own sends);
 *  - no packet the device sent carries 8 bytes of what the peer may not
 *    read: those are filled with a pattern random to each input (so the
 *    fuzzer cannot learn it and write it itself);
 *  - every packet had an effect a user can see or was counted: a counter
 *    moved, a packet or a completion or an event came out, or the QP's
 *    transport state changed (QP1's MADs are fuzz_cm's, and not checked).
 * At the end the device is torn down with no timer left armed and no
 * memory charged (device_fixture.c), and no leak (LeakSanitizer).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/random.h>

#include "cm/cm.h"
#include "device_fixture.h"

#define PEER_QPN 0x00abc0u
#define QKEY 0x11111111u
#define SQ_PSN 0xfffff0u /* close to the wrap */
#define RQ_PSN 0x000100u
#define MTU 1024u /* IBV_MTU_1024 */
#define CQ_ENTRIES 256u
#define BATCH_MAX 16u /* packets before a batch ends anyway */

#define ALL_REMOTE                                                             \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                     \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* ---- the arena: regions with 256-byte canaries before, between, after ---- */

enum region {
	R_RW, /* MR, every remote right */
	R_RO, /* MR, remote read only */
	R_LOCAL, /* MR, local write and MW bind: the windows are in it */
	R_RECV, /* MR, local write: where the receives and READ results land */
	R_SRC, /* MR, local only: what our own WRITEs and SENDs send */
	R_OTHER, /* MR of another PD, every remote right */
	R_GONE, /* MR, every remote right, deregistered */
	N_REGIONS
};

static const uint32_t region_len[N_REGIONS] = { 2048, 1024, 2048, 4096, 1024,
						 1024, 1024 };
#define CANARY 256u
#define WIN_LIVE_OFF 256u /* in R_LOCAL: bound, read, write, atomic */
#define WIN_LIVE_LEN 512u
#define WIN_DEAD_OFF 1024u /* in R_LOCAL: bound, then invalidated */
#define WIN_DEAD_LEN 512u
#define ARENA_LEN 16384u

static uint8_t arena[ARENA_LEN] __attribute__((aligned(4096)));
static uint8_t initial[ARENA_LEN];
static uint8_t *region_at[N_REGIONS];
static uint8_t may_write[ARENA_LEN]; /* 1: the peer may change it */
static uint64_t secret[8]; /* the secret 8 bytes, at each rotation */

struct env {
	struct fx *fx;
	uint32_t pd_other;
	struct fx_cq cq;
	struct fx_mr mr[N_REGIONS];
	uint32_t win_live, win_dead; /* rkeys */
	uint32_t xrcd;
	struct fx_srq srq;
	struct fx_qp rc, uc, ud, xrc;
	struct sockaddr_in peer, stranger;
	unsigned int batch; /* packets since the last batch end */
	uint64_t wr_id;
};

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_peer: %s\n", what);
		abort();
	}
}

/* ---- the input ----------------------------------------------------------- */

struct input {
	const uint8_t *p;
	size_t n;
};

static uint8_t get8(struct input *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static uint16_t get16(struct input *in)
{
	return (uint16_t)(get8(in) | get8(in) << 8);
}

static uint32_t get32(struct input *in)
{
	return get16(in) | (uint32_t)get16(in) << 16;
}

static uint64_t get64(struct input *in)
{
	return get32(in) | (uint64_t)get32(in) << 32;
}

/* ---- setting up ---------------------------------------------------------- */

/* Secret bytes: the pattern at each offset (the arena is 8-aligned). */
static void fill_secret(uint32_t off, uint32_t len)
{
	uint32_t i;

	for (i = off; i < off + len; i++)
		arena[i] = (uint8_t)(secret[0] >> (8 * (i % 8)));
}

static void fill_public(uint32_t off, uint32_t len)
{
	uint32_t i;

	for (i = off; i < off + len; i++)
		arena[i] = (uint8_t)(i * 7 + i / 251);
}

static void writable(const uint8_t *at, uint32_t len)
{
	memset(may_write + (at - arena), 1, len);
}

static void lay_out_arena(void)
{
	uint32_t off = CANARY, r, i;

	check(getrandom(&secret[0], 8, 0) == 8, "getrandom");
	for (i = 1; i < 8; i++)
		secret[i] = secret[0] >> (8 * i) | secret[0] << (64 - 8 * i);
	fill_secret(0, ARENA_LEN);
	for (r = 0; r < N_REGIONS; r++) {
		region_at[r] = arena + off;
		off += region_len[r] + CANARY;
	}
	check(off <= ARENA_LEN, "arena too small");
	fill_public(region_at[R_RW] - arena, region_len[R_RW]);
	fill_public(region_at[R_RO] - arena, region_len[R_RO]);
	fill_public(region_at[R_SRC] - arena, region_len[R_SRC]);
	fill_public(region_at[R_LOCAL] - arena + WIN_LIVE_OFF, WIN_LIVE_LEN);
	memset(may_write, 0, sizeof(may_write));
	writable(region_at[R_RW], region_len[R_RW]);
	writable(region_at[R_RECV], region_len[R_RECV]);
	writable(region_at[R_LOCAL] + WIN_LIVE_OFF, WIN_LIVE_LEN);
}

static struct rn_cqe next_cqe(struct env *e)
{
	struct rn_cqe c;

	check(fx_poll(&e->cq, &c), "no completion");
	return c;
}

/* A BIND_MW or LOCAL_INV on the RC QP, run now: it must succeed. */
static void memory_op(struct env *e, struct rn_send_wqe wqe)
{
	struct rn_cqe c;

	wqe.flags = RN_WQE_SIGNALED;
	fx_post_send(&e->rc, &wqe, NULL);
	fx_ring(&e->rc);
	fx_wire_run(&e->rc, 4);
	c = next_cqe(e);
	check(c.status == IBV_WC_SUCCESS, "window operation failed");
}

static uint32_t window(struct env *e, uint32_t off, uint32_t len)
{
	struct rn_ctl_alloc_mw_req req = { .pd = e->fx->pd, .type = IBV_MW_TYPE_2 };
	struct rn_ctl_alloc_mw_resp resp;
	uint32_t rkey;

	check(!rn_mw_alloc(e->fx->client, &req, &resp), "alloc mw");
	rkey = (resp.rkey & ~0xffu) | ((resp.rkey + 1) & 0xffu);
	memory_op(e, (struct rn_send_wqe){
		.opcode = RN_OP_BIND_MW,
		.rkey = rkey,
		.remote_addr = (uintptr_t)region_at[R_LOCAL] + off,
		.bind = { .length = len, .lkey = e->mr[R_LOCAL].lkey,
			  .access = IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC },
	});
	return rkey;
}

/* The QPs the packets go to, by number. */
static struct fx_qp *qp_of(struct env *e, unsigned int i)
{
	struct fx_qp *qps[] = { &e->rc, &e->uc, &e->ud, &e->xrc };

	return qps[i % 4];
}

/* QP i of qp_of(): connected to the peer's QPN for it. */
static void connect_qp(struct env *e, unsigned int i)
{
	struct fx_conn c = fx_conn_default(PEER_QPN + i % 4);

	c.dgid = FX_REMOTE_GID;
	c.sq_psn = SQ_PSN;
	c.rq_psn = RQ_PSN;
	c.rnr_retry = 3;
	c.qkey = QKEY;
	fx_qp_connect(qp_of(e, i), &c);
}

/* A receive into R_RECV: [off, off + len) of it, clipped. */
static struct rn_sge recv_sge(struct env *e, uint32_t off, uint32_t len)
{
	off %= region_len[R_RECV];
	if (len > region_len[R_RECV] - off)
		len = region_len[R_RECV] - off;
	return fx_sge(&e->mr[R_RECV], off, len);
}

static void post_recv(struct env *e, unsigned int which, uint32_t off,
		      uint32_t len)
{
	struct rn_sge sge = recv_sge(e, off, len);

	/* The XRC target's receives are its SRQ's. */
	if (which % 4 == 3)
		fx_post_srq_recv(&e->srq, ++e->wr_id, &sge, 1);
	else if (fx_qp_state(qp_of(e, which)) != IBV_QPS_RESET)
		fx_post_recv(qp_of(e, which), ++e->wr_id, &sge, 1);
}

static void setup(struct env *e)
{
	struct rn_ctl_open_xrcd_req xreq = { .oflags = 0 };
	struct rn_ctl_open_xrcd_resp xresp;
	struct fx *fx;
	unsigned int i;
	uint32_t r;

	memset(e, 0, sizeof(*e));
	lay_out_arena();
	e->fx = fx = fx_new();
	check(rn_cm_init(&fx->dev) != NULL, "cm");
	rn_wire_set_gsi(&fx->dev, rn_cm_gsi_recv);
	check(!rn_pd_alloc(fx->client, &e->pd_other), "pd");
	fx_cq_new(fx, CQ_ENTRIES, &e->cq);
	for (r = 0; r < N_REGIONS; r++) {
		uint32_t access = r == R_RO	       ? IBV_ACCESS_REMOTE_READ :
				  r == R_LOCAL	       ? IBV_ACCESS_LOCAL_WRITE |
							   IBV_ACCESS_MW_BIND :
				  r == R_RECV	       ? IBV_ACCESS_LOCAL_WRITE :
				  r == R_SRC	       ? 0 :
							 ALL_REMOTE;

		fx_mr_reg(fx, r == R_OTHER ? e->pd_other : fx->pd,
			  region_at[r], region_len[r], access, &e->mr[r]);
	}
	fx_mr_dereg(fx, &e->mr[R_GONE]);

	fx_qp_new(fx, &e->cq, &e->cq, NULL, &e->rc);
	fx_qp_create(fx, (struct rn_ctl_create_qp_req){
		.pd = fx->pd, .send_cq = e->cq.handle, .recv_cq = e->cq.handle,
		.qp_type = IBV_QPT_UC, .cap = { 16, 16, 4, 4, 64, 0 } }, &e->uc);
	fx_qp_create(fx, (struct rn_ctl_create_qp_req){
		.pd = fx->pd, .send_cq = e->cq.handle, .recv_cq = e->cq.handle,
		.qp_type = IBV_QPT_UD, .cap = { 16, 16, 4, 4, 64, 0 } }, &e->ud);
	check(!rn_xrcd_open(fx->client, &xreq, -1, &xresp), "xrcd");
	e->xrcd = xresp.handle;
	fx_srq_new(fx, (struct rn_ctl_create_srq_req){
		.pd = fx->pd, .srq_type = IBV_SRQT_XRC, .xrcd = e->xrcd,
		.cq = e->cq.handle, .max_wr = 16, .max_sge = 1 }, &e->srq);
	fx_qp_create(fx, (struct rn_ctl_create_qp_req){
		.qp_type = IBV_QPT_XRC_RECV, .xrcd = e->xrcd }, &e->xrc);
	for (i = 0; i < 4; i++)
		connect_qp(e, i);

	e->win_live = window(e, WIN_LIVE_OFF, WIN_LIVE_LEN);
	e->win_dead = window(e, WIN_DEAD_OFF, WIN_DEAD_LEN);
	memory_op(e, (struct rn_send_wqe){ .opcode = RN_OP_LOCAL_INV,
					   .invalidate_rkey = e->win_dead });
	for (i = 0; i < 16; i++)
		post_recv(e, i, 256 * i, 256);

	e->peer = e->rc.dq->wire->peer.addr.v4;
	e->stranger = e->peer;
	e->stranger.sin_addr.s_addr = htonl(0xc6120009); /* 198.18.0.9 */
	memcpy(initial, arena, sizeof(arena));
}

static void teardown(struct env *e)
{
	rn_cm_close(&e->fx->dev);
	fx_free(e->fx);
}

/* ---- what the packets aim at ---------------------------------------------- */

/*
 * An address: at an offset from a region's start, or (0x80) from its end,
 * or (0x40) where an access of len bytes would end a few bytes either side
 * of the region's end.
 */
static uint64_t address(struct input *in, uint32_t len)
{
	uint8_t sel = get8(in), which = (sel & 0x3f) % 12;
	int64_t off = (int16_t)get16(in);
	uint64_t base;

	switch (which) {
	case 7:
		base = (uintptr_t)region_at[R_LOCAL] + WIN_LIVE_OFF;
		break;
	case 8:
		base = (uintptr_t)region_at[R_LOCAL] + WIN_DEAD_OFF;
		break;
	case 9:
		return get64(in);
	case 10:
		base = 0;
		break;
	case 11:
		base = UINT64_MAX - 0xffff;
		break;
	default:
		base = (uintptr_t)region_at[which];
		if (sel & 0x80)
			base += region_len[which];
		if (sel & 0x40)
			return base + region_len[which] - len + off % 4;
		break;
	}
	return base + (uint64_t)off;
}

static uint32_t key(struct env *e, struct input *in)
{
	uint8_t sel = get8(in);

	switch (sel % 12) {
	case 7:
		return e->win_live;
	case 8:
		return e->win_dead;
	case 9:
		return e->mr[R_RW].rkey ^ (1u + (sel >> 4)); /* a guess */
	case 10:
		return e->mr[R_RW].rkey + 0x100; /* the next index */
	case 11:
		return get32(in);
	default:
		return e->mr[sel % 12].rkey;
	}
}

static uint32_t length(struct input *in)
{
	static const uint32_t edges[] = { 0, 1, 8, MTU, MTU + 1, 2 * MTU,
					  1024, 2048, 0x80000000u, UINT32_MAX };
	uint8_t sel = get8(in);

	if (sel < 128)
		return get16(in);
	return edges[sel % (sizeof(edges) / sizeof(edges[0]))];
}

/* A PSN near what the QP expects, what it has sent, or far from both. */
static uint32_t psn(const struct fx_qp *qp, struct input *in)
{
	const struct rn_wire_qp *wq = qp->dq->wire;
	uint8_t sel = get8(in);
	uint16_t d = get16(in);

	if (!wq)
		return get32(in) & RN_PKT_MASK24;
	switch (sel % 4) {
	case 0:
		return rn_pkt_psn_add(wq->epsn, (uint32_t)(int8_t)d);
	case 1:
		return rn_pkt_psn_add(wq->una, (uint32_t)(int8_t)d);
	case 2:
		return rn_pkt_psn_add(wq->sent_psn, (uint32_t)(int8_t)d);
	default:
		return rn_pkt_psn_add(wq->epsn, (uint32_t)d << 8);
	}
}

static uint8_t payload[RN_WIRE_PKT_MAX];
static bool trace; /* FUZZ_PEER_TRACE set: each record to stderr */

/* ---- what the device shows ----------------------------------------------- */

/* What may change when a packet is taken: the QPs' transport state. */
struct digest {
	uint64_t counters[RN_CNT_MAX];
	uint32_t wq[4][20];
	uint32_t staged, held;
};

static void take_digest(struct env *e, struct digest *d)
{
	struct rn_wire *w = e->fx->dev.engines[0]->wire;
	unsigned int i;

	memset(d, 0, sizeof(*d));
	rn_port_counters(&e->fx->dev, d->counters);
	d->counters[RN_CNT_RCVD_PKTS] = 0;
	for (i = 0; i < 4; i++) {
		const struct fx_qp *qp = qp_of(e, i);
		const struct rn_wire_qp *wq = qp->dq->wire;
		uint32_t *f = d->wq[i];

		f[0] = fx_qp_state(qp);
		if (!wq)
			continue;
		f[1] = wq->epsn;
		f[2] = wq->msn;
		f[3] = wq->una;
		f[4] = wq->send_psn;
		f[5] = wq->head;
		f[6] = wq->tail;
		f[7] = wq->retry_left | wq->rnr_left << 8 | wq->nak_sent << 16 |
		       wq->in_msg << 17 | wq->drop_msg << 18 |
		       wq->rnr_wait << 19 | wq->implied_nak << 20 |
		       wq->ack_pending << 21 | wq->have_rwqe << 22 |
		       wq->blocked << 23;
		f[8] = (uint32_t)wq->msg_off;
		f[9] = wq->replying;
		f[10] = wq->res_next;
		f[11] = wq->rd_atomic;
		f[12] = wq->ack_syndrome | wq->ack_psn << 8;
		f[13] = wq->cur;
		f[14] = wq->cc.paced;
	}
	d->staged = w->write_stage.len;
	d->held = w->write_recvs.n;
}

/* Nothing the peer may not read in what the device sent. */
static void check_no_secret(const uint8_t *p, size_t len)
{
	size_t j;
	unsigned int r;

	for (j = 0; j + 8 <= len; j++) {
		uint64_t v;

		memcpy(&v, p + j, 8);
		for (r = 0; r < 8; r++)
			check(v != secret[r], "a packet carries memory the peer may not read");
	}
}

static struct fx_pkt sent[RN_WIRE_TX_BATCH];

/* Take what the device sent; returns how many packets. */
static unsigned int take_sent(struct env *e)
{
	unsigned int n = fx_wire_take(e->fx, sent, RN_WIRE_TX_BATCH), i;

	for (i = 0; i < n; i++) {
		uint64_t ack = sent[i].p.atomic_ack;

		if (trace)
			fprintf(stderr, "  sent %02x to %06x psn %06x aeth %02x "
				"payload %u\n", sent[i].p.opcode, sent[i].p.dqpn,
				sent[i].p.psn, sent[i].p.aeth.syndrome,
				sent[i].p.payload_len);

		check_no_secret(sent[i].p.payload, sent[i].p.payload_len);
		if (sent[i].p.hdrs & RN_PKT_H_ATOMICACKETH)
			check_no_secret((const uint8_t *)&ack, 8);
	}
	return n;
}

/* The responses the device owes, the CQEs and events it gave; how many. */
static unsigned int collect(struct env *e)
{
	unsigned int n = take_sent(e), round;
	struct rn_cqe c;
	uint64_t element;
	uint32_t type;

	for (round = 0; round < 64; round++) {
		bool more = rn_wire_reply(e->fx->dev.engines[0]->wire, rn_now_ns());

		n += take_sent(e);
		if (!more)
			break;
	}
	while (fx_poll(&e->cq, &c))
		n++;
	while (fx_event(e->fx, &type, &element))
		n++;
	return n;
}

static void end_batch(struct env *e)
{
	fx_wire_batch_end(e->fx);
	e->batch = 0;
}

/* The arena: only what the peer may write has changed. */
static void check_memory(void)
{
	uint32_t i;

	for (i = 0; i < ARENA_LEN; i++)
		if (!may_write[i] && arena[i] != initial[i]) {
			fprintf(stderr, "fuzz_peer: arena byte %u changed\n", i);
			abort();
		}
}

/* ---- the records ------------------------------------------------------------ */

static void packet(struct env *e, struct input *in)
{
	uint8_t target = get8(in), op = get8(in), flags = get8(in);
	struct fx_qp *qp = qp_of(e, target);
	static const uint8_t transport[] = { RN_PKT_RC, RN_PKT_UC, RN_PKT_UD,
					     RN_PKT_XRC };
	struct rn_pkt p = { 0 };
	struct digest before, after;
	uint32_t len, i, fill;
	bool cm = false;

	p.dqpn = qp->qpn;
	if (target % 16 == 4) {
		p.dqpn = 1; /* the CM's */
		cm = true;
	} else if (target % 16 == 5) {
		p.dqpn = get32(in) & RN_PKT_MASK24;
		cm = p.dqpn == 1;
	}
	/* The QP's own transport, or any opcode at all. */
	p.opcode = op & 0x80 ? get8(in) :
			       (uint8_t)(transport[target % 4] | (op & 0x1f));
	p.se = flags & 1;
	p.ackreq = flags & 2;
	p.becn = flags & 16;
	p.mig = flags & 32;
	p.psn = psn(qp, in);
	p.reth.len = length(in);
	p.reth.va = address(in, p.reth.len);
	p.reth.rkey = key(e, in);
	p.atomic.va = p.reth.va;
	p.atomic.rkey = p.reth.rkey;
	p.atomic.swap_add = get64(in);
	p.atomic.compare = get64(in);
	p.aeth.syndrome = get8(in);
	p.aeth.msn = get16(in);
	p.atomic_ack = get64(in);
	p.imm = get32(in);
	p.ieth_rkey = key(e, in);
	switch (get8(in) % 4) {
	case 0:
		p.deth.qkey = QKEY;
		break;
	case 1:
		p.deth.qkey = 0x80010000u; /* QP1's, privileged */
		break;
	default:
		p.deth.qkey = get32(in);
		break;
	}
	p.deth.src_qpn = PEER_QPN | get8(in);
	p.xrc_srqn = get8(in) & 1 ? get32(in) & RN_PKT_MASK24 : e->srq.srqn;
	/* Mostly what the RETH says, so that a WRITE ONLY is whole. */
	len = get8(in) & 1 ? length(in) : p.reth.len;
	len %= MTU + 128;
	fill = get32(in);
	for (i = 0; i < len; i++)
		payload[i] = (uint8_t)(fill >> (8 * (i % 4))) ^ (uint8_t)i;
	p.payload = payload;
	p.payload_len = len;

	if (trace)
		fprintf(stderr, "packet %02x to %06x psn %06x from %s tos %s "
			"va %#llx rkey %#x len %u aeth %02x msn %u qkey %#x "
			"srqn %#x payload %u; %s batch\n", p.opcode, p.dqpn,
			p.psn, flags & 4 ? "stranger" : "peer",
			flags & 8 ? "CE" : "ECT0",
			(unsigned long long)p.reth.va, p.reth.rkey, p.reth.len,
			p.aeth.syndrome, p.aeth.msn, p.deth.qkey, p.xrc_srqn,
			p.payload_len, flags & 64 ? "ends" : "in");
	take_digest(e, &before);
	if (!fx_wire_arrive(e->fx, flags & 4 ? &e->stranger : &e->peer,
			    flags & 8 ? RN_WIRE_ECN_CE : RN_WIRE_ECN_ECT0, &p))
		return; /* the builder refused it: nothing was sent */
	if (++e->batch >= BATCH_MAX || flags & 64)
		end_batch(e);
	if (collect(e) || cm)
		return;
	take_digest(e, &after);
	check(memcmp(&before, &after, sizeof(before)),
	      "a packet was dropped and counted nowhere");
}

/* Work on the RC QP, sent at once, so that answers find it outstanding. */
static void post_work(struct env *e, struct input *in)
{
	static const uint8_t ops[] = { RN_OP_WRITE, RN_OP_READ, RN_OP_SEND,
				       RN_OP_CMP_SWAP, RN_OP_FETCH_ADD,
				       RN_OP_SEND_IMM };
	uint8_t op = ops[get8(in) % sizeof(ops)];
	uint32_t len = get16(in) % 3000;
	struct rn_sge sge;

	if (op == RN_OP_CMP_SWAP || op == RN_OP_FETCH_ADD)
		len = 8;
	/* READ results land in R_RECV, the rest comes from R_SRC. */
	if (op == RN_OP_READ || op == RN_OP_CMP_SWAP || op == RN_OP_FETCH_ADD)
		sge = recv_sge(e, get16(in) & ~7u, len);
	else
		sge = fx_sge(&e->mr[R_SRC], get16(in) % region_len[R_SRC],
			     len % (region_len[R_SRC] / 2));
	if (fx_qp_state(&e->rc) != IBV_QPS_RTS)
		return;
	fx_post_send(&e->rc, &(struct rn_send_wqe){
		.wr_id = ++e->wr_id, .opcode = op, .flags = RN_WQE_SIGNALED,
		.num_sge = 1, .remote_addr = 0x7f0000001000ull,
		.rkey = 0x4242, .compare_add = 1, .swap = 2 }, &sge);
	fx_ring(&e->rc);
	fx_wire_run(&e->rc, 16);
	collect(e);
}

/* A QP to ERR, or reset and connected again. */
static void qp_state(struct env *e, struct input *in)
{
	uint8_t sel = get8(in);
	struct fx_qp *qp = qp_of(e, sel);
	struct rn_qp_attr a = { 0 };

	if (sel & 4) {
		fx_qp_modify(qp, IBV_QPS_ERR, 0, &a);
	} else {
		fx_qp_modify(qp, IBV_QPS_RESET, 0, &a);
		/* What the provider restarts its queues at after a reset. */
		qp->sq_prod = 0;
		qp->rq_prod = 0;
		connect_qp(e, sel);
	}
	collect(e);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* The fixture's checks (cmocka's) abort outside a test run. */
	setenv("CMOCKA_TEST_ABORT", "1", 1);
	trace = getenv("FUZZ_PEER_TRACE");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input in = { data, size };
	struct env e;
	unsigned int records = 0;

	setup(&e);
	while (in.n && records++ < 256) {
		switch (get8(&in) % 8) {
		case 4:
			end_batch(&e);
			post_work(&e, &in);
			break;
		case 5: {
			uint8_t which = get8(&in);
			uint16_t off = get16(&in);

			post_recv(&e, which, off, get16(&in) % 2048);
			break;
		}
		case 6:
			end_batch(&e);
			collect(&e);
			break;
		case 7:
			end_batch(&e);
			qp_state(&e, &in);
			break;
		default:
			packet(&e, &in);
			break;
		}
		check_memory();
	}
	end_batch(&e);
	collect(&e);
	check_memory();
	teardown(&e);
	return 0;
}
