// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Per-client limits of ringnicd (run under ringnic-run): QPs, ring memory,
 * completion channels and PDs run out with ENOMEM for the client that
 * asks for too much, and another client is not affected.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>
#include <infiniband/verbs.h>

struct ctx {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
};

static struct ctx open_ctx(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ctx c;

	assert_non_null(list);
	c.ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	assert_non_null(c.ctx);
	c.pd = ibv_alloc_pd(c.ctx);
	c.cq = ibv_create_cq(c.ctx, 16, NULL, NULL, 0);
	assert_non_null(c.pd);
	assert_non_null(c.cq);
	return c;
}

static void close_ctx(struct ctx *c)
{
	assert_int_equal(ibv_destroy_cq(c->cq), 0);
	assert_int_equal(ibv_dealloc_pd(c->pd), 0);
	assert_int_equal(ibv_close_device(c->ctx), 0);
}

static struct ibv_qp *qp(struct ctx *c, uint32_t wr)
{
	struct ibv_qp_init_attr a = {
		.send_cq = c->cq,
		.recv_cq = c->cq,
		.cap = { .max_send_wr = wr, .max_recv_wr = wr, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	return ibv_create_qp(c->pd, &a);
}

/* Create until refused; the refusal must be ENOMEM. Returns how many. */
static int fill(struct ctx *c, struct ibv_qp **qps, int max, uint32_t wr)
{
	int n = 0;

	while (n < max && (qps[n] = qp(c, wr)))
		n++;
	assert_true(n < max);
	assert_int_equal(errno, ENOMEM);
	return n;
}

static void test_qps_per_context(void **state)
{
	static struct ibv_qp *qps[5000];
	struct ctx a = open_ctx(), b = open_ctx();
	struct ibv_qp *other;
	int n, i;

	(void)state;
	n = fill(&a, qps, 5000, 1);
	assert_int_equal(n, 4096); /* the device page's doorbell bitmap */
	other = qp(&b, 1);
	assert_non_null(other);
	assert_int_equal(ibv_destroy_qp(other), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(ibv_destroy_qp(qps[i]), 0);
	other = qp(&a, 1);
	assert_non_null(other);
	assert_int_equal(ibv_destroy_qp(other), 0);
	close_ctx(&a);
	close_ctx(&b);
}

static void test_ring_memory(void **state)
{
	static struct ibv_qp *qps[1000];
	struct ctx a = open_ctx(), b = open_ctx();
	struct ibv_qp *other;
	int n, i;

	(void)state;
	/* 16384 WRs each way: 1 MiB of send ring and 1 MiB of receive ring. */
	n = fill(&a, qps, 1000, 16384);
	print_message("ring memory: %d large QPs, then ENOMEM\n", n);
	assert_true(n >= 64 && n <= 256);
	other = qp(&b, 16384);
	assert_non_null(other);
	assert_int_equal(ibv_destroy_qp(other), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(ibv_destroy_qp(qps[i]), 0);
	close_ctx(&a);
	close_ctx(&b);
}

static void test_channels(void **state)
{
	static struct ibv_cq *cqs[100];
	struct ctx a = open_ctx();
	struct ibv_comp_channel *ch = ibv_create_comp_channel(a.ctx);
	struct ibv_cq *plain;
	int n = 0, i;

	(void)state;
	assert_non_null(ch);
	while (n < 100 && (cqs[n] = ibv_create_cq(a.ctx, 4, NULL, ch, 0)))
		n++;
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(n, 64);
	plain = ibv_create_cq(a.ctx, 4, NULL, NULL, 0); /* no descriptor */
	assert_non_null(plain);
	assert_int_equal(ibv_destroy_cq(plain), 0);
	for (i = 0; i < n; i++)
		assert_int_equal(ibv_destroy_cq(cqs[i]), 0);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
	close_ctx(&a);
}

static void test_pds(void **state)
{
	static struct ibv_pd *pds[5000];
	struct ctx a = open_ctx();
	int n = 0, i;

	(void)state;
	while (n < 5000 && (pds[n] = ibv_alloc_pd(a.ctx)))
		n++;
	assert_int_equal(errno, ENOMEM);
	assert_int_equal(n, 4096 - 2); /* handles 1..4095, one is a.pd */
	for (i = 0; i < n; i++)
		assert_int_equal(ibv_dealloc_pd(pds[i]), 0);
	close_ctx(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qps_per_context),
		cmocka_unit_test(test_ring_memory),
		cmocka_unit_test(test_channels),
		cmocka_unit_test(test_pds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
