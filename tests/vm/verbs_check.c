// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_verbs_check: the verbs no unmodified tool reaches, in kernel mode
 * (tests/vm/kernel-mode.sh): ibv_query_port, ibv_resize_cq, ibv_rereg_mr,
 * ODP (explicit, implicit, ibv_advise_mr), memory windows, an SRQ resized
 * and its limit event, UD through an address handle, and an XRC domain
 * shared by two contexts whose target QP outlives the context that made
 * it.  Every verb goes through ringnic.ko; data moves through ringnicd.
 * RINGNIC_TEST_GID is the GID index QPs address (RoCE through the kernel
 * takes global routes only).  Prints one line per check; exits 1 on the
 * first failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#define LEN 4096

#define die(...)                                                               \
	do {                                                                   \
		fprintf(stderr, "verbs_check: " __VA_ARGS__);                  \
		fputc('\n', stderr);                                           \
		exit(1);                                                       \
	} while (0)
#define check(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			die(__VA_ARGS__);                                      \
	} while (0)

static int gid_index;

struct dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	char *buf; /* 2 * LEN: what is sent, where it lands */
	struct ibv_mr *mr;
};

static struct ibv_context *open_ctx(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx;

	check(list && list[0], "no device");
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	check(ctx, "open_device: %s", strerror(errno));
	return ctx;
}

static void dev_open(struct dev *d)
{
	d->ctx = open_ctx();
	d->pd = ibv_alloc_pd(d->ctx);
	d->cq = ibv_create_cq(d->ctx, 64, NULL, NULL, 0);
	d->buf = calloc(2, LEN);
	check(d->pd && d->cq && d->buf, "pd/cq: %s", strerror(errno));
	d->mr = ibv_reg_mr(d->pd, d->buf, 2 * LEN,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_MW_BIND);
	check(d->mr, "reg_mr: %s", strerror(errno));
}

static void dev_close(struct dev *d)
{
	check(!ibv_dereg_mr(d->mr) && !ibv_destroy_cq(d->cq) &&
		      !ibv_dealloc_pd(d->pd) && !ibv_close_device(d->ctx),
	      "teardown");
	free(d->buf);
}

/* One completion of cq, with status st; its opcode. */
static enum ibv_wc_opcode poll_one(struct ibv_cq *cq, enum ibv_wc_status st)
{
	struct timespec start, now;
	struct ibv_wc wc;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!(n = ibv_poll_cq(cq, 1, &wc))) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		check(now.tv_sec - start.tv_sec < 20, "no completion");
	}
	check(n == 1, "poll_cq: %d", n);
	check(wc.status == st, "completion %s, expected %s",
	      ibv_wc_status_str(wc.status), ibv_wc_status_str(st));
	return wc.opcode;
}

static void global_route(struct ibv_context *ctx, struct ibv_ah_attr *ah)
{
	ah->is_global = 1;
	ah->port_num = 1;
	ah->grh.sgid_index = gid_index;
	ah->grh.hop_limit = 1;
	check(!ibv_query_gid(ctx, 1, gid_index, &ah->grh.dgid), "query_gid");
}

/* INIT, RTR to dest and, with a send queue, RTS: RC, UC, XRC. */
static void connect_qp(struct ibv_qp *qp, uint32_t dest, bool rts)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	check(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
	      "INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest;
	global_route(qp->context, &a.ah_attr);
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	/* An initiator has no responder side. */
	check(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					     (qp->qp_type == IBV_QPT_XRC_SEND ?
						      0 :
						      IBV_QP_MAX_DEST_RD_ATOMIC |
							      IBV_QP_MIN_RNR_TIMER)),
	      "RTR: %s", strerror(errno));
	if (!rts)
		return;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	check(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
					     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					     IBV_QP_RNR_RETRY |
					     IBV_QP_MAX_QP_RD_ATOMIC),
	      "RTS: %s", strerror(errno));
}

static struct ibv_qp *rc_qp(struct dev *d, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr a = {
		.send_cq = d->cq,
		.recv_cq = d->cq,
		.srq = srq,
		.cap = { .max_send_wr = 16, .max_recv_wr = srq ? 0 : 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(d->pd, &a);

	check(qp, "create_qp: %s", strerror(errno));
	return qp;
}

static void post(struct ibv_qp *qp, struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad;

	check(!ibv_post_send(qp, wr, &bad), "post_send: %s", strerror(errno));
}

/* An RDMA WRITE of 64 bytes from buf into buf + LEN through rkey. */
static void write_through(struct dev *d, struct ibv_qp *qp, uint32_t rkey,
			  char mark)
{
	struct ibv_sge sge = { (uintptr_t)d->buf, 64, d->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)d->buf + LEN, rkey },
	};

	memset(d->buf, mark, 64);
	post(qp, &wr);
	poll_one(d->cq, IBV_WC_SUCCESS);
	check(d->buf[LEN + 63] == mark, "the write did not land");
}

