/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * The device page: one per opened context, shared by that context and the
 * device.  It tells the device which of the context's queues have news (a
 * QP's new send WQEs or receive WQEs posted in ERR, a CQ armed while CQEs
 * wait in it or whose event was consumed), and tells the provider whether
 * the device must be woken up.
 *
 * Ringing a queue (QP q or CQ c):
 *   provider: write the queue's doorbell record or arm word, then
 *             atomic_fetch_or(&pending[q / 64], 1 << (q % 64)) and
 *             atomic_fetch_or(&summary, 1 << (q / 64)), both seq_cst; then load
 *             asleep and, if it is set, wake the device (a syscall).
 *   device:   exchange summary with 0, exchange each flagged pending word with
 *             0, then read the doorbell records of the flagged queues.
 * A bit is set after the record is written and cleared before the record is
 * read, so no record update can be missed.  Before sleeping the device sets
 * asleep and then rescans summary (seq_cst on both sides, the Dekker pattern),
 * so a doorbell is either seen by the rescan or followed by a wake-up.
 */
#ifndef RINGNIC_DEVPAGE_H
#define RINGNIC_DEVPAGE_H

#include <linux/types.h>
#include "ringnic-abi.h"

#define RN_PENDING_WORDS (RN_CTX_MAX_QP / 64)

_Static_assert(RN_CTX_MAX_QP == RN_CTX_MAX_CQ, "one bitmap geometry");
_Static_assert(RN_PENDING_WORDS <= 64, "summary is one 64-bit word");

struct rn_doorbells {
	__u64 summary;
	__u64 pending[RN_PENDING_WORDS];
	__u8 pad[56];
};

struct rn_dev_page {
	/* written by the device */
	__u32 asleep;
	__u8 pad0[60];
	/* written by the provider */
	struct rn_doorbells qp; /* SQ doorbells and error-state RQ posts */
	struct rn_doorbells cq; /* arms over unpolled CQEs, consumed events */
};

_Static_assert(sizeof(struct rn_doorbells) % 64 == 0, "doorbells cache aligned");
_Static_assert(sizeof(struct rn_dev_page) <= 4096, "device page fits a page");

#define RN_DEV_PAGE_SIZE 4096

#endif
