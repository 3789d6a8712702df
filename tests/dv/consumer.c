// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A user of the direct verbs, built as their users build one:
 *	cc consumer.c $(pkg-config --cflags --libs ringnic)
 * With a ringnic device (under ringnic-run) it creates an RC QP and asks
 * the library for its send window and counters and arms its CQ; with
 * --link-only it only shows that the library loaded and its functions
 * resolved.
 */
#include <stdio.h>
#include <string.h>
#include <infiniband/ringnicdv.h>

static int use_device(struct ibv_context *ctx)
{
	struct ringnicdv_cq_notify_attr arm = { .arm = RINGNICDV_CQ_ARM_ERRORS };
	struct ringnicdv_qp_counters counters;
	struct ringnicdv_sq_window window;
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	struct ibv_qp *qp = NULL;
	int ret = 1;

	if (cq) {
		init.send_cq = init.recv_cq = cq;
		qp = ibv_create_qp(pd, &init);
	}
	if (!qp)
		perror("consumer: creating a PD, CQ and QP");
	else if (ringnicdv_query_sq_window(qp, &window, sizeof(window)) ||
		 !window.size || window.free != window.size)
		fprintf(stderr, "consumer: bad send window\n");
	else if (ringnicdv_query_qp_counters(qp, &counters, sizeof(counters)))
		fprintf(stderr, "consumer: no QP counters\n");
	else if (ringnicdv_req_notify_cq(cq, &arm, sizeof(arm)))
		fprintf(stderr, "consumer: cannot arm the CQ for errors\n");
	else {
		printf("consumer: %s: send window %u bytes, %u per WR\n",
		       ibv_get_device_name(ctx->device), window.size,
		       window.op_size);
		ret = 0;
	}
	if (qp)
		ibv_destroy_qp(qp);
	if (cq)
		ibv_destroy_cq(cq);
	if (pd)
		ibv_dealloc_pd(pd);
	return ret;
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	int n, ret;

	if (argc > 1 && !strcmp(argv[1], "--link-only")) {
		printf("consumer: linked, %p %p %p\n",
		       (void *)ringnicdv_query_sq_window,
		       (void *)ringnicdv_query_qp_counters,
		       (void *)ringnicdv_req_notify_cq);
		return 0;
	}
	list = ibv_get_device_list(&n);
	if (!list || !n) {
		fprintf(stderr, "consumer: no RDMA device\n");
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!ctx) {
		perror("consumer: ibv_open_device");
		return 1;
	}
	ret = use_device(ctx);
	ibv_close_device(ctx);
	return ret;
}
