// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <poll.h>
#include <time.h>

#include "common.h"

static void to_rts(struct ibv_qp *qp, uint32_t dest)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("INIT failed");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = dest;
	a.ah_attr.port_num = 1;
	/* RoCE through the kernel takes only global routes: RINGNIC_TEST_GID
	 * names our own GID to address (as perftest's -x does).
	 */
	if (getenv("RINGNIC_TEST_GID")) {
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.sgid_index = atoi(getenv("RINGNIC_TEST_GID"));
		a.ah_attr.grh.hop_limit = 1;
		if (ibv_query_gid(qp->context, 1, a.ah_attr.grh.sgid_index,
				  &a.ah_attr.grh.dgid))
			die("no such GID");
	}
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("RTR failed");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				  IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS failed");
}

static struct ibv_qp *make_qp(struct pair *p, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 256, .max_recv_wr = 256,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(p->pd, &a);

	if (!qp)
		die("create_qp: %s", strerror(errno));
	return qp;
}

void pair_open(struct pair *p, size_t len)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	if (!list || !list[0])
		die("no device");
	p->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!p->ctx)
		die("open_device: %s", strerror(errno));
	p->pd = ibv_alloc_pd(p->ctx);
	p->channel = ibv_create_comp_channel(p->ctx);
	if (!p->pd || !p->channel)
		die("pd/channel: %s", strerror(errno));
	p->cq = ibv_create_cq(p->ctx, 1024, NULL, p->channel, 0);
	p->rcq = ibv_create_cq(p->ctx, 1024, NULL, NULL, 0);
	if (!p->cq || !p->rcq)
		die("create_cq: %s", strerror(errno));
	p->len = len;
	p->buf = calloc(2, len);
	p->mr = ibv_reg_mr(p->pd, p->buf, 2 * len,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!p->buf || !p->mr)
		die("reg_mr: %s", strerror(errno));
	p->req = make_qp(p, p->cq);
	p->resp = make_qp(p, p->rcq);
	to_rts(p->req, p->resp->qp_num);
	to_rts(p->resp, p->req->qp_num);
}

void pair_close(struct pair *p)
{
	if (ibv_destroy_qp(p->req) || ibv_destroy_qp(p->resp) ||
	    ibv_dereg_mr(p->mr) || ibv_destroy_cq(p->cq) ||
	    ibv_destroy_cq(p->rcq) || ibv_destroy_comp_channel(p->channel) ||
	    ibv_dealloc_pd(p->pd) || ibv_close_device(p->ctx))
		die("teardown failed");
	free(p->buf);
}

void pair_write(struct pair *p, uint32_t rkey, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)p->buf, len, p->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)p->buf + p->len, rkey },
	}, *bad;

	if (ibv_post_send(p->req, &wr, &bad))
		die("post_send");
}

void pair_send(struct pair *p, bool solicited)
{
	struct ibv_sge sge = { (uintptr_t)p->buf, 8, p->mr->lkey };
	struct ibv_sge rsge = { (uintptr_t)p->buf + p->len, 8, p->mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &rsge, .num_sge = 1 }, *rbad;
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = solicited ? IBV_SEND_SOLICITED : 0,
	}, *bad;

	/* The receive completes on the requester's CQ: swap roles. */
	if (ibv_post_recv(p->req, &rwr, &rbad) || ibv_post_send(p->resp, &wr, &bad))
		die("post");
}

bool pair_event(struct pair *p, int ms)
{
	struct pollfd pfd = { .fd = p->channel->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *cq_ctx;

	if (poll(&pfd, 1, ms) != 1)
		return false;
	if (ibv_get_cq_event(p->channel, &cq, &cq_ctx) || cq != p->cq)
		die("get_cq_event returned another CQ");
	ibv_ack_cq_events(cq, 1);
	return true;
}

void pair_poll(struct ibv_cq *cq, int n, enum ibv_wc_status status)
{
	struct timespec start, now;
	struct ibv_wc wc;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (n) {
		int got = ibv_poll_cq(cq, 1, &wc);

		if (got < 0)
			die("poll_cq: %d", got);
		if (got) {
			if (wc.status != status)
				die("completion %s, expected %s",
				    ibv_wc_status_str(wc.status),
				    ibv_wc_status_str(status));
			n--;
			continue;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - start.tv_sec > 10)
			die("completions did not come");
	}
}
