// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory unmapped or moved after registration.  A NIC keeps the pinned
 * pages of an MR; ringnicd, which reaches memory by address, must instead
 * retire the MR, and never touch what the process mapped at that address
 * afterwards.  An RDMA WRITE into the memory that went, which a NIC
 * would write into the pinned pages where nobody sees it, goes nowhere and
 * succeeds; a UD send from there succeeds and its datagram is lost (as UD
 * allows); every other access through the MR fails.  Each case registers
 * a page between two canary pages, replaces or moves it, and checks the
 * verbs status and that the new page and the canaries kept their filler.
 *
 * That is with a userfaultfd (rn_test_have_uffd).  Without one, ringnicd checks
 * by address only, and every case here maps the range again: the access
 * succeeds and reaches the new page, which holds exactly what it wrote
 * (or gave what it held), and the canaries and the moved page keep their
 * filler.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include "e2e.h"

#define FILLER 0x5a
#define FRESH 0xa5 /* the page mapped after registration */
#define PAGE 4096

/* Three pages of filler; the MR covers the middle one. */
struct region {
	uint8_t *base;
	uint8_t *page; /* base + PAGE */
	struct ibv_mr *mr;
};

static int region_make(struct region *r, struct ibv_pd *pd)
{
	r->base = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(r->base != MAP_FAILED, "mmap: %s", strerror(errno));
	memset(r->base, FILLER, 3 * PAGE);
	r->page = r->base + PAGE;
	r->mr = e2e_reg(pd, r->page, PAGE, E2E_ACCESS_ALL);
	CHECK(r->mr, "ibv_reg_mr: %s", strerror(errno));
	return 0;
}

