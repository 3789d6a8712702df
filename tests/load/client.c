// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The life of one client: set up and connect (setup.c), run batches until
 * the deadline or until the peer dies, check that nothing is left over,
 * and destroy everything; and the socket to the other side of the pair.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "client.h"

static struct client_report *report;

int client_fail(const char *fmt, ...)
{
	va_list ap;

	if (report && !report->why[0]) {
		va_start(ap, fmt);
		vsnprintf(report->why, sizeof(report->why), fmt, ap);
		va_end(ap);
	}
	return -1;
}

void note_progress(struct client *c)
{
	c->last_progress = now_ns();
}

/* ---- the socket ------------------------------------------------------------ */

int send_msg(struct client *c, const void *m, size_t len)
{
	ssize_t n = send(c->p->sock, m, len, MSG_NOSIGNAL);

	if (n == (ssize_t)len)
		return 0;
	if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
		return peer_died(c, "the socket broke on send");
	return client_fail("send on the pair socket: %s",
			   n < 0 ? strerror(errno) : "short");
}

/*
 * One message if there is one (waiting up to timeout_ms): 1, with its
 * length in *len; 0 if none; on hang-up the peer is dead (0 too).
 */
int recv_msg(struct client *c, void *buf, size_t size, size_t *len, int timeout_ms)
{
	struct pollfd pfd = { .fd = c->p->sock, .events = POLLIN };
	ssize_t n;

	if (c->peer_dead || c->sock_closed || poll(&pfd, 1, timeout_ms) <= 0)
		return 0;
	n = recv(c->p->sock, buf, size, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n < 0 && errno != ECONNRESET)
		return client_fail("recv on the pair socket: %s", strerror(errno));
	if (n <= 0) {
		c->sock_closed = true;
		/* Once both sides are through, the peer may be gone already. */
		if (c->connected && lanes_done(c))
			return 0;
		return peer_died(c, "the socket hung up") ? -1 : 0;
	}
	*len = (size_t)n;
	return 1;
}

static int on_msg(struct client *c, const void *buf, size_t len)
{
	uint32_t type;

	CHECK(len >= sizeof(type), "a message of %zu bytes", len);
	memcpy(&type, buf, sizeof(type));
	if (type == WIRE_READY) {
		c->peer_ready = true;
		return 0;
	}
	CHECK((type == WIRE_ACK || type == WIRE_FIN) && len == sizeof(struct msg_lane),
	      "message type %u of %zu bytes", type, len);
	return on_lane_msg(c, buf);
}

int read_msgs(struct client *c, int *got)
{
	uint8_t buf[sizeof(struct msg_hello)];
	size_t len;
	int r;

	while ((r = recv_msg(c, buf, sizeof(buf), &len, 0)) == 1) {
		TRY(on_msg(c, buf, len));
		(*got)++;
	}
	return r;
}

/* ---- running ------------------------------------------------------------------- */

/* Spin while busy, then sleep a little: ten clients share two cores. */
static void idle_wait(unsigned int *idle)
{
	struct timespec ts = { 0, 100000 };

	if (++*idle > 64)
		nanosleep(&ts, NULL);
	else
		sched_yield();
}

static int stalled(struct client *c)
{
	unsigned int i;

	for (i = 0; i < c->nqps; i++) {
		const struct qp_res *r = &c->q[i];

		fprintf(stderr,
			"load: side %d QP %u: tx batch %u active %d posted %u next %u acked %d finished %d errored %d probe %d/%d; rx batch %u next %u out %u fin %d errored %d\n",
			c->p->side, i, r->tx.b.no, r->tx.active, r->tx.posted, r->tx.next,
			r->tx.acked, r->tx.finished, r->tx.errored, r->tx.probe_posted,
			r->tx.probe_done, r->rx.b.no, r->rx.next, r->rx.recvs_out,
			r->rx.fin, r->rx.errored);
	}
	return client_fail("no progress for %llu s in phase %u (peer dead: %d)",
			   STALL_NS / 1000000000ull, c->rep->phase, c->peer_dead);
}

