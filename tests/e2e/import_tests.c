// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Sharing a context (group "import"): ibv_import_device of a dup of a
 * context's command fd, then ibv_import_pd and ibv_import_mr, as
 * rdma-core's test_shared_pd does.
 *  - shared_pd: a QP of the imported context, in the imported PD, writes
 *    with the imported MR's lkey into the opener's QP and MR; bad handles
 *    fail with EINVAL and import nothing; an MR made through the imported
 *    PD is advised after the imported PD object is gone;
 *  - outlives_opener: an imported context works on after the context it
 *    came from is closed, as a uverbs file lives while any fd names it;
 *  - other_process: a child imports its parent's context, PD and MR; its
 *    QP in the imported PD writes from the imported MR, whose bytes are
 *    the parent's (written after the fork, so the child's copy differs),
 *    and from an MR of its own, whose bytes are the child's; it leaves a
 *    PD and an MR of its own behind when it exits, which the context
 *    keeps until the parent closes it, and a WRITE into that MR fails
 *    (REM_ACCESS_ERR) once the child is gone;
 *  - other_process_outlives: a context passed over a Unix socket lives on
 *    in the process that imported it after its opener exits.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"
#include "send_fds.h"

#define SRC_OFF 0
#define DST_OFF 4096
#define LEN 256

/* A context imported from a dup of ctx's command fd. */
static int import_ctx(struct ibv_context *ctx, struct ibv_context **out)
{
	int fd = dup(ctx->cmd_fd);

	CHECK(fd >= 0, "dup of the command fd: %s", strerror(errno));
	*out = ibv_import_device(fd);
	CHECK(*out, "ibv_import_device: %s", strerror(errno));
	return 0;
}

