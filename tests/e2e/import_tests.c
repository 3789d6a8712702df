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
 *  - other_process: the command fd of a context of another process (here
 *    the parent's, in a child) answers EOPNOTSUPP in userspace mode.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "e2e.h"

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

static int outlives_opener(struct e2e_proc *p)
{
	struct ibv_context *ctx, *ctx2;
	struct ibv_device_attr attr;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;

	(void)p;
	TRY(e2e_open_device(&ctx));
	TRY(import_ctx(ctx, &ctx2));
	CHECK(!ibv_close_device(ctx), "ibv_close_device of the opener");
	CHECK(!ibv_query_device(ctx2, &attr), "ibv_query_device");
	pd = ibv_alloc_pd(ctx2);
	CHECK(pd, "ibv_alloc_pd after the opener closed: %s", strerror(errno));
	buf = e2e_alloc(4096);
	TRY(!buf);
	mr = e2e_reg(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	TRY(!mr);
	CHECK(!ibv_dereg_mr(mr), "ibv_dereg_mr");
	CHECK(!ibv_dealloc_pd(pd), "ibv_dealloc_pd");
	CHECK(!ibv_close_device(ctx2), "ibv_close_device of the import");
	free(buf);
	return 0;
}

static int other_process(struct e2e_proc *p)
{
	struct ibv_context *ctx;
	int status;
	pid_t pid;

	(void)p;
	TRY(e2e_open_device(&ctx));
	pid = fork();
	CHECK(pid >= 0, "fork: %s", strerror(errno));
	if (!pid) {
		int fd = dup(ctx->cmd_fd);
		struct ibv_context *ctx2 = ibv_import_device(fd);

		_exit(ctx2 ? 1 : errno == EOPNOTSUPP ? 0 : 2);
	}
	CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
	CHECK(WIFEXITED(status) && !WEXITSTATUS(status),
	      "ibv_import_device in a child: status %#x, expected EOPNOTSUPP",
	      status);
	CHECK(!ibv_close_device(ctx), "ibv_close_device");
	return 0;
}

#define ONE(g, n, fn) { .group = g, .name = n, .nroles = 1, .role = { fn } }

const struct e2e_test e2e_import_tests[] = {
	ONE("import", "shared_pd", shared_pd),
	ONE("import", "outlives_opener", outlives_opener),
	ONE("import", "other_process", other_process),
	{ 0 },
};
