// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Verbs helpers: the device, QP transitions, posting, and the hostile
 * processes' pair of QPs with exact expectations on what comes back.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "hostile.h"

int open_device(struct ibv_context **ctx)
{
	struct ibv_device **list;
	int i, n;

	*ctx = NULL;
	list = ibv_get_device_list(&n);
	HCHECK(list, "ibv_get_device_list: %s", strerror(errno));
	for (i = 0; i < n && !*ctx; i++)
		if (!strncmp(ibv_get_device_name(list[i]), "ringnic", 7))
			*ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	HCHECK(*ctx, "no ringnic device could be opened (%d devices): %s", n,
	       strerror(errno));
	return 0;
}

int nonblocking_async(struct ibv_context *ctx)
{
	int flags = fcntl(ctx->async_fd, F_GETFL);

	HCHECK(flags >= 0 && !fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK),
	       "async fd: %s", strerror(errno));
	return 0;
}

struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, access);

	if (!mr)
		HFAIL("ibv_reg_mr(%p, %zu, %#x): %s", addr, len, access,
		      strerror(errno));
	return mr;
}

static int modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
		  const char *step)
{
	int ret = ibv_modify_qp(qp, a, mask);

	HCHECK(!ret, "modify QP %#x to %s: %s", qp->qp_num, step, strerror(ret));
	return 0;
}

int qp_connect(struct ibv_qp *qp, uint32_t dest, const struct qp_params *p)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	HTRY(modify(qp, &a, IBV_QP_STATE, "RESET"));
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = p->access,
	};
	HTRY(modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				    IBV_QP_ACCESS_FLAGS, "INIT"));
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_4096,
		.dest_qp_num = dest,
		.ah_attr.port_num = 1,
		.max_dest_rd_atomic = 16,
		.min_rnr_timer = 1,
	};
	HTRY(modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				    IBV_QP_MAX_DEST_RD_ATOMIC |
				    IBV_QP_MIN_RNR_TIMER, "RTR"));
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTS,
		.timeout = p->timeout,
		.retry_cnt = p->retry_cnt,
		.rnr_retry = p->rnr_retry,
		.max_rd_atomic = 16,
	};
	return modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				      IBV_QP_MAX_QP_RD_ATOMIC, "RTS");
}

int qp_state(struct ibv_qp *qp, enum ibv_qp_state *state)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr a;
	int ret = ibv_query_qp(qp, &a, IBV_QP_STATE, &init);

	HCHECK(!ret, "ibv_query_qp: %s", strerror(ret));
	*state = a.qp_state;
	return 0;
}

int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = NULL;
	int ret = ibv_post_send(qp, wr, &bad);

	HCHECK(!ret, "ibv_post_send(wr_id %#llx, opcode %d): %s",
	       (unsigned long long)(bad ? bad->wr_id : 0), bad ? (int)bad->opcode : -1,
	       strerror(ret));
	return 0;
}

int post_recv(struct ibv_qp *qp, uint64_t wr_id, uint64_t addr, uint32_t len,
	      uint32_t lkey)
{
	struct ibv_sge sge = { addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int ret = ibv_post_recv(qp, &wr, &bad);

	HCHECK(!ret, "ibv_post_recv: %s", strerror(ret));
	return 0;
}

const char *wc_status_name(int status)
{
	return ibv_wc_status_str((enum ibv_wc_status)status);
}

/* ---- the hostile pair --------------------------------------------------------- */

#define HP_CQE 256
#define HP_BUF (64u << 10)

static const char *const cq_names[NCQ] = { "a's send CQ", "b's send CQ",
					    "a's recv CQ", "b's recv CQ" };

static struct ibv_cq *cq_of(struct hpair *hp, int c)
{
	switch (c) {
	case SCQ_A:
		return hp->scq[QA];
	case SCQ_B:
		return hp->scq[QB];
	case RCQ_A:
		return hp->rcq[QA];
	default:
		return hp->rcq[QB];
	}
}

static int create_queues(struct hpair *hp)
{
	int q;

	for (q = 0; q < 2; q++) {
		struct ibv_qp_init_attr qa = {
			.qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = 64, .max_recv_wr = 64,
				 .max_send_sge = 4, .max_recv_sge = 4,
				 .max_inline_data = 64 },
		};

		hp->scq[q] = ibv_create_cq(hp->ctx, HP_CQE, NULL, NULL, 0);
		hp->rcq[q] = ibv_create_cq(hp->ctx, HP_CQE, NULL, NULL, 0);
		HCHECK(hp->scq[q] && hp->rcq[q], "ibv_create_cq: %s",
		       strerror(errno));
		qa.send_cq = hp->scq[q];
		qa.recv_cq = hp->rcq[q];
		hp->qp[q] = ibv_create_qp(hp->pd, &qa);
		HCHECK(hp->qp[q], "ibv_create_qp: %s", strerror(errno));
	}
	hp->dest[QA] = hp->qp[QB]->qp_num;
	hp->dest[QB] = hp->qp[QA]->qp_num;
	return 0;
}