static int shared_pd(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_context *ctx2;
	struct ibv_pd *pd2;
	struct ibv_mr *mr2, *odp;
	struct ibv_cq *cq2;
	struct ibv_qp *qp2;
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_sge sge;
	struct ibv_send_wr wr = {
		.wr_id = 0x5a,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_wc wc;
	int ret;

	e2e_default_opts(&o);
	o.state = IBV_QPS_RESET;
	TRY(e2e_open(&s, p, &o));
	TRY(import_ctx(s.ctx, &ctx2));

	/* Handles the context does not have import nothing. */
	errno = 0;
	CHECK(!ibv_import_pd(ctx2, s.pd->handle + 1000) && errno == EINVAL,
	      "ibv_import_pd of no PD: errno %d, expected EINVAL", errno);
	pd2 = ibv_import_pd(ctx2, s.pd->handle);
	CHECK(pd2, "ibv_import_pd: %s", strerror(errno));
	CHECK(pd2->context == ctx2 && pd2->handle == s.pd->handle,
	      "imported PD: context %p handle %u", (void *)pd2->context,
	      pd2->handle);
	errno = 0;
	CHECK(!ibv_import_mr(pd2, s.mr->handle + 1000) && errno == EINVAL,
	      "ibv_import_mr of no MR: errno %d, expected EINVAL", errno);
	mr2 = ibv_import_mr(pd2, s.mr->handle);
	CHECK(mr2, "ibv_import_mr: %s", strerror(errno));
	CHECK(mr2->lkey == s.mr->lkey && mr2->rkey == s.mr->rkey &&
		      mr2->length == s.mr->length &&
		      (uintptr_t)mr2->addr == s.base && mr2->pd == pd2 &&
		      mr2->context == ctx2,
	      "imported MR: lkey %#x rkey %#x length %zu addr %p, expected "
	      "%#x %#x %zu %#llx",
	      mr2->lkey, mr2->rkey, mr2->length, mr2->addr, s.mr->lkey,
	      s.mr->rkey, s.mr->length, (unsigned long long)s.base);

	/* A QP of the imported context writes into the opener's QP. */
	cq2 = ibv_create_cq(ctx2, 8, NULL, NULL, 0);
	CHECK(cq2, "ibv_create_cq on the imported context: %s",
	      strerror(errno));
	qa.send_cq = cq2;
	qa.recv_cq = cq2;
	qp2 = ibv_create_qp(pd2, &qa);
	CHECK(qp2, "ibv_create_qp in the imported PD: %s", strerror(errno));
	memcpy(s.rem.gid, s.gid.raw, 16);
	s.rem.psn = s.o.psn;
	TRY(e2e_reset_qp(&s, s.qp, qp2->qp_num));
	TRY(e2e_reset_qp(&s, qp2, s.qp->qp_num));
	fill(s.buf + SRC_OFF, LEN, 0x1234);
	memset(s.buf + DST_OFF, 0, LEN);
	sge = (struct ibv_sge){ .addr = s.base + SRC_OFF, .length = LEN,
				.lkey = mr2->lkey };
	wr.wr.rdma.remote_addr = s.base + DST_OFF;
	wr.wr.rdma.rkey = s.mr->rkey;
	TRY(post_send1(qp2, &wr));
	TRY(poll_one((struct e2e_cq){ .cq = cq2 }, &wc, E2E_WAIT_MS));
	CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == 0x5a &&
		      wc.opcode == IBV_WC_RDMA_WRITE,
	      "the WRITE completed with %s (wr_id %#llx, opcode %d)",
	      wc_status_name(wc.status), (unsigned long long)wc.wr_id,
	      wc.opcode);
	TRY(check_fill(s.buf + DST_OFF, LEN, 0x1234, "the written bytes"));

	CHECK(!ibv_destroy_qp(qp2), "ibv_destroy_qp");
	CHECK(!ibv_destroy_cq(cq2), "ibv_destroy_cq");
	ibv_unimport_mr(mr2);

	/* An MR made through the imported PD is of the PD, which lives on
	 * when the imported object goes: ibv_advise_mr through the opener's
	 * object of it finds the MR. */
	odp = ibv_reg_mr(pd2, s.buf + DST_OFF, LEN,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND);
	CHECK(odp, "ibv_reg_mr (ODP) in the imported PD: %s", strerror(errno));
	ibv_unimport_pd(pd2);
	sge = (struct ibv_sge){ .addr = (uintptr_t)(s.buf + DST_OFF),
				.length = LEN, .lkey = odp->lkey };
	ret = ibv_advise_mr(s.pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
			    IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);
	CHECK(!ret, "ibv_advise_mr of the MR of the unimported PD: %s",
	      strerror(ret));
	CHECK(!ibv_dereg_mr(odp), "ibv_dereg_mr of the ODP MR");
	/* Unimported, not freed: the opener's PD and MR are still there. */
	CHECK(!ibv_close_device(ctx2), "ibv_close_device of the import");
	return e2e_close(&s);
}

/* A PD and an MR come and go in ctx, as in a context that lives. */
static int still_works(struct ibv_context *ctx, const char *when)
{
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;

	pd = ibv_alloc_pd(ctx);
	CHECK(pd, "ibv_alloc_pd %s: %s", when, strerror(errno));
	buf = e2e_alloc(4096);
	TRY(!buf);
	mr = e2e_reg(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	TRY(!mr);
	CHECK(!ibv_dereg_mr(mr), "ibv_dereg_mr");
	CHECK(!ibv_dealloc_pd(pd), "ibv_dealloc_pd");
	free(buf);
	return 0;
}

static int outlives_opener(struct e2e_proc *p)
{
	struct ibv_context *ctx, *ctx2;
	struct ibv_device_attr attr;

	(void)p;
	TRY(e2e_open_device(&ctx));
	TRY(import_ctx(ctx, &ctx2));
	CHECK(!ibv_close_device(ctx), "ibv_close_device of the opener");
	CHECK(!ibv_query_device(ctx2, &attr), "ibv_query_device");
	TRY(still_works(ctx2, "after the opener closed"));
	CHECK(!ibv_close_device(ctx2), "ibv_close_device of the import");
	return 0;
}

#define DST2_OFF 8192

/* Between a parent and its child: one 32-bit word either way. */
struct link {
	int to_child[2], to_parent[2];
};

static int link_open(struct link *l)
{
	CHECK(!pipe(l->to_child) && !pipe(l->to_parent), "pipe: %s",
	      strerror(errno));
	return 0;
}

static int link_send(int fd, uint32_t v)
{
	CHECK(write(fd, &v, sizeof(v)) == sizeof(v), "pipe write: %s",
	      strerror(errno));
	return 0;
}

static int link_recv(int fd, uint32_t *v)
{
	CHECK(read(fd, v, sizeof(*v)) == sizeof(*v), "pipe read: the other "
	      "process is gone");
	return 0;
}

static int child_status(pid_t pid, const char *what)
{
	int status;

	CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
	      "%s: the child ended with status %#x", what, status);
	return 0;
}

