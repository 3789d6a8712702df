// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The good pair: two processes in lockstep, each iteration checked byte for
 * byte.  good0 (role 0), iteration k, size s, in one post:
 *   WRITE   its SEND area -> good1's TARGET, in two halves
 *   SEND    its SEND area, immediate k         (good1 checks data, TARGET)
 *   READ    good1's TARGET -> its READBACK     (must equal what was written)
 *   FETCH_ADD good1's counter by 1             (must return k - 1)
 * good1 answers with an echo of s bytes: a SEND when k is even, a
 * WRITE_WITH_IMM into good0's TARGET when it is odd; good0 checks it.
 * Every completion must succeed and no async event may come.  When the
 * hostiles are done, good0 sends immediate GOOD_DONE and both stop.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"

#define SLOT (64u << 10)
#define OFF_SEND 0
#define OFF_READBACK SLOT
#define OFF_RECV (2 * SLOT)
#define OFF_TARGET (3 * SLOT)
#define OFF_ATOMIC (4 * SLOT)
#define BUF_LEN (4 * SLOT + 64)

#define GOOD_INLINE 256
#define GOOD_RECVS 4
#define GOOD_DONE 0xffffffffu

struct good {
	int role;
	int peer_fd;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp;
	struct gbuf buf;
	struct ibv_mr *mr;
	uint32_t peer_rkey;
	uint64_t peer_addr;
	uint64_t recv_next; /* wr_id of the next receive to complete */
	struct good_report *rep;
};

struct hello {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr;
};

/* The data of iteration k, and of its echo. */
static uint64_t data_seed(uint32_t k)
{
	return 0x600d000000000000ull | k;
}

static uint64_t echo_seed(uint32_t k)
{
	return 0xec40000000000000ull | k;
}

static uint8_t *at(struct good *g, size_t off)
{
	return g->buf.data + off;
}

static uint64_t peer_at(struct good *g, size_t off)
{
	return g->peer_addr + off;
}

static uint32_t pick_size(void)
{
	uint64_t r = rng_below(100);

	if (r < 40)
		return rng_range(1, 64);
	if (r < 70)
		return rng_range(65, 4096);
	return rng_range(4097, SLOT);
}

/* One completion on cq: it must succeed, with the wanted wr_id and opcode. */
static int good_wc(struct good *g, struct ibv_cq *cq, uint64_t wr_id,
		   enum ibv_wc_opcode opcode, struct ibv_wc *wc)
{
	uint64_t deadline = now_ms() + HOSTILE_WAIT_MS;
	unsigned int spins = 0;
	int n;

	while (!(n = ibv_poll_cq(cq, 1, wc))) {
		HCHECK(now_ms() < deadline, "no completion of wr %#llx",
		       (unsigned long long)wr_id);
		backoff(&spins);
	}
	HCHECK(n == 1, "ibv_poll_cq: %d", n);
	if (wc->status != IBV_WC_SUCCESS) {
		g->rep->error_cqes++;
		return HFAIL("wr %#llx completed with %s", (unsigned long long)wc->wr_id,
			     wc_status_name(wc->status));
	}
	HCHECK(wc->wr_id == wr_id && wc->opcode == opcode,
	       "completion of wr %#llx opcode %d, wanted wr %#llx opcode %d",
	       (unsigned long long)wc->wr_id, wc->opcode,
	       (unsigned long long)wr_id, opcode);
	g->rep->ops++;
	return 0;
}

