/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* A connected RC QP pair in one process, for the completion event tests. */
#ifndef RN_EVENTS_COMMON_H
#define RN_EVENTS_COMMON_H

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <infiniband/verbs.h>

#define die(...)                                                               \
	do {                                                                   \
		fprintf(stderr, __VA_ARGS__);                                  \
		fputc('\n', stderr);                                           \
		exit(1);                                                       \
	} while (0)

struct pair {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq; /* the requester's, on the channel */
	struct ibv_cq *rcq; /* the responder's */
	struct ibv_qp *req;
	struct ibv_qp *resp;
	struct ibv_mr *mr;
	char *buf;
	size_t len;
};

void pair_open(struct pair *p, size_t len);
void pair_close(struct pair *p);
/* Post one signaled RDMA WRITE of len bytes from buf into buf + len. */
void pair_write(struct pair *p, uint32_t rkey, uint32_t len);
/* Post one SEND, optionally solicited, and a receive for it. */
void pair_send(struct pair *p, bool solicited);
/* Wait up to ms for an event on the channel: true if one came. */
bool pair_event(struct pair *p, int ms);
/* Poll n completions of cq, each with the given status. */
void pair_poll(struct ibv_cq *cq, int n, enum ibv_wc_status status);

#endif
