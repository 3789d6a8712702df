// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Congestion control (wire/congestion.c) on a QP that sends nowhere: the
 * notification point's CNPs and their spacing, the reaction point's cut
 * (DCQCN: the first one halves the measured rate), its spacing, the
 * pacer, and the recovery to unlimited once the CNPs stop.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "wire/internal.h"

#define US 1000ull
#define MS 1000000ull
#define T0 (1000 * MS)

static struct rn_device dev;
static struct rn_client client;
static struct rn_qp qp;
static struct rn_wire_qp wq;

static int setup(void **state)
{
	(void)state;
	memset(&dev, 0, sizeof(dev));
	memset(&client, 0, sizeof(client));
	memset(&qp, 0, sizeof(qp));
	memset(&wq, 0, sizeof(wq));
	rn_list_init(&dev.clients);
	assert_int_equal(rn_engines_init(&dev), 0);
	assert_int_equal(rn_wire_init(dev.engines[0]), 0);
	assert_int_equal(rn_timers_reserve(&dev.engines[0]->timers, 8), 0);
	client.dev = &dev;
	qp.client = &client;
	qp.engine = dev.engines[0];
	rn_list_init(&qp.active_link);
	rn_timer_init(&qp.wait_timer, NULL);
	wq.qp = &qp;
	wq.peer.family = AF_INET; /* no socket: CNPs count as unroutable */
	rn_wire_cc_init(&wq);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	rn_wire_cc_reset(&wq);
	free(dev.engines[0]->timers.heap);
	free(dev.engines[0]->wire);
	free(dev.engines[0]->bounce);
	free(dev.engines[0]->stage);
	close(dev.engines[0]->epoll_fd);
	close(dev.engines[0]->kick_fd);
	free(dev.engines[0]);
	free(dev.engines);
	return 0;
}

/* Send at 'rate' bytes/s in 1 KiB packets from 'from' for 'span' ns. */
static uint64_t send_for(uint64_t from, uint64_t span, uint64_t rate)
{
	uint64_t t, gap = 1024 * 1000000000ull / rate;

	for (t = from; t < from + span; t += gap)
		rn_wire_cc_sent(&wq, 1024, t);
	return t;
}

static void test_marks_make_spaced_cnps(void **state)
{
	struct rn_wire_pkt pkt = { .tos = RN_WIRE_ECN_CE };
	const uint64_t *c = dev.engines[0]->counters;

	(void)state;
	pkt.op = rn_pkt_op(RN_PKT_RC | RN_PKT_OP_SEND_ONLY);
	rn_wire_cc_marked(&wq, &pkt, T0);
	assert_int_equal(c[RN_CNT_ECN_MARKED], 1);
	assert_int_equal(c[RN_CNT_CNP_SENT], 1);
	/* More marks right after: counted, no CNP until the gap is over. */
	rn_wire_cc_marked(&wq, &pkt, T0 + 10 * US);
	rn_wire_cc_marked(&wq, &pkt, T0 + 40 * US);
	assert_int_equal(c[RN_CNT_ECN_MARKED], 3);
	assert_int_equal(c[RN_CNT_CNP_SENT], 1);
	rn_wire_cc_marked(&wq, &pkt, T0 + 60 * US);
	assert_int_equal(c[RN_CNT_ECN_MARKED], 4);
	assert_int_equal(c[RN_CNT_CNP_SENT], 2);
	/* A marked response (an ACK) makes no CNP (netio.c passes only
	 * marked packets: faults.sh shows unmarked ones making none).
	 */
	pkt.op = rn_pkt_op(RN_PKT_RC | RN_PKT_OP_ACK);
	rn_wire_cc_marked(&wq, &pkt, T0 + 400 * US);
	assert_int_equal(c[RN_CNT_ECN_MARKED], 4);
	assert_int_equal(c[RN_CNT_CNP_SENT], 2);
}

