// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Corruption of the hostile's own shared memory, white-box: through the
 * provider's objects (providers/ringnic/ringnic.h) it writes what the
 * provider never would into its send and receive rings, doorbell records,
 * QP control block, CQ control block and doorbell bitmaps, and rings the
 * way the provider rings.  ringnicd checks all of it against its private
 * copy of the queue state:
 *   - a malformed WQE or doorbell record: IBV_EVENT_QP_FATAL, QP in ERR,
 *     and no completion for the malformed WQE (nothing after it parses);
 *   - a well-formed WQE with a huge length: LOC_PROT_ERR;
 *   - a stale record (behind the head): dropped, counted, nothing else;
 *   - a malformed receive WQE or receive producer: QP_FATAL on that QP,
 *     REM_OP_ERR for the sender;
 *   - a CQ consumer index that makes the CQ look full: IBV_EVENT_CQ_ERR
 *     (the CQ is in error for good, as on an overrun);
 *   - garbage arm words and doorbell bits: nothing at all.
 * After each, the provider-written words are put back as the provider
 * has them and the QPs are reset.
 */
#include <string.h>
#include <unistd.h>

#include "kernel-abi/ringnic-ring.h"
#include "ringnic.h"

#include "hostile.h"

static struct rn_qp *raw_qp(struct hpair *hp, int q)
{
	return to_rn_qp(hp->qp[q]);
}

/* Set a queue's doorbell bits, and wake the device if it sleeps. */
static void kick(struct hpair *hp, struct rn_doorbells *db, uint32_t index)
{
	struct rn_context *ctx = to_rn_ctx(hp->ctx);
	static const uint64_t one = 1;

	__atomic_fetch_or(&db->pending[index / 64], 1ull << (index % 64),
			  __ATOMIC_SEQ_CST);
	__atomic_fetch_or(&db->summary, 1ull << (index / 64), __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&ctx->dev_page->asleep, __ATOMIC_SEQ_CST) &&
	    write(ctx->wake_fd, &one, sizeof(one)) < 0)
		HFAIL("wake-up write failed");
}

static void ring_sq(struct hpair *hp, int q, uint64_t record)
{
	struct rn_qp *qp = raw_qp(hp, q);

	__atomic_store_n(&qp->ctrl->sq_db, record, __ATOMIC_RELEASE);
	kick(hp, &to_rn_ctx(hp->ctx)->dev_page->qp, qp->handle);
}

/* Raw slots at the provider's producer, which moves past them. */
static void put_slots(struct rn_qp *qp, const void *slots, unsigned int n)
{
	rn_ring_write(qp->sq, qp->sq_slots, qp->sq_prod, slots,
		      (uint64_t)n * RN_SLOT_SIZE);
	qp->sq_prod = (qp->sq_prod + n) & RN_DB_SEQ_MASK;
}

/* Put the slots in and ring for exactly them. */
static void post_raw(struct hpair *hp, int q, const void *slots, unsigned int n)
{
	struct rn_qp *qp = raw_qp(hp, q);

	put_slots(qp, slots, n);
	qp->sq_rung = qp->sq_prod;
	ring_sq(hp, q, RN_DB_RECORD(qp->handle, qp->sq_prod));
}

/* The device's head of q's send queue; the queue is idle between attacks. */
static uint64_t sq_head(struct hpair *hp, int q)
{
	return __atomic_load_n(&raw_qp(hp, q)->ctrl->sq_cons, __ATOMIC_ACQUIRE);
}

/* The provider-written words as the provider has them, then a reset. */
static int repair_and_reset(struct hpair *hp)
{
	int q;

	for (q = 0; q < 2; q++) {
		struct rn_qp *qp = raw_qp(hp, q);

		qp->sq_rung = qp->sq_prod;
		qp->ctrl->sq_db = RN_DB_RECORD(qp->handle, qp->sq_prod);
		qp->ctrl->rq_prod = qp->rq.prod;
	}
	return hp_reset(hp);
}