static void send_recv(struct dev *d, struct ibv_qp *from, char mark)
{
	struct ibv_sge sge = { (uintptr_t)d->buf, 64, d->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	int got = 0;

	memset(d->buf, mark, 64);
	post(from, &wr);
	got += poll_one(d->cq, IBV_WC_SUCCESS) == IBV_WC_RECV;
	got += poll_one(d->cq, IBV_WC_SUCCESS) == IBV_WC_RECV;
	check(got == 1, "send and receive did not complete");
}

static void post_srq_recvs(struct dev *d, struct ibv_srq *srq, int n)
{
	struct ibv_sge sge = { (uintptr_t)d->buf + LEN, 64, d->mr->lkey };
	struct ibv_recv_wr wr = { .sg_list = &sge, .num_sge = 1 }, *bad;

	while (n--)
		check(!ibv_post_srq_recv(srq, &wr, &bad), "post_srq_recv");
}

static void check_port(struct dev *d)
{
	struct ibv_port_attr p;

	check(!ibv_query_port(d->ctx, 1, &p), "query_port: %s", strerror(errno));
	check(p.state == IBV_PORT_ACTIVE && p.link_layer == IBV_LINK_LAYER_ETHERNET &&
		      p.gid_tbl_len > gid_index,
	      "port: state %d link layer %d", p.state, p.link_layer);
	puts("ok query_port");
}

/* A CQ resized under a connected pair, rereg of its MR, writes through both. */
static void check_resize_rereg(struct dev *d)
{
	struct ibv_qp *a = rc_qp(d, NULL), *b = rc_qp(d, NULL);

	connect_qp(a, b->qp_num, true);
	connect_qp(b, a->qp_num, true);
	write_through(d, a, d->mr->rkey, 'a');
	check(!ibv_resize_cq(d->cq, 1000) && d->cq->cqe >= 1000,
	      "resize_cq: %s", strerror(errno));
	write_through(d, a, d->mr->rkey, 'b');
	puts("ok resize_cq");
	check(!ibv_rereg_mr(d->mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND),
	      "rereg_mr access: %s", strerror(errno));
	check(!ibv_rereg_mr(d->mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
			    d->buf, 2 * LEN, 0),
	      "rereg_mr translation: %s", strerror(errno));
	write_through(d, a, d->mr->rkey, 'c');
	puts("ok rereg_mr");
	check(!ibv_destroy_qp(a) && !ibv_destroy_qp(b), "destroy_qp");
}

static void check_odp(struct dev *d)
{
	int access = IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE |
		     IBV_ACCESS_REMOTE_WRITE;
	struct ibv_mr *mr = ibv_reg_mr(d->pd, d->buf, 2 * LEN, access);
	struct ibv_mr *imr = ibv_reg_mr(d->pd, NULL, SIZE_MAX, access);
	struct ibv_sge sge = { (uintptr_t)d->buf, LEN, 0 };

	check(mr && imr, "ODP reg_mr: %s", strerror(errno));
	sge.lkey = mr->lkey;
	check(!ibv_advise_mr(d->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			     IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1),
	      "advise_mr: %s", strerror(errno));
	check(!ibv_dereg_mr(mr) && !ibv_dereg_mr(imr), "ODP dereg");
	puts("ok ODP (explicit, implicit, advise_mr)");
}

static void check_mw(struct dev *d)
{
	struct ibv_qp *a = rc_qp(d, NULL), *b = rc_qp(d, NULL);
	struct ibv_mw *mw1 = ibv_alloc_mw(d->pd, IBV_MW_TYPE_1);
	struct ibv_mw *mw2 = ibv_alloc_mw(d->pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind bind = {
		.wr_id = 7,
		.send_flags = IBV_SEND_SIGNALED,
		.bind_info = {
			.mr = d->mr,
			.addr = (uintptr_t)d->buf + LEN,
			.length = LEN,
			.mw_access_flags = IBV_ACCESS_REMOTE_WRITE,
		},
	};

	check(mw1 && mw2, "alloc_mw: %s", strerror(errno));
	connect_qp(a, b->qp_num, true);
	connect_qp(b, a->qp_num, true);
	check(!ibv_bind_mw(b, mw1, &bind), "bind_mw: %s", strerror(errno));
	poll_one(d->cq, IBV_WC_SUCCESS);
	write_through(d, a, mw1->rkey, 'w');
	check(!ibv_dealloc_mw(mw1) && !ibv_dealloc_mw(mw2), "dealloc_mw");
	check(!ibv_destroy_qp(a) && !ibv_destroy_qp(b), "destroy_qp");
	puts("ok memory windows");
}

static bool async_event(struct ibv_context *ctx, enum ibv_event_type type)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	while (poll(&pfd, 1, 10000) == 1) {
		check(!ibv_get_async_event(ctx, &ev), "get_async_event");
		ibv_ack_async_event(&ev);
		if (ev.event_type == type)
			return true;
	}
	return false;
}

/* An SRQ grown with ibv_modify_srq under a QP, then its limit event. */
static void check_srq(struct dev *d)
{
	struct ibv_srq_init_attr init = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(d->pd, &init);
	struct ibv_srq_attr attr = { .max_wr = 64 };
	struct ibv_qp *a, *b;
	int i;

	check(srq, "create_srq: %s", strerror(errno));
	a = rc_qp(d, NULL);
	b = rc_qp(d, srq);
	connect_qp(a, b->qp_num, true);
	connect_qp(b, a->qp_num, true);
	post_srq_recvs(d, srq, 4);
	send_recv(d, a, 's');
	check(!ibv_modify_srq(srq, &attr, IBV_SRQ_MAX_WR) && attr.max_wr >= 64,
	      "modify_srq max_wr: %s", strerror(errno));
	memset(&attr, 0, sizeof(attr));
	check(!ibv_query_srq(srq, &attr) && attr.max_wr >= 64,
	      "query_srq: %s", strerror(errno));
	/* The 3 WRs posted before the resize, and 40 more than it held. */
	post_srq_recvs(d, srq, 40);
	for (i = 0; i < 5; i++)
		send_recv(d, a, 't');
	puts("ok SRQ resize (modify_srq, query_srq)");
	attr.srq_limit = 40; /* 38 left: the next receive fires it */
	check(!ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT), "modify_srq limit");
	send_recv(d, a, 'u');
	send_recv(d, a, 'v');
	check(async_event(d->ctx, IBV_EVENT_SRQ_LIMIT_REACHED), "no SRQ limit event");
	check(!ibv_destroy_qp(a) && !ibv_destroy_qp(b) && !ibv_destroy_srq(srq),
	      "destroy");
	puts("ok SRQ limit event");
}