static int run(struct client *c)
{
	unsigned int idle = 0;
	bool done = false;

	c->rep->phase = PHASE_TRAFFIC;
	note_progress(c);
	while (!done) {
		int got = 0;

		TRY(poll_cqs(c, &got));
		TRY(read_msgs(c, &got));
		if (c->peer_dead) {
			c->rep->phase = PHASE_DRAIN;
			TRY(drain_step(c, &done));
		} else {
			TRY(lanes_step(c, &done));
		}
		if (got) {
			idle = 0;
			note_progress(c);
		} else {
			if (now_ns() - c->last_progress > STALL_NS)
				return stalled(c);
			idle_wait(&idle);
		}
	}
	return 0;
}

/* ---- the end ---------------------------------------------------------------------- */

static int check_leftovers(struct client *c)
{
	struct ibv_cq *cqs[2] = { c->scq, c->rcq };
	struct ibv_async_event ev;
	struct ibv_wc wc;
	unsigned int i;
	int n;

	for (i = 0; i < 2; i++) {
		n = ibv_poll_cq(cqs[i], 1, &wc);
		CHECK(n <= 0, "a %s completion after the end: wr_id %#llx status %s",
		      i ? "receive" : "send", (unsigned long long)wc.wr_id,
		      status_name(wc.status));
		CHECK(!n, "ibv_poll_cq after the end: %d", n);
	}
	if (!ibv_get_async_event(c->ctx, &ev)) {
		enum ibv_event_type t = ev.event_type;

		ibv_ack_async_event(&ev);
		return client_fail("unexpected async event %s",
				   ibv_event_type_str(t));
	}
	for (i = 0; i < c->nqps; i++) {
		struct qp_res *r = &c->q[i];
		enum ibv_qp_state want = c->peer_dead ? IBV_QPS_ERR : IBV_QPS_RTS;
		struct ibv_qp_init_attr init;
		struct ibv_qp_attr attr;
		ptrdiff_t d;
		int ret;

		ret = ibv_query_qp(r->qp, &attr, IBV_QP_STATE, &init);
		CHECK(!ret, "ibv_query_qp: %s", strerror(ret));
		CHECK(attr.qp_state == want, "QP %u ends in state %d, expected %d", i,
		      attr.qp_state, want);
		/* Nobody may have written into what the peer only reads. */
		d = pattern_diff(r->win + WIN_READ_OFF, READ_SRC_BYTES,
				 read_src_key(r->rx.gen.key), 0);
		CHECK(d < 0, "QP %u: the READ source changed at byte %td", i, d);
	}
	return 0;
}

static int teardown(struct client *c)
{
	unsigned int i;
	int ret;

	c->rep->phase = PHASE_TEARDOWN;
	for (i = 0; i < c->nqps; i++) {
		struct qp_res *r = &c->q[i];

		if (r->qp && (ret = ibv_destroy_qp(r->qp)))
			return client_fail("ibv_destroy_qp: %s", strerror(ret));
		if (r->lmr && (ret = ibv_dereg_mr(r->lmr)))
			return client_fail("ibv_dereg_mr: %s", strerror(ret));
		if (r->wmr && (ret = ibv_dereg_mr(r->wmr)))
			return client_fail("ibv_dereg_mr: %s", strerror(ret));
		free(r->local);
		free(r->win);
	}
	if (c->scq && (ret = ibv_destroy_cq(c->scq)))
		return client_fail("ibv_destroy_cq: %s", strerror(ret));
	if (c->rcq && (ret = ibv_destroy_cq(c->rcq)))
		return client_fail("ibv_destroy_cq: %s", strerror(ret));
	if (c->pd && (ret = ibv_dealloc_pd(c->pd)))
		return client_fail("ibv_dealloc_pd: %s", strerror(ret));
	if (c->ctx && (ret = ibv_close_device(c->ctx)))
		return client_fail("ibv_close_device: %s", strerror(ret));
	free(c->scratch);
	return 0;
}

static int client_run(struct client *c)
{
	TRY(setup(c));
	TRY(connect_all(c));
	if (c->connected) {
		TRY(run(c));
		TRY(check_leftovers(c));
	}
	return teardown(c);
}

int client_main(const struct client_params *p)
{
	static struct client c;

	report = p->rep;
	c.p = p;
	c.rep = p->rep;
	c.nqps = p->nqps;
	c.rng = mix64(p->pair_seed ^ (uint64_t)p->side);
	if (client_run(&c))
		return 1;
	c.rep->finished = 1;
	return 0;
}