static int destroy_queues(struct hpair *hp)
{
	int q, ret;

	for (q = 0; q < 2; q++) {
		if (hp->qp[q]) {
			ret = ibv_destroy_qp(hp->qp[q]);
			HCHECK(!ret, "ibv_destroy_qp: %s", strerror(ret));
			hp->qp[q] = NULL;
		}
	}
	for (q = 0; q < 2; q++) {
		ret = ibv_destroy_cq(hp->scq[q]) | ibv_destroy_cq(hp->rcq[q]);
		HCHECK(!ret, "ibv_destroy_cq failed");
	}
	return 0;
}

int hp_open(struct hpair *hp)
{
	size_t page = page_size();
	int q;

	memset(hp, 0, sizeof(*hp));
	HTRY(open_device(&hp->ctx));
	HTRY(nonblocking_async(hp->ctx));
	hp->pd = ibv_alloc_pd(hp->ctx);
	hp->pd2 = ibv_alloc_pd(hp->ctx);
	HCHECK(hp->pd && hp->pd2, "ibv_alloc_pd: %s", strerror(errno));
	HTRY(create_queues(hp));
	for (q = 0; q < 2; q++)
		hp->params[q] = (struct qp_params){ .access = ACCESS_ALL,
						    .timeout = 12,
						    .retry_cnt = 1,
						    .rnr_retry = 7 };
	/* Misaligned, so that canary bytes sit right at the MRs' edges. */
	HTRY(gbuf_alloc(&hp->local, HP_BUF, rng_range(1, page / 8 - 1) * 8));
	HTRY(gbuf_alloc(&hp->target, HP_BUF, rng_range(1, page / 8 - 1) * 8));
	hp->local_mr = reg_mr(hp->pd, hp->local.data, HP_BUF, ACCESS_ALL);
	hp->target_mr = reg_mr(hp->pd, hp->target.data, HP_BUF, ACCESS_ALL);
	HTRY(!hp->local_mr || !hp->target_mr);
	return hp_reset(hp);
}

int hp_close(struct hpair *hp)
{
	int ret = 0;

	ret |= gbuf_check(&hp->local, "hostile local buffer");
	ret |= gbuf_check(&hp->target, "hostile target buffer");
	ret |= destroy_queues(hp);
	HCHECK(!ibv_dereg_mr(hp->local_mr) && !ibv_dereg_mr(hp->target_mr),
	       "ibv_dereg_mr failed");
	HCHECK(!ibv_dealloc_pd(hp->pd) && !ibv_dealloc_pd(hp->pd2),
	       "ibv_dealloc_pd failed");
	HCHECK(!ibv_close_device(hp->ctx), "ibv_close_device failed");
	gbuf_free(&hp->local);
	gbuf_free(&hp->target);
	return ret;
}

/* Read every async event waiting into hp->events (acknowledged at once). */
static int collect_events(struct hpair *hp)
{
	struct ibv_async_event ev;

	while (!ibv_get_async_event(hp->ctx, &ev)) {
		void *element = ev.element.qp;

		if (ev.event_type == IBV_EVENT_CQ_ERR)
			element = ev.element.cq;
		ibv_ack_async_event(&ev);
		HCHECK(hp->nevents < (int)(sizeof(hp->events) / sizeof(hp->events[0])),
		       "too many async events (last %s)",
		       ibv_event_type_str(ev.event_type));
		hp->events[hp->nevents++] = (struct hp_event){ ev.event_type,
							       element };
	}
	HCHECK(errno == EAGAIN || errno == EWOULDBLOCK,
	       "ibv_get_async_event: %s", strerror(errno));
	return 0;
}

static bool take_event(struct hpair *hp, enum ibv_event_type type,
		       void *element)
{
	int i;

	for (i = 0; i < hp->nevents; i++) {
		if (hp->events[i].type == type && hp->events[i].element == element) {
			hp->events[i] = hp->events[--hp->nevents];
			return true;
		}
	}
	return false;
}