static int setup(struct good *g, int loot_fd)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1,
			 .max_recv_sge = 1, .max_inline_data = GOOD_INLINE },
	};
	const struct qp_params params = { .access = ACCESS_ALL, .timeout = 14,
					  .retry_cnt = 7, .rnr_retry = 7 };
	struct hello mine, theirs;
	struct {
		uint32_t victim;
		uint32_t pad;
		struct loot loot;
	} msg = { .victim = g->role ? VICTIM_GOOD1 : VICTIM_GOOD0 };
	int i;

	HTRY(open_device(&g->ctx));
	HTRY(nonblocking_async(g->ctx));
	g->pd = ibv_alloc_pd(g->ctx);
	g->scq = ibv_create_cq(g->ctx, 64, NULL, NULL, 0);
	g->rcq = ibv_create_cq(g->ctx, 64, NULL, NULL, 0);
	HCHECK(g->pd && g->scq && g->rcq, "setup: %s", strerror(errno));
	qa.send_cq = g->scq;
	qa.recv_cq = g->rcq;
	g->qp = ibv_create_qp(g->pd, &qa);
	HCHECK(g->qp, "ibv_create_qp: %s", strerror(errno));
	HTRY(gbuf_alloc(&g->buf, BUF_LEN, rng_below(page_size() / 8) * 8));
	g->mr = reg_mr(g->pd, g->buf.data, BUF_LEN, ACCESS_ALL);
	HTRY(!g->mr);

	mine = (struct hello){ g->qp->qp_num, g->mr->rkey,
			       (uintptr_t)g->buf.data };
	HCHECK(write(g->peer_fd, &mine, sizeof(mine)) == sizeof(mine) &&
		       read(g->peer_fd, &theirs, sizeof(theirs)) == sizeof(theirs),
	       "hello exchange: %s", strerror(errno));
	g->peer_rkey = theirs.rkey;
	g->peer_addr = theirs.addr;
	HTRY(qp_connect(g->qp, theirs.qpn, &params));
	for (i = 0; i < GOOD_RECVS; i++)
		HTRY(post_recv(g->qp, i, (uintptr_t)at(g, OFF_RECV), SLOT,
			       g->mr->lkey));

	/* What a thief gets to see: everything. */
	msg.loot = (struct loot){
		.qpn = g->qp->qp_num,
		.rkey = g->mr->rkey,
		.lkey = g->mr->lkey,
		.pd_handle = g->pd->handle,
		.mr_handle = g->mr->handle,
		.cq_handle = g->scq->handle,
		.qp_handle = g->qp->handle,
		.addr = (uintptr_t)g->buf.data,
		.len = BUF_LEN,
	};
	HCHECK(write(loot_fd, &msg, sizeof(msg)) == sizeof(msg), "loot: %s",
	       strerror(errno));
	/* Both have receives up before anything is sent. */
	HCHECK(write(g->peer_fd, &mine, 1) == 1 && read(g->peer_fd, &theirs, 1) == 1,
	       "ready exchange: %s", strerror(errno));
	return 0;
}

/* One signaled WR; small SENDs and WRITEs inline when inl says so. */
static void sge_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t id,
		   enum ibv_wr_opcode op, uint64_t addr, uint32_t len,
		   uint32_t lkey, bool inl)
{
	*sge = (struct ibv_sge){ addr, len, lkey };
	*wr = (struct ibv_send_wr){
		.wr_id = id,
		.sg_list = sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	};
	if (inl && len <= GOOD_INLINE && op != IBV_WR_RDMA_READ &&
	    op != IBV_WR_ATOMIC_FETCH_AND_ADD)
		wr->send_flags |= IBV_SEND_INLINE;
}

/* The next receive, in posting order; its buffer is reposted at once. */
static int wait_recv(struct good *g, enum ibv_wc_opcode op, struct ibv_wc *wc)
{
	HTRY(good_wc(g, g->rcq, g->recv_next, op, wc));
	g->recv_next++;
	return post_recv(g->qp, g->recv_next + GOOD_RECVS - 1,
			 (uintptr_t)at(g, OFF_RECV), SLOT, g->mr->lkey);
}

/*
 * good0's side of iteration k.  The WRITE is split in two adjacent halves
 * posted with the SEND in one list: ringnicd moves such a run as one batch.
 */