/* The child of other_process: its QP writes into the parent's. */
static int importer(struct e2e_side *s, struct link *l)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_send_wr wr = {
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_context *ctx2;
	struct ibv_mr *mr2, *own_mr, *left_mr;
	struct ibv_pd *pd2, *left_pd;
	struct ibv_sge sge;
	struct ibv_qp *qp2;
	struct ibv_wc wc;
	uint8_t *own;
	uint32_t go;
	int i;

	ctx2 = ibv_import_device(dup(s->ctx->cmd_fd));
	CHECK(ctx2, "ibv_import_device in the child: %s", strerror(errno));
	pd2 = ibv_import_pd(ctx2, s->pd->handle);
	CHECK(pd2, "ibv_import_pd in the child: %s", strerror(errno));
	mr2 = ibv_import_mr(pd2, s->mr->handle);
	CHECK(mr2 && mr2->lkey == s->mr->lkey,
	      "ibv_import_mr in the child: %s", strerror(errno));
	qa.send_cq = qa.recv_cq = ibv_create_cq(ctx2, 8, NULL, NULL, 0);
	CHECK(qa.send_cq, "ibv_create_cq in the child: %s", strerror(errno));
	own = e2e_alloc(LEN);
	TRY(!own);
	fill(own, LEN, 0xc41d);
	own_mr = e2e_reg(pd2, own, LEN, IBV_ACCESS_LOCAL_WRITE);
	TRY(!own_mr);
	wr.sg_list = &sge;
	qp2 = ibv_create_qp(pd2, &qa);
	CHECK(qp2, "ibv_create_qp in the child: %s", strerror(errno));
	TRY(link_send(l->to_parent[1], qp2->qp_num));
	TRY(link_recv(l->to_child[0], &go));
	TRY(e2e_reset_qp(s, qp2, s->qp->qp_num));
	for (i = 0; i < 2; i++) {
		/* First from the parent's MR (its address space), then from
		 * the child's own.
		 */
		sge = i ? (struct ibv_sge){ (uintptr_t)own, LEN, own_mr->lkey } :
			  (struct ibv_sge){ s->base + SRC_OFF, LEN, mr2->lkey };
		wr.wr_id = i;
		wr.wr.rdma.remote_addr = s->base + (i ? DST2_OFF : DST_OFF);
		wr.wr.rdma.rkey = s->mr->rkey;
		TRY(post_send1(qp2, &wr));
		TRY(poll_one((struct e2e_cq){ .cq = qa.send_cq }, &wc,
			     E2E_WAIT_MS));
		CHECK(wc.status == IBV_WC_SUCCESS && wc.wr_id == (uint64_t)i,
		      "the child's WRITE %d completed with %s", i,
		      wc_status_name(wc.status));
	}
	CHECK(!ibv_destroy_qp(qp2), "ibv_destroy_qp in the child");
	CHECK(!ibv_destroy_cq(qa.send_cq), "ibv_destroy_cq in the child");
	CHECK(!ibv_dereg_mr(own_mr), "ibv_dereg_mr in the child");
	ibv_unimport_mr(mr2);
	ibv_unimport_pd(pd2);
	/* Left behind: the context keeps them (the child's membership is
	 * retired) until the parent closes the context.
	 */
	left_pd = ibv_alloc_pd(ctx2);
	CHECK(left_pd, "ibv_alloc_pd in the child: %s", strerror(errno));
	left_mr = e2e_reg(left_pd, own, LEN,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	TRY(!left_mr);
	TRY(link_send(l->to_parent[1], left_pd->handle));
	TRY(link_send(l->to_parent[1], left_mr->handle));
	return 0;
}

/*
 * The MR a child left behind, once the child is gone: the context still
 * has it, but the memory went with the process, so a WRITE into it fails
 * (a remote access error), as one into a range unmapped under an MR does;
 * it is not taken and dropped.  Until ringnicd has seen the child go, it
 * succeeds.
 */
static int left_behind(struct e2e_side *s, uint32_t pd_handle,
		       uint32_t mr_handle)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1,
			 .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_send_wr wr = {
		.wr_id = 7,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct ibv_mr *left, *src;
	struct ibv_qp *qp, *target;
	struct ibv_sge sge;
	struct ibv_pd *pd;
	struct ibv_wc wc;
	int tries = 0;

	pd = ibv_import_pd(s->ctx, pd_handle);
	CHECK(pd, "ibv_import_pd of the child's PD: %s", strerror(errno));
	left = ibv_import_mr(pd, mr_handle);
	CHECK(left, "ibv_import_mr of the child's MR: %s", strerror(errno));
	src = e2e_reg(pd, s->buf + SRC_OFF, LEN, IBV_ACCESS_LOCAL_WRITE);
	TRY(!src);
	qa.send_cq = qa.recv_cq = ibv_create_cq(s->ctx, 2, NULL, NULL, 0);
	CHECK(qa.send_cq, "ibv_create_cq: %s", strerror(errno));
	qp = ibv_create_qp(pd, &qa);
	target = ibv_create_qp(pd, &qa);
	CHECK(qp && target, "ibv_create_qp: %s", strerror(errno));
	TRY(e2e_reset_qp(s, qp, target->qp_num));
	TRY(e2e_reset_qp(s, target, qp->qp_num));
	sge = (struct ibv_sge){ (uintptr_t)(s->buf + SRC_OFF), LEN, src->lkey };
	wr.sg_list = &sge;
	wr.wr.rdma.remote_addr = (uintptr_t)left->addr;
	wr.wr.rdma.rkey = left->rkey;
	do {
		if (tries++)
			usleep(20000);
		TRY(post_send1(qp, &wr));
		TRY(poll_one((struct e2e_cq){ .cq = qa.send_cq }, &wc,
			     E2E_WAIT_MS));
	} while (wc.status == IBV_WC_SUCCESS && tries < 250);
	CHECK(wc.status == IBV_WC_REM_ACCESS_ERR,
	      "a WRITE into the MR of a child that is gone: %s after %d tries, "
	      "expected %s", wc_status_name(wc.status), tries,
	      wc_status_name(IBV_WC_REM_ACCESS_ERR));
	CHECK(!ibv_destroy_qp(qp) && !ibv_destroy_qp(target), "ibv_destroy_qp");
	CHECK(!ibv_destroy_cq(qa.send_cq), "ibv_destroy_cq");
	CHECK(!ibv_dereg_mr(src), "ibv_dereg_mr");
	ibv_unimport_mr(left);
	ibv_unimport_pd(pd);
	return 0;
}

static int other_process(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;
	struct link l;
	uint32_t qpn, left_pd, left_mr;
	pid_t pid;

	e2e_default_opts(&o);
	o.state = IBV_QPS_RESET;
	CHECK(o.buf_len >= DST2_OFF + LEN, "buffer of %zu bytes", o.buf_len);
	TRY(e2e_open(&s, p, &o));
	TRY(link_open(&l));
	memcpy(s.rem.gid, s.gid.raw, 16);
	s.rem.psn = s.o.psn;
	memset(s.buf, 0, DST2_OFF + LEN);
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (!pid)
		_exit(importer(&s, &l) ? 1 : 0);
	TRY(link_recv(l.to_parent[0], &qpn));
	TRY(e2e_reset_qp(&s, s.qp, qpn));
	/* Written after the fork: the child's copy of these bytes is zero. */
	fill(s.buf + SRC_OFF, LEN, 0x9a4e);
	TRY(link_send(l.to_child[1], 1));
	TRY(link_recv(l.to_parent[0], &left_pd));
	TRY(link_recv(l.to_parent[0], &left_mr));
	TRY(child_status(pid, "other_process"));
	TRY(check_fill(s.buf + DST_OFF, LEN, 0x9a4e,
		       "bytes written from the parent's MR"));
	TRY(check_fill(s.buf + DST2_OFF, LEN, 0xc41d,
		       "bytes written from the child's MR"));
	TRY(left_behind(&s, left_pd, left_mr));
	return e2e_close(&s);
}

/* A descriptor over a Unix socket, as one process gives another its context. */
static int fd_send(int sock, int fd)
{
	char byte = 0;
	int ret = rn_test_send_fds(sock, &byte, 1, &fd, 1, 0);

	CHECK(!ret, "sendmsg: %s", strerror(ret));
	return 0;
}

static int fd_recv(int sock, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	char byte;
	struct iovec iov = { &byte, 1 };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
			     .msg_control = u.buf, .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *c;

	CHECK(recvmsg(sock, &mh, MSG_CMSG_CLOEXEC) == 1, "recvmsg: %s",
	      strerror(errno));
	c = CMSG_FIRSTHDR(&mh);
	CHECK(c && c->cmsg_type == SCM_RIGHTS &&
		      c->cmsg_len == CMSG_LEN(sizeof(int)),
	      "no descriptor came");
	memcpy(fd, CMSG_DATA(c), sizeof(int));
	return 0;
}

/* The child of other_process_outlives: opens a context, gives it away. */
static int giver(int sock)
{
	struct ibv_context *ctx;
	uint32_t done;

	TRY(e2e_open_device(&ctx));
	TRY(fd_send(sock, ctx->cmd_fd));
	TRY(link_recv(sock, &done));
	CHECK(!ibv_close_device(ctx), "ibv_close_device in the child");
	return 0;
}

/*
 * A child opens a context and passes its command fd (SCM_RIGHTS); the
 * parent imports it, and the child closes it and exits: the context lives
 * on in the parent.
 */
static int other_process_outlives(struct e2e_proc *p)
{
	struct ibv_context *ctx;
	int sv[2], fd = -1;
	pid_t pid;

	(void)p;
	CHECK(!socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv),
	      "socketpair: %s", strerror(errno));
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (!pid)
		_exit(giver(sv[1]) ? 1 : 0);
	TRY(fd_recv(sv[0], &fd));
	ctx = ibv_import_device(fd);
	CHECK(ctx, "ibv_import_device of the child's context: %s",
	      strerror(errno));
	TRY(link_send(sv[0], 1));
	TRY(child_status(pid, "other_process_outlives"));
	TRY(still_works(ctx, "after the child exited"));
	CHECK(!ibv_close_device(ctx), "ibv_close_device");
	close(sv[0]);
	close(sv[1]);
	return 0;
}

#define ONE(g, n, fn) { .group = g, .name = n, .nroles = 1, .role = { fn } }

const struct e2e_test e2e_import_tests[] = {
	ONE("import", "shared_pd", shared_pd),
	ONE("import", "outlives_opener", outlives_opener),
	ONE("import", "other_process", other_process),
	ONE("import", "other_process_outlives", other_process_outlives),
	{ 0 },
};
