// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The CQ arm word and completion notifications (kernel-abi rn_arm_raise,
 * device/notify.c): the merge table, when each arm type fires, one event
 * per arm, arming over waiting CQEs, serialized delivery, and a
 * concurrency run of a million arms against a device thread writing CQEs.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "verbs/verbs.h"

#define ENTRIES 64

struct fixture {
	struct rn_client client;
	struct rn_cq cq;
	void *mem;
	int chan[2]; /* the completion channel: [0] the application's end */
	int async[2];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(pipe2(f->chan, O_NONBLOCK), 0);
	assert_int_equal(pipe2(f->async, O_NONBLOCK), 0);
	f->client.async_fd = f->async[1];
	f->client.pid = getpid();
	f->mem = aligned_alloc(64, RN_CQ_RING_OFFSET + ENTRIES * sizeof(struct rn_cqe));
	assert_non_null(f->mem);
	memset(f->mem, 0, RN_CQ_RING_OFFSET + ENTRIES * sizeof(struct rn_cqe));
	f->cq.client = &f->client;
	f->cq.user_handle = 0xc0ffee;
	f->cq.ctrl = f->mem;
	f->cq.ring = (struct rn_cqe *)((char *)f->mem + RN_CQ_RING_OFFSET);
	f->cq.entries = ENTRIES;
	f->cq.log2_entries = 6;
	f->cq.channel_fd = f->chan[1];
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	close(f->chan[0]);
	close(f->chan[1]);
	close(f->async[0]);
	close(f->async[1]);
	free(f->mem);
	free(f);
	return 0;
}

enum kind { OK, SOLICITED, ERROR };

static void complete(struct rn_cq *cq, enum kind kind)
{
	struct rn_cqe cqe = {
		.status = kind == ERROR ? IBV_WC_REM_ACCESS_ERR : IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV,
	};

	assert_true(rn_cq_push(cq, &cqe, kind == SOLICITED));
}

