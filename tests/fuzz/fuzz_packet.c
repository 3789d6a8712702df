// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the RoCEv2 packet parser and the ICRC checks.  The
 * input is the addresses and ports of a flow (IPv4 and IPv6) followed by a
 * UDP payload.  Whatever the bytes, parsing stays inside them, what it
 * accepts is consistent and rebuilds to the same packet, and an ICRC the
 * IPv4 check accepts is the one of the ID and DF it reports.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "roce/icrc.h"
#include "roce/packet.h"

#define PREFIX (4 + 4 + 16 + 16 + 2 + 2)

static uint8_t copy[RN_PKT_MAX_LEN];
static struct rn_icrc_solver solver;

static void check(bool ok)
{
	if (!ok)
		abort();
}

static void check_same(const struct rn_pkt *a, const struct rn_pkt *b)
{
	check(a->opcode == b->opcode && a->se == b->se && a->mig == b->mig &&
	      a->padcnt == b->padcnt && a->tver == b->tver &&
	      a->fecn == b->fecn && a->becn == b->becn &&
	      a->dqpn == b->dqpn && a->ackreq == b->ackreq &&
	      a->psn == b->psn && a->hdrs == b->hdrs &&
	      a->hdr_len == b->hdr_len && a->xrc_srqn == b->xrc_srqn &&
	      a->deth.qkey == b->deth.qkey &&
	      a->deth.src_qpn == b->deth.src_qpn &&
	      a->reth.va == b->reth.va && a->reth.rkey == b->reth.rkey &&
	      a->reth.len == b->reth.len &&
	      a->aeth.syndrome == b->aeth.syndrome &&
	      a->aeth.msn == b->aeth.msn && a->atomic.va == b->atomic.va &&
	      a->atomic.rkey == b->atomic.rkey &&
	      a->atomic.swap_add == b->atomic.swap_add &&
	      a->atomic.compare == b->atomic.compare &&
	      a->atomic_ack == b->atomic_ack && a->imm == b->imm &&
	      a->ieth_rkey == b->ieth_rkey &&
	      a->payload_len == b->payload_len &&
	      !memcmp(a->payload, b->payload, a->payload_len));
}

static void parse(const uint8_t *pkt, size_t len)
{
	const struct rn_pkt_op *op;
	struct rn_pkt p, q;
	enum rn_pkt_status st;

	st = rn_pkt_parse(pkt, len, &p);
	check(st < RN_PKT_NSTATUS && st != RN_PKT_BAD_ICRC);
	if (st != RN_PKT_OK)
		return;
	op = rn_pkt_op(p.opcode);
	check(op && p.hdr_len == op->hdr_len && p.hdrs == op->hdrs);
	check(p.payload == pkt + p.hdr_len && len % 4 == 0 && p.tver == 0 &&
	      p.padcnt < 4 &&
	      p.hdr_len + p.payload_len + p.padcnt + RN_PKT_ICRC_BYTES == len);
	check((op->flags & RN_PKT_F_PAYLOAD) || (!p.payload_len && !p.padcnt));
	check((p.pkey & 0x7FFF) == 0x7FFF && p.dqpn <= RN_PKT_MASK24 &&
	      p.psn <= RN_PKT_MASK24);
	check(p.icrc == rn_icrc_get(pkt, len));

	/* What was accepted rebuilds, and parses the same. */
	check(rn_pkt_build(&p, copy, sizeof(copy)) == len);
	check(rn_pkt_parse(copy, len, &q) == RN_PKT_OK);
	check_same(&p, &q);
	check(q.pkey == RN_PKT_PKEY_DEFAULT && q.icrc == 0);
}

static void icrc(const uint8_t *f, const uint8_t *pkt, size_t len)
{
	struct rn_icrc_flow4 f4;
	struct rn_icrc_flow6 f6;
	struct rn_icrc_ipid ipid;
	enum rn_pkt_status st;
	uint16_t id;

	memcpy(&f4.saddr, f, 4);
	memcpy(&f4.daddr, f + 4, 4);
	memcpy(&f6.saddr, f + 8, 16);
	memcpy(&f6.daddr, f + 24, 16);
	f4.sport = f6.sport = f[40] << 8 | f[41];
	f4.dport = f6.dport = f[42] << 8 | f[43];

	st = rn_icrc_check_ipv6(&f6, pkt, len);
	check(st == RN_PKT_OK || st == RN_PKT_BAD_ICRC ||
	      st == RN_PKT_TRUNCATED || st == RN_PKT_OVERSIZE);
	if (st == RN_PKT_OK)
		check(rn_icrc_ipv6(&f6, pkt, len) == rn_icrc_get(pkt, len));

	st = rn_icrc_check_ipv4(&solver, &f4, pkt, len, &ipid);
	check(st == RN_PKT_OK || st == RN_PKT_BAD_ICRC ||
	      st == RN_PKT_TRUNCATED || st == RN_PKT_OVERSIZE);
	if (st == RN_PKT_OK)
		check(rn_icrc_ipv4(&f4, ipid.id, ipid.df, pkt, len) ==
		      rn_icrc_get(pkt, len));
	if (st == RN_PKT_TRUNCATED || st == RN_PKT_OVERSIZE)
		return;

	/* Sealed with some ID, the packet passes with that ID. */
	id = f4.sport ^ f4.dport;
	memcpy(copy, pkt, len);
	rn_icrc_seal_ipv4(&f4, id, copy, len);
	check(rn_icrc_check_ipv4(&solver, &f4, copy, len, &ipid) == RN_PKT_OK &&
	      ipid.id == id && ipid.df);
	rn_icrc_seal_ipv6(&f6, copy, len);
	check(rn_icrc_check_ipv6(&f6, copy, len) == RN_PKT_OK);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	rn_icrc_solver_init(&solver);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < PREFIX || size - PREFIX > RN_PKT_MAX_LEN)
		return 0;
	parse(data + PREFIX, size - PREFIX);
	icrc(data, data + PREFIX, size - PREFIX);
	return 0;
}