/* A malformed queue on QP q: the async event, ERR, nothing else. */
static int expect_fatal(struct hpair *hp, int q, const struct want_wc *wcs,
			int nwcs, const char *what)
{
	HTRY(hp_wait_event(hp, IBV_EVENT_QP_FATAL, hp->qp[q], what));
	HTRY(hp_expect(hp, wcs, nwcs, NULL, 0, what));
	HTRY(hp_expect_state(hp, q, IBV_QPS_ERR, what));
	if (!nwcs)
		HTRY(hp_expect_state(hp, !q, IBV_QPS_RTS, what));
	return repair_and_reset(hp);
}

/* A valid one-SGE WRITE of a into b's target, as the provider writes it. */
static void good_write(struct hpair *hp, struct rn_send_wqe *w, uint64_t id,
		       uint32_t len)
{
	struct rn_sge sge = { (uintptr_t)hp->local.data, len, hp->local_mr->lkey };

	memset(w, 0, sizeof(*w));
	w->wr_id = id;
	w->opcode = RN_OP_WRITE;
	w->flags = RN_WQE_SIGNALED;
	w->num_sge = 1;
	w->nslots = RN_SEND_WQE_SLOTS(sizeof(sge));
	w->remote_addr = (uintptr_t)hp->target.data;
	w->rkey = hp->target_mr->rkey;
	memcpy(w->payload, &sge, sizeof(sge));
}

/* Slots for one malformed WQE of variant v; returns how many to post. */
static unsigned int bad_wqe(struct hpair *hp, enum variant v,
			    struct rn_send_wqe *slots, unsigned int max)
{
	const struct rn_qp *qp = raw_qp(hp, QA);
	struct rn_send_wqe *w = &slots[0];
	unsigned int n = 1;

	memset(slots, 0, (size_t)max * RN_SLOT_SIZE);
	good_write(hp, w, v, 64);
	switch (v) {
	case V_RING_BAD_OPCODE:
		w->opcode = rng_below(2) ? 0 : rng_range(RN_OP_MAX + 1, 255);
		break;
	case V_RING_BAD_FLAGS:
		w->flags |= 1u << rng_range(4, 7);
		break;
	case V_RING_BAD_NUM_SGE:
		w->num_sge = rng_range(qp->cap.max_send_sge + 1, 255);
		w->nslots = RN_SEND_WQE_SLOTS(w->num_sge * sizeof(struct rn_sge));
		n = w->nslots < max ? w->nslots : max;
		break;
	case V_RING_BAD_NSLOTS:
		w->nslots = rng_below(2) ? 0 : rng_range(2, 255);
		n = w->nslots && w->nslots < max ? w->nslots : 1;
		break;
	case V_RING_BAD_INLINE:
		switch (rng_below(4)) {
		case 0: /* more than the QP allows inline */
			w->flags |= RN_WQE_INLINE;
			w->num_sge = 0;
			w->inline_len = rng_range(qp->cap.max_inline_data + 1,
						  rng_below(2) ? 4096 : UINT32_MAX);
			break;
		case 1: /* inline on a READ */
			w->opcode = RN_OP_READ;
			w->flags |= RN_WQE_INLINE;
			w->num_sge = 0;
			w->inline_len = 16;
			break;
		case 2: /* an inline length without the flag */
			w->inline_len = rng_range(1, 64);
			break;
		default: /* SGEs and inline at once */
			w->flags |= RN_WQE_INLINE;
			w->inline_len = 16;
			break;
		}
		break;
	default: { /* V_RING_RANDOM_WQE, with one thing surely wrong */
		uint8_t *b = (uint8_t *)slots;
		size_t i;

		n = rng_range(1, max < 3 ? max : 3);
		for (i = 0; i < (size_t)n * RN_SLOT_SIZE; i++)
			b[i] = (uint8_t)rng_next();
		switch (rng_below(4)) {
		case 0:
			w->opcode = rng_range(RN_OP_MAX + 1, 255);
			break;
		case 1:
			w->flags |= 0x10;
			break;
		case 2:
			w->nslots = 0;
			break;
		default:
			w->flags &= ~RN_WQE_INLINE;
			w->num_sge = rng_range(qp->cap.max_send_sge + 1, 255);
			break;
		}
		break;
	}
	}
	return n;
}

