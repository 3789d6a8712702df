// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_bench_load [-d DEV] [-p PAIRS] [-s SIZE] [-t SECONDS] [-q DEPTH]
 *
 * Work for the device with little work for the CPU: PAIRS RC queue pairs
 * of this process connected to each other (the local path), each side
 * writing SIZE bytes to the other's buffer with RDMA WRITE, DEPTH WRs in
 * flight per QP, posted in lists, one WR in DEPTH/2 signaled.  It sleeps
 * on a completion channel between postings instead of polling, so that
 * on a machine of few cores the device's engines, not a poller, get the
 * CPU.  Its queue pairs are one context's, so one engine's: N processes
 * keep N engines busy (bench/scale.sh).
 *
 * Prints "writes N" and "seconds S" and "rate R Mops" on standard output.
 */
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <infiniband/verbs.h>

#define MAX_PAIRS 64
/* Consecutive WRs write consecutive slots of a buffer, as perftest does. */
#define SLOTS 64

struct side {
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	uint64_t posted, done;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what)
{
	fprintf(stderr, "rn_bench_load: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void connect_qp(struct ibv_qp *qp, uint32_t dest)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("INIT");
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_4096,
		.dest_qp_num = dest,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .hop_limit = 1, .sgid_index = 0 } },
	};
	if (ibv_query_gid(qp->context, 1, 0, &a.ah_attr.grh.dgid))
		die("GID 0");
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC |
				       IBV_QP_MIN_RNR_TIMER))
		die("RTR");
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS, .timeout = 14,
				  .retry_cnt = 7, .rnr_retry = 7,
				  .max_rd_atomic = 1 };
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
}

/*
 * Post WRITEs to the peer until 'depth' are in flight.  The list of WRs is
 * built once and only its changing fields are written here: zeroing a WR
 * per post cost this process more than the provider's post_send did.
 */
static void fill(struct side *s, const struct side *peer, unsigned int size,
		 unsigned int depth)
{
	static struct ibv_send_wr wr[64];
	static struct ibv_sge sge[64];
	struct ibv_send_wr *bad;
	unsigned int n, every = depth / 2 ? depth / 2 : 1;

	if (!wr[0].sg_list)
		for (n = 0; n < 64; n++) {
			wr[n] = (struct ibv_send_wr){
				.sg_list = &sge[n],
				.num_sge = 1,
				.opcode = IBV_WR_RDMA_WRITE,
				.next = n < 63 ? &wr[n + 1] : NULL,
			};
		}
	do {
		for (n = 0; s->posted - s->done < depth && n < 64; n++) {
			uint64_t off = (s->posted % SLOTS) * size;

			sge[n] = (struct ibv_sge){ (uintptr_t)s->buf + off,
						   size, s->mr->lkey };
			wr[n].wr_id = s->posted;
			wr[n].send_flags = (s->posted + 1) % every ?
						   0 : IBV_SEND_SIGNALED;
			wr[n].wr.rdma.remote_addr = (uintptr_t)peer->buf + off;
			wr[n].wr.rdma.rkey = peer->mr->rkey;
			s->posted++;
		}
		if (!n)
			return;
		/* End the list at the n-th WR for this post, then relink. */
		wr[n - 1].next = NULL;
		if (ibv_post_send(s->qp, wr, &bad))
			die("post_send");
		if (n < 64)
			wr[n - 1].next = &wr[n];
	} while (n == 64);
}

int main(int argc, char **argv)
{
	const char *devname = "ringnic0";
	unsigned int pairs = 1, size = 64, depth = 512, seconds = 5, i;
	struct side sides[2 * MAX_PAIRS];
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	struct ibv_pd *pd;
	uint64_t writes = 0;
	double start, end;
	int c, n;

	while ((c = getopt(argc, argv, "d:p:s:t:q:")) != -1) {
		switch (c) {
		case 'd': devname = optarg; break;
		case 'p': pairs = (unsigned int)atoi(optarg); break;
		case 's': size = (unsigned int)atoi(optarg); break;
		case 't': seconds = (unsigned int)atoi(optarg); break;
		case 'q': depth = (unsigned int)atoi(optarg); break;
		default:
			fprintf(stderr, "usage: rn_bench_load [-d DEV] [-p PAIRS] "
					"[-s SIZE] [-t SECONDS] [-q DEPTH]\n");
			return 2;
		}
	}
	if (!pairs || pairs > MAX_PAIRS || !depth || !size) {
		fprintf(stderr, "rn_bench_load: 1 to %d pairs, depth and size "
				"above 0\n", MAX_PAIRS);
		return 2;
	}
	list = ibv_get_device_list(&n);
	for (i = 0; list && i < (unsigned int)n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), devname))
			ctx = ibv_open_device(list[i]);
	if (!ctx)
		die(devname);
	pd = ibv_alloc_pd(ctx);
	ch = ibv_create_comp_channel(ctx);
	cq = ch ? ibv_create_cq(ctx, 2 * pairs * depth, NULL, ch, 0) : NULL;
	if (!pd || !cq)
		die("PD or CQ");
	for (i = 0; i < 2 * pairs; i++) {
		struct ibv_qp_init_attr qa = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = { .max_send_wr = depth, .max_recv_wr = 1,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};

		sides[i] = (struct side){ .buf = calloc(SLOTS, size) };
		sides[i].mr = ibv_reg_mr(pd, sides[i].buf, (size_t)SLOTS * size,
					 IBV_ACCESS_LOCAL_WRITE |
						 IBV_ACCESS_REMOTE_WRITE);
		sides[i].qp = ibv_create_qp(pd, &qa);
		if (!sides[i].buf || !sides[i].mr || !sides[i].qp)
			die("QP");
	}
	for (i = 0; i < 2 * pairs; i++)
		connect_qp(sides[i].qp, sides[i ^ 1].qp->qp_num);

	start = now_s();
	end = start + seconds;
	for (i = 0; i < 2 * pairs; i++)
		fill(&sides[i], &sides[i ^ 1], size, depth);
	for (;;) {
		struct ibv_wc wc[64];
		struct ibv_cq *ev_cq;
		void *ev_ctx;
		int k;

		if (ibv_req_notify_cq(cq, 0))
			die("req_notify_cq");
		while ((k = ibv_poll_cq(cq, 64, wc)) > 0) {
			for (c = 0; c < k; c++) {
				struct side *s = NULL;

				for (i = 0; i < 2 * pairs && !s; i++)
					if (sides[i].qp->qp_num == wc[c].qp_num)
						s = &sides[i];
				if (wc[c].status != IBV_WC_SUCCESS || !s) {
					fprintf(stderr, "rn_bench_load: completion "
							"status %s\n",
						ibv_wc_status_str(wc[c].status));
					return 1;
				}
				s->done = wc[c].wr_id + 1;
			}
		}
		if (now_s() >= end)
			break;
		for (i = 0; i < 2 * pairs; i++)
			fill(&sides[i], &sides[i ^ 1], size, depth);
		if (ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
			die("get_cq_event");
		ibv_ack_cq_events(ev_cq, 1);
	}
	end = now_s();
	for (i = 0; i < 2 * pairs; i++)
		writes += sides[i].done;
	printf("writes %llu\nseconds %.3f\nrate %.3f Mops\n",
	       (unsigned long long)writes, end - start,
	       writes / (end - start) / 1e6);
	return 0;
}