static void test_first_cut_halves_measured_rate(void **state)
{
	const uint64_t rate = 100000000; /* 100 MB/s */
	uint64_t t;

	(void)state;
	/* Unlimited: never held back. */
	t = send_for(T0, 3 * MS, rate);
	assert_true(rn_wire_cc_may_send(&wq, t));
	assert_int_equal(wq.cc.rate, 0);
	rn_wire_cc_cut(&wq, t);
	assert_true(wq.cc.line > rate * 95 / 100 && wq.cc.line < rate * 105 / 100);
	assert_int_equal(wq.cc.target, wq.cc.line);
	assert_int_equal(wq.cc.rate, wq.cc.line / 2);
	/* A second CNP right away is the same congestion: no second cut. */
	rn_wire_cc_cut(&wq, t + 10 * US);
	assert_int_equal(wq.cc.rate, wq.cc.line / 2);
	/* Later, another cut, smaller: alpha has moved below 1 only a bit. */
	rn_wire_cc_cut(&wq, t + 60 * US);
	assert_true(wq.cc.rate < wq.cc.line / 2);
	assert_true(wq.cc.rate > wq.cc.line / 5);
}

static void test_pacer_spaces_packets(void **state)
{
	uint64_t t, sent = 0, rate, span = 400 * US;

	(void)state;
	send_for(T0 - 3 * MS, 3 * MS, 100000000);
	rn_wire_cc_cut(&wq, T0);
	rate = wq.cc.rate;
	/* Each microsecond, send what the pacer lets through. */
	for (t = T0; t < T0 + span; t += US) {
		rn_timers_run(&dev.engines[0]->timers, t);
		while (rn_wire_cc_may_send(&wq, t)) {
			rn_wire_cc_sent(&wq, 1024, t);
			sent += 1024;
			assert_true(sent < 1000000); /* never unlimited here */
		}
		assert_true(wq.cc.paced);
		assert_true(rn_timer_armed(&wq.cc.pace_timer));
	}
	/* What went out: at least the cut rate, below the line rate. */
	sent = sent * 1000000000ull / span;
	assert_true(sent >= rate * 9 / 10);
	assert_true(sent <= wq.cc.line);
}

static void test_recovers_to_unlimited(void **state)
{
	uint64_t t, prev, limit;

	(void)state;
	t = send_for(T0, 3 * MS, 100000000);
	rn_wire_cc_cut(&wq, t);
	prev = wq.cc.rate;
	limit = t + 10000 * MS;
	/* No more CNPs: the rate only rises, then limiting ends. */
	while (wq.cc.rate && t < limit) {
		t += 10 * US;
		rn_timers_run(&dev.engines[0]->timers, t);
		if (wq.cc.rate) {
			assert_true(wq.cc.rate >= prev);
			prev = wq.cc.rate;
		}
	}
	assert_int_equal(wq.cc.rate, 0);
	assert_false(rn_timer_armed(&wq.cc.period_timer));
	assert_true(rn_wire_cc_may_send(&wq, t));
}

static void test_alpha_decays_without_cnps(void **state)
{
	uint64_t t;
	uint32_t alpha;

	(void)state;
	t = send_for(T0, 3 * MS, 100000000);
	rn_wire_cc_cut(&wq, t);
	alpha = wq.cc.alpha;
	/* The period of the cut keeps it; the next one without a CNP not. */
	rn_timers_run(&dev.engines[0]->timers, wq.cc.period_timer.when);
	assert_int_equal(wq.cc.alpha, alpha);
	rn_timers_run(&dev.engines[0]->timers, wq.cc.period_timer.when);
	assert_true(wq.cc.alpha < alpha);
	alpha = wq.cc.alpha;
	/* A timer that fires late makes up for the periods it missed. */
	rn_timers_run(&dev.engines[0]->timers, wq.cc.period_timer.when +
					   3 * (wq.cc.period_timer.when - t));
	assert_true(wq.cc.alpha < alpha - (alpha >> 4));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_marks_make_spaced_cnps, setup, teardown),
		cmocka_unit_test_setup_teardown(test_first_cut_halves_measured_rate, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pacer_spaces_packets, setup, teardown),
		cmocka_unit_test_setup_teardown(test_recovers_to_unlimited, setup, teardown),
		cmocka_unit_test_setup_teardown(test_alpha_decays_without_cnps, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
