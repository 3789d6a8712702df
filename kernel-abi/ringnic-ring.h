/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * Copying a WQE into or out of a ring of 64-byte slots.  A WQE starts at a
 * slot boundary and may continue past the end of the ring into slot 0.
 * Rings have a power-of-two number of slots; head is a free-running counter.
 */
#ifndef RINGNIC_RING_H
#define RINGNIC_RING_H

#include <linux/types.h>
#include "ringnic-queue.h"

static inline __u8 *rn_ring_slot(__u8 *ring, __u32 nslots, __u64 counter)
{
	return ring + ((counter & (nslots - 1)) << RN_SLOT_SHIFT);
}

/* Bytes from the start of slot 'head' to the end of the ring. */
static inline __u64 rn_ring_tail_room(__u32 nslots, __u64 head)
{
	return (__u64)(nslots - (head & (nslots - 1))) << RN_SLOT_SHIFT;
}

static inline void rn_ring_write(__u8 *ring, __u32 nslots, __u64 head,
				 const void *src, __u64 len)
{
	__u64 room = rn_ring_tail_room(nslots, head);
	__u8 *dst = rn_ring_slot(ring, nslots, head);

	if (len <= room) {
		__builtin_memcpy(dst, src, len);
	} else {
		__builtin_memcpy(dst, src, room);
		__builtin_memcpy(ring, (const __u8 *)src + room, len - room);
	}
}

static inline void rn_ring_read(__u8 *ring, __u32 nslots, __u64 head,
				void *dst, __u64 len)
{
	__u64 room = rn_ring_tail_room(nslots, head);
	const __u8 *src = rn_ring_slot(ring, nslots, head);

	if (len <= room) {
		__builtin_memcpy(dst, src, len);
	} else {
		__builtin_memcpy(dst, src, room);
		__builtin_memcpy((__u8 *)dst + room, ring, len - room);
	}
}

#endif