/* A fresh page of filler where the MR's page was. */
static int region_replace(struct region *r, bool by_munmap)
{
	void *p;

	if (by_munmap) {
		CHECK(!munmap(r->page, PAGE), "munmap: %s", strerror(errno));
		p = mmap(r->page, PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	} else {
		p = mmap(r->page, PAGE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	}
	CHECK(p == r->page, "mmap at %p: %s", (void *)r->page, strerror(errno));
	memset(p, FRESH, PAGE);
	return 0;
}

/* The MR's page moves elsewhere; a fresh page takes its place. */
static int region_move(struct region *r, void **moved)
{
	void *to = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(to != MAP_FAILED, "mmap: %s", strerror(errno));
	*moved = mremap(r->page, PAGE, PAGE, MREMAP_MAYMOVE | MREMAP_FIXED, to);
	CHECK(*moved == to, "mremap: %s", strerror(errno));
	CHECK(mmap(r->page, PAGE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
		   0) == r->page,
	      "mmap at the old place: %s", strerror(errno));
	memset(r->page, FRESH, PAGE);
	return 0;
}

/*
 * The canary pages hold their filler, the new page its own but for the len
 * bytes at off, which hold data (what an access without a userfaultfd
 * wrote there).
 */
static int region_holds(const struct region *r, size_t off, const uint8_t *data,
			size_t len, const char *what)
{
	size_t i;

	for (i = 0; i < 3 * PAGE; i++) {
		uint8_t want = i < PAGE || i >= 2 * PAGE ? FILLER : FRESH;

		if (i >= PAGE + off && i < PAGE + off + len)
			want = data[i - PAGE - off];
		CHECK(r->base[i] == want, "%s: byte %zu of 3 pages is %#04x, not %#04x",
		      what, i, r->base[i], want);
	}
	return 0;
}

static int region_untouched(const struct region *r, const char *what)
{
	return region_holds(r, 0, NULL, 0, what);
}

static int region_free(struct region *r)
{
	CHECK(!ibv_dereg_mr(r->mr), "ibv_dereg_mr of an unmapped MR failed");
	munmap(r->base, 3 * PAGE);
	return 0;
}

static struct ibv_send_wr one_wr(enum ibv_wr_opcode op, struct ibv_sge *sge,
				 uint64_t raddr, uint32_t rkey)
{
	return (struct ibv_send_wr){
		.wr_id = 1,
		.sg_list = sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	};
}

/*
 * ---- the remote side's MR goes: an RDMA WRITE succeeds and lands nowhere,
 * a READ gets REM_ACCESS_ERR (without a userfaultfd: both succeed, on the
 * page mapped anew)
 */

enum change { REPLACE_MUNMAP, REPLACE_FIXED, MOVE };

static int remote_req(struct e2e_proc *p, enum ibv_wr_opcode op)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct e2e_opts o;
	struct e2e_side s;
	uint64_t raddr, rkey;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	memset(s.buf, 0x11, o.buf_len);
	TRY(send_u64(p->peer, op)); /* what the responder finds written */
	TRY(recv_u64(p->peer, &raddr, E2E_WAIT_MS));
	TRY(recv_u64(p->peer, &rkey, E2E_WAIT_MS));
	TRY(e2e_sync(p, "changed"));
	sge = sge_of(&s, 0, 64);
	wr = one_wr(op, &sge, raddr + 64, (uint32_t)rkey);
	CHECK(!ibv_post_send(s.qp, &wr, &bad), "ibv_post_send failed");
	if (rn_test_have_uffd() && op == IBV_WR_RDMA_WRITE) {
		/* As into the pages a NIC keeps pinned. */
		TRY(expect_send_ok(&s, 1, IBV_WC_RDMA_WRITE, 64));
	} else if (rn_test_have_uffd()) {
		TRY(expect_err(scq_of(&s), 1, IBV_WC_REM_ACCESS_ERR, s.qp->qp_num,
			       "READ of a region its owner unmapped"));
		for (size_t i = 0; i < 64; i++)
			CHECK(s.buf[i] == 0x11, "READ brought back data (byte %zu)",
			      i);
	} else {
		TRY(expect_send_ok(&s, 1, op == IBV_WR_RDMA_READ ?
					       IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE,
				   64));
		for (size_t i = 0; i < 64 && op == IBV_WR_RDMA_READ; i++)
			CHECK(s.buf[i] == FRESH,
			      "READ of the page mapped anew: byte %zu is %#04x, not %#04x",
			      i, s.buf[i], FRESH);
	}
	TRY(e2e_sync(p, "checked"));
	return e2e_close(&s);
}

static int remote_resp(struct e2e_proc *p, enum change how)
{
	static const uint8_t written[64] = { [0 ... 63] = 0x11 };
	struct region r;
	struct e2e_opts o;
	struct e2e_side s;
	void *moved = NULL;
	uint64_t op;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(recv_u64(p->peer, &op, E2E_WAIT_MS));
	TRY(region_make(&r, s.pd));
	TRY(send_u64(p->peer, (uintptr_t)r.page));
	TRY(send_u64(p->peer, r.mr->rkey));
	if (how == MOVE)
		TRY(region_move(&r, &moved));
	else
		TRY(region_replace(&r, how == REPLACE_MUNMAP));
	TRY(e2e_sync(p, "changed"));
	if (rn_test_have_uffd() && op != IBV_WR_RDMA_WRITE)
		TRY(expect_async(s.ctx, s.qp, IBV_EVENT_QP_ACCESS_ERR,
				 E2E_WAIT_MS));
	TRY(e2e_sync(p, "checked"));
	if (rn_test_have_uffd() && op == IBV_WR_RDMA_WRITE)
		TRY(expect_qp_state(s.qp, IBV_QPS_RTS));
	if (rn_test_have_uffd() || op != IBV_WR_RDMA_WRITE)
		TRY(region_untouched(&r, "the page mapped after registration"));
	else /* the WRITE's 64 bytes of 0x11 at +64, nothing else */
		TRY(region_holds(&r, 64, written, sizeof(written),
				 "the page mapped after registration"));
	if (moved) {
		for (size_t i = 0; i < PAGE; i++)
			CHECK(((uint8_t *)moved)[i] == FILLER,
			      "the moved page was written (byte %zu)", i);
		munmap(moved, PAGE);
	}
	TRY(region_free(&r));
	return e2e_close(&s);
}

static int write_req(struct e2e_proc *p) { return remote_req(p, IBV_WR_RDMA_WRITE); }
static int read_req(struct e2e_proc *p) { return remote_req(p, IBV_WR_RDMA_READ); }
static int munmap_resp(struct e2e_proc *p) { return remote_resp(p, REPLACE_MUNMAP); }
static int fixed_resp(struct e2e_proc *p) { return remote_resp(p, REPLACE_FIXED); }
static int move_resp(struct e2e_proc *p) { return remote_resp(p, MOVE); }

/*
 * ---- the local side's MR goes: a SEND from it gets LOC_PROT_ERR --------
 * (without a userfaultfd: it sends the page mapped anew)
 */

static int send_req(struct e2e_proc *p)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct region r;
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(region_make(&r, s.pd));
	TRY(region_replace(&r, true));
	sge = (struct ibv_sge){ (uintptr_t)r.page, 64, r.mr->lkey };
	wr = one_wr(IBV_WR_SEND, &sge, 0, 0);
	CHECK(!ibv_post_send(s.qp, &wr, &bad), "ibv_post_send failed");
	if (rn_test_have_uffd())
		TRY(expect_err(scq_of(&s), 1, IBV_WC_LOC_PROT_ERR, s.qp->qp_num,
			       "a SEND from a region that was unmapped"));
	else
		TRY(expect_send_ok(&s, 1, IBV_WC_SEND, 64));
	TRY(e2e_sync(p, "sent"));
	TRY(region_untouched(&r, "the page mapped after registration"));
	TRY(region_free(&r));
	return e2e_close(&s);
}