static int malformed_wqe(struct hpair *hp, enum variant v)
{
	struct rn_send_wqe slots[8];
	unsigned int n = bad_wqe(hp, v, slots, 8);

	post_raw(hp, QA, slots, n);
	return expect_fatal(hp, QA, NULL, 0, variants[v].name);
}

/* Well formed, but the length is far beyond any MR. */
static int huge_sge(struct hpair *hp)
{
	struct rn_send_wqe w;
	struct rn_sge sge;
	static const uint8_t ops[] = { RN_OP_SEND, RN_OP_WRITE, RN_OP_READ };

	good_write(hp, &w, V_RING_HUGE_SGE, 64);
	w.opcode = ops[rng_below(3)];
	memcpy(&sge, w.payload, sizeof(sge));
	sge.length = rng_below(2) ? UINT32_MAX : rng_range(hp->local.len + 1,
							   UINT32_MAX);
	memcpy(w.payload, &sge, sizeof(sge));
	if (w.opcode == RN_OP_SEND)
		HTRY(post_recv(hp->qp[QB], 1, (uintptr_t)hp->target.data,
			       hp->target.len, hp->target_mr->lkey));
	post_raw(hp, QA, &w, 1);
	HTRY(expect_local_err(hp, V_RING_HUGE_SGE, IBV_WC_LOC_PROT_ERR,
			      "WQE with a 4 GiB SGE length"));
	return hp_check_canaries(hp, "WQE with a 4 GiB SGE length");
}

/* A two-slot WQE, but the doorbell names only its first slot. */
static int chain_short(struct hpair *hp)
{
	uint8_t slots[2 * RN_SLOT_SIZE] = { 0 };
	struct rn_sge sge[2] = {
		{ (uintptr_t)hp->local.data, 16, hp->local_mr->lkey },
		{ (uintptr_t)hp->local.data + 16, 16, hp->local_mr->lkey },
	};
	struct rn_qp *qp = raw_qp(hp, QA);
	struct rn_send_wqe w;

	good_write(hp, &w, V_RING_CHAIN_SHORT, 16);
	w.num_sge = 2;
	w.nslots = RN_SEND_WQE_SLOTS(sizeof(sge));
	memcpy(slots, &w, RN_SEND_HDR_SIZE);
	memcpy(slots + RN_SEND_HDR_SIZE, sge, sizeof(sge));
	put_slots(qp, slots, 2);
	qp->sq_rung = qp->sq_prod;
	ring_sq(hp, QA, RN_DB_RECORD(qp->handle, qp->sq_prod - 1));
	return expect_fatal(hp, QA, NULL, 0, "WQE running past its chain");
}

/* A valid WRITE executes; the garbage after it stops the queue. */
static int good_then_bad(struct hpair *hp)
{
	const struct want_wc ok = { SCQ_A, 1, IBV_WC_SUCCESS };
	struct rn_send_wqe slots[9];
	uint32_t len = rng_range(1, 64);
	uint64_t seed = rng_next();
	unsigned int n;

	n = bad_wqe(hp, V_RING_BAD_OPCODE + rng_below(V_RING_RANDOM_WQE -
						      V_RING_BAD_OPCODE + 1),
		    &slots[1], 8);
	good_write(hp, &slots[0], 1, len);
	fill_pattern(hp->local.data, len, seed);
	post_raw(hp, QA, slots, n + 1);
	HTRY(expect_fatal(hp, QA, &ok, 1, "valid WQE, then garbage"));
	return check_pattern(hp->target.data, len, seed, "the valid WQE's WRITE");
}

