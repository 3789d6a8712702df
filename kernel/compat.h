/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What differs between the kernels ringnic.ko builds for: Debian 12's 6.1
 * and Debian 13's 6.12.  One helper per change, named for what it does.
 */
#ifndef RINGNIC_KMOD_COMPAT_H
#define RINGNIC_KMOD_COMPAT_H

#include <linux/mm.h>
#include <linux/version.h>
#include <rdma/uverbs_ioctl.h>

/* 6.3 made vma->vm_flags read-only outside the helpers it added. */
static inline void rn_vm_flags_clear(struct vm_area_struct *vma,
				     vm_flags_t flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

/*
 * 6.11 hands create_cq the whole uverbs_attr_bundle instead of its
 * driver_udata; kernel consumers pass neither.
 */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
typedef struct uverbs_attr_bundle rn_create_cq_attrs;

static inline struct ib_udata *rn_create_cq_udata(rn_create_cq_attrs *attrs)
{
	return attrs ? &attrs->driver_udata : NULL;
}
#else
typedef struct ib_udata rn_create_cq_attrs;

static inline struct ib_udata *rn_create_cq_udata(rn_create_cq_attrs *udata)
{
	return udata;
}
#endif

#endif
