// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A client killed with SIGKILL in the middle of traffic.  Four processes:
 * A and B keep verified traffic going (WRITE, SEND_WITH_IMM, READ back,
 * FETCH_ADD) the whole time; C and D write into each other until the
 * harness kills C.  D must then see its WRITE fail with RETRY_EXC_ERR (C's
 * QP is gone: nobody acknowledges), the rest flushed; A and B must not
 * notice anything; ringnicd must stay up (with-device.sh then checks that
 * it still shuts down cleanly).
 *
 * And a client killed while it holds a deferred batch it never rang for:
 * the batch is never executed, and its peer sees only the retries a dead
 * peer costs.
 */
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <infiniband/ringnicdv.h>

#include "e2e.h"

enum { ROLE_A, ROLE_B, ROLE_VICTIM, ROLE_PEER };

/* Messages between the roles and the harness, over p->ctl. */
enum { MSG_RUNNING = 1, MSG_SAW_ERROR, MSG_STOP };

#define TRAFFIC_LIMIT_MS 60000
#define REGIONS 32 /* WRITE targets in B: twice the receives B keeps posted */
#define RECVS 16
#define REGION_LEN 4096
#define SEND_LEN 512
#define STOP_IMM 0xffffffffu
#define AFTER_STOP 50 /* A's iterations after the kill and the peer's error */

/* The harness said stop (non-blocking look). */
static int stop_requested(struct e2e_proc *p, bool *stop)
{
	struct pollfd pfd = { .fd = p->ctl, .events = POLLIN };
	uint64_t msg;

	if (poll(&pfd, 1, 0) != 1)
		return 0;
	TRY(recv_u64(p->ctl, &msg, E2E_WAIT_MS));
	CHECK(msg == MSG_STOP, "unexpected message %llu from the harness",
	      (unsigned long long)msg);
	*stop = true;
	return 0;
}

/* ---- A and B --------------------------------------------------------------- */

static uint32_t region_off(uint32_t i)
{
	return 4096 + (i % REGIONS) * REGION_LEN;
}

static int a_iteration(struct e2e_side *s, uint32_t i)
{
	struct ibv_send_wr wr[4];
	struct ibv_sge sge[4];
	uint64_t old;
	int k;

	fill(s->buf + 0x40000, REGION_LEN, i);
	fill(s->buf + 0x50000, SEND_LEN, i ^ 0x5555);
	memset(s->buf + 0x60000, 0, REGION_LEN);
	sge[0] = sge_of(s, 0x40000, REGION_LEN);
	sge[1] = sge_of(s, 0x50000, SEND_LEN);
	sge[2] = sge_of(s, 0x60000, REGION_LEN);
	sge[3] = sge_of(s, 0x70000, 8);
	memset(wr, 0, sizeof(wr));
	for (k = 0; k < 4; k++) {
		wr[k].wr_id = (uint64_t)i << 8 | k;
		wr[k].sg_list = &sge[k];
		wr[k].num_sge = 1;
		wr[k].send_flags = IBV_SEND_SIGNALED;
		wr[k].next = k < 3 ? &wr[k + 1] : NULL;
	}
	wr[0].opcode = IBV_WR_RDMA_WRITE;
	wr[0].wr.rdma.remote_addr = s->rem.addr + region_off(i);
	wr[0].wr.rdma.rkey = s->rem.rkey;
	wr[1].opcode = IBV_WR_SEND_WITH_IMM;
	wr[1].imm_data = htobe32(i);
	wr[2].opcode = IBV_WR_RDMA_READ;
	wr[2].wr.rdma.remote_addr = s->rem.addr + region_off(i);
	wr[2].wr.rdma.rkey = s->rem.rkey;
	wr[3].opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr[3].wr.atomic.remote_addr = s->rem.addr;
	wr[3].wr.atomic.rkey = s->rem.rkey;
	wr[3].wr.atomic.compare_add = 1;
	TRY(post_send1(s->qp, wr));
	TRY(expect_send_ok(s, wr[0].wr_id, IBV_WC_RDMA_WRITE, REGION_LEN));
	TRY(expect_send_ok(s, wr[1].wr_id, IBV_WC_SEND, SEND_LEN));
	TRY(expect_send_ok(s, wr[2].wr_id, IBV_WC_RDMA_READ, REGION_LEN));
	TRY(expect_send_ok(s, wr[3].wr_id, IBV_WC_FETCH_ADD, 8));
	TRY(check_fill(s->buf + 0x60000, REGION_LEN, i, "READ back"));
	memcpy(&old, s->buf + 0x70000, 8);
	CHECK(old == i, "iteration %u: FETCH_ADD counter was %llu", i,
	      (unsigned long long)old);
	return 0;
}

