// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_cq_push: the device writes CQEs, the test consumes them the way the
 * provider does (owner byte against the phase of its pass), and checks the
 * overrun path, including the async event it sends.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "verbs/verbs.h"

#define USER_HANDLE 0x00007f00deadbe00ull

struct cq_env {
	struct rn_client client;
	struct rn_cq cq;
	int pipe[2];
	uint32_t cons; /* the provider's private consumer counter */
};

/* The 16-byte record libibverbs reads from context->async_fd. */
struct async_event {
	uint64_t element;
	uint32_t event_type;
	uint32_t reserved;
};

static struct cq_env *env_new(uint32_t log2)
{
	struct cq_env *e = calloc(1, sizeof(*e));
	size_t size;

	assert_non_null(e);
	assert_int_equal(pipe2(e->pipe, O_NONBLOCK | O_CLOEXEC), 0);
	e->client.pid = 4242;
	e->client.async_fd = e->pipe[1];

	e->cq.client = &e->client;
	e->cq.handle = 3;
	e->cq.user_handle = USER_HANDLE;
	e->cq.log2_entries = log2;
	e->cq.entries = 1u << log2;
	size = RN_CQ_RING_OFFSET + e->cq.entries * sizeof(struct rn_cqe);
	e->cq.mem = aligned_alloc(4096, (size + 4095) & ~(size_t)4095);
	assert_non_null(e->cq.mem);
	memset(e->cq.mem, 0, size);
	e->cq.mem_size = size;
	e->cq.ctrl = e->cq.mem;
	e->cq.ring = (struct rn_cqe *)((uint8_t *)e->cq.mem + RN_CQ_RING_OFFSET);
	e->cq.channel_fd = -1; /* notifications: test_notify.c */
	return e;
}

static void env_free(struct cq_env *e)
{
	close(e->pipe[0]);
	close(e->pipe[1]);
	free(e->cq.mem);
	free(e);
}

/* Start both counters at 'start', with the ring as the last pass left it. */
static void env_start_at(struct cq_env *e, uint32_t start)
{
	uint32_t mask = e->cq.entries - 1, c;

	for (c = start; c != start + e->cq.entries; c++)
		e->cq.ring[c & mask].owner =
			RN_CQE_PHASE(c - e->cq.entries, e->cq.log2_entries);
	e->cq.prod = start;
	e->cons = start;
	e->cq.ctrl->cons = start;
}

/* A CQE whose fields all depend on n. */
static struct rn_cqe cqe_for(uint32_t n)
{
	struct rn_cqe c;

	memset(&c, 0, sizeof(c));
	c.wr_id = 0x1000000000000000ull | n;
	c.byte_len = n * 3 + 1;
	c.imm_data = ~n;
	c.qp_num = (n * 7) & 0xffffff;
	c.src_qp = (n * 11) & 0xffffff;
	c.sl = n % 3;
	c.opcode = n % 2 ? IBV_WC_RECV : IBV_WC_RDMA_WRITE;
	c.status = n % 5 ? IBV_WC_SUCCESS : IBV_WC_REM_ACCESS_ERR;
	c.flags = n % 3 ? RN_CQE_WITH_IMM : 0;
	/* Whatever the caller puts here, the device sets the owner itself. */
	c.owner = 0xa5;
	return c;
}

/* Poll one CQE as the provider does; false when the CQ is empty. */
static bool consume(struct cq_env *e, struct rn_cqe *out)
{
	struct rn_cqe *slot = &e->cq.ring[e->cons & (e->cq.entries - 1)];
	uint8_t owner = __atomic_load_n(&slot->owner, __ATOMIC_ACQUIRE);

	if ((owner & 1) != RN_CQE_PHASE(e->cons, e->cq.log2_entries))
		return false;
	*out = *slot;
	e->cons++;
	__atomic_store_n(&e->cq.ctrl->cons, e->cons, __ATOMIC_RELEASE);
	return true;
}

static void assert_cqe(const struct rn_cqe *got, uint32_t n, uint32_t counter,
		       uint32_t log2)
{
	struct rn_cqe want = cqe_for(n);

	assert_int_equal(got->wr_id, want.wr_id);
	assert_int_equal(got->byte_len, want.byte_len);
	assert_int_equal(got->imm_data, want.imm_data);
	assert_int_equal(got->qp_num, want.qp_num);
	assert_int_equal(got->src_qp, want.src_qp);
	assert_int_equal(got->sl, want.sl);
	assert_int_equal(got->opcode, want.opcode);
	assert_int_equal(got->status, want.status);
	assert_int_equal(got->flags, want.flags);
	assert_int_equal(got->owner, RN_CQE_PHASE(counter, log2));
}

