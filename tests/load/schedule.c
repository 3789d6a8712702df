// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The batches of a lane.  Batch n of a lane is a pure function of the
 * lane's key, n and the model of the responder's atomic word, so the
 * requester and the responder generate the same batch independently and
 * each checks what only it can see.  Every batch ends with an op that
 * consumes a receive: its completion tells the responder that the whole
 * batch, WRITEs and atomics included, has landed.
 */
#include <stdlib.h>

#include "load.h"

bool op_is_send(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM;
}

bool op_is_write(enum ibv_wr_opcode op)
{
	return op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

bool op_is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP;
}

bool op_consumes_recv(enum ibv_wr_opcode op)
{
	return op_is_send(op) || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

unsigned int batch_next_consumer(const struct batch *b, unsigned int from)
{
	while (from < b->n && !op_consumes_recv(b->op[from].opcode))
		from++;
	return from;
}

enum ibv_wc_opcode op_wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_SEND;
	}
}

const char *op_name(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
		return "SEND";
	case IBV_WR_SEND_WITH_IMM:
		return "SEND_WITH_IMM";
	case IBV_WR_RDMA_WRITE:
		return "RDMA_WRITE";
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return "RDMA_WRITE_WITH_IMM";
	case IBV_WR_RDMA_READ:
		return "RDMA_READ";
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return "ATOMIC_CMP_AND_SWP";
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return "ATOMIC_FETCH_AND_ADD";
	default:
		return "?";
	}
}

uint64_t lane_key(uint64_t pair_seed, int sender_side, unsigned int qp)
{
	return mix64(pair_seed ^ mix64((uint64_t)sender_side << 32 | qp));
}

uint64_t lane_counter0(uint64_t key)
{
	return mix64(key ^ 0x636f756e74657230ull);
}

void lane_gen_init(struct lane_gen *g, uint64_t key)
{
	g->key = key;
	g->counter = lane_counter0(key);
	g->next_no = 0;
}

static enum ibv_wr_opcode pick_opcode(uint64_t *r)
{
	static const struct {
		enum ibv_wr_opcode op;
		unsigned int weight;
	} mix[] = {
		{ IBV_WR_SEND, 20 },
		{ IBV_WR_SEND_WITH_IMM, 15 },
		{ IBV_WR_RDMA_WRITE, 20 },
		{ IBV_WR_RDMA_WRITE_WITH_IMM, 15 },
		{ IBV_WR_RDMA_READ, 15 },
		{ IBV_WR_ATOMIC_FETCH_AND_ADD, 8 },
		{ IBV_WR_ATOMIC_CMP_AND_SWP, 7 },
	};
	uint32_t x = rng_below(r, 100);
	size_t i;

	for (i = 0; i < sizeof(mix) / sizeof(mix[0]) - 1; i++) {
		if (x < mix[i].weight)
			return mix[i].op;
		x -= mix[i].weight;
	}
	return mix[i].op;
}

/* Mostly small, sometimes large, now and then empty or exactly 64 KiB. */
static uint32_t pick_len(uint64_t *r)
{
	uint32_t c = rng_below(r, 20);

	if (c == 0)
		return 0;
	if (c == 1)
		return 1;
	if (c <= 6)
		return 2 + rng_below(r, 63);
	if (c <= 11)
		return 65 + rng_below(r, 960);
	if (c <= 16)
		return 1025 + rng_below(r, 16384 - 1024);
	if (!rng_below(r, 4))
		return 64 * 1024;
	return 16385 + rng_below(r, OP_MAX_LEN - 16384);
}

/*
 * Cut len bytes into 1..max_pieces pieces of at least one byte each and
 * lay them out from *cursor on, with a random gap before each.
 */
static unsigned int place(uint64_t *r, uint32_t *cursor, uint32_t len,
			  unsigned int max_pieces, struct piece *out)
{
	unsigned int k = len ? 1 + rng_below(r, max_pieces) : 0, i;
	uint32_t used = 0;

	if (k > len)
		k = len;
	for (i = 0; i < k; i++) {
		uint32_t left = len - used;
		uint32_t part = i == k - 1 ? left : 1 + rng_below(r, left - (k - 1 - i));

		*cursor += rng_below(r, PIECE_GAP_MAX + 1);
		out[i] = (struct piece){ *cursor, part };
		*cursor += part;
		used += part;
	}
	return k;
}

