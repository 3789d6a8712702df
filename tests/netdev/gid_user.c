// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_gid_user DEVICE hold INDEX: use GID entry INDEX as applications do,
 * through an RC QP whose address vector names it (moved to RTR) and an
 * address handle with a GRH from it; print "holding" and keep both until
 * standard input ends.
 *
 * rn_gid_user DEVICE empty INDEX: entry INDEX has no address: ibv_query_gid
 * gives the zero GID, ibv_query_gid_ex ENODATA, and modify_qp and
 * create_ah naming it fail with ENODATA, as on a kernel device.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

static void die(const char *what, int err)
{
	fprintf(stderr, "rn_gid_user: %s: %s\n", what, strerror(err));
	exit(1);
}

static struct ibv_context *open_device(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!ctx)
		die(name, ENODEV);
	return ctx;
}

/*
 * INIT, then RTR with a GRH from sgid_index to dgid (the same address: a
 * QP of this device); returns modify_qp's result.
 */
static int qp_to_rtr(struct ibv_qp *qp, int sgid_index, const union ibv_gid *dgid)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
	};
	int ret;

	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (ret)
		die("INIT", ret);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = qp->qp_num;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.sgid_index = sgid_index;
	a.ah_attr.grh.hop_limit = 1;
	a.ah_attr.grh.dgid = *dgid;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				     IBV_QP_MAX_DEST_RD_ATOMIC |
				     IBV_QP_MIN_RNR_TIMER);
}

int main(int argc, char **argv)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_ah_attr ah_attr = { .is_global = 1, .port_num = 1 };
	static const union ibv_gid zero;
	struct ibv_gid_entry entry;
	struct ibv_context *ctx;
	union ibv_gid gid;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	bool hold;
	char line[16];
	int index, ret;

	if (argc != 4 || (strcmp(argv[2], "hold") && strcmp(argv[2], "empty"))) {
		fprintf(stderr, "usage: rn_gid_user DEVICE hold|empty INDEX\n");
		return 2;
	}
	hold = !strcmp(argv[2], "hold");
	index = atoi(argv[3]);
	ctx = open_device(argv[1]);
	pd = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	if (!pd || !cq)
		die("PD, CQ", errno);
	qa.send_cq = qa.recv_cq = cq;
	qp = ibv_create_qp(pd, &qa);
	if (!qp)
		die("QP", errno);
	if (ibv_query_gid(ctx, 1, index, &gid))
		die("ibv_query_gid", errno);
	ah_attr.grh.sgid_index = index;
	ah_attr.grh.hop_limit = 1;
	ah_attr.grh.dgid = gid;

	if (hold) {
		ret = qp_to_rtr(qp, index, &gid);
		if (ret)
			die("RTR", ret);
		ah = ibv_create_ah(pd, &ah_attr);
		if (!ah)
			die("AH", errno);
		printf("holding\n");
		fflush(stdout);
		while (fgets(line, sizeof(line), stdin))
			;
		return 0;
	}

	if (memcmp(&gid, &zero, sizeof(gid)))
		die("ibv_query_gid: not the zero GID", EINVAL);
	ret = ibv_query_gid_ex(ctx, 1, index, &entry, 0);
	if (ret != ENODATA)
		die("ibv_query_gid_ex: not ENODATA", ret);
	ret = qp_to_rtr(qp, index, &gid);
	if (ret != ENODATA)
		die("RTR: not ENODATA", ret);
	ah = ibv_create_ah(pd, &ah_attr);
	if (ah || errno != ENODATA)
		die("AH: not ENODATA", ah ? 0 : errno);
	printf("empty\n");
	return 0;
}