static int send_resp(struct e2e_proc *p)
{
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(post_recv_buf(&s, 7, 0, 64));
	TRY(e2e_sync(p, "sent"));
	if (rn_test_have_uffd()) {
		TRY(expect_no_wc(rcq_of(&s), 50, "receive CQ: nothing was sent"));
		return e2e_close(&s);
	}
	TRY(expect_recv_ok(&s, 7, IBV_WC_RECV, 64, false, 0));
	for (size_t i = 0; i < 64; i++)
		CHECK(s.buf[i] == FRESH,
		      "SEND from the page mapped anew: byte %zu is %#04x, not %#04x",
		      i, s.buf[i], FRESH);
	return e2e_close(&s);
}

/*
 * ---- a UD send from an MR that went: the datagram is lost, the send
 * succeeds (without a userfaultfd: it sends the page mapped anew) --------
 */

#define GRH 40

static int ud_send_from_unmapped(struct e2e_proc *p)
{
	struct ibv_send_wr wr = { .wr_id = 3, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	struct ibv_sge sge;
	struct region r;
	struct e2e_opts o;
	struct e2e_side s;
	uint8_t fresh[64];

	e2e_default_opts(&o);
	o.qp_type = IBV_QPT_UD;
	TRY(e2e_open(&s, p, &o));
	memcpy(s.rem.gid, s.gid.raw, 16); /* to itself */
	s.rem.qpn = s.qp->qp_num;
	TRY(e2e_connect(&s));
	TRY(post_recv_buf(&s, 7, 0, GRH + 64));
	TRY(region_make(&r, s.pd));
	TRY(region_replace(&r, true));
	sge = (struct ibv_sge){ (uintptr_t)r.page, 64, r.mr->lkey };
	wr.sg_list = &sge;
	wr.wr.ud.ah = s.ah;
	wr.wr.ud.remote_qpn = s.qp->qp_num;
	wr.wr.ud.remote_qkey = E2E_QKEY;
	CHECK(!ibv_post_send(s.qp, &wr, &bad), "ibv_post_send failed");
	TRY(expect_send_ok(&s, 3, IBV_WC_SEND, 64));
	if (rn_test_have_uffd()) {
		TRY(expect_no_wc(rcq_of(&s), 50, "receive CQ: the datagram is lost"));
	} else {
		struct wc_want w = {
			.wr_id = 7,
			.status = IBV_WC_SUCCESS,
			.opcode = IBV_WC_RECV,
			.byte_len = GRH + 64,
			.qp_num = s.qp->qp_num,
			.recv = true,
			.src_qp = s.qp->qp_num,
			.flags = IBV_WC_GRH, /* a UD receive */
		};

		TRY(expect_wc(rcq_of(&s), &w, "receive completion"));
		memset(fresh, FRESH, sizeof(fresh));
		TRY(check_bytes(s.buf + GRH, fresh, sizeof(fresh),
				"datagram from the page mapped anew"));
	}
	TRY(expect_qp_state(s.qp, IBV_QPS_RTS));
	TRY(region_untouched(&r, "the page mapped after registration"));
	TRY(region_free(&r));
	return e2e_close(&s);
}

/*
 * ---- a receive into an MR that went: LOC_PROT_ERR on the receive ------
 * (without a userfaultfd: the message lands in the page mapped anew)
 */

#define SENT_SEED 0x33 /* the pattern the requester sends */

/* len: 64 (one packet) or PAGE (several packets on the wire). */
static int recv_req(struct e2e_proc *p, uint32_t len)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sge;
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	fill(s.buf, len, SENT_SEED);
	TRY(e2e_sync(p, "posted"));
	sge = sge_of(&s, 0, len);
	wr = one_wr(IBV_WR_SEND, &sge, 0, 0);
	CHECK(!ibv_post_send(s.qp, &wr, &bad), "ibv_post_send failed");
	if (rn_test_have_uffd())
		TRY(expect_err(scq_of(&s), 1, IBV_WC_REM_OP_ERR, s.qp->qp_num,
			       "a SEND into a receive buffer that was unmapped"));
	else
		TRY(expect_send_ok(&s, 1, IBV_WC_SEND, len));
	TRY(e2e_sync(p, "checked"));
	return e2e_close(&s);
}