/* What the provider does: raise the arm, ring if CQEs wait. */
static void arm(struct rn_cq *cq, uint32_t level)
{
	uint32_t old = __atomic_load_n(&cq->ctrl->arm, __ATOMIC_RELAXED);

	while (!__atomic_compare_exchange_n(&cq->ctrl->arm, &old,
					    rn_arm_raise(old, level), false,
					    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
	if (cq->ctrl->cons != cq->prod)
		rn_cq_ring(cq);
}

/* The application reads an event, as ibv_get_cq_event and cq_event do. */
static int events(struct fixture *f)
{
	uint64_t handle;
	int n = 0;

	while (read(f->chan[0], &handle, sizeof(handle)) == sizeof(handle)) {
		assert_int_equal(handle, 0xc0ffee);
		__atomic_fetch_add(&f->cq.ctrl->events_consumed, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&f->cq.ctrl->deferred, __ATOMIC_SEQ_CST))
			rn_cq_ring(&f->cq);
		n++;
	}
	return n;
}

static void poll_all(struct rn_cq *cq)
{
	cq->ctrl->cons = cq->prod;
}

static void test_merge_table(void **state)
{
	static const uint32_t lv[] = { RN_ARM_NONE, RN_ARM_ERRORS,
				       RN_ARM_SOLICITED, RN_ARM_ANY };
	/* docs/design.md: ANY+x = ANY, ERRORS+ERRORS = ERRORS,
	 * ERRORS+SOLICITED = SOLICITED+ERRORS = SOLICITED,
	 * SOLICITED+SOLICITED = SOLICITED.
	 */
	static const uint32_t expect[4][4] = {
		/* first \ second: NONE ERRORS SOLICITED ANY */
		[RN_ARM_NONE] = { 0, RN_ARM_ERRORS, RN_ARM_SOLICITED, RN_ARM_ANY },
		[RN_ARM_ERRORS] = { RN_ARM_ERRORS, RN_ARM_ERRORS,
				    RN_ARM_SOLICITED, RN_ARM_ANY },
		[RN_ARM_SOLICITED] = { RN_ARM_SOLICITED, RN_ARM_SOLICITED,
				       RN_ARM_SOLICITED, RN_ARM_ANY },
		[RN_ARM_ANY] = { RN_ARM_ANY, RN_ARM_ANY, RN_ARM_ANY, RN_ARM_ANY },
	};
	unsigned int a, b;

	(void)state;
	for (a = 0; a < 4; a++) {
		for (b = 1; b < 4; b++) {
			uint32_t w = rn_arm_raise(rn_arm_raise(0, lv[a]), lv[b]);

			assert_int_equal(w & RN_ARM_LEVEL_MASK, expect[a][b]);
			/* Every arm bumps the sequence, merged or not. */
			assert_int_equal(w >> 2, 2);
		}
	}
	/* The sequence wraps without touching the level. */
	assert_int_equal(rn_arm_raise(~0u & ~RN_ARM_LEVEL_MASK, RN_ARM_ERRORS),
			 RN_ARM_ERRORS);
}

struct fire_case {
	uint32_t level;
	enum kind kind;
	bool fires;
};

static void test_fire_conditions(void **state)
{
	static const struct fire_case cases[] = {
		{ RN_ARM_ANY, OK, true },
		{ RN_ARM_ANY, SOLICITED, true },
		{ RN_ARM_ANY, ERROR, true },
		{ RN_ARM_SOLICITED, OK, false },
		{ RN_ARM_SOLICITED, SOLICITED, true },
		{ RN_ARM_SOLICITED, ERROR, true },
		{ RN_ARM_ERRORS, OK, false },
		{ RN_ARM_ERRORS, SOLICITED, false },
		{ RN_ARM_ERRORS, ERROR, true },
	};
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fixture *f;

		setup(state);
		f = *state;
		arm(&f->cq, cases[i].level);
		complete(&f->cq, cases[i].kind);
		assert_int_equal(events(f), cases[i].fires);
		/* A fired arm is cleared; one that did not fire stays. */
		assert_int_equal(f->cq.ctrl->arm & RN_ARM_LEVEL_MASK,
				 cases[i].fires ? 0 : cases[i].level);
		teardown(state);
	}
}

static void test_once_per_arm(void **state)
{
	struct fixture *f = *state;
	int i;

	arm(&f->cq, RN_ARM_ANY);
	for (i = 0; i < 10; i++)
		complete(&f->cq, ERROR);
	assert_int_equal(events(f), 1);
	poll_all(&f->cq);
	complete(&f->cq, OK);
	assert_int_equal(events(f), 0);
	arm(&f->cq, RN_ARM_ANY);
	assert_int_equal(events(f), 1); /* the new CQE was waiting */
}

static void test_unarmed_never_fires(void **state)
{
	struct fixture *f = *state;
	int i;

	for (i = 0; i < ENTRIES - 1; i++)
		complete(&f->cq, i % 3);
	assert_int_equal(events(f), 0);
}

static void test_arm_over_new_cqes_fires(void **state)
{
	struct fixture *f = *state;

	complete(&f->cq, OK);
	arm(&f->cq, RN_ARM_ANY);
	assert_int_equal(events(f), 1);
}

static void test_arm_over_old_cqes_does_not_fire(void **state)
{
	struct fixture *f = *state;

	arm(&f->cq, RN_ARM_ANY);
	complete(&f->cq, OK);
	assert_int_equal(events(f), 1);
	/* Not polled: the CQE was there at the last notification. */
	arm(&f->cq, RN_ARM_ANY);
	assert_int_equal(events(f), 0);
	/* A new one arrives: the arm fires. */
	complete(&f->cq, OK);
	assert_int_equal(events(f), 1);
}