static int role_a(struct e2e_proc *p)
{
	uint64_t deadline = e2e_now_ms() + TRAFFIC_LIMIT_MS;
	uint32_t i, after = 0;
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_send_wr wr = { 0 };
	bool stop = false;

	e2e_default_opts(&o);
	o.buf_len = 0x80000;
	TRY(e2e_setup(&s, p, &o));
	for (i = 0; after < AFTER_STOP; i++) {
		TRY(a_iteration(&s, i));
		if (i == 20)
			TRY(send_u64(p->ctl, MSG_RUNNING));
		TRY(stop_requested(p, &stop));
		after += stop;
		CHECK(e2e_now_ms() < deadline, "no stop from the harness after %u iterations",
		      i);
	}
	wr.wr_id = 0xffff;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htobe32(STOP_IMM);
	wr.send_flags = IBV_SEND_SIGNALED;
	TRY(post_send1(s.qp, &wr));
	TRY(expect_send_ok(&s, 0xffff, IBV_WC_SEND, 0));
	TRY(send_u64(p->peer, i));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int role_b(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t i, slot;
	uint64_t sent, counter;

	e2e_default_opts(&o);
	o.buf_len = 0x80000;
	o.max_recv_wr = RECVS;
	TRY(e2e_setup(&s, p, &o));
	for (slot = 0; slot < RECVS; slot++)
		TRY(post_recv_buf(&s, slot, 0x60000 + slot * SEND_LEN, SEND_LEN));
	for (i = 0;; i++) {
		struct ibv_wc wc;

		slot = i % RECVS;
		if (poll_one(rcq_of(&s), &wc, E2E_WAIT_MS))
			return FAIL("no message %u from A", i);
		if (wc.status == IBV_WC_SUCCESS && wc.wc_flags & IBV_WC_WITH_IMM &&
		    be32toh(wc.imm_data) == STOP_IMM)
			break;
		{
			struct wc_want w = {
				.wr_id = slot,
				.status = IBV_WC_SUCCESS,
				.opcode = IBV_WC_RECV,
				.byte_len = SEND_LEN,
				.qp_num = s.qp->qp_num,
				.recv = true,
				.src_qp = s.rem.qpn,
				.imm = true,
				.imm_data = htobe32(i),
			};

			TRY(check_wc(&wc, &w, "message from A"));
		}
		TRY(check_fill(s.buf + 0x60000 + slot * SEND_LEN, SEND_LEN,
			       i ^ 0x5555, "SEND from A"));
		/* The WRITE before the SEND has landed. */
		TRY(check_fill(s.buf + region_off(i), REGION_LEN, i, "WRITE from A"));
		TRY(post_recv_buf(&s, slot, 0x60000 + slot * SEND_LEN, SEND_LEN));
	}
	TRY(recv_u64(p->peer, &sent, E2E_WAIT_MS));
	CHECK(sent == i, "A sent %llu messages, B got %u", (unsigned long long)sent,
	      i);
	memcpy(&counter, s.buf, 8);
	CHECK(counter == i, "FETCH_ADD counter %llu after %u iterations",
	      (unsigned long long)counter, i);
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

/* ---- C (killed) and D (its peer) ------------------------------------------- */

#define CD_LEN (64 << 10)
#define WINDOW 4

static void cd_opts(struct e2e_opts *o)
{
	e2e_default_opts(o);
	o->buf_len = 4 * CD_LEN;
	o->timeout = 10; /* 4.2 ms */
	o->retry_cnt = 3;
}

static int post_cd_write(struct e2e_side *s, uint64_t wr_id)
{
	struct ibv_sge sge = sge_of(s, 0, CD_LEN);
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	};

	wr.wr.rdma.remote_addr = s->rem.addr + CD_LEN * (1 + wr_id % 3);
	wr.wr.rdma.rkey = s->rem.rkey;
	return post_send1(s->qp, &wr);
}

static int role_victim(struct e2e_proc *p)
{
	uint64_t deadline = e2e_now_ms() + TRAFFIC_LIMIT_MS, n = 0;
	struct e2e_opts o;
	struct e2e_side s;

	cd_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	for (n = 0; n < WINDOW; n++)
		TRY(post_cd_write(&s, n));
	for (n = 0;; n++) {
		struct ibv_wc wc;

		TRY(poll_one(scq_of(&s), &wc, E2E_WAIT_MS));
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == n,
		      "victim: completion wr_id %llu status '%s' before the kill",
		      (unsigned long long)wc.wr_id, wc_status_name(wc.status));
		TRY(post_cd_write(&s, n + WINDOW));
		if (n == 20)
			TRY(send_u64(p->ctl, MSG_RUNNING));
		CHECK(e2e_now_ms() < deadline, "victim: still alive after %d ms",
		      TRAFFIC_LIMIT_MS);
	}
}

