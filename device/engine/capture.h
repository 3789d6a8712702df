/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Packet capture (ringnic-dump(1)): every packet the device sends or
 * receives goes to each capture whose filter takes it, as one record
 * (struct rn_capture_rec, kernel-abi/ringnic-ctl.h) on the capture's
 * connection.  The transports hand their packets over only while
 * rn_capturing says one runs: with none, a packet costs one test.
 *
 * Packets between two QPs of the device (the local path) are made up by
 * local/capture.c, as the packets the message would have been.
 *
 * The control thread starts them (a CAPTURE request) and stops them (the
 * connection closed), holding every engine; the engines write their
 * records, each record one message on the capture's SEQPACKET connection.
 */
#ifndef RN_ENGINE_CAPTURE_H
#define RN_ENGINE_CAPTURE_H

#include "engine/engine.h"
#include "roce/ip.h"

/* A RoCEv2 packet: what its IP and UDP headers say, then BTH to ICRC. */
struct rn_capture_pkt {
	uint8_t dir; /* enum rn_capture_dir */
	uint32_t qpn; /* our QP it is to or from (RN_CAPTURE_LOCAL: from) */
	uint32_t peer_qpn; /* RN_CAPTURE_LOCAL: our QP it is to; else 0 */
	struct rn_ip_fields ip; /* udp_len is set from body_len */
	uint16_t sport;
	uint16_t dport;
	const void *body;
	size_t body_len;
};

static inline bool rn_capturing(const struct rn_device *dev)
{
	return !rn_list_empty(&dev->captures);
}

/* The client's connection becomes a capture of packets of QP qpn
 * (RN_CAPTURE_ANY_QP: all) and of the QPs of process pid (0: any),
 * snaplen bytes of each (0: all).
 */
int rn_capture_start(struct rn_client *client, uint32_t qpn, pid_t pid,
		     uint32_t snaplen);
/* Its connection is closing: a capture, if it is one, ends. */
void rn_capture_stop(struct rn_client *client);
void rn_capture_packet(struct rn_device *dev, const struct rn_capture_pkt *pkt);
/* The most bytes of a packet between our QPs qpn and peer_qpn (0: a
 * packet of qpn alone) that a capture keeps: 0 when none takes it.  For
 * what makes packets up (local/capture.c) and can spare the work.
 */
uint32_t rn_capture_wanted(struct rn_device *dev, uint32_t qpn,
			   uint32_t peer_qpn);

#endif
