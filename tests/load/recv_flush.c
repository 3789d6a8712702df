// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_recv_flush [ITERATIONS]: receives posted while the QP enters ERR.
 *
 * An application that keeps its receive queue full does not stop posting
 * because its peer died: every receive it posts, before, during or after
 * the QP's move to ERR, must come back flushed.  A QP here is connected to
 * a QPN whose QP was destroyed, so its SEND exhausts its retries within a
 * fraction of a millisecond, while this process posts receives as fast as
 * it can, until it sees the SEND fail.  A receive that is never flushed
 * fails the test.  (The provider used to read the QP state before it
 * published the receives: a flush in between never saw them, and nobody
 * rang for them; almost every iteration lost the list being posted.)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "load.h"

#define ITERATIONS 1000
#define RQ_DEPTH 4096
#define LIST 16 /* receives per ibv_post_recv call */
#define WAIT_NS (1000000000ull) /* for flushes, once the SEND failed */
#define MAX_BAD 3 /* iterations that lost receives before giving up */

struct res {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid gid;
};

static int open_res(struct res *r)
{
	struct ibv_device **list;
	int i, n;

	list = ibv_get_device_list(&n);
	for (i = 0; list && i < n && !r->ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), LOAD_DEVICE))
			r->ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!r->ctx) {
		fprintf(stderr, "recv_flush: cannot open %s\n", LOAD_DEVICE);
		return -1;
	}
	r->pd = ibv_alloc_pd(r->ctx);
	r->cq = ibv_create_cq(r->ctx, RQ_DEPTH + 16, NULL, NULL, 0);
	r->buf = calloc(1, 4096);
	r->mr = r->pd && r->buf ? ibv_reg_mr(r->pd, r->buf, 4096, IBV_ACCESS_LOCAL_WRITE) :
				  NULL;
	if (!r->cq || !r->mr || ibv_query_gid(r->ctx, 1, 0, &r->gid)) {
		fprintf(stderr, "recv_flush: setup: %s\n", strerror(errno));
		return -1;
	}
	return 0;
}

static struct ibv_qp *make_qp(struct res *r)
{
	struct ibv_qp_init_attr a = {
		.send_cq = r->cq,
		.recv_cq = r->cq,
		.cap = { .max_send_wr = 1, .max_recv_wr = RQ_DEPTH, .max_send_sge = 1,
			 .max_recv_sge = 4 },
		.qp_type = IBV_QPT_RC,
	};

	return ibv_create_qp(r->pd, &a);
}

/* RTS towards dest_qpn, failing fast: 2 tries of 65 us. */
static int connect_to(struct res *r, struct ibv_qp *qp, uint32_t dest_qpn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
					  IBV_QP_ACCESS_FLAGS))
		return -1;
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = dest_qpn,
		.max_dest_rd_atomic = 1,
		.ah_attr = { .is_global = 1, .grh = { .hop_limit = 1 }, .port_num = 1 },
	};
	a.ah_attr.grh.dgid = r->gid;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 4, .retry_cnt = 1,
				  .max_rd_atomic = 1 };
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					     IBV_QP_MAX_QP_RD_ATOMIC) ? -1 : 0;
}

/* One QP dying under a stream of receives; returns how many were lost. */
static long iteration(struct res *r, int it)
{
	struct ibv_send_wr swr = { .wr_id = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *sbad;
	struct ibv_qp *qp = make_qp(r), *gone = make_qp(r);
	uint64_t until = now_ns() + WAIT_NS;
	long posted = 0, flushed = 0;
	bool failed = false;
	uint32_t dest;

	if (!qp || !gone) {
		fprintf(stderr, "recv_flush: ibv_create_qp: %s\n", strerror(errno));
		return -1;
	}
	dest = gone->qp_num;
	if (ibv_destroy_qp(gone) || connect_to(r, qp, dest) || ibv_post_send(qp, &swr, &sbad)) {
		fprintf(stderr, "recv_flush: iteration %d: setup failed\n", it);
		return -1;
	}
	while (flushed < posted || !failed) {
		struct ibv_wc wc[64];
		int n, i;

		/* Not after the failure: a post to a QP in ERR rings the device,
		 * whose flush would then take in receives stuck before it.
		 */
		if (!failed && posted - flushed <= RQ_DEPTH - LIST) {
			struct ibv_sge sge[4];
			struct ibv_recv_wr wr[LIST], *bad;

			for (i = 0; i < 4; i++)
				sge[i] = (struct ibv_sge){ (uintptr_t)r->buf + i * 64, 64,
							   r->mr->lkey };
			for (i = 0; i < LIST; i++)
				wr[i] = (struct ibv_recv_wr){ .wr_id = 2,
							      .next = i + 1 < LIST ? &wr[i + 1] : NULL,
							      .sg_list = sge, .num_sge = 4 };
			if (!ibv_post_recv(qp, wr, &bad))
				posted += LIST;
		}
		n = ibv_poll_cq(r->cq, 64, wc);
		for (i = 0; i < n; i++) {
			enum ibv_wc_status want = wc[i].wr_id == 1 ? IBV_WC_RETRY_EXC_ERR :
								    IBV_WC_WR_FLUSH_ERR;

			if (wc[i].status != want) {
				fprintf(stderr, "recv_flush: iteration %d: wr_id %llu completed with %s\n",
					it, (unsigned long long)wc[i].wr_id,
					ibv_wc_status_str(wc[i].status));
				return -1;
			}
			if (wc[i].wr_id == 1) {
				failed = true;
				until = now_ns() + WAIT_NS; /* for the flushes */
			} else {
				flushed++;
			}
		}
		if (n < 0 || now_ns() > until)
			break;
	}
	if (!failed) {
		fprintf(stderr, "recv_flush: iteration %d: the SEND did not fail\n", it);
		return -1;
	}
	ibv_destroy_qp(qp);
	if (flushed != posted)
		fprintf(stderr, "recv_flush: iteration %d: %ld receives posted, %ld flushed\n",
			it, posted, flushed);
	return posted - flushed;
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : ITERATIONS, it, bad = 0;
	struct res r = { 0 };
	long lost, total = 0;

	if (open_res(&r))
		return 1;
	for (it = 0; it < iterations && bad < MAX_BAD; it++) {
		lost = iteration(&r, it);
		if (lost < 0)
			return 1;
		total += lost;
		bad += lost > 0;
	}
	printf("recv_flush: %d iterations, %d of them lost receives (%ld in all)\n", it,
	       bad, total);
	ibv_dereg_mr(r.mr);
	ibv_destroy_cq(r.cq);
	ibv_dealloc_pd(r.pd);
	ibv_close_device(r.ctx);
	free(r.buf);
	return bad ? 1 : 0;
}