/* Wait until the device has counted one more stale doorbell of q. */
static int expect_stale(struct hpair *hp, int q, uint64_t before,
			const char *what)
{
	uint64_t deadline = now_ms() + HOSTILE_WAIT_MS;
	unsigned int spins = 0;

	while (__atomic_load_n(&raw_qp(hp, q)->ctrl->stale, __ATOMIC_ACQUIRE) ==
	       before) {
		HCHECK(now_ms() < deadline, "%s: the record was not dropped", what);
		backoff(&spins);
	}
	HCHECK(raw_qp(hp, q)->ctrl->stale == before + 1,
	       "%s: %llu records dropped, not 1", what,
	       (unsigned long long)(raw_qp(hp, q)->ctrl->stale - before));
	HTRY(hp_expect(hp, NULL, 0, NULL, 0, what));
	HTRY(hp_expect_state(hp, q, IBV_QPS_RTS, what));
	/* Dropped means dropped: the queue works as before. */
	raw_qp(hp, q)->ctrl->sq_db = RN_DB_RECORD(raw_qp(hp, q)->handle,
						  raw_qp(hp, q)->sq_prod);
	return hp_probe(hp, what);
}

static int bad_doorbell(struct hpair *hp, enum variant v)
{
	struct rn_qp *qp = raw_qp(hp, QA), *other = raw_qp(hp, QB);
	uint64_t head = sq_head(hp, QA), stale = qp->ctrl->stale, seq;
	uint32_t index = qp->handle;
	const char *what = variants[v].name;
	bool behind;

	switch (v) {
	case V_RING_DB_PAST_RING:
		seq = head + qp->sq_slots + rng_range(1, 1u << 20);
		break;
	case V_RING_DB_OVER_ZEROS: {
		uint32_t n = rng_range(1, qp->sq_slots);
		uint8_t zeros[RN_SLOT_SIZE] = { 0 };
		uint32_t i;

		for (i = 0; i < n; i++)
			rn_ring_write(qp->sq, qp->sq_slots, head + i, zeros,
				      sizeof(zeros));
		seq = head + n;
		break;
	}
	case V_RING_DB_BACKWARDS:
		seq = head - rng_range(1, 1ull << 40);
		ring_sq(hp, QA, RN_DB_RECORD(index, seq));
		return expect_stale(hp, QA, stale, what);
	case V_RING_DB_RANDOM:
		/* Anywhere but the ring's reach ahead of the head. */
		do
			seq = rng_next() & RN_DB_SEQ_MASK;
		while (((seq - head) & RN_DB_SEQ_MASK) <= qp->sq_slots);
		if (rng_below(2))
			do
				index = (uint32_t)rng_below(1u << 16);
			while (index == qp->handle);
		behind = ((head - seq) & RN_DB_SEQ_MASK) < (RN_DB_SEQ_MASK >> 1);
		ring_sq(hp, QA, RN_DB_RECORD(index, seq));
		if (behind && index == qp->handle)
			return expect_stale(hp, QA, stale, what);
		return expect_fatal(hp, QA, NULL, 0, what);
	default: /* V_RING_DB_OTHER_QP: b's index, or one nobody has */
		index = rng_below(2) ? other->handle : rng_range(RN_CTX_MAX_QP, 0xffff);
		seq = head;
		break;
	}
	ring_sq(hp, QA, RN_DB_RECORD(index, seq));
	return expect_fatal(hp, QA, NULL, 0, what);
}

/* Random bytes over the whole control block, the doorbell surely bad. */
static int qp_ctrl_scribble(struct hpair *hp)
{
	struct rn_qp *qp = raw_qp(hp, QA);
	uint8_t *b = (uint8_t *)qp->ctrl;
	uint64_t rec;
	size_t i;

	for (i = 0; i < sizeof(*qp->ctrl); i++)
		b[i] = (uint8_t)rng_next();
	rec = qp->ctrl->sq_db;
	if (RN_DB_QP_INDEX(rec) == qp->handle)
		rec ^= 1ull << 63;
	ring_sq(hp, QA, rec);
	return expect_fatal(hp, QA, NULL, 0, "QP control block scribbled");
}