static int iteration0(struct good *g, uint32_t k)
{
	uint32_t s = pick_size(), half = s / 2;
	/* Small ones often go inline, as applications do: all or none of a
	 * run, so that the run stays one batch.
	 */
	bool inl = rng_below(2);
	uint64_t id = (uint64_t)k << 3;
	struct ibv_send_wr wr[5], *first = &wr[half ? 0 : 1];
	struct ibv_sge sge[5];
	struct ibv_wc wc;
	uint64_t old;
	int i;

	fill_pattern(at(g, OFF_SEND), s, data_seed(k));
	memset(at(g, OFF_READBACK), 0, s);
	sge_wr(&wr[0], &sge[0], id, IBV_WR_RDMA_WRITE, (uintptr_t)at(g, OFF_SEND),
	       half, g->mr->lkey, inl);
	wr[0].wr.rdma.remote_addr = peer_at(g, OFF_TARGET);
	wr[0].wr.rdma.rkey = g->peer_rkey;
	sge_wr(&wr[1], &sge[1], id + 1, IBV_WR_RDMA_WRITE,
	       (uintptr_t)at(g, OFF_SEND) + half, s - half, g->mr->lkey, inl);
	wr[1].wr.rdma.remote_addr = peer_at(g, OFF_TARGET) + half;
	wr[1].wr.rdma.rkey = g->peer_rkey;
	sge_wr(&wr[2], &sge[2], id + 2, IBV_WR_SEND_WITH_IMM,
	       (uintptr_t)at(g, OFF_SEND), s, g->mr->lkey, inl);
	wr[2].imm_data = htonl(k);
	sge_wr(&wr[3], &sge[3], id + 3, IBV_WR_RDMA_READ,
	       (uintptr_t)at(g, OFF_READBACK), s, g->mr->lkey, false);
	wr[3].wr.rdma.remote_addr = peer_at(g, OFF_TARGET);
	wr[3].wr.rdma.rkey = g->peer_rkey;
	sge_wr(&wr[4], &sge[4], id + 4, IBV_WR_ATOMIC_FETCH_AND_ADD,
	       (uintptr_t)at(g, OFF_ATOMIC), 8, g->mr->lkey, false);
	wr[4].wr.atomic.remote_addr = peer_at(g, OFF_ATOMIC);
	wr[4].wr.atomic.rkey = g->peer_rkey;
	wr[4].wr.atomic.compare_add = 1;
	for (i = 0; i < 4; i++)
		wr[i].next = &wr[i + 1];
	HTRY(post_send(g->qp, first));

	if (half)
		HTRY(good_wc(g, g->scq, id, IBV_WC_RDMA_WRITE, &wc));
	HTRY(good_wc(g, g->scq, id + 1, IBV_WC_RDMA_WRITE, &wc));
	HTRY(good_wc(g, g->scq, id + 2, IBV_WC_SEND, &wc));
	HTRY(good_wc(g, g->scq, id + 3, IBV_WC_RDMA_READ, &wc));
	HTRY(good_wc(g, g->scq, id + 4, IBV_WC_FETCH_ADD, &wc));
	HTRY(check_pattern(at(g, OFF_READBACK), s, data_seed(k), "READ back"));
	memcpy(&old, at(g, OFF_ATOMIC), sizeof(old));
	HCHECK(old == k - 1, "FETCH_ADD %u returned %llu", k,
	       (unsigned long long)old);

	/* The echo. */
	if (k % 2 == 0) {
		HTRY(wait_recv(g, IBV_WC_RECV, &wc));
		HCHECK(wc.byte_len == s && !(wc.wc_flags & IBV_WC_WITH_IMM),
		       "echo %u: %u bytes, flags %#x", k, wc.byte_len, wc.wc_flags);
		HTRY(check_pattern(at(g, OFF_RECV), s, echo_seed(k), "echo SEND"));
	} else {
		HTRY(wait_recv(g, IBV_WC_RECV_RDMA_WITH_IMM, &wc));
		HCHECK(wc.wc_flags & IBV_WC_WITH_IMM && wc.imm_data == htonl(k),
		       "echo %u: immediate %#x", k, ntohl(wc.imm_data));
		HTRY(check_pattern(at(g, OFF_TARGET), s, echo_seed(k),
				   "echo WRITE_WITH_IMM"));
	}
	g->rep->bytes_verified += 2 * (uint64_t)s + sizeof(old);
	return 0;
}

