/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * ringnic ABI identity: versions, device limits and the names under which a
 * device is published.  Shared by the provider, ringnicd and the kernel stub;
 * nothing here may depend on libc or libibverbs.
 */
#ifndef RINGNIC_ABI_H
#define RINGNIC_ABI_H

#include <linux/types.h>
#include <rdma/ib_user_verbs.h>

/* uverbs ABI version the provider matches (class/infiniband_verbs/X/abi_version) */
#define RN_UVERBS_ABI_VERSION 1
/* Control protocol version, checked when a context is opened */
#define RN_CTL_VERSION 2

#define RN_FW_VERSION "0.1.0"
#define RN_VENDOR_ID 0x524e43 /* "RNC": not a registered OUI, never matched by tools */
#define RN_VENDOR_PART_ID 0x0001
#define RN_HW_VERSION 1
/* The device's capability flags: ibv_query_device's, the kernel's, and
 * RDMA netlink's RDMA_NLDEV_ATTR_CAP_FLAGS. */
#define RN_DEVICE_CAP_FLAGS                                                   \
	(IB_UVERBS_DEVICE_RC_RNR_NAK_GEN | IB_UVERBS_DEVICE_SYS_IMAGE_GUID |  \
	 IB_UVERBS_DEVICE_SRQ_RESIZE | IB_UVERBS_DEVICE_XRC |                 \
	 IB_UVERBS_DEVICE_MEM_WINDOW | IB_UVERBS_DEVICE_MEM_WINDOW_TYPE_2B)

/* Per-device limits, reported by query_device and enforced by ringnicd. */
#define RN_MAX_QP 16384
#define RN_MAX_QP_WR 16384
#define RN_MAX_SGE 32
#define RN_MAX_INLINE 1024
#define RN_MAX_CQ 16384
#define RN_MAX_CQE (1u << 20)
#define RN_MAX_MR (1u << 20)
#define RN_MAX_PD 65536
#define RN_MAX_MR_SIZE (1ull << 47) /* the x86-64 user address space */
/*
 * rxe's max_qp_rd_atom.  perftest sets a requester's max_rd_atomic to the
 * responder's limit, so a smaller one fails modify_qp against rxe.
 */
#define RN_MAX_RD_ATOM 128
#define RN_MAX_SRQ 16384
#define RN_MAX_SRQ_WR 16384
#define RN_MAX_AH (1u << 20)
#define RN_MAX_MW (1u << 20)
#define RN_MAX_XRCD 4096
#define RN_MAX_MSG_SZ (1u << 31)
#define RN_PAGE_SIZE_CAP (~0xfffull) /* any multiple of 4 KiB */

/* Per-context limits: bounded by the doorbell bitmaps of the device page. */
#define RN_CTX_MAX_QP 4096
#define RN_CTX_MAX_CQ 4096

/* Port 1 is the only port. */
#define RN_NUM_PORTS 1
#define RN_GID_TABLE_LEN 16

/*
 * What a RoCEv2 packet puts around its payload at most, as rxe counts it
 * (RXE_MAX_HDR_LENGTH): the netdev MTU less this is what a packet carries,
 * and the largest IB MTU that fits is the port's active_mtu, in ringnicd
 * and in the kernel stub's query_port alike.
 */
#define RN_ROCE_MAX_HDR 80
#define RN_PKEY_TABLE_LEN 1
#define RN_DEFAULT_PKEY 0xffff

/*
 * Userspace stub: files ringnicd adds to the sysfs-style tree it publishes.
 * In class/infiniband/<ibdev>/:
 *   RN_SYSFS_CONTROL   absolute path of the device's control socket
 *   device/modalias    RN_MODALIAS_PREFIX "<ibdev>", what the provider matches
 *   ports/1/RN_SYSFS_UNBOUND  the port's addresses that are no GID because
 *                      their UDP port cannot be bound, one a line:
 *                      "ADDRESS: cannot bind UDP port 4791: REASON"; absent
 *                      when there are none (ringnic-run says them)
 */
#define RN_SYSFS_CONTROL "ringnic_control"
#define RN_SYSFS_UNBOUND "ringnic_unbound"
#define RN_MODALIAS_PREFIX "ringnic:"

#endif