/* b's receive queue is broken; a SEND from a finds out. */
static int broken_rq(struct hpair *hp, enum variant v)
{
	struct rn_qp *b = raw_qp(hp, QB);
	const struct want_wc wc = { SCQ_A, v, IBV_WC_REM_OP_ERR };
	struct ibv_send_wr wr;
	struct ibv_sge sge;

	if (v == V_RING_RQ_GARBAGE) {
		struct rn_recv_wqe r = { .wr_id = 5 };
		uint32_t advance = 1;

		switch (rng_below(3)) {
		case 0: /* more SGEs than the QP takes */
			r.num_sge = rng_range(b->cap.max_recv_sge + 1, 255);
			r.nslots = RN_RECV_WQE_SLOTS(r.num_sge);
			break;
		case 1: /* a slot count that does not match */
			r.num_sge = 1;
			r.nslots = rng_below(2) ? 0 : rng_range(2, 255);
			break;
		default: /* more slots than were posted */
			r.num_sge = b->cap.max_recv_sge;
			r.nslots = RN_RECV_WQE_SLOTS(r.num_sge);
			advance = r.nslots - 1;
			break;
		}
		rn_ring_write(b->rq.ring, b->rq.slots, b->rq.prod, &r, sizeof(r));
		if (!advance) { /* a one-slot WQE cannot claim less */
			r.nslots = 2;
			advance = 1;
			rn_ring_write(b->rq.ring, b->rq.slots, b->rq.prod, &r, sizeof(r));
		}
		b->rq.prod += advance;
		b->rq.wr_prod++;
		__atomic_store_n(&b->ctrl->rq_prod, b->rq.prod, __ATOMIC_RELEASE);
	} else {
		uint32_t head = __atomic_load_n(&b->ctrl->rq_cons, __ATOMIC_ACQUIRE);

		__atomic_store_n(&b->ctrl->rq_prod,
				 head + b->rq.slots + (uint32_t)rng_range(1, 1u << 30),
				 __ATOMIC_RELEASE);
	}
	make_wr(&wr, &sge, v, IBV_WR_SEND, (uintptr_t)hp->local.data,
		rng_range(1, 256), hp->local_mr->lkey, 0, 0);
	HTRY(post_send(hp->qp[QA], &wr));
	HTRY(hp_wait_event(hp, IBV_EVENT_QP_FATAL, hp->qp[QB], variants[v].name));
	HTRY(hp_expect(hp, &wc, 1, NULL, 0, variants[v].name));
	HTRY(hp_expect_state(hp, QB, IBV_QPS_ERR, variants[v].name));
	return repair_and_reset(hp);
}

/* Garbage in the arm word and the event counter: the CQ works on. */
static int cq_arm_garbage(struct hpair *hp)
{
	struct rn_cq *cq = to_rn_cq(hp->scq[rng_below(2)]);

	__atomic_store_n(&cq->ctrl->arm, (uint32_t)rng_next(), __ATOMIC_SEQ_CST);
	__atomic_store_n(&cq->ctrl->events_consumed, (uint32_t)rng_next(),
			 __ATOMIC_SEQ_CST);
	kick(hp, &to_rn_ctx(hp->ctx)->dev_page->cq, cq->handle);
	HTRY(hp_probe(hp, "garbage CQ arm word"));
	return hp_expect(hp, NULL, 0, NULL, 0, "garbage CQ arm word");
}

/*
 * A consumer index that makes a's send CQ look full (alone, or with random
 * bytes over the rest of the control block): the next CQE overruns it.
 */