/* good1's side of iteration k; *done when good0 said it stops. */
static int iteration1(struct good *g, uint32_t k, bool *done)
{
	struct ibv_send_wr wr;
	struct ibv_sge sge;
	struct ibv_wc wc;
	uint32_t s;

	HTRY(wait_recv(g, IBV_WC_RECV, &wc));
	HCHECK(wc.wc_flags & IBV_WC_WITH_IMM, "SEND %u without immediate", k);
	if (ntohl(wc.imm_data) == GOOD_DONE) {
		*done = true;
		return 0;
	}
	HCHECK(ntohl(wc.imm_data) == k, "SEND %u arrived as %u", k,
	       ntohl(wc.imm_data));
	s = wc.byte_len;
	HCHECK(s >= 1 && s <= SLOT, "SEND %u of %u bytes", k, s);
	HTRY(check_pattern(at(g, OFF_RECV), s, data_seed(k), "SEND received"));
	/* The WRITE came before the SEND, on the same QP. */
	HTRY(check_pattern(at(g, OFF_TARGET), s, data_seed(k), "WRITE target"));

	fill_pattern(at(g, OFF_SEND), s, echo_seed(k));
	if (k % 2 == 0) {
		sge_wr(&wr, &sge, k, IBV_WR_SEND, (uintptr_t)at(g, OFF_SEND), s,
		       g->mr->lkey, rng_below(2));
	} else {
		sge_wr(&wr, &sge, k, IBV_WR_RDMA_WRITE_WITH_IMM,
		       (uintptr_t)at(g, OFF_SEND), s, g->mr->lkey, rng_below(2));
		wr.imm_data = htonl(k);
		wr.wr.rdma.remote_addr = peer_at(g, OFF_TARGET);
		wr.wr.rdma.rkey = g->peer_rkey;
	}
	HTRY(post_send(g->qp, &wr));
	HTRY(good_wc(g, g->scq, k, k % 2 ? IBV_WC_RDMA_WRITE : IBV_WC_SEND, &wc));
	g->rep->bytes_verified += 2 * (uint64_t)s;
	return 0;
}

static int say_done(struct good *g)
{
	struct ibv_send_wr wr = {
		.wr_id = GOOD_DONE,
		.opcode = IBV_WR_SEND_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(GOOD_DONE),
	};
	struct ibv_wc wc;

	HTRY(post_send(g->qp, &wr));
	return good_wc(g, g->scq, GOOD_DONE, IBV_WC_SEND, &wc);
}

/* No event may ever reach a good context. */
static int no_async_events(struct good *g)
{
	struct ibv_async_event ev;

	while (!ibv_get_async_event(g->ctx, &ev)) {
		g->rep->async_events++;
		HFAIL("async event %s on a good context",
		      ibv_event_type_str(ev.event_type));
		ibv_ack_async_event(&ev);
	}
	return g->rep->async_events ? -1 : 0;
}

static int teardown(struct good *g)
{
	int ret = 0;

	ret |= no_async_events(g);
	ret |= gbuf_check(&g->buf, "good buffer");
	HCHECK(!ibv_destroy_qp(g->qp) && !ibv_dereg_mr(g->mr) &&
		       !ibv_destroy_cq(g->scq) && !ibv_destroy_cq(g->rcq) &&
		       !ibv_dealloc_pd(g->pd) && !ibv_close_device(g->ctx),
	       "teardown failed");
	gbuf_free(&g->buf);
	return ret;
}

int good_pair_run(int role, int peer_fd, int loot_fd, uint64_t seed)
{
	struct good g = { .role = role, .peer_fd = peer_fd,
			  .rep = &sh->good[role] };
	bool done = false;
	uint32_t k = 0;
	uint64_t counter;

	rng_seed(seed);
	HTRY(setup(&g, loot_fd));
	close(loot_fd);
	while (!done) {
		if (role == 0 && __atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
			HTRY(say_done(&g));
			break;
		}
		k++;
		HTRY(role == 0 ? iteration0(&g, k) : iteration1(&g, k, &done));
		if (done)
			k--;
		else
			__atomic_store_n(&g.rep->iterations, k, __ATOMIC_RELEASE);
	}
	if (role == 1) {
		memcpy(&counter, at(&g, OFF_ATOMIC), sizeof(counter));
		HCHECK(counter == k, "counter is %llu after %u FETCH_ADDs",
		       (unsigned long long)counter, k);
	}
	HTRY(teardown(&g));
	g.rep->finished = 1;
	return 0;
}