static int recv_resp(struct e2e_proc *p, uint32_t len)
{
	struct ibv_recv_wr wr = { .wr_id = 9, .num_sge = 1 }, *bad;
	uint8_t sent[PAGE];
	struct ibv_sge sge;
	struct region r;
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(region_make(&r, s.pd));
	sge = (struct ibv_sge){ (uintptr_t)r.page, len, r.mr->lkey };
	wr.sg_list = &sge;
	CHECK(!ibv_post_recv(s.qp, &wr, &bad), "ibv_post_recv failed");
	TRY(region_replace(&r, false));
	TRY(e2e_sync(p, "posted"));
	if (rn_test_have_uffd()) {
		TRY(expect_err(rcq_of(&s), 9, IBV_WC_LOC_PROT_ERR, s.qp->qp_num,
			       "the receive into the unmapped region"));
		TRY(e2e_sync(p, "checked"));
		TRY(region_untouched(&r, "the page mapped after registration"));
	} else {
		TRY(expect_recv_ok(&s, 9, IBV_WC_RECV, len, false, 0));
		TRY(e2e_sync(p, "checked"));
		fill(sent, len, SENT_SEED);
		TRY(region_holds(&r, 0, sent, len,
				 "the page mapped after registration"));
	}
	TRY(region_free(&r));
	return e2e_close(&s);
}

static int recv_req_64(struct e2e_proc *p) { return recv_req(p, 64); }
static int recv_resp_64(struct e2e_proc *p) { return recv_resp(p, 64); }
static int recv_req_page(struct e2e_proc *p) { return recv_req(p, PAGE); }
static int recv_resp_page(struct e2e_proc *p) { return recv_resp(p, PAGE); }

#define PAIR(n, req, resp)                                                     \
	{ .group = "unmapped", .name = n, .nroles = 2, .role = { req, resp } }

const struct e2e_test e2e_unmap_tests[] = {
	PAIR("write_after_munmap", write_req, munmap_resp),
	PAIR("write_after_map_fixed", write_req, fixed_resp),
	PAIR("write_after_mremap", write_req, move_resp),
	PAIR("read_after_munmap", read_req, munmap_resp),
	PAIR("read_after_mremap", read_req, move_resp),
	PAIR("send_from_unmapped", send_req, send_resp),
	{ .group = "unmapped", .name = "ud_send_from_unmapped", .nroles = 1,
	  .role = { ud_send_from_unmapped }, .one_device = true },
	PAIR("recv_into_unmapped", recv_req_64, recv_resp_64),
	PAIR("recv_page_into_unmapped", recv_req_page, recv_resp_page),
	{ 0 },
};
