/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Between the parts of libringnic-shim.so (shim.c, devnodes.c, rdma_cm.c).
 */
#ifndef RINGNIC_SHIM_H
#define RINGNIC_SHIM_H

/*
 * libc's definition of a function we interpose, looked up at first use
 * and kept in *cache: other libraries' constructors may call us before
 * any of ours would run.
 */
void *rn_shim_next(void *_Atomic *cache, const char *name);

/* An open of /dev/infiniband/rdma_cm: a new event channel of ringnicd. */
int rn_shim_cm_open(int flags);

#endif
