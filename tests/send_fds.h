/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Sending descriptors over a Unix socket, for the tests that do (send_fds.c). */
#ifndef RN_TEST_SEND_FDS_H
#define RN_TEST_SEND_FDS_H

#include <stddef.h>

/* The most descriptors one call sends. */
#define RN_TEST_SEND_FDS_MAX 4

/*
 * Sends len bytes of msg, with nfds descriptors (none if 0) in one
 * SCM_RIGHTS message, flags added to MSG_NOSIGNAL.  Returns 0, or an errno
 * (EMSGSIZE for more than RN_TEST_SEND_FDS_MAX descriptors, or for a send
 * that took less than len).
 */
int rn_test_send_fds(int sock, const void *msg, size_t len, const int *fds,
		     int nfds, int flags);

#endif