static void test_arm_kind_over_waiting_cqes(void **state)
{
	struct fixture *f = *state;

	complete(&f->cq, OK);
	arm(&f->cq, RN_ARM_SOLICITED);
	assert_int_equal(events(f), 0); /* only an unsolicited one waits */
	complete(&f->cq, SOLICITED);
	assert_int_equal(events(f), 1);
	poll_all(&f->cq);

	complete(&f->cq, ERROR);
	complete(&f->cq, OK);
	poll_all(&f->cq); /* the error was polled before arming */
	arm(&f->cq, RN_ARM_ERRORS);
	assert_int_equal(events(f), 0);
}

/* A second notification waits until the application read the first. */
static void test_serialized(void **state)
{
	struct fixture *f = *state;
	uint64_t handle;

	arm(&f->cq, RN_ARM_ANY);
	complete(&f->cq, OK);
	arm(&f->cq, RN_ARM_ANY);
	complete(&f->cq, OK);
	/* Fired twice, but only one event is on the channel. */
	assert_int_equal(f->cq.ctrl->arm & RN_ARM_LEVEL_MASK, 0);
	assert_int_equal(read(f->chan[0], &handle, sizeof(handle)), sizeof(handle));
	assert_int_equal(read(f->chan[0], &handle, sizeof(handle)), -1);
	assert_int_equal(f->cq.ctrl->deferred, 1);
	/* Consuming the first delivers the second. */
	__atomic_fetch_add(&f->cq.ctrl->events_consumed, 1, __ATOMIC_SEQ_CST);
	rn_cq_ring(&f->cq);
	assert_int_equal(f->cq.ctrl->deferred, 0);
	assert_int_equal(events(f), 1);
}

static void test_no_channel(void **state)
{
	struct fixture *f = *state;

	f->cq.channel_fd = -1;
	arm(&f->cq, RN_ARM_ANY);
	complete(&f->cq, OK);
	assert_int_equal(f->cq.ctrl->arm & RN_ARM_LEVEL_MASK, 0);
	f->cq.channel_fd = f->chan[1];
	assert_int_equal(events(f), 0);
}

/* ---- concurrency --------------------------------------------------------- */

/*
 * A device thread writes CQEs of every kind as fast as the consumer polls
 * them and services the CQ's doorbell; the application thread arms at a
 * random level, waits for the event, reads it, polls, and arms again.
 * Other threads re-arm at random at the same time.  Every cycle must end in
 * exactly one event (none lost: a wait never times out; none duplicated:
 * the channel holds at most one event of the CQ), and the device must
 * have written exactly as many events as the application read.
 */
#define CYCLES 1000000
#define REARMERS 2

struct race {
	struct fixture *f;
	bool stop;
	bool rang; /* the CQ's doorbell bit */
	unsigned int cycles_done;
	bool rearmers_on;
};

static void ring(struct race *r)
{
	__atomic_store_n(&r->rang, true, __ATOMIC_SEQ_CST);
}

static void *device_thread(void *arg)
{
	struct race *r = arg;
	struct rn_cq *cq = &r->f->cq;
	unsigned int n = 0;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		if (__atomic_exchange_n(&r->rang, false, __ATOMIC_SEQ_CST))
			rn_cq_ring(cq);
		/* Never overrun: wait for the application to poll. */
		if (cq->prod - __atomic_load_n(&cq->ctrl->cons, __ATOMIC_ACQUIRE) <
		    ENTRIES / 2)
			complete(cq, n++ % 3);
		else
			sched_yield();
	}
	return NULL;
}

/* Is the CQE at the consumer index written?  (The provider's test.) */
static bool cqe_waiting(struct rn_cq *cq, uint32_t cons)
{
	const struct rn_cqe *cqe = &cq->ring[cons & (ENTRIES - 1)];

	return __atomic_load_n(&cqe->owner, __ATOMIC_SEQ_CST) ==
	       RN_CQE_PHASE(cons, cq->log2_entries);
}

