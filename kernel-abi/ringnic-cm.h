/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * rdma_cm in userspace mode: how the shim of ringnic-run hands the commands
 * librdmacm writes to /dev/infiniband/rdma_cm over to ringnicd.
 *
 * Each event channel (each open of the rdma_cm device) is one connection to
 * ringnicd's SOCK_SEQPACKET socket RUNTIME_DIR/NAME.cm.  Its first message
 * is struct rn_cm_hello, carrying as SCM_RIGHTS one end of a SOCK_STREAM
 * socketpair whose other end is the descriptor the application holds.
 * ringnicd writes a byte into that pair whenever the channel's event queue
 * becomes non-empty, and again after a GET_EVENT that leaves events queued:
 * the application's descriptor polls readable when events wait, and
 * GET_EVENT reads the pending bytes (blocking, or EAGAIN under O_NONBLOCK)
 * before it asks for the event.  A byte can outlive the event it announced
 * (DESTROY_ID discards an id's undelivered events); GET_EVENT then finds
 * the queue empty and waits again.
 *
 * Every later message is one UCMA command exactly as librdmacm wrote it
 * (struct rdma_ucm_cmd_hdr, then hdr.in bytes, <rdma/rdma_user_cm.h>, ABI
 * version 4), followed by what the command points at that ringnicd cannot
 * read itself:
 *   SET_OPTION: the optlen bytes of optval;
 *   MIGRATE_ID: the u64 token of the channel the id leaves (the hello reply
 *               of that channel gave it), in place of its descriptor.
 * Each is answered by struct rn_cm_reply and at most hdr.out bytes, which
 * the shim copies to the command's response pointer.  A GET_EVENT that
 * finds no event queued is answered EAGAIN (the shim waits for the next
 * byte).  ringnicd never reads or writes the application's memory for
 * rdma_cm.
 */
#ifndef RINGNIC_CM_H
#define RINGNIC_CM_H

#include <linux/types.h>

/* The ABI version librdmacm reads from class/misc/rdma_cm/abi_version. */
#define RN_CM_UCMA_ABI 4

#define RN_CM_HELLO_MAGIC 0x726e636du /* "rncm" */

struct rn_cm_hello {
	__u32 magic;
	__u32 reserved;
};

struct rn_cm_hello_reply {
	__s32 status; /* 0 or a positive errno */
	__u32 reserved;
	__u64 token; /* names the channel in a MIGRATE_ID written elsewhere */
	__u64 netns_ino; /* inode of ringnicd's network namespace */
};

struct rn_cm_reply {
	__s32 status; /* 0, or the positive errno write() fails with */
	__u32 len; /* response bytes that follow */
};

/* The largest command message: ACCEPT (8 + 296) or SET_OPTION's value. */
#define RN_CM_OPTVAL_MAX 256
#define RN_CM_MSG_MAX 512

#endif