/* Push 'count' CQEs numbered from *n, then consume and check them all. */
static void push_then_drain(struct cq_env *e, uint32_t *n, unsigned int count)
{
	struct rn_cqe c;
	unsigned int i;

	for (i = 0; i < count; i++) {
		c = cqe_for(*n + i);
		assert_true(rn_cq_push(&e->cq, &c, false));
	}
	for (i = 0; i < count; i++) {
		uint32_t counter = e->cons;

		assert_true(consume(e, &c));
		assert_cqe(&c, *n + i, counter, e->cq.log2_entries);
	}
	assert_false(consume(e, &c));
	*n += count;
}

static void assert_no_event(struct cq_env *e)
{
	struct async_event ev;

	assert_int_equal(read(e->pipe[0], &ev, sizeof(ev)), -1);
	assert_int_equal(errno, EAGAIN);
}

static void assert_cq_err_event(struct cq_env *e)
{
	struct async_event ev;

	memset(&ev, 0xff, sizeof(ev));
	assert_int_equal(read(e->pipe[0], &ev, sizeof(ev)), 16);
	assert_int_equal(ev.element, USER_HANDLE);
	assert_int_equal(ev.event_type, IBV_EVENT_CQ_ERR);
	assert_int_equal(ev.reserved, 0);
	assert_no_event(e);
}

/* ---- tests ------------------------------------------------------------- */

static void test_empty_cq(void **state)
{
	struct cq_env *e = env_new(3);
	struct rn_cqe c;

	(void)state;
	assert_false(consume(e, &c));
	assert_int_equal(e->cq.ctrl->overrun, 0);
	env_free(e);
}

/* One at a time, then in bursts of every size, over many wraps. */
static void test_push_consume_wraps(void **state)
{
	static const uint32_t sizes[] = { 0, 1, 3, 6 };
	uint32_t n = 0;
	unsigned int i, round;
	size_t s;

	(void)state;
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		struct cq_env *e = env_new(sizes[s]);

		n = 0;
		for (i = 0; i < 5 * e->cq.entries; i++)
			push_then_drain(e, &n, 1);
		for (round = 0; round < 40; round++)
			push_then_drain(e, &n, 1 + round % e->cq.entries);
		assert_true(n > 4 * e->cq.entries);
		assert_int_equal(e->cq.prod, n);
		assert_int_equal(e->cq.ctrl->overrun, 0);
		assert_false(e->cq.overrun);
		assert_no_event(e);
		env_free(e);
	}
}

/* The u32 counters wrap: the phase must stay consistent across 2^32. */
static void test_counter_wrap(void **state)
{
	uint32_t n = 0;
	unsigned int round;
	struct cq_env *e = env_new(3);

	(void)state;
	env_start_at(e, UINT32_MAX - 20);
	for (round = 0; round < 20; round++)
		push_then_drain(e, &n, 1 + round % 8);
	assert_true(e->cq.prod < 200);
	assert_no_event(e);
	env_free(e);
}

/* Every field of a CQE with extreme values. */
static void test_fields(void **state)
{
	struct cq_env *e = env_new(2);
	struct rn_cqe in, out;

	(void)state;
	memset(&in, 0xff, sizeof(in));
	assert_true(rn_cq_push(&e->cq, &in, false));
	assert_true(consume(e, &out));
	assert_int_equal(out.wr_id, UINT64_MAX);
	assert_int_equal(out.byte_len, UINT32_MAX);
	assert_int_equal(out.imm_data, UINT32_MAX);
	assert_int_equal(out.qp_num, UINT32_MAX);
	assert_int_equal(out.src_qp, UINT32_MAX);
	assert_int_equal(out.sl, 0xff);
	assert_int_equal(out.opcode, 0xff);
	assert_int_equal(out.status, 0xff);
	assert_int_equal(out.flags, 0xff);
	assert_int_equal(out.owner, 1);

	memset(&in, 0, sizeof(in));
	assert_true(rn_cq_push(&e->cq, &in, false));
	assert_true(consume(e, &out));
	assert_int_equal(out.wr_id, 0);
	assert_int_equal(out.byte_len, 0);
	assert_int_equal(out.flags, 0);
	assert_int_equal(out.owner, 1);
	env_free(e);
}