static int role_peer(struct e2e_proc *p)
{
	uint64_t deadline = e2e_now_ms() + TRAFFIC_LIMIT_MS, n, k;
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_wc wc;
	uint32_t qpn;

	cd_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qpn = s.qp->qp_num;
	TRY(post_recv_buf(&s, 0x77, 0, 64));
	for (n = 0; n < WINDOW; n++)
		TRY(post_cd_write(&s, n));
	for (n = 0;; n++) {
		TRY(poll_one(scq_of(&s), &wc, E2E_WAIT_MS));
		if (wc.status != IBV_WC_SUCCESS)
			break;
		CHECK(wc.wr_id == n, "completion wr_id %llu, expected %llu",
		      (unsigned long long)wc.wr_id, (unsigned long long)n);
		TRY(post_cd_write(&s, n + WINDOW));
		if (n == 20)
			TRY(send_u64(p->ctl, MSG_RUNNING));
		CHECK(e2e_now_ms() < deadline, "no error %d ms after the start",
		      TRAFFIC_LIMIT_MS);
	}
	/* Whatever the error, the survivors go on and get checked. */
	TRY(send_u64(p->ctl, MSG_SAW_ERROR));
	CHECK(n > 20, "error completion ('%s') before the victim was killed",
	      wc_status_name(wc.status));
	CHECK(wc.wr_id == n && wc.status == IBV_WC_RETRY_EXC_ERR && wc.qp_num == qpn,
	      "WRITE to the killed peer completed with wr_id %llu status '%s' qp_num %#x, expected wr_id %llu '%s' %#x",
	      (unsigned long long)wc.wr_id, wc_status_name(wc.status), wc.qp_num,
	      (unsigned long long)n, wc_status_name(IBV_WC_RETRY_EXC_ERR), qpn);
	/* The rest of the window is flushed, and so is the receive. */
	for (k = n + 1; k < n + WINDOW; k++)
		TRY(expect_err(scq_of(&s), k, IBV_WC_WR_FLUSH_ERR, qpn,
			       "WRITE outstanding behind the error"));
	TRY(expect_err(rcq_of(&s), 0x77, IBV_WC_WR_FLUSH_ERR, qpn,
		       "receive posted before the error"));
	TRY(expect_no_wc(scq_of(&s), 10, "send CQ"));
	TRY(expect_qp_state(s.qp, IBV_QPS_ERR));
	return e2e_close(&s);
}

/* ---- the harness's part ------------------------------------------------------ */

static int expect_msg(const int *ctl, int role, uint64_t want, const char *what)
{
	uint64_t msg;

	if (recv_u64(ctl[role], &msg, 20000))
		return FAIL("%s: no word from role %d", what, role);
	CHECK(msg == want, "%s: role %d said %llu", what, role,
	      (unsigned long long)msg);
	return 0;
}

static int kill_orchestrate(pid_t *pids, const int *ctl, int n)
{
	const char *daemon = getenv("RINGNICD_PID");
	uint64_t t_kill, deadline;
	int status;
	pid_t r;

	(void)n;
	TRY(expect_msg(ctl, ROLE_A, MSG_RUNNING, "traffic A->B"));
	TRY(expect_msg(ctl, ROLE_VICTIM, MSG_RUNNING, "traffic victim->peer"));
	TRY(expect_msg(ctl, ROLE_PEER, MSG_RUNNING, "traffic peer->victim"));
	e2e_sleep_ms(20);

	CHECK(!kill(pids[ROLE_VICTIM], SIGKILL), "kill: %s", strerror(errno));
	t_kill = e2e_now_ms();
	deadline = t_kill + 10000;
	while ((r = waitpid(pids[ROLE_VICTIM], &status, WNOHANG)) == 0 &&
	       e2e_now_ms() < deadline)
		e2e_sleep_ms(1);
	CHECK(r == pids[ROLE_VICTIM], "the victim did not die");
	pids[ROLE_VICTIM] = 0;
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	      "the victim ended with status %#x, not by SIGKILL", status);

	TRY(expect_msg(ctl, ROLE_PEER, MSG_SAW_ERROR, "the victim's peer"));
	if (daemon)
		CHECK(!kill(atoi(daemon), 0), "ringnicd (pid %s) is gone", daemon);
	TRY(send_u64(ctl[ROLE_A], MSG_STOP));
	return 0;
}