static int drain_cq(struct ibv_cq *cq)
{
	struct ibv_wc wc[16];
	int n;

	do
		n = ibv_poll_cq(cq, 16, wc);
	while (n > 0);
	return 0;
}

int hp_reset(struct hpair *hp)
{
	int q, c;

	for (q = 0; q < 2; q++)
		HTRY(qp_connect(hp->qp[q], hp->dest[q], &hp->params[q]));
	for (c = 0; c < NCQ; c++)
		drain_cq(cq_of(hp, c));
	HTRY(collect_events(hp));
	hp->nevents = 0;
	return 0;
}

int hp_rebuild_queues(struct hpair *hp)
{
	HTRY(collect_events(hp));
	hp->nevents = 0;
	HTRY(destroy_queues(hp));
	HTRY(create_queues(hp));
	return hp_reset(hp);
}

/* A completion that arrived: expected (index into wcs), a flush, or wrong. */
static int match_wc(const struct ibv_wc *wc, int c, const struct want_wc *wcs,
		    int nwcs, bool *got, const char *what)
{
	int i;

	for (i = 0; i < nwcs; i++) {
		if (got[i] || wcs[i].cq != c || wcs[i].wr_id != wc->wr_id)
			continue;
		HCHECK(wc->status == wcs[i].status,
		       "%s: wr %#llx on %s completed with %s, not %s", what,
		       (unsigned long long)wc->wr_id, cq_names[c],
		       wc_status_name(wc->status), wc_status_name(wcs[i].status));
		got[i] = true;
		return 1;
	}
	HCHECK(wc->status == IBV_WC_WR_FLUSH_ERR,
	       "%s: unexpected completion of wr %#llx on %s: %s", what,
	       (unsigned long long)wc->wr_id, cq_names[c],
	       wc_status_name(wc->status));
	return 0;
}

/* Poll every CQ once; returns completions matched, or -1. */
static int poll_all(struct hpair *hp, const struct want_wc *wcs, int nwcs,
		    bool *got, const char *what, int *seen)
{
	int c, i, n, matched = 0;

	*seen = 0;
	for (c = 0; c < NCQ; c++) {
		struct ibv_wc wc[16];

		n = ibv_poll_cq(cq_of(hp, c), 16, wc);
		HCHECK(n >= 0, "%s: ibv_poll_cq on %s: %d", what, cq_names[c], n);
		*seen += n;
		for (i = 0; i < n; i++) {
			int r = match_wc(&wc[i], c, wcs, nwcs, got, what);

			if (r < 0)
				return -1;
			matched += r;
		}
	}
	return matched;
}

int hp_expect(struct hpair *hp, const struct want_wc *wcs, int nwcs,
	      const struct want_ev *evs, int nevs, const char *what)
{
	uint64_t deadline = now_ms() + HOSTILE_WAIT_MS;
	unsigned int spins = 0;
	bool got[8] = { false };
	int i, ngot = 0, seen;

	HCHECK(nwcs <= (int)(sizeof(got) / sizeof(got[0])), "%s: too many", what);
	while (ngot < nwcs) {
		int n = poll_all(hp, wcs, nwcs, got, what, &seen);

		HTRY(n < 0);
		ngot += n;
		if (seen)
			continue;
		for (i = 0; i < nwcs && ngot < nwcs; i++)
			HCHECK(got[i] || now_ms() < deadline,
			       "%s: no completion of wr %#llx on %s (%s wanted)",
			       what, (unsigned long long)wcs[i].wr_id,
			       cq_names[wcs[i].cq], wc_status_name(wcs[i].status));
		backoff(&spins);
	}
	/* What the device wrote with them is there now: flushes only. */
	do
		HTRY(poll_all(hp, wcs, nwcs, got, what, &seen) < 0);
	while (seen);
	HTRY(collect_events(hp));
	for (i = 0; i < nevs; i++) {
		void *element = evs[i].qp >= 0 ? (void *)hp->qp[evs[i].qp] :
						 (void *)cq_of(hp, evs[i].cq);

		HCHECK(take_event(hp, evs[i].type, element),
		       "%s: no %s event for %s", what,
		       ibv_event_type_str(evs[i].type),
		       evs[i].qp == QA ? "QP a" : evs[i].qp == QB ? "QP b" : "the CQ");
	}
	HCHECK(!hp->nevents, "%s: unexpected async event %s", what,
	       ibv_event_type_str(hp->events[0].type));
	return 0;
}