static struct ibv_qp *ud_qp(struct dev *d)
{
	struct ibv_qp_init_attr init = {
		.send_cq = d->cq,
		.recv_cq = d->cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
	};
	struct ibv_qp *qp = ibv_create_qp(d->pd, &init);
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qkey = 0x11111111,
	};

	check(qp, "create UD qp: %s", strerror(errno));
	check(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					     IBV_QP_PORT | IBV_QP_QKEY),
	      "UD INIT");
	a.qp_state = IBV_QPS_RTR;
	check(!ibv_modify_qp(qp, &a, IBV_QP_STATE), "UD RTR");
	a.qp_state = IBV_QPS_RTS;
	check(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), "UD RTS");
	return qp;
}

static void check_ud(struct dev *d)
{
	struct ibv_qp *a = ud_qp(d), *b = ud_qp(d);
	struct ibv_ah_attr ah_attr = {};
	struct ibv_ah *ah;
	struct ibv_sge rsge = { (uintptr_t)d->buf + LEN, 40 + 64, d->mr->lkey };
	struct ibv_recv_wr rwr = { .sg_list = &rsge, .num_sge = 1 }, *rbad;
	struct ibv_sge sge = { (uintptr_t)d->buf, 64, d->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	int got = 0;

	global_route(d->ctx, &ah_attr);
	ah = ibv_create_ah(d->pd, &ah_attr);
	check(ah, "create_ah: %s", strerror(errno));
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = b->qp_num;
	wr.wr.ud.remote_qkey = 0x11111111;
	check(!ibv_post_recv(b, &rwr, &rbad), "UD post_recv");
	memset(d->buf, 'd', 64);
	post(a, &wr);
	got += poll_one(d->cq, IBV_WC_SUCCESS) == IBV_WC_RECV;
	got += poll_one(d->cq, IBV_WC_SUCCESS) == IBV_WC_RECV;
	check(got == 1 && d->buf[LEN + 40 + 63] == 'd', "UD message not received");
	check(!ibv_destroy_qp(a) && !ibv_destroy_qp(b) && !ibv_destroy_ah(ah),
	      "destroy");
	puts("ok UD through an address handle");
}

/*
 * One domain, two contexts (as two processes would share it through its
 * file): the first makes the target QP, the second opens it, and the
 * first goes entirely.  The target QP lives on, the second connects an
 * initiator to it and sends to its XRC SRQ by number.
 */
static void check_xrc(void)
{
	char path[] = "/tmp/rn-xrcd-XXXXXX";
	int fd = mkstemp(path);
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = fd,
		.oflags = O_CREAT,
	};
	struct ibv_qp_init_attr_ex qa = {
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.qp_type = IBV_QPT_XRC_RECV,
	};
	struct ibv_qp_open_attr oa = {
		.comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			     IBV_QP_OPEN_ATTR_TYPE,
		.qp_type = IBV_QPT_XRC_RECV,
	};
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 16, .max_sge = 1 },
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
		.srq_type = IBV_SRQT_XRC,
	};
	struct ibv_context *first = open_ctx();
	struct ibv_xrcd *x1, *x2;
	struct ibv_qp *tgt, *opened, *ini;
	struct ibv_srq *srq;
	uint32_t srqn;
	struct dev d;

	check(fd >= 0, "mkstemp");
	unlink(path);
	x1 = ibv_open_xrcd(first, &xa);
	check(x1, "open_xrcd: %s", strerror(errno));
	qa.xrcd = x1;
	tgt = ibv_create_qp_ex(first, &qa);
	check(tgt, "create XRC_RECV qp: %s", strerror(errno));

	dev_open(&d);
	x2 = ibv_open_xrcd(d.ctx, &xa);
	check(x2, "open_xrcd again: %s", strerror(errno));
	oa.qp_num = tgt->qp_num;
	oa.xrcd = x2;
	opened = ibv_open_qp(d.ctx, &oa);
	check(opened, "open_qp: %s", strerror(errno));
	check(!ibv_destroy_qp(tgt) && !ibv_close_xrcd(x1) &&
		      !ibv_close_device(first),
	      "the first context's teardown");

	sa.pd = d.pd;
	sa.xrcd = x2;
	sa.cq = d.cq;
	srq = ibv_create_srq_ex(d.ctx, &sa);
	check(srq && !ibv_get_srq_num(srq, &srqn), "XRC SRQ: %s", strerror(errno));
	qa = (struct ibv_qp_init_attr_ex){
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.qp_type = IBV_QPT_XRC_SEND,
		.pd = d.pd,
		.send_cq = d.cq,
		.cap = { .max_send_wr = 4, .max_send_sge = 1 },
	};
	ini = ibv_create_qp_ex(d.ctx, &qa);
	check(ini, "create XRC_SEND qp: %s", strerror(errno));
	connect_qp(opened, ini->qp_num, false);
	connect_qp(ini, opened->qp_num, true);
	post_srq_recvs(&d, srq, 1);
	{
		struct ibv_sge sge = { (uintptr_t)d.buf, 64, d.mr->lkey };
		struct ibv_send_wr wr = {
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED,
			.qp_type.xrc.remote_srqn = srqn,
		};
		int got = 0;

		memset(d.buf, 'x', 64);
		post(ini, &wr);
		got += poll_one(d.cq, IBV_WC_SUCCESS) == IBV_WC_RECV;
		got += poll_one(d.cq, IBV_WC_SUCCESS) == IBV_WC_RECV;
		check(got == 1 && d.buf[LEN + 63] == 'x', "XRC message not received");
	}
	check(!ibv_destroy_qp(ini) && !ibv_destroy_qp(opened) &&
		      !ibv_destroy_srq(srq) && !ibv_close_xrcd(x2),
	      "XRC teardown");
	dev_close(&d);
	close(fd);
	puts("ok XRC: a shared domain, a target QP outliving its creator");
}

int main(void)
{
	struct dev d;

	gid_index = getenv("RINGNIC_TEST_GID") ? atoi(getenv("RINGNIC_TEST_GID")) : 0;
	dev_open(&d);
	check_port(&d);
	check_resize_rereg(&d);
	check_odp(&d);
	check_mw(&d);
	check_srq(&d);
	check_ud(&d);
	dev_close(&d);
	check_xrc();
	puts("verbs_check: all passed");
	return 0;
}