/* ---- killed holding a deferred batch ------------------------------------------ */

#define HELD 8 /* deferred WRITEs the victim holds when it dies */
#define HELD_LEN 256

static int role_holder(struct e2e_proc *p)
{
	struct ibv_send_wr wr[HELD], *bad;
	struct ibv_sge sge[HELD];
	struct e2e_opts o;
	struct e2e_side s;
	int i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	fill(s.buf, HELD * HELD_LEN, 7);
	for (i = 0; i < HELD; i++) {
		sge[i] = sge_of(&s, i * HELD_LEN, HELD_LEN);
		wr[i] = (struct ibv_send_wr){
			.wr_id = i,
			.next = i + 1 < HELD ? &wr[i + 1] : NULL,
			.sg_list = &sge[i],
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED | RINGNICDV_SEND_DEFER,
			.wr.rdma = { s.rem.addr + i * HELD_LEN, s.rem.rkey },
		};
	}
	CHECK(!ibv_post_send(s.qp, wr, &bad), "deferred ibv_post_send failed");
	TRY(send_u64(p->ctl, MSG_RUNNING));
	for (;;)
		pause(); /* until SIGKILL, with the batch never rung for */
}

static int role_holder_peer(struct e2e_proc *p)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct e2e_opts o;
	struct e2e_side s;
	uint64_t msg;
	size_t i;

	e2e_default_opts(&o);
	o.timeout = 10; /* 4 ms */
	o.retry_cnt = 2;
	TRY(e2e_setup(&s, p, &o)); /* the buffer starts zeroed */
	TRY(recv_u64(p->ctl, &msg, 30000));
	CHECK(msg == MSG_STOP, "unexpected message %llu", (unsigned long long)msg);
	sge = sge_of(&s, 0, 64);
	wr = (struct ibv_send_wr){ .wr_id = 0x99, .sg_list = &sge, .num_sge = 1,
				   .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED };
	CHECK(!ibv_post_send(s.qp, &wr, &bad), "ibv_post_send failed");
	TRY(expect_err(scq_of(&s), 0x99, IBV_WC_RETRY_EXC_ERR, s.qp->qp_num,
		       "a SEND to the killed peer"));
	TRY(expect_no_wc(rcq_of(&s), 10, "receive CQ"));
	for (i = 0; i < o.buf_len; i++)
		CHECK(!s.buf[i], "byte %zu written: the dead peer's deferred batch ran",
		      i);
	return e2e_close(&s);
}

static int holder_orchestrate(pid_t *pids, const int *ctl, int n)
{
	const char *daemon = getenv("RINGNICD_PID");
	int status;

	(void)n;
	TRY(expect_msg(ctl, 0, MSG_RUNNING, "the victim's deferred post"));
	CHECK(!kill(pids[0], SIGKILL), "kill: %s", strerror(errno));
	CHECK(waitpid(pids[0], &status, 0) == pids[0], "waitpid: %s",
	      strerror(errno));
	pids[0] = 0;
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	      "the victim ended with status %#x, not by SIGKILL", status);
	TRY(send_u64(ctl[1], MSG_STOP));
	if (daemon)
		CHECK(!kill(atoi(daemon), 0), "ringnicd (pid %s) is gone", daemon);
	return 0;
}

const struct e2e_test e2e_kill_tests[] = {
	{
		.group = "kill",
		.name = "client_sigkill",
		.nroles = 4,
		.role = { role_a, role_b, role_victim, role_peer },
		.orchestrate = kill_orchestrate,
		.timeout_s = 120,
		.role_names = { "survivor A", "survivor B", "victim", "victim's peer" },
	},
	{
		.group = "kill",
		.name = "sigkill_holding_deferred_batch",
		.nroles = 2,
		.role = { role_holder, role_holder_peer },
		.orchestrate = holder_orchestrate,
		.role_names = { "victim", "victim's peer" },
	},
	{ 0 },
};
