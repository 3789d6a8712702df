/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Raw connections to the control socket (raw_ctl.c). */
#ifndef HOSTILE_RAW_CTL_H
#define HOSTILE_RAW_CTL_H

#include <stddef.h>
#include <stdint.h>

#include "kernel-abi/ringnic-abi.h"
#include "kernel-abi/ringnic-ctl.h"

#include "hostile.h"
#include "send_fds.h"

enum answer { ANSWER_REPLY, ANSWER_CLOSED };

/* A connected socket, or -1 (recorded). */
int raw_connect(const char *path);
/* The next answer: a reply (its status), or the connection closed. */
int raw_answer(int fd, enum answer *a, int *status);
int expect_closed(int fd, const char *what);
/* The same for a capture's connection, whose records (of the packets of
 * any client, the local path's too) may come first: they are skipped.
 */
int expect_capture_closed(int fd, const char *what);
int expect_status(int fd, int want, const char *what);
/* One well-formed request (op and len filled in); its status must be want. */
int raw_call(int fd, void *req, size_t len, uint32_t op, int want,
	     const char *what);
/* OPEN with these descriptors and version; its status must be want. */
int raw_open_fds(int fd, uint32_t version, const int *fds, int nfds, int want,
		 const char *what);
/* OPEN as the provider does it, which must work. */
int raw_open(int fd, const char *what);
/* A connection, opened. */
int raw_session(const char *path, int *fd, const char *what);
/* Objects of a raw connection (their answers must be success). */
int alloc_pd(int fd, uint32_t *pd);
int create_cq(int fd, uint32_t *cq);
void qp_request(struct rn_ctl_create_qp_req *req, uint32_t pd, uint32_t scq,
		uint32_t rcq);
int create_qp(int fd, uint32_t pd, uint32_t cq, uint32_t *qp);
/* Some well-formed request other than OPEN in buf (RN_CTL_MSG_MAX bytes). */
size_t any_request(uint8_t *buf, uint32_t *op);

#endif
