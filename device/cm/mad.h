/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The CM's MADs (docs/rdma_cm.md, "On the wire"): a 24-byte MAD header and
 * 232 bytes of message, every field big-endian at a fixed offset.  Offsets
 * below count from the start of the message (MAD byte 24); a field narrower
 * than its byte sits in the byte's most significant bits, as the IBA lays
 * it out.
 */
#ifndef RN_CM_MAD_H
#define RN_CM_MAD_H

#include <stdbool.h>
#include <stdint.h>

#define RN_MAD_HDR_LEN 24
#define RN_MAD_DATA_LEN 232

#define RN_MAD_BASE_VERSION 1
#define RN_MAD_CLASS_CM 0x07
#define RN_MAD_CLASS_VERSION_CM 2
#define RN_MAD_METHOD_SEND 0x03

enum rn_cm_attr {
	RN_CM_ATTR_REQ = 0x10,
	RN_CM_ATTR_MRA = 0x11,
	RN_CM_ATTR_REJ = 0x12,
	RN_CM_ATTR_REP = 0x13,
	RN_CM_ATTR_RTU = 0x14,
	RN_CM_ATTR_DREQ = 0x15,
	RN_CM_ATTR_DREP = 0x16,
	RN_CM_ATTR_SIDR_REQ = 0x17,
	RN_CM_ATTR_SIDR_REP = 0x18,
};

/* Where each message's private data starts, and how long it is. */
enum {
	RN_CM_REQ_PD = 140, RN_CM_REQ_PD_LEN = 92,
	RN_CM_MRA_PD = 10, RN_CM_MRA_PD_LEN = 222,
	RN_CM_REJ_PD = 84, RN_CM_REJ_PD_LEN = 148,
	RN_CM_REP_PD = 36, RN_CM_REP_PD_LEN = 196,
	RN_CM_RTU_PD = 8, RN_CM_RTU_PD_LEN = 224,
	RN_CM_DREQ_PD = 12, RN_CM_DREQ_PD_LEN = 220,
	RN_CM_DREP_PD = 8, RN_CM_DREP_PD_LEN = 224,
	RN_CM_SIDR_REQ_PD = 16, RN_CM_SIDR_REQ_PD_LEN = 216,
	RN_CM_SIDR_REP_PD = 96, RN_CM_SIDR_REP_PD_LEN = 136,
};

/* REJ reasons (ib_cm.h's numbers) */
enum {
	RN_CM_REJ_TIMEOUT = 4,
	RN_CM_REJ_INVALID_SID = 8,
	RN_CM_REJ_STALE_CONN = 10,
	RN_CM_REJ_CONSUMER_DEFINED = 28,
};

/* What a REJ or MRA says it answers. */
enum { RN_CM_MSG_REQ = 0, RN_CM_MSG_REP = 1, RN_CM_MSG_OTHER = 2 };

/* SIDR REP status */
enum { RN_CM_SIDR_SUCCESS = 0, RN_CM_SIDR_REJECT = 2 };

/* The rdma_cm header opening an IP-based REQ's or SIDR REQ's private data. */
#define RN_CMA_HDR_LEN 36
struct rn_cma_hdr {
	uint8_t version; /* 0 */
	uint8_t ip_version; /* 4 or 6 */
	uint16_t port; /* the active side's source port */
	uint8_t src[16]; /* IPv4 in the last four bytes */
	uint8_t dst[16];
};

static inline uint64_t rn_mad_get(const uint8_t *m, unsigned int off,
				  unsigned int bytes)
{
	uint64_t v = 0;

	while (bytes--)
		v = v << 8 | m[off++];
	return v;
}

static inline void rn_mad_put(uint8_t *m, unsigned int off,
			      unsigned int bytes, uint64_t v)
{
	while (bytes--) {
		m[off + bytes] = (uint8_t)v;
		v >>= 8;
	}
}

/* The MAD header (docs/rdma_cm.md, "The MAD header"). */
void rn_mad_hdr_build(uint8_t *mad, uint16_t attr_id, uint64_t tid,
		      uint32_t attr_mod);
/* The message of a CM MAD of ours; false (and *attr_id unset) if not. */
bool rn_mad_hdr_parse(const uint8_t *mad, uint32_t len, uint16_t *attr_id,
		      uint64_t *tid);

void rn_cma_hdr_build(uint8_t *pd, const struct rn_cma_hdr *h);
/* Parses and checks (version, IP version, no zero address). */
bool rn_cma_hdr_parse(const uint8_t *pd, struct rn_cma_hdr *h);

#endif