/* A full ring: the next push fails, once and for all, with one event. */
static void test_overrun(void **state)
{
	struct cq_env *e = env_new(3);
	uint8_t before[8 * sizeof(struct rn_cqe)];
	struct rn_cqe c;
	uint32_t i;

	(void)state;
	for (i = 0; i < e->cq.entries; i++) {
		c = cqe_for(i);
		assert_true(rn_cq_push(&e->cq, &c, false));
	}
	assert_int_equal(e->cq.ctrl->overrun, 0);
	assert_no_event(e);

	memcpy(before, e->cq.ring, sizeof(before));
	c = cqe_for(100);
	assert_false(rn_cq_push(&e->cq, &c, false));
	assert_true(e->cq.overrun);
	assert_int_equal(e->cq.ctrl->overrun, 1);
	assert_int_equal(e->cq.prod, e->cq.entries);
	/* The failed push did not overwrite an unconsumed CQE. */
	assert_memory_equal(e->cq.ring, before, sizeof(before));
	assert_cq_err_event(e);

	/* What was written stays readable. */
	for (i = 0; i < e->cq.entries; i++) {
		uint32_t counter = e->cons;

		assert_true(consume(e, &c));
		assert_cqe(&c, i, counter, 3);
	}
	assert_false(consume(e, &c));

	/* Room again, but the CQ is in error for good, and says so once. */
	c = cqe_for(101);
	assert_false(rn_cq_push(&e->cq, &c, false));
	assert_false(rn_cq_push(&e->cq, &c, false));
	assert_false(consume(e, &c));
	assert_int_equal(e->cq.prod, e->cq.entries);
	assert_no_event(e);
	env_free(e);
}

/* Overrun after some wraps with a partly consumed ring. */
static void test_overrun_after_wraps(void **state)
{
	struct cq_env *e = env_new(2);
	struct rn_cqe c;
	uint32_t n = 0;
	unsigned int i;

	(void)state;
	for (i = 0; i < 9; i++)
		push_then_drain(e, &n, 3);
	/* 4 entries: push 4, consume 2, push 2 more fits, the next does not. */
	for (i = 0; i < 4; i++) {
		c = cqe_for(n++);
		assert_true(rn_cq_push(&e->cq, &c, false));
	}
	assert_true(consume(e, &c));
	assert_true(consume(e, &c));
	for (i = 0; i < 2; i++) {
		c = cqe_for(n++);
		assert_true(rn_cq_push(&e->cq, &c, false));
	}
	assert_no_event(e);
	c = cqe_for(n);
	assert_false(rn_cq_push(&e->cq, &c, false));
	assert_int_equal(e->cq.ctrl->overrun, 1);
	assert_cq_err_event(e);
	env_free(e);
}

/* A consumer index ahead of the producer is nonsense: the CQ overruns. */
static void test_bogus_consumer_index(void **state)
{
	struct cq_env *e = env_new(3);
	struct rn_cqe c = cqe_for(1);

	(void)state;
	assert_true(rn_cq_push(&e->cq, &c, false));
	e->cq.ctrl->cons = 5;
	assert_false(rn_cq_push(&e->cq, &c, false));
	assert_int_equal(e->cq.ctrl->overrun, 1);
	assert_cq_err_event(e);
	env_free(e);
}

/* A context without an async pipe still gets the CQ in error. */
static void test_overrun_without_async_fd(void **state)
{
	struct cq_env *e = env_new(0);
	struct rn_cqe c = cqe_for(1);

	(void)state;
	e->client.async_fd = -1;
	assert_true(rn_cq_push(&e->cq, &c, false));
	assert_false(rn_cq_push(&e->cq, &c, false));
	assert_int_equal(e->cq.ctrl->overrun, 1);
	assert_no_event(e);
	env_free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty_cq),
		cmocka_unit_test(test_push_consume_wraps),
		cmocka_unit_test(test_counter_wrap),
		cmocka_unit_test(test_fields),
		cmocka_unit_test(test_overrun),
		cmocka_unit_test(test_overrun_after_wraps),
		cmocka_unit_test(test_bogus_consumer_index),
		cmocka_unit_test(test_overrun_without_async_fd),
	};

	/* Overrun warnings go to stderr, not to syslog. */
	rn_log_init(true, false);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
