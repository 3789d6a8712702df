/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The QP state machine: which modify_qp calls verbs allows, per QP type. */
#ifndef RN_QP_RULES_H
#define RN_QP_RULES_H

#include <stdint.h>
#include "verbs/verbs.h"

/*
 * Check a modify_qp of a QP of this type now in state 'cur': the
 * transition must exist, every attribute it requires must be in 'mask',
 * every attribute in 'mask' must be allowed for it, and every value given
 * must be in range for this device (gid_mask: bit i set if GID entry i
 * holds an address).  On success *next is the new state.  Returns 0,
 * EINVAL, or ENODATA when the address vector names an empty GID entry.
 */
int rn_qp_check_modify(enum ibv_qp_type type, enum ibv_qp_state cur,
		       const struct rn_qp_attr *attr, uint32_t mask,
		       uint32_t gid_mask, enum ibv_qp_state *next);

#endif
