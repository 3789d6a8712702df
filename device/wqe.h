/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Fetching WQEs: copy a WQE out of a shared ring into private memory, then
 * validate the copy.  Nothing is read from the ring twice.
 */
#ifndef RN_WQE_H
#define RN_WQE_H

#include "ringnicd.h"

/* Limits a WQE of one QP must respect, from the QP's actual caps. */
struct rn_wqe_limits {
	uint32_t max_sge;
	uint32_t max_inline;
	uint32_t max_slots; /* largest WQE, in slots */
};

/*
 * Copy the send WQE starting at slot counter 'head' of 'ring' (nslots slots,
 * 'avail' of them posted from head on) into *wqe.  Returns 0, or EINVAL when
 * the WQE is malformed: unknown opcode or flag, too many SGEs or inline
 * bytes, a slot count that does not match its payload or runs past what was
 * posted.
 */
int rn_send_wqe_fetch(uint8_t *ring, uint32_t nslots, uint64_t head,
		      uint64_t avail, const struct rn_wqe_limits *lim,
		      struct rn_wqe *wqe);

/* The same for a receive WQE. */
int rn_recv_wqe_fetch(uint8_t *ring, uint32_t nslots, uint64_t head,
		      uint64_t avail, const struct rn_wqe_limits *lim,
		      struct rn_rwqe *wqe);

#endif