int hp_wait_event(struct hpair *hp, enum ibv_event_type type, void *element,
		  const char *what)
{
	uint64_t deadline = now_ms() + HOSTILE_WAIT_MS;

	for (;;) {
		struct pollfd pfd = { .fd = hp->ctx->async_fd, .events = POLLIN };

		HTRY(collect_events(hp));
		if (take_event(hp, type, element))
			return 0;
		HCHECK(now_ms() < deadline, "%s: no %s event", what,
		       ibv_event_type_str(type));
		poll(&pfd, 1, 100);
	}
}

int hp_expect_state(struct hpair *hp, int q, enum ibv_qp_state want,
		    const char *what)
{
	enum ibv_qp_state s;

	HTRY(qp_state(hp->qp[q], &s));
	HCHECK(s == want, "%s: QP %c is in state %d, not %d", what, "ab"[q], s,
	       want);
	return 0;
}

int hp_probe(struct hpair *hp, const char *what)
{
	uint32_t len = rng_range(1, 4096);
	uint64_t off = rng_below(hp->target.len - len);
	uint64_t seed = rng_next();
	struct ibv_sge sge = { (uintptr_t)hp->local.data, len, hp->local_mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 0x9e0be,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)hp->target.data + off, hp->target_mr->rkey },
	};
	const struct want_wc ok = { SCQ_A, wr.wr_id, IBV_WC_SUCCESS };

	fill_pattern(hp->local.data, len, seed);
	HTRY(post_send(hp->qp[QA], &wr));
	HTRY(hp_expect(hp, &ok, 1, NULL, 0, what));
	return check_pattern(hp->target.data + off, len, seed, what);
}

void make_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t id,
	     enum ibv_wr_opcode op, uint64_t laddr, uint32_t len, uint32_t lkey,
	     uint64_t raddr, uint32_t rkey)
{
	*sge = (struct ibv_sge){ laddr, len, lkey };
	*wr = (struct ibv_send_wr){
		.wr_id = id,
		.sg_list = sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	};
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr->wr.atomic.remote_addr = raddr;
		wr->wr.atomic.rkey = rkey;
		wr->wr.atomic.compare_add = op == IBV_WR_ATOMIC_FETCH_AND_ADD ? 1 : 0;
		wr->wr.atomic.swap = 1;
	} else {
		wr->wr.rdma.remote_addr = raddr;
		wr->wr.rdma.rkey = rkey;
	}
}

int expect_remote_access_err(struct hpair *hp, uint64_t id, const char *what)
{
	const struct want_wc wc = { SCQ_A, id, IBV_WC_REM_ACCESS_ERR };
	const struct want_ev ev = { IBV_EVENT_QP_ACCESS_ERR, QB, 0 };

	HTRY(hp_expect(hp, &wc, 1, &ev, 1, what));
	HTRY(hp_expect_state(hp, QA, IBV_QPS_ERR, what));
	HTRY(hp_expect_state(hp, QB, IBV_QPS_ERR, what));
	return hp_reset(hp);
}

int expect_local_err(struct hpair *hp, uint64_t id, enum ibv_wc_status st,
		     const char *what)
{
	const struct want_wc wc = { SCQ_A, id, st };

	HTRY(hp_expect(hp, &wc, 1, NULL, 0, what));
	HTRY(hp_expect_state(hp, QA, IBV_QPS_ERR, what));
	/* Nothing reached the responder. */
	HTRY(hp_expect_state(hp, QB, IBV_QPS_RTS, what));
	return hp_reset(hp);
}

int expect_recv_err(struct hpair *hp, uint64_t id, enum ibv_wc_status st,
		    uint64_t recv_id, enum ibv_wc_status recv_st,
		    const char *what)
{
	const struct want_wc wc[2] = { { SCQ_A, id, st },
				       { RCQ_B, recv_id, recv_st } };

	HTRY(hp_expect(hp, wc, 2, NULL, 0, what));
	HTRY(hp_expect_state(hp, QA, IBV_QPS_ERR, what));
	HTRY(hp_expect_state(hp, QB, IBV_QPS_ERR, what));
	return hp_reset(hp);
}

int hp_check_canaries(struct hpair *hp, const char *what)
{
	char buf[128];

	snprintf(buf, sizeof(buf), "%s: local buffer", what);
	HTRY(gbuf_check(&hp->local, buf));
	snprintf(buf, sizeof(buf), "%s: target buffer", what);
	return gbuf_check(&hp->target, buf);
}