static int cq_cons_garbage(struct hpair *hp, enum variant v)
{
	struct rn_cq *cq = to_rn_cq(hp->scq[QA]);
	const char *what = variants[v].name;
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint32_t cons = rng_below(2) ? cq->cons - cq->entries - (uint32_t)rng_below(1000) :
				       cq->cons + (uint32_t)rng_range(1, 1u << 31);

	if (v == V_RING_CQ_CTRL_SCRIBBLE) {
		uint8_t *b = (uint8_t *)cq->ctrl;
		size_t i;

		for (i = 0; i < sizeof(*cq->ctrl); i++)
			b[i] = (uint8_t)rng_next();
	}
	__atomic_store_n(&cq->ctrl->cons, cons, __ATOMIC_RELEASE);
	make_wr(&wr, &sge, v, IBV_WR_RDMA_WRITE, (uintptr_t)hp->local.data, 8,
		hp->local_mr->lkey, (uintptr_t)hp->target.data,
		hp->target_mr->rkey);
	HTRY(post_send(hp->qp[QA], &wr));
	HTRY(hp_wait_event(hp, IBV_EVENT_CQ_ERR, hp->scq[QA], what));
	/* The CQ is in error for good: polling says so. */
	HCHECK(ibv_poll_cq(hp->scq[QA], 1, &wc) < 0,
	       "%s: an overrun CQ polls without error", what);
	HTRY(hp_expect_state(hp, QA, IBV_QPS_ERR, what));
	HTRY(hp_expect_state(hp, QB, IBV_QPS_RTS, what));
	return hp_rebuild_queues(hp);
}

/* Random doorbell bits of our own context: the device finds nothing new. */
static int devpage_scribble(struct hpair *hp)
{
	struct rn_dev_page *page = to_rn_ctx(hp->ctx)->dev_page;
	struct rn_doorbells *db = rng_below(2) ? &page->qp : &page->cq;
	int i;

	for (i = 0; i < RN_PENDING_WORDS; i++)
		__atomic_fetch_or(&db->pending[i], rng_next(), __ATOMIC_SEQ_CST);
	kick(hp, db, (uint32_t)rng_below(RN_CTX_MAX_QP));
	__atomic_fetch_or(&db->summary, rng_next(), __ATOMIC_SEQ_CST);
	HTRY(hp_probe(hp, "doorbell bitmaps scribbled"));
	return hp_expect(hp, NULL, 0, NULL, 0, "doorbell bitmaps scribbled");
}

int attack_rings(struct attack_env *env)
{
	enum variant v = V_RING_BAD_OPCODE + rng_below(V_RING_DEVPAGE_SCRIBBLE -
						       V_RING_BAD_OPCODE + 1);
	struct hpair *hp = env->hp;

	count_try(v);
	switch (v) {
	case V_RING_BAD_OPCODE:
	case V_RING_BAD_FLAGS:
	case V_RING_BAD_NUM_SGE:
	case V_RING_BAD_NSLOTS:
	case V_RING_BAD_INLINE:
	case V_RING_RANDOM_WQE:
		return malformed_wqe(hp, v);
	case V_RING_HUGE_SGE:
		return huge_sge(hp);
	case V_RING_CHAIN_SHORT:
		return chain_short(hp);
	case V_RING_GOOD_THEN_BAD:
		return good_then_bad(hp);
	case V_RING_DB_PAST_RING:
	case V_RING_DB_OVER_ZEROS:
	case V_RING_DB_BACKWARDS:
	case V_RING_DB_RANDOM:
	case V_RING_DB_OTHER_QP:
		return bad_doorbell(hp, v);
	case V_RING_QP_CTRL_SCRIBBLE:
		return qp_ctrl_scribble(hp);
	case V_RING_RQ_GARBAGE:
	case V_RING_RQ_PROD_JUMP:
		return broken_rq(hp, v);
	case V_RING_CQ_ARM_GARBAGE:
		return cq_arm_garbage(hp);
	case V_RING_CQ_CONS_GARBAGE:
	case V_RING_CQ_CTRL_SCRIBBLE:
		return cq_cons_garbage(hp, v);
	default:
		return devpage_scribble(hp);
	}
}