static void gen_op(struct lane_gen *g, uint64_t *r, struct op *o, bool last,
		   uint32_t *budget, uint32_t *src, uint32_t *recv, uint32_t *win)
{
	o->opcode = pick_opcode(r);
	if (last && !op_consumes_recv(o->opcode)) {
		static const enum ibv_wr_opcode enders[] = {
			IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM
		};

		o->opcode = enders[rng_below(r, 3)];
	}
	o->len = op_is_atomic(o->opcode) ? 8 : pick_len(r);
	if (o->len > *budget)
		o->len = op_is_atomic(o->opcode) ? 0 : *budget;
	if (o->opcode == IBV_WR_RDMA_READ && o->len > READ_SRC_BYTES)
		o->len = READ_SRC_BYTES;
	if (op_is_atomic(o->opcode) && !o->len)
		o->opcode = IBV_WR_RDMA_READ; /* no budget left for its result */
	*budget -= o->len;
	o->inline_data = (op_is_send(o->opcode) || op_is_write(o->opcode)) &&
			 o->len <= OP_MAX_INLINE && rng_below(r, 2);
	/* READs and atomics are checked when they complete: always signaled. */
	o->signaled = last || !(op_is_send(o->opcode) || op_is_write(o->opcode)) ||
		      rng_below(r, 2);
	if (o->opcode == IBV_WR_SEND_WITH_IMM ||
	    o->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
		o->imm = (uint32_t)rng_next(r);

	o->nsrc = place(r, src, o->len, op_is_atomic(o->opcode) ? 1 : OP_MAX_SGE,
			o->src);
	if (op_is_write(o->opcode)) {
		*win += rng_below(r, PIECE_GAP_MAX + 1);
		o->remote_off = WIN_WRITE_OFF + *win;
		*win += o->len;
	} else if (o->opcode == IBV_WR_RDMA_READ) {
		o->remote_off = WIN_READ_OFF + rng_below(r, READ_SRC_BYTES - o->len + 1);
	} else if (op_is_atomic(o->opcode)) {
		o->remote_off = WIN_COUNTER_OFF;
		o->old = g->counter;
		if (o->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			o->compare_add = rng_next(r);
			g->counter += o->compare_add;
		} else {
			/* One in four compares against a value it is not. */
			o->compare_add = rng_below(r, 4) ? g->counter :
							   g->counter ^ (1 + rng_next(r) % 0xffff);
			o->swap = rng_next(r);
			if (o->compare_add == g->counter)
				g->counter = o->swap;
		}
	}
	if (op_is_send(o->opcode))
		o->nrecv = place(r, recv, o->len + rng_below(r, RECV_SLACK_MAX + 1),
				 OP_MAX_SGE, o->recv);
	else if (o->opcode == IBV_WR_RDMA_WRITE_WITH_IMM && !rng_below(r, 4))
		o->nrecv = place(r, recv, 16, 1, o->recv); /* must stay untouched */
}

void lane_gen_next(struct lane_gen *g, struct batch *b)
{
	uint64_t r = mix64(g->key ^ mix64(g->next_no));
	uint32_t budget = BATCH_BUDGET, src = 0, recv = 0, win = 0;
	unsigned int i;

	b->no = g->next_no++;
	b->n = 1 + rng_below(&r, BATCH_MAX_OPS);
	b->canary = (uint8_t)(0xa5 ^ (b->no * 0x3b));
	for (i = 0; i < b->n; i++) {
		b->op[i] = (struct op){ 0 };
		gen_op(g, &r, &b->op[i], i == b->n - 1, &budget, &src, &recv, &win);
	}
	b->src_end = src + ARENA_GUARD;
	b->recv_end = recv + ARENA_GUARD;
	b->write_end = win + ARENA_GUARD;
	b->counter = g->counter;
	/* The arena sizes are derived from the budget: a breach is a bug here. */
	if (b->src_end > ARENA_BYTES || b->recv_end > ARENA_BYTES ||
	    b->write_end > ARENA_BYTES)
		abort();
}
