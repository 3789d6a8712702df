/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * wire/: the RoCEv2 transport, for a QP whose peer is not a QP of this
 * device (or every connected QP, with --local-on-wire).  What the layers
 * above use of it; its insides are in wire/internal.h, private to wire/.
 */
#ifndef RN_WIRE_H
#define RN_WIRE_H

#include "engine/engine.h"

/* The Q_Key of QP1, the General Services QP (IB spec: 0x80010000). */
#define RN_GSI_QKEY 0x80010000u

/* A datagram for QP1 (a MAD), its Q_Key checked. */
struct rn_wire_gsi {
	unsigned int gid_index; /* our GID it arrived on */
	uint8_t sgid[16]; /* the sender's */
	uint8_t dgid[16]; /* ours */
	uint32_t src_qpn;
	uint32_t qkey;
	uint32_t flow_label; /* IPv6 */
	uint8_t tclass;
	uint8_t hop_limit;
	bool ipv4;
	const uint8_t *mad;
	uint32_t len;
};
/* Who takes QP1's datagrams: rdma_cm (cm/), or in kernel mode the
 * kernel's QP1, through the stub (daemon/kdev.c).
 */
typedef void (*rn_wire_gsi_fn)(struct rn_device *dev,
			       const struct rn_wire_gsi *gsi);

/* netio.c: the port's sockets; the wire's work registered with the engine */
int rn_wire_init(struct rn_engine *e);
void rn_wire_set_gsi(struct rn_device *dev, rn_wire_gsi_fn fn);
unsigned int rn_wire_addresses_changed(struct rn_device *dev);
void rn_wire_close(struct rn_device *dev);
/* The engine's epoll saw socket sock readable (its watch's object). */
void rn_wire_readable(struct rn_engine *e, void *sock);

/* connection.c */
/*
 * RTR: the QP's peer is at dgid, reached from our GID sgid_index; the QP
 * runs on the wire from now on.  Returns 0, or EINVAL when the GIDs
 * cannot make a path (an empty entry, IPv4 to IPv6), or ENOMEM.
 */
int rn_wire_qp_connect(struct rn_qp *qp, unsigned int sgid_index,
		       const uint8_t *dgid);

/* datagram.c */
/* A datagram of QP1 (a MAD of our CM's or of the kernel's) to QP dqpn at
 * dgid, from our GID sgid_index.
 */
void rn_wire_gsi_send(struct rn_device *dev, int sgid_index,
		      const uint8_t *dgid, uint8_t tclass, uint8_t hop_limit,
		      uint32_t dqpn, uint32_t qkey, const uint8_t *mad,
		      uint32_t len);

#endif
