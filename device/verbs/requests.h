/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One control request: checked against the protocol, then carried out.
 * No socket here: daemon/control.c receives and answers; the fuzz target feeds
 * requests directly.
 */
#ifndef RN_REQUESTS_H
#define RN_REQUESTS_H

#include "verbs/verbs.h"

struct rn_msg {
	union {
		struct rn_ctl_req_hdr hdr;
		uint8_t buf[RN_CTL_MSG_MAX];
	} req;
	size_t len;
	int fds[RN_CTL_MAX_FDS]; /* received; any left here are closed by the caller */
	int nfds;
	pid_t sender; /* the process that sent it, as the kernel says; 0: unknown */
};

struct rn_reply {
	union {
		struct rn_ctl_resp_hdr hdr;
		uint8_t buf[RN_CTL_MSG_MAX];
	} resp;
	int fds[RN_CTL_MAX_FDS]; /* to send; the caller closes them after */
	int nfds;
};

/*
 * Carry out request m of client: fills r (status and body) and returns
 * true, or returns false when m breaks the protocol (wrong size, unknown
 * op, OPEN twice or not first, descriptors where none belong): the
 * connection must then be closed.  Until a request of the opener confirms
 * the client (core/process.c), every request but OPEN is refused with EPERM.
 */
bool rn_request(struct rn_client *client, struct rn_msg *m, struct rn_reply *r);

/* Once r is sent: the client has its copies of the memory descriptors;
 * the wake-up eventfd stays ours.  client may be NULL (nothing is kept).
 */
void rn_reply_sent(const struct rn_client *client, const struct rn_reply *r);

#endif