static void app_arm(struct race *r, uint32_t level)
{
	struct rn_cq *cq = &r->f->cq;
	uint32_t old = __atomic_load_n(&cq->ctrl->arm, __ATOMIC_RELAXED);

	while (!__atomic_compare_exchange_n(&cq->ctrl->arm, &old,
					    rn_arm_raise(old, level), false,
					    __ATOMIC_SEQ_CST, __ATOMIC_RELAXED))
		;
	if (cqe_waiting(cq, __atomic_load_n(&cq->ctrl->cons, __ATOMIC_SEQ_CST)))
		ring(r);
}

static void app_poll_all(struct rn_cq *cq)
{
	uint32_t cons = cq->ctrl->cons;

	while (cqe_waiting(cq, cons))
		cons++;
	__atomic_store_n(&cq->ctrl->cons, cons, __ATOMIC_RELEASE);
}

static void *rearm_thread(void *arg)
{
	struct race *r = arg;
	unsigned int seed = (unsigned int)(uintptr_t)&arg;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
		/* Re-arming is only allowed while the application is armed:
		 * an arm nobody waits for would be a second wait.
		 */
		uint32_t cur = __atomic_load_n(&r->f->cq.ctrl->arm, __ATOMIC_RELAXED);

		if (__atomic_load_n(&r->rearmers_on, __ATOMIC_ACQUIRE) &&
		    cur & RN_ARM_LEVEL_MASK) {
			uint32_t next = rn_arm_raise(cur, 1 + rand_r(&seed) % 3);

			/* Only merge into a live arm: never re-arm a fired one. */
			__atomic_compare_exchange_n(&r->f->cq.ctrl->arm, &cur, next,
						    false, __ATOMIC_SEQ_CST,
						    __ATOMIC_RELAXED);
		}
		sched_yield();
	}
	return NULL;
}

static void test_million_arms(void **state)
{
	struct fixture *f = *state;
	struct race r = { .f = f, .rearmers_on = true };
	pthread_t dev, re[REARMERS];
	unsigned int i, seed = 1;
	uint64_t handle, read_events = 0;

	assert_int_equal(pthread_create(&dev, NULL, device_thread, &r), 0);
	for (i = 0; i < REARMERS; i++)
		assert_int_equal(pthread_create(&re[i], NULL, rearm_thread, &r), 0);
	for (i = 0; i < CYCLES; i++) {
		uint64_t spins = 0;

		app_arm(&r, 1 + rand_r(&seed) % 3);
		while (read(f->chan[0], &handle, sizeof(handle)) != sizeof(handle)) {
			/* The device produces every kind continuously: an
			 * event is due within a few microseconds.
			 */
			if (++spins > 50000000)
				fail_msg("cycle %u: event lost", i);
			if (!(spins & 63))
				sched_yield();
		}
		assert_int_equal(handle, 0xc0ffee);
		read_events++;
		__atomic_fetch_add(&f->cq.ctrl->events_consumed, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&f->cq.ctrl->deferred, __ATOMIC_SEQ_CST))
			ring(&r);
		/* Poll everything, as an event loop does after an event. */
		app_poll_all(&f->cq);
		/* The arm fired: it is clear, and nothing else is queued. */
		if (read(f->chan[0], &handle, sizeof(handle)) != -1)
			fail_msg("cycle %u: two events for one arm", i);
	}
	__atomic_store_n(&r.stop, true, __ATOMIC_RELEASE);
	pthread_join(dev, NULL);
	for (i = 0; i < REARMERS; i++)
		pthread_join(re[i], NULL);
	assert_int_equal(read_events, CYCLES);
	assert_int_equal(f->cq.events_written, CYCLES);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_table),
		cmocka_unit_test(test_fire_conditions),
		cmocka_unit_test_setup_teardown(test_once_per_arm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unarmed_never_fires, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_arm_over_new_cqes_fires, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_arm_over_old_cqes_does_not_fire,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_arm_kind_over_waiting_cqes,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_serialized, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_channel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_million_arms, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
