// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory registration beyond the plain MR:
 *  - on-demand paging (group "odp"): the capabilities, an ODP MR over
 *    memory not yet mapped, implicit ODP (the whole address space),
 *    memory unmapped at the time of an access (a protection error, and the
 *    device goes on), ibv_advise_mr;
 *  - ibv_rereg_mr (group "rereg"): new translation, PD and rights, apart
 *    and together, each followed by what local and remote accesses may do
 *    now; the keys stay.  An MR with a bound window stays as it is.
 *
 * The responder owns the memory in question; the requester reaches it by
 * RDMA.  An access that fails puts both QPs in ERR (a local one only the
 * poster's); tests that go on take the QPs back to RTS (e2e_recover).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "e2e.h"

#define FILLER 0xee
#define PAGE 4096
#define LOCAL_OFF 65536 /* requester: source of WRITEs, target of READs */
#define RESULT_OFF 61440 /* requester: an atomic's result */
#define RECV_OFF 131072 /* receive buffers */
#define ADD 0x300000005ull

static uint64_t get_u64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static struct ibv_mr *reg_mr_at(struct ibv_pd *pd, void *addr, size_t len,
				unsigned int access)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, addr, len, access);

	if (!mr)
		FAIL("ibv_reg_mr(%p, %zu, %#x): %s", addr, len, access,
		     strerror(errno));
	return mr;
}

/*
 * Fresh pages, far below where the kernel places mappings (top-down from
 * near the top of the address space): a hole a test punches in them stays
 * a hole, whatever the process maps meanwhile (a recovered QP's rings,
 * ASan's allocator), until the test maps it again.
 */
static uint8_t *map_pages(size_t len)
{
	static uintptr_t next = 0x3f0000000000;
	unsigned int tries;

	for (tries = 0; tries < 64; tries++) {
		void *want = (void *)next;
		void *p = mmap(want, len, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			       -1, 0);

		/* Regions a megabyte apart: holes never touch a neighbour. */
		next += (len + (2 << 20)) & ~(uintptr_t)((1 << 20) - 1);
		if (p == want)
			return p;
		if (p != MAP_FAILED)
			munmap(p, len); /* a kernel that took it as a hint */
		else if (errno != EEXIST)
			break;
	}
	FAIL("mmap(%zu) far from other mappings: %s", len, strerror(errno));
	return NULL;
}

/* Map (again) exactly at addr, where nothing is mapped. */
static int map_at(void *addr, size_t len)
{
	void *p = mmap(addr, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	CHECK(p == addr, "mmap at %p: %s", addr, p == MAP_FAILED ?
						 strerror(errno) : "elsewhere");
	return 0;
}

static enum ibv_wc_opcode wc_opcode_of(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return IBV_WC_SEND;
	}
}

/*
 * One RDMA access of the requester from qp, to raddr through rkey, with
 * the local buffer sge (memory of this process at its address),
 * completing with want.  A WRITE carries pattern wr_id; a READ's target
 * holds filler before (the caller checks what came); a FETCH_AND_ADD
 * adds ADD.  What failed brought nothing back.
 */
static int rdma_sge(struct e2e_side *s, struct ibv_qp *qp, uint64_t wr_id,
		    enum ibv_wr_opcode op, struct ibv_sge sge, uint64_t raddr,
		    uint32_t rkey, enum ibv_wc_status want)
{
	bool atomic = op == IBV_WR_ATOMIC_FETCH_AND_ADD;
	uint8_t *local = (uint8_t *)(uintptr_t)sge.addr;
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct wc_want w = {
		.wr_id = wr_id,
		.status = want,
		.opcode = wc_opcode_of(op),
		.byte_len = sge.length,
		.qp_num = qp->qp_num,
		.flush = want != IBV_WC_SUCCESS,
	};
	char what[96];
	uint32_t i;

	if (atomic) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = ADD;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	snprintf(what, sizeof(what), "wr %#llx: opcode %d of %u bytes at %#llx, rkey %#x",
		 (unsigned long long)wr_id, op, sge.length,
		 (unsigned long long)raddr, rkey);
	TRY(post_send1(qp, &wr));
	TRY(expect_wc(scq_of(s), &w, what));
	if (want == IBV_WC_SUCCESS || op == IBV_WR_RDMA_WRITE)
		return 0;
	for (i = 0; i < sge.length; i++)
		CHECK(local[i] == FILLER, "%s: failed, but byte %u came back",
		      what, i);
	return 0;
}

/* The same from s->buf: data at LOCAL_OFF, an atomic's result at RESULT_OFF. */
static int rdma(struct e2e_side *s, struct ibv_qp *qp, uint64_t wr_id,
		enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
		uint32_t len, enum ibv_wc_status want)
{
	bool atomic = op == IBV_WR_ATOMIC_FETCH_AND_ADD;
	struct ibv_sge sge = sge_of(s, atomic ? RESULT_OFF : LOCAL_OFF,
				    atomic ? 8 : len);

	if (op == IBV_WR_RDMA_WRITE)
		fill(s->buf + LOCAL_OFF, len, (uint32_t)wr_id);
	else
		memset(s->buf + sge.addr - s->base, FILLER, sge.length);
	return rdma_sge(s, qp, wr_id, op, sge, raddr, rkey, want);
}

/* A READ's data at LOCAL_OFF is bytes [off, off + len) of pattern seed. */
static int check_read(struct e2e_side *s, uint32_t seed, size_t off, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		CHECK(s->buf[LOCAL_OFF + i] == pat(seed, off + i),
		      "READ byte %zu of %zu is %#04x, expected %#04x", i, len,
		      s->buf[LOCAL_OFF + i], pat(seed, off + i));
	return 0;
}

/* A signaled SEND of len bytes from addr (lkey) on qp, completing with want. */
static int send_from(struct e2e_side *s, struct ibv_qp *qp, uint64_t wr_id,
		     uint64_t addr, uint32_t len, uint32_t lkey,
		     enum ibv_wc_status want)
{
	struct ibv_sge sge = { addr, len, lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct wc_want w = {
		.wr_id = wr_id,
		.status = want,
		.opcode = IBV_WC_SEND,
		.byte_len = len,
		.qp_num = qp->qp_num,
		.flush = want != IBV_WC_SUCCESS,
	};

	TRY(post_send1(qp, &wr));
	return expect_wc(scq_of(s), &w, "SEND");
}

/* The receive wr_id of qp got len bytes of pattern seed from off. */
static int expect_recv_data(struct e2e_side *s, struct ibv_qp *qp,
			    uint32_t src_qp, uint64_t wr_id, const uint8_t *buf,
			    uint32_t seed, size_t off, uint32_t len)
{
	struct wc_want w = {
		.wr_id = wr_id,
		.status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV,
		.byte_len = len,
		.qp_num = qp->qp_num,
		.recv = true,
		.src_qp = src_qp,
	};
	uint32_t i;

	TRY(expect_wc(rcq_of(s), &w, "receive"));
	for (i = 0; i < len; i++)
		CHECK(buf[i] == pat(seed, off + i),
		      "received byte %u of %u is %#04x, expected %#04x", i, len,
		      buf[i], pat(seed, off + i));
	return 0;
}

static int post_recv_qp(struct ibv_qp *qp, uint64_t wr_id, void *addr,
			uint32_t len, uint32_t lkey)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };

	return post_recv1(qp, wr_id, &sge, 1);
}

/* ===================================================================== odp */

#define ODP_RELIABLE                                                           \
	(IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |  \
	 IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC)

/*
 * ringnicd pins nothing: every MR is paged on demand, and an implicit MR
 * covers everything.  RC and XRC take every operation, UC what UC has
 * (SEND, RECV, WRITE), UD SEND and RECV.
 */
static int odp_caps(struct e2e_proc *p)
{
	struct ibv_device_attr_ex a;
	struct ibv_context *ctx;
	int ret;

	(void)p;
	TRY(e2e_open_device(&ctx));
	memset(&a, 0xa5, sizeof(a));
	ret = ibv_query_device_ex(ctx, NULL, &a);
	CHECK(!ret, "ibv_query_device_ex: %s", strerror(ret));
	CHECK(a.odp_caps.general_caps ==
		      (IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT),
	      "odp general_caps %#llx, expected SUPPORT|SUPPORT_IMPLICIT (%#x)",
	      (unsigned long long)a.odp_caps.general_caps,
	      IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT);
	CHECK(a.odp_caps.per_transport_caps.rc_odp_caps == ODP_RELIABLE,
	      "rc_odp_caps %#x, expected %#x",
	      a.odp_caps.per_transport_caps.rc_odp_caps, ODP_RELIABLE);
	CHECK(a.odp_caps.per_transport_caps.uc_odp_caps ==
		      (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		       IBV_ODP_SUPPORT_WRITE),
	      "uc_odp_caps %#x, expected SEND|RECV|WRITE",
	      a.odp_caps.per_transport_caps.uc_odp_caps);
	CHECK(a.odp_caps.per_transport_caps.ud_odp_caps ==
		      (IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV),
	      "ud_odp_caps %#x, expected SEND|RECV",
	      a.odp_caps.per_transport_caps.ud_odp_caps);
	CHECK(a.xrc_odp_caps == ODP_RELIABLE, "xrc_odp_caps %#x, expected %#x",
	      a.xrc_odp_caps, ODP_RELIABLE);
	ret = ibv_close_device(ctx);
	CHECK(!ret, "ibv_close_device: %s", strerror(ret));
	return 0;
}

/* ---- an ODP MR over memory mapped later, and unmapped again ------------- */

#define HOLE_PAGES 4
#define HOLE_SEED 21

struct hole_info {
	uint64_t addr;
	uint32_t rkey;
	uint32_t pad;
};

/*
 * The responder registers an ODP MR over four pages where nothing is
 * mapped (a plain MR there fails with EFAULT).  Accessed before the
 * pages are mapped, it is a protection error; once they are, remote
 * WRITE and READ and local SEND and receive work; a page unmapped again
 * fails again (REM_ACCESS_ERR remotely, LOC_PROT_ERR locally), and the
 * device goes on serving, that page too once it is mapped once more.
 */
static int odp_hole_req(struct e2e_proc *p)
{
	struct hole_info h;
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t qpn;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qpn = s.rem.qpn;
	TRY(msg_recv(p->peer, &h, sizeof(h), E2E_WAIT_MS));
	/* Nothing mapped yet. */
	TRY(rdma(&s, s.qp, 1, IBV_WR_RDMA_WRITE, h.addr + 100, h.rkey, 64,
		 IBV_WC_REM_ACCESS_ERR));
	TRY(e2e_recover(&s, s.qp, qpn));
	TRY(e2e_sync(p, "mapped"));
	TRY(rdma(&s, s.qp, 2, IBV_WR_RDMA_WRITE, h.addr + 100, h.rkey, 5000,
		 IBV_WC_SUCCESS));
	TRY(rdma(&s, s.qp, 3, IBV_WR_RDMA_READ, h.addr + 2 * PAGE - 10, h.rkey,
		 PAGE + 20, IBV_WC_SUCCESS));
	TRY(check_read(&s, HOLE_SEED, 2 * PAGE - 10, PAGE + 20));
	TRY(rdma(&s, s.qp, 4, IBV_WR_ATOMIC_FETCH_AND_ADD, h.addr + 3 * PAGE + 2048,
		 h.rkey, 8, IBV_WC_SUCCESS));
	CHECK(get_u64(s.buf + RESULT_OFF) == 0,
	      "FETCH_AND_ADD returned %#llx, expected 0",
	      (unsigned long long)get_u64(s.buf + RESULT_OFF));
	/* The responder SENDs from its ODP MR, and receives into it. */
	TRY(post_recv_buf(&s, 5, RECV_OFF, PAGE));
	TRY(e2e_sync(p, "recv posted"));
	TRY(expect_recv_data(&s, s.qp, qpn, 5, s.buf + RECV_OFF, HOLE_SEED,
			     3 * PAGE + 100, 700));
	fill(s.buf + LOCAL_OFF, 300, 6);
	TRY(send_from(&s, s.qp, 6, s.base + LOCAL_OFF, 300, s.mr->lkey,
		      IBV_WC_SUCCESS));
	/* The third page is unmapped again. */
	TRY(e2e_sync(p, "unmapped"));
	TRY(rdma(&s, s.qp, 7, IBV_WR_RDMA_READ, h.addr + 2 * PAGE + 64, h.rkey,
		 64, IBV_WC_REM_ACCESS_ERR));
	TRY(e2e_recover(&s, s.qp, qpn));
	TRY(rdma(&s, s.qp, 8, IBV_WR_RDMA_WRITE, h.addr + 2 * PAGE + 100, h.rkey,
		 16, IBV_WC_REM_ACCESS_ERR));
	TRY(e2e_recover(&s, s.qp, qpn));
	/* The device goes on: the pages still mapped, and the one mapped again. */
	TRY(e2e_sync(p, "local error seen"));
	TRY(rdma(&s, s.qp, 9, IBV_WR_RDMA_READ, h.addr + PAGE + 2000, h.rkey, 64,
		 IBV_WC_SUCCESS));
	TRY(check_read(&s, HOLE_SEED, PAGE + 2000, 64));
	TRY(e2e_sync(p, "mapped again"));
	TRY(rdma(&s, s.qp, 10, IBV_WR_RDMA_WRITE, h.addr + 2 * PAGE + 64, h.rkey,
		 64, IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int odp_hole_resp(struct e2e_proc *p)
{
	const size_t len = HOLE_PAGES * PAGE;
	uint8_t *hole, *want;
	struct hole_info h;
	struct ibv_sge sge;
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mr *mr;
	uint32_t qpn;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qpn = s.rem.qpn;
	hole = map_pages(len);
	TRY(!hole);
	CHECK(!munmap(hole, len), "munmap: %s", strerror(errno));
	want = malloc(len);
	CHECK(want, "out of memory");
	mr = ibv_reg_mr(s.pd, hole, len, E2E_ACCESS_ALL);
	CHECK(!mr && errno == EFAULT,
	      "a plain MR over unmapped memory: %s, expected EFAULT",
	      mr ? "registered" : strerror(errno));
	mr = reg_mr_at(s.pd, hole, len, E2E_ACCESS_ALL | IBV_ACCESS_ON_DEMAND);
	TRY(!mr);
	h = (struct hole_info){ (uintptr_t)hole, mr->rkey, 0 };
	TRY(msg_send(p->peer, &h, sizeof(h)));
	TRY(expect_async(s.ctx, s.qp, IBV_EVENT_QP_ACCESS_ERR, E2E_WAIT_MS));
	TRY(e2e_recover(&s, s.qp, qpn));

	TRY(map_at(hole, len));
	fill(hole, len, HOLE_SEED);
	memset(hole + 3 * PAGE + 2048, 0, 8);
	memcpy(want, hole, len);
	TRY(post_recv_qp(s.qp, 0x15, hole + PAGE + 500, 300, mr->lkey));
	TRY(e2e_sync(p, "mapped"));
	TRY(e2e_sync(p, "recv posted"));
	TRY(send_from(&s, s.qp, 0x16, (uintptr_t)hole + 3 * PAGE + 100, 700,
		      mr->lkey, IBV_WC_SUCCESS));
	TRY(expect_recv_data(&s, s.qp, qpn, 0x15, hole + PAGE + 500, 6, 0, 300));
	fill(want + 100, 5000, 2);
	memcpy(want + 3 * PAGE + 2048, &(uint64_t){ ADD }, 8);
	fill(want + PAGE + 500, 300, 6);
	TRY(check_bytes(hole, want, len, "the ODP pages"));

	CHECK(!munmap(hole + 2 * PAGE, PAGE), "munmap: %s", strerror(errno));
	TRY(e2e_sync(p, "unmapped"));
	TRY(expect_async(s.ctx, s.qp, IBV_EVENT_QP_ACCESS_ERR, E2E_WAIT_MS));
	TRY(e2e_recover(&s, s.qp, qpn));
	TRY(expect_async(s.ctx, s.qp, IBV_EVENT_QP_ACCESS_ERR, E2E_WAIT_MS));
	TRY(e2e_recover(&s, s.qp, qpn));
	/* The pages around the hole kept what they had. */
	TRY(check_bytes(hole, want, 2 * PAGE, "the pages before the unmapped one"));
	TRY(check_bytes(hole + 3 * PAGE, want + 3 * PAGE, PAGE,
			"the page after the unmapped one"));
	/* A WRITE from the unmapped page: a local protection error, ours only. */
	sge = (struct ibv_sge){ (uintptr_t)hole + 2 * PAGE + 10, 10, mr->lkey };
	TRY(rdma_sge(&s, s.qp, 0x17, IBV_WR_RDMA_WRITE, sge, s.rem.addr + 1000,
		     s.rem.rkey, IBV_WC_LOC_PROT_ERR));
	TRY(expect_qp_state(s.qp, IBV_QPS_ERR));
	TRY(e2e_reset_qp(&s, s.qp, qpn));
	TRY(e2e_sync(p, "local error seen"));
	TRY(map_at(hole + 2 * PAGE, PAGE));
	memset(hole + 2 * PAGE, FILLER, PAGE);
	memset(want + 2 * PAGE, FILLER, PAGE);
	TRY(e2e_sync(p, "mapped again"));
	TRY(e2e_sync(p, "end"));
	fill(want + 2 * PAGE + 64, 64, 10);
	TRY(check_bytes(hole, want, len, "the ODP pages"));
	CHECK(!ibv_dereg_mr(mr), "ibv_dereg_mr failed");
	munmap(hole, len);
	free(want);
	return e2e_close(&s);
}

/* ---- implicit ODP: the whole address space ------------------------------- */

#define N_PLACES 4
#define PLACE_LEN 2048
#define PLACE_SEED(i) (0x60 + (i))

static const char *const place_names[N_PLACES] = { "heap", "static", "stack",
						   "mmap" };

/* Where the responder's data is: nothing of it registered but implicitly. */
struct places {
	uint64_t addr[N_PLACES];
	uint64_t ro; /* a read-only page */
	uint64_t gone; /* a page no longer mapped */
	uint32_t rkey;
	uint32_t pad;
};

static uint8_t implicit_static[PLACE_LEN] __attribute__((aligned(64)));

static struct ibv_mr *reg_implicit(struct ibv_pd *pd)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, NULL, SIZE_MAX,
				       IBV_ACCESS_ON_DEMAND | E2E_ACCESS_ALL);

	if (!mr)
		FAIL("implicit ODP ibv_reg_mr(NULL, SIZE_MAX): %s", strerror(errno));
	else if (mr->addr || mr->length != SIZE_MAX)
		FAIL("implicit ODP MR: addr %p length %#zx", mr->addr, mr->length);
	else
		return mr;
	return NULL;
}

/* An address of ours where nothing is mapped. */
static uint8_t *unmapped_page(void)
{
	uint8_t *p = map_pages(PAGE);

	if (p && munmap(p, PAGE)) {
		FAIL("munmap: %s", strerror(errno));
		return NULL;
	}
	return p;
}

/*
 * An implicit ODP MR serves local SGEs and remote WRITE, READ and atomics
 * at any address of the process: heap, static data, stack, a mapping.
 * A page not mapped, or mapped read-only for a WRITE, is a protection
 * error (REM_ACCESS_ERR remotely, LOC_PROT_ERR locally) and the device
 * goes on.  Both sides use only implicit MRs for the data.
 */
static int implicit_req(struct e2e_proc *p)
{
	struct ibv_mr *imr;
	struct places pl;
	struct ibv_sge sge;
	struct e2e_opts o;
	struct e2e_side s;
	uint8_t *loc, *gone, image[PLACE_LEN];
	uint32_t qpn;
	int i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qpn = s.rem.qpn;
	imr = reg_implicit(s.pd);
	TRY(!imr);
	loc = malloc(8192);
	CHECK(loc, "out of memory");
	gone = unmapped_page();
	TRY(!gone);
	TRY(msg_recv(p->peer, &pl, sizeof(pl), E2E_WAIT_MS));
	for (i = 0; i < N_PLACES; i++) {
		fill(loc, 200, 0x50 + i);
		TRY(rdma_sge(&s, s.qp, 0x50 + i, IBV_WR_RDMA_WRITE,
			     (struct ibv_sge){ (uintptr_t)loc, 200, imr->lkey },
			     pl.addr[i] + 16, pl.rkey, IBV_WC_SUCCESS));
		memset(loc + 4096, FILLER, 300);
		sge = (struct ibv_sge){ (uintptr_t)loc + 4096, 300, imr->lkey };
		TRY(rdma_sge(&s, s.qp, 0x58 + i, IBV_WR_RDMA_READ, sge,
			     pl.addr[i] + 1000, pl.rkey, IBV_WC_SUCCESS));
		fill(image, PLACE_LEN, PLACE_SEED(i));
		TRY(check_bytes(loc + 4096, image + 1000, 300, place_names[i]));
	}
	memset(loc + 6000, FILLER, 8);
	TRY(rdma_sge(&s, s.qp, 0x5c, IBV_WR_ATOMIC_FETCH_AND_ADD,
		     (struct ibv_sge){ (uintptr_t)loc + 6000, 8, imr->lkey },
		     pl.addr[1] + 1536, pl.rkey, IBV_WC_SUCCESS));
	fill(image, PLACE_LEN, PLACE_SEED(1));
	CHECK(get_u64(loc + 6000) == get_u64(image + 1536),
	      "FETCH_AND_ADD returned %#llx, expected %#llx",
	      (unsigned long long)get_u64(loc + 6000),
	      (unsigned long long)get_u64(image + 1536));

	/* Remote: a read-only page, a page not mapped. */
	TRY(rdma_sge(&s, s.qp, 0x5d, IBV_WR_RDMA_WRITE,
		     (struct ibv_sge){ (uintptr_t)loc, 64, imr->lkey }, pl.ro + 64,
		     pl.rkey, IBV_WC_REM_ACCESS_ERR));
	TRY(e2e_recover(&s, s.qp, qpn));
	memset(loc + 4096, FILLER, 64);
	TRY(rdma_sge(&s, s.qp, 0x5e, IBV_WR_RDMA_READ,
		     (struct ibv_sge){ (uintptr_t)loc + 4096, 64, imr->lkey },
		     pl.gone + 64, pl.rkey, IBV_WC_REM_ACCESS_ERR));
	TRY(e2e_recover(&s, s.qp, qpn));
	/* Local: a WRITE from a page of ours not mapped. */
	TRY(rdma_sge(&s, s.qp, 0x5f, IBV_WR_RDMA_WRITE,
		     (struct ibv_sge){ (uintptr_t)gone, 64, imr->lkey },
		     pl.addr[3] + 1800, pl.rkey, IBV_WC_LOC_PROT_ERR));
	TRY(expect_qp_state(s.qp, IBV_QPS_ERR));
	/* Both ends start again, so that their PSNs agree on a wire. */
	TRY(e2e_reset_qp(&s, s.qp, qpn));
	TRY(e2e_sync(p, "local error reset"));

	/* SEND and receive with implicit lkeys. */
	memset(loc + 2048, FILLER, 1024);
	TRY(post_recv_qp(s.qp, 0x60, loc + 2048, 1024, imr->lkey));
	TRY(e2e_sync(p, "recv posted"));
	TRY(expect_recv_data(&s, s.qp, qpn, 0x60, loc + 2048, PLACE_SEED(2), 1500,
			     500));
	fill(loc, 100, 0x61);
	TRY(send_from(&s, s.qp, 0x61, (uintptr_t)loc, 100, imr->lkey,
		      IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "sent"));
	TRY(e2e_sync(p, "local error seen"));
	TRY(e2e_reset_qp(&s, s.qp, qpn));
	TRY(e2e_sync(p, "reset again"));
	fill(loc, 32, 0x62);
	TRY(rdma_sge(&s, s.qp, 0x62, IBV_WR_RDMA_WRITE,
		     (struct ibv_sge){ (uintptr_t)loc, 32, imr->lkey },
		     pl.addr[3] + 1800, pl.rkey, IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "end"));
	CHECK(!ibv_dereg_mr(imr), "ibv_dereg_mr of the implicit MR failed");
	free(loc);
	return e2e_close(&s);
}

static int implicit_resp(struct e2e_proc *p)
{
	uint8_t stack_buf[PLACE_LEN] __attribute__((aligned(64)));
	uint8_t *place[N_PLACES], *heap, *mapped, *ro, *gone;
	uint8_t want[N_PLACES][PLACE_LEN];
	struct ibv_mr *imr;
	struct places pl;
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t qpn;
	int i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qpn = s.rem.qpn;
	imr = reg_implicit(s.pd);
	TRY(!imr);
	heap = malloc(10007);
	CHECK(heap, "out of memory");
	mapped = map_pages(2 * PAGE);
	TRY(!mapped);
	ro = mmap(NULL, PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(ro != MAP_FAILED, "mmap: %s", strerror(errno));
	gone = unmapped_page();
	TRY(!gone);
	/* Odd places: 3 bytes into the heap block, across a page boundary. */
	place[0] = heap + 3;
	place[1] = implicit_static;
	place[2] = stack_buf;
	place[3] = mapped + PAGE - 1000;
	for (i = 0; i < N_PLACES; i++) {
		fill(place[i], PLACE_LEN, PLACE_SEED(i));
		memcpy(want[i], place[i], PLACE_LEN);
		fill(want[i] + 16, 200, 0x50 + i);
		pl.addr[i] = (uintptr_t)place[i];
	}
	pl.ro = (uintptr_t)ro;
	pl.gone = (uintptr_t)gone;
	pl.rkey = imr->rkey;
	TRY(msg_send(p->peer, &pl, sizeof(pl)));
	for (i = 0; i < 2; i++) {
		TRY(expect_async(s.ctx, s.qp, IBV_EVENT_QP_ACCESS_ERR,
				 E2E_WAIT_MS));
		TRY(e2e_recover(&s, s.qp, qpn));
	}
	/* The requester's local error: both ends start again. */
	TRY(e2e_sync(p, "local error reset"));
	TRY(e2e_reset_qp(&s, s.qp, qpn));
	TRY(post_recv_qp(s.qp, 0x70, heap + 5000, 1000, imr->lkey));
	TRY(e2e_sync(p, "recv posted"));
	TRY(send_from(&s, s.qp, 0x71, (uintptr_t)stack_buf + 1500, 500, imr->lkey,
		      IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "sent"));
	TRY(expect_recv_data(&s, s.qp, qpn, 0x70, heap + 5000, 0x61, 0, 100));
	/* A WRITE from a page of ours not mapped: our local error only. */
	TRY(rdma_sge(&s, s.qp, 0x72, IBV_WR_RDMA_WRITE,
		     (struct ibv_sge){ (uintptr_t)gone + 8, 64, imr->lkey },
		     s.rem.addr + 1000, s.rem.rkey, IBV_WC_LOC_PROT_ERR));
	TRY(expect_qp_state(s.qp, IBV_QPS_ERR));
	TRY(e2e_reset_qp(&s, s.qp, qpn));
	TRY(e2e_sync(p, "local error seen"));
	TRY(e2e_sync(p, "reset again"));
	TRY(e2e_sync(p, "end"));
	{
		uint64_t v;

		memcpy(&v, want[1] + 1536, 8);
		v += ADD;
		memcpy(want[1] + 1536, &v, 8);
	}
	fill(want[3] + 1800, 32, 0x62);
	for (i = 0; i < N_PLACES; i++)
		TRY(check_bytes(place[i], want[i], PLACE_LEN, place_names[i]));
	for (i = 0; i < PAGE; i++)
		CHECK(!ro[i], "the read-only page was written (byte %d)", i);
	CHECK(!ibv_dereg_mr(imr), "ibv_dereg_mr of the implicit MR failed");
	free(heap);
	munmap(mapped, 2 * PAGE);
	munmap(ro, PAGE);
	return e2e_close(&s);
}

/* ---- ibv_advise_mr ------------------------------------------------------- */

#define ADV_PAGES 16

/* Which of the n pages from addr are resident; a bit each. */
static int resident(uint8_t *addr, unsigned int n, uint32_t *bits)
{
	unsigned char vec[ADV_PAGES];
	unsigned int i;

	CHECK(!mincore(addr, (size_t)n * PAGE, vec), "mincore: %s", strerror(errno));
	*bits = 0;
	for (i = 0; i < n; i++)
		*bits |= (uint32_t)(vec[i] & 1) << i;
	return 0;
}

static int advise(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		  uint32_t flags, uint32_t lkey, void *addr, uint32_t len, int want,
		  const char *what)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	int ret = ibv_advise_mr(pd, advice, flags, &sge, 1);

	CHECK(ret == want, "ibv_advise_mr %s: %d (%s), expected %d (%s)", what, ret,
	      strerror(ret), want, strerror(want));
	return 0;
}

/*
 * PREFETCH and PREFETCH_WRITE with IBV_ADVISE_MR_FLAG_FLUSH fault the
 * pages in before they return (mincore shows them resident, and only
 * them), through an ODP MR or an implicit one; PREFETCH_NO_FAULT
 * succeeds; an lkey that names no MR, a non-ODP MR, an MR of another PD
 * or a range outside the MR is EINVAL; an unknown advice or flag
 * EOPNOTSUPP.
 */
static int odp_advise(struct e2e_proc *p)
{
	struct ibv_mr *odp, *plain, *implicit;
	struct ibv_context *ctx;
	struct ibv_pd *pd, *other;
	uint8_t *mem, *buf;
	uint32_t bits;
	int ret;

	(void)p;
	TRY(e2e_open_device(&ctx));
	pd = ibv_alloc_pd(ctx);
	other = ibv_alloc_pd(ctx);
	CHECK(pd && other, "ibv_alloc_pd: %s", strerror(errno));
	mem = map_pages(ADV_PAGES * PAGE);
	TRY(!mem);
	buf = map_pages(PAGE);
	TRY(!buf);
	odp = reg_mr_at(pd, mem, ADV_PAGES * PAGE,
			IBV_ACCESS_ON_DEMAND | IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_READ);
	TRY(!odp);
	plain = reg_mr_at(pd, buf, PAGE, IBV_ACCESS_LOCAL_WRITE);
	TRY(!plain);
	TRY(resident(mem, ADV_PAGES, &bits));
	CHECK(!bits, "pages never touched are resident: %#x", bits);

	TRY(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH,
		   odp->lkey, mem + 100, 3 * PAGE, 0, "PREFETCH of pages 0-3"));
	TRY(resident(mem, ADV_PAGES, &bits));
	CHECK(bits == 0xf, "after PREFETCH of pages 0-3 the resident pages are %#x",
	      bits);
	TRY(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
		   IBV_ADVISE_MR_FLAG_FLUSH, odp->lkey, mem + 5 * PAGE, 2 * PAGE, 0,
		   "PREFETCH_WRITE of pages 5-6"));
	TRY(resident(mem, ADV_PAGES, &bits));
	CHECK(bits == 0x6f, "after PREFETCH_WRITE of pages 5-6 the resident pages are %#x",
	      bits);
	TRY(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, 0, odp->lkey,
		   mem + 8 * PAGE, 4 * PAGE, 0, "PREFETCH_NO_FAULT"));
	TRY(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, odp->lkey, mem + 12 * PAGE,
		   PAGE, 0, "PREFETCH without FLUSH"));
	/* An implicit ODP MR names the pages by their addresses. */
	implicit = reg_implicit(pd);
	TRY(!implicit);
	TRY(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
		   IBV_ADVISE_MR_FLAG_FLUSH, implicit->lkey, mem + 14 * PAGE,
		   PAGE, 0, "PREFETCH_WRITE through an implicit MR"));
	TRY(resident(mem, ADV_PAGES, &bits));
	CHECK(bits & (1u << 14), "after PREFETCH_WRITE of page 14 the resident pages are %#x",
	      bits);
	CHECK(!ibv_dereg_mr(implicit), "ibv_dereg_mr failed");

	TRY(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH,
		   odp->lkey ^ 0x100, mem, PAGE, EINVAL, "with an lkey of no MR"));
	TRY(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH,
		   plain->lkey, buf, PAGE, EINVAL, "of a non-ODP MR"));
	TRY(advise(other, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH,
		   odp->lkey, mem, PAGE, EINVAL, "through another PD"));
	TRY(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH,
		   odp->lkey, mem + (ADV_PAGES - 1) * PAGE, PAGE + 1, EINVAL,
		   "past the MR's end"));
	TRY(advise(pd, (enum ibv_advise_mr_advice)42, IBV_ADVISE_MR_FLAG_FLUSH,
		   odp->lkey, mem, PAGE, EOPNOTSUPP, "with an unknown advice"));
	TRY(advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 1u << 5, odp->lkey, mem,
		   PAGE, EOPNOTSUPP, "with an unknown flag"));
	ret = ibv_advise_mr(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, NULL, 0);
	CHECK(ret == EINVAL, "ibv_advise_mr with no SGE: %d (%s), expected EINVAL",
	      ret, strerror(ret));
	TRY(resident(mem, ADV_PAGES, &bits));
	CHECK(!(bits & ~0x506fu), "pages nobody asked to fault in are resident: %#x",
	      bits);

	CHECK(!ibv_dereg_mr(odp) && !ibv_dereg_mr(plain), "ibv_dereg_mr failed");
	CHECK(!ibv_dealloc_pd(pd) && !ibv_dealloc_pd(other), "ibv_dealloc_pd failed");
	munmap(mem, ADV_PAGES * PAGE);
	munmap(buf, PAGE);
	ret = ibv_close_device(ctx);
	CHECK(!ret, "ibv_close_device: %s", strerror(ret));
	return 0;
}

/* =================================================================== rereg */

#define REG_LEN (16 * PAGE)
#define SEED_A 41
#define SEED_B 42

/* The responder's two regions, A and B, and the images they must match. */
struct regions {
	uint8_t *a, *b;
	uint8_t *want_a, *want_b;
};

/* Where they are, as the responder tells the requester. */
struct rereg_info {
	uint64_t a, b;
	uint32_t rkey;
	uint32_t mw_rkey;
};

static int regions_make(struct regions *r)
{
	r->a = map_pages(REG_LEN);
	r->b = map_pages(REG_LEN);
	r->want_a = malloc(REG_LEN);
	r->want_b = malloc(REG_LEN);
	CHECK(r->a && r->b && r->want_a && r->want_b, "out of memory");
	fill(r->a, REG_LEN, SEED_A);
	fill(r->b, REG_LEN, SEED_B);
	memcpy(r->want_a, r->a, REG_LEN);
	memcpy(r->want_b, r->b, REG_LEN);
	return 0;
}

static int regions_check(const struct regions *r)
{
	TRY(check_bytes(r->a, r->want_a, REG_LEN, "region A"));
	return check_bytes(r->b, r->want_b, REG_LEN, "region B");
}

static void regions_free(struct regions *r)
{
	munmap(r->a, REG_LEN);
	munmap(r->b, REG_LEN);
	free(r->want_a);
	free(r->want_b);
}

static int send_info(struct e2e_side *s, const struct regions *r,
		     const struct ibv_mr *mr, uint32_t mw_rkey)
{
	struct rereg_info i = { (uintptr_t)r->a, (uintptr_t)r->b, mr->rkey,
				mw_rkey };

	return msg_send(s->p->peer, &i, sizeof(i));
}

/* ibv_rereg_mr that must succeed and keep the keys. */
static int rereg(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
		 size_t len, int access)
{
	uint32_t lkey = mr->lkey, rkey = mr->rkey;
	int ret = ibv_rereg_mr(mr, flags, pd, addr, len, access);

	CHECK(!ret, "ibv_rereg_mr(flags %#x): %d, errno %s", flags, ret,
	      strerror(errno));
	CHECK(mr->lkey == lkey && mr->rkey == rkey,
	      "ibv_rereg_mr changed the keys: lkey %#x -> %#x, rkey %#x -> %#x",
	      lkey, mr->lkey, rkey, mr->rkey);
	if (flags & IBV_REREG_MR_CHANGE_PD)
		CHECK(mr->pd == pd, "mr->pd is not the new PD");
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION)
		CHECK(mr->addr == addr && mr->length == len,
		      "mr addr %p length %zu, expected %p %zu", mr->addr,
		      mr->length, addr, len);
	return 0;
}

/* ibv_rereg_mr that the device refuses with err. */
static int rereg_fails(struct ibv_mr *mr, int flags, struct ibv_pd *pd,
		       void *addr, size_t len, int access, int err,
		       const char *what)
{
	void *old_addr = mr->addr;
	int ret;

	errno = 0;
	ret = ibv_rereg_mr(mr, flags, pd, addr, len, access);
	CHECK(ret == IBV_REREG_MR_ERR_CMD && errno == err,
	      "ibv_rereg_mr %s: %d, errno %d (%s); expected IBV_REREG_MR_ERR_CMD, %s",
	      what, ret, errno, strerror(errno), strerror(err));
	CHECK(mr->addr == old_addr, "a refused ibv_rereg_mr moved mr->addr");
	return 0;
}

/* ---- translation --------------------------------------------------------- */

/*
 * CHANGE_TRANSLATION moves the MR from A to B with the same keys: remote
 * WRITE and READ through the rkey reach B (by B's address, the new iova),
 * A no longer, and A keeps what it had; the lkey serves B, and not A.
 * Retired when a page of B is replaced, the MR works again once moved
 * back to A.  (Without a userfaultfd it is not retired: a WRITE to B's
 * page 2 lands there, one to the replaced page 0 lands in the new page.)
 */
static int rereg_translation_req(struct e2e_proc *p)
{
	struct rereg_info r;
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t qpn;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qpn = s.rem.qpn;
	TRY(msg_recv(p->peer, &r, sizeof(r), E2E_WAIT_MS));
	TRY(rdma(&s, s.qp, 0x11, IBV_WR_RDMA_WRITE, r.a + 100, r.rkey, 500,
		 IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "rereg now"));
	TRY(e2e_sync(p, "rereg done"));
	TRY(rdma(&s, s.qp, 0x12, IBV_WR_RDMA_WRITE, r.b + 100, r.rkey, 500,
		 IBV_WC_SUCCESS));
	TRY(rdma(&s, s.qp, 0x13, IBV_WR_RDMA_READ, r.b + PAGE, r.rkey, 2 * PAGE,
		 IBV_WC_SUCCESS));
	TRY(check_read(&s, SEED_B, PAGE, 2 * PAGE));
	TRY(rdma(&s, s.qp, 0x14, IBV_WR_RDMA_READ, r.a + PAGE, r.rkey, 64,
		 IBV_WC_REM_ACCESS_ERR));
	TRY(e2e_recover(&s, s.qp, qpn));
	TRY(post_recv_buf(&s, 0x15, RECV_OFF, PAGE));
	TRY(e2e_sync(p, "recv posted"));
	TRY(expect_recv_data(&s, s.qp, qpn, 0x15, s.buf + RECV_OFF, SEED_B,
			     8 * PAGE, 300));
	/* B's first page replaced: the MR is retired, until moved back to A. */
	TRY(e2e_sync(p, "B replaced"));
	if (rn_test_have_uffd()) {
		TRY(rdma(&s, s.qp, 0x18, IBV_WR_RDMA_WRITE, r.b + 2 * PAGE, r.rkey,
			 64, IBV_WC_REM_ACCESS_ERR));
		TRY(e2e_recover(&s, s.qp, qpn));
	} else {
		TRY(rdma(&s, s.qp, 0x18, IBV_WR_RDMA_WRITE, r.b + 2 * PAGE, r.rkey,
			 64, IBV_WC_SUCCESS));
		TRY(rdma(&s, s.qp, 0x1a, IBV_WR_RDMA_WRITE, r.b + 64, r.rkey, 64,
			 IBV_WC_SUCCESS));
		TRY(e2e_sync(p, "written"));
	}
	TRY(e2e_sync(p, "back on A"));
	TRY(rdma(&s, s.qp, 0x19, IBV_WR_RDMA_WRITE, r.a + 2000, r.rkey, 64,
		 IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int rereg_translation_resp(struct e2e_proc *p)
{
	struct regions r;
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mr *mr;
	uint32_t qpn;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qpn = s.rem.qpn;
	TRY(regions_make(&r));
	mr = reg_mr_at(s.pd, r.a, REG_LEN, E2E_ACCESS_ALL);
	TRY(!mr);
	TRY(send_info(&s, &r, mr, 0));
	TRY(e2e_sync(p, "rereg now"));
	TRY(rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, r.b, REG_LEN, 0));
	TRY(e2e_sync(p, "rereg done"));
	TRY(expect_async(s.ctx, s.qp, IBV_EVENT_QP_ACCESS_ERR, E2E_WAIT_MS));
	TRY(e2e_recover(&s, s.qp, qpn));
	TRY(e2e_sync(p, "recv posted"));
	TRY(send_from(&s, s.qp, 0x16, (uintptr_t)r.b + 8 * PAGE, 300, mr->lkey,
		      IBV_WC_SUCCESS));
	/* The lkey no longer covers A. */
	TRY(rdma_sge(&s, s.qp, 0x17, IBV_WR_RDMA_WRITE,
		     (struct ibv_sge){ (uintptr_t)r.a + 8 * PAGE, 300, mr->lkey },
		     s.rem.addr + 1000, s.rem.rkey, IBV_WC_LOC_PROT_ERR));
	TRY(expect_qp_state(s.qp, IBV_QPS_ERR));
	TRY(e2e_reset_qp(&s, s.qp, qpn));
	fill(r.want_a + 100, 500, 0x11);
	fill(r.want_b + 100, 500, 0x12);
	TRY(regions_check(&r));
	CHECK(!munmap(r.b, PAGE), "munmap: %s", strerror(errno));
	TRY(map_at(r.b, PAGE));
	memset(r.b, FILLER, PAGE);
	memset(r.want_b, FILLER, PAGE);
	TRY(e2e_sync(p, "B replaced"));
	if (rn_test_have_uffd()) {
		TRY(expect_async(s.ctx, s.qp, IBV_EVENT_QP_ACCESS_ERR,
				 E2E_WAIT_MS));
		TRY(e2e_recover(&s, s.qp, qpn));
	} else {
		TRY(e2e_sync(p, "written"));
		fill(r.want_b + 2 * PAGE, 64, 0x18);
		fill(r.want_b + 64, 64, 0x1a); /* in the new page */
	}
	TRY(rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, r.a, REG_LEN, 0));
	TRY(e2e_sync(p, "back on A"));
	TRY(e2e_sync(p, "end"));
	fill(r.want_a + 2000, 64, 0x19);
	TRY(regions_check(&r));
	CHECK(!ibv_dereg_mr(mr), "ibv_dereg_mr failed");
	regions_free(&r);
	return e2e_close(&s);
}

/* ---- PD ------------------------------------------------------------------ */

/*
 * CHANGE_PD moves the MR from the PD of QP A to the PD of QP B: before,
 * requests arriving at A reach it and those at B do not; after, the
 * other way round, for remote access and for local SGEs alike.
 */
static int rereg_pd_req(struct e2e_proc *p)
{
	struct rereg_info r;
	struct ibv_qp *qpb;
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t qpn, dest_b;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qpn = s.rem.qpn;
	TRY(e2e_extra_qp(&s, s.pd, &qpb, &dest_b));
	TRY(msg_recv(p->peer, &r, sizeof(r), E2E_WAIT_MS));
	TRY(rdma(&s, s.qp, 0x21, IBV_WR_RDMA_WRITE, r.a, r.rkey, 256,
		 IBV_WC_SUCCESS));
	TRY(rdma(&s, qpb, 0x22, IBV_WR_RDMA_WRITE, r.a + 256, r.rkey, 256,
		 IBV_WC_REM_ACCESS_ERR));
	TRY(e2e_recover(&s, qpb, dest_b));
	TRY(e2e_sync(p, "rereg now"));
	TRY(e2e_sync(p, "rereg done"));
	TRY(rdma(&s, qpb, 0x23, IBV_WR_RDMA_WRITE, r.a + 512, r.rkey, 256,
		 IBV_WC_SUCCESS));
	TRY(rdma(&s, qpb, 0x24, IBV_WR_RDMA_READ, r.a + 1024, r.rkey, 512,
		 IBV_WC_SUCCESS));
	TRY(check_read(&s, SEED_A, 1024, 512));
	TRY(rdma(&s, s.qp, 0x25, IBV_WR_RDMA_WRITE, r.a + 2048, r.rkey, 256,
		 IBV_WC_REM_ACCESS_ERR));
	TRY(e2e_recover(&s, s.qp, qpn));
	TRY(post_recv_qp(qpb, 0x26, s.buf + RECV_OFF, PAGE, s.mr->lkey));
	TRY(e2e_sync(p, "recv posted"));
	TRY(expect_recv_data(&s, qpb, dest_b, 0x26, s.buf + RECV_OFF, SEED_A,
			     4 * PAGE, 100));
	TRY(e2e_sync(p, "end"));
	CHECK(!ibv_destroy_qp(qpb), "ibv_destroy_qp failed");
	return e2e_close(&s);
}

static int rereg_pd_resp(struct e2e_proc *p)
{
	struct ibv_pd *pdb;
	struct ibv_qp *qpb;
	struct regions r;
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mr *mr;
	uint32_t qpn, dest_b;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qpn = s.rem.qpn;
	pdb = ibv_alloc_pd(s.ctx);
	CHECK(pdb, "ibv_alloc_pd: %s", strerror(errno));
	TRY(e2e_extra_qp(&s, pdb, &qpb, &dest_b));
	TRY(regions_make(&r));
	mr = reg_mr_at(s.pd, r.a, REG_LEN, E2E_ACCESS_ALL);
	TRY(!mr);
	TRY(send_info(&s, &r, mr, 0));
	TRY(expect_async(s.ctx, qpb, IBV_EVENT_QP_ACCESS_ERR, E2E_WAIT_MS));
	TRY(e2e_recover(&s, qpb, dest_b));
	TRY(e2e_sync(p, "rereg now"));
	TRY(rereg(mr, IBV_REREG_MR_CHANGE_PD, pdb, NULL, 0, 0));
	TRY(e2e_sync(p, "rereg done"));
	TRY(expect_async(s.ctx, s.qp, IBV_EVENT_QP_ACCESS_ERR, E2E_WAIT_MS));
	TRY(e2e_recover(&s, s.qp, qpn));
	TRY(e2e_sync(p, "recv posted"));
	TRY(send_from(&s, qpb, 0x27, (uintptr_t)r.a + 4 * PAGE, 100, mr->lkey,
		      IBV_WC_SUCCESS));
	/* Through QP A, of the old PD, the lkey is no longer good. */
	TRY(rdma_sge(&s, s.qp, 0x28, IBV_WR_RDMA_WRITE,
		     (struct ibv_sge){ (uintptr_t)r.a, 100, mr->lkey },
		     s.rem.addr + 1000, s.rem.rkey, IBV_WC_LOC_PROT_ERR));
	TRY(e2e_sync(p, "end"));
	fill(r.want_a, 256, 0x21);
	fill(r.want_a + 512, 256, 0x23);
	TRY(regions_check(&r));
	CHECK(!ibv_dereg_mr(mr), "ibv_dereg_mr failed");
	CHECK(!ibv_destroy_qp(qpb), "ibv_destroy_qp failed");
	CHECK(!ibv_dealloc_pd(pdb), "ibv_dealloc_pd failed");
	regions_free(&r);
	return e2e_close(&s);
}

/* ---- access -------------------------------------------------------------- */

#define ACC_WRITE (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)
#define ACC_READ (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ)

/*
 * CHANGE_ACCESS: the rights enforced are the new ones, remotely (READ
 * refused, then allowed and WRITE refused) and locally (without
 * LOCAL_WRITE a receive into the MR fails).  Rights no MR may have (remote
 * write without local write) are refused and leave the MR as it was.
 */
static int rereg_access_req(struct e2e_proc *p)
{
	struct rereg_info r;
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t qpn;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qpn = s.rem.qpn;
	TRY(msg_recv(p->peer, &r, sizeof(r), E2E_WAIT_MS));
	TRY(rdma(&s, s.qp, 0x31, IBV_WR_RDMA_WRITE, r.a, r.rkey, 64,
		 IBV_WC_SUCCESS));
	TRY(rdma(&s, s.qp, 0x32, IBV_WR_RDMA_READ, r.a, r.rkey, 64,
		 IBV_WC_REM_ACCESS_ERR));
	TRY(e2e_recover(&s, s.qp, qpn));
	TRY(e2e_sync(p, "read only now"));
	TRY(rdma(&s, s.qp, 0x33, IBV_WR_RDMA_READ, r.a + PAGE, r.rkey, PAGE,
		 IBV_WC_SUCCESS));
	TRY(check_read(&s, SEED_A, PAGE, PAGE));
	TRY(rdma(&s, s.qp, 0x34, IBV_WR_RDMA_WRITE, r.a + 128, r.rkey, 64,
		 IBV_WC_REM_ACCESS_ERR));
	TRY(e2e_recover(&s, s.qp, qpn));
	TRY(e2e_sync(p, "refused"));
	TRY(rdma(&s, s.qp, 0x35, IBV_WR_RDMA_READ, r.a + 2 * PAGE, r.rkey, 64,
		 IBV_WC_SUCCESS));
	TRY(check_read(&s, SEED_A, 2 * PAGE, 64));
	TRY(e2e_sync(p, "no local write now"));
	fill(s.buf + LOCAL_OFF, 64, 0x36);
	TRY(send_from(&s, s.qp, 0x36, s.base + LOCAL_OFF, 64, s.mr->lkey,
		      IBV_WC_REM_OP_ERR));
	TRY(e2e_recover(&s, s.qp, qpn));
	TRY(e2e_sync(p, "everything now"));
	TRY(rdma(&s, s.qp, 0x37, IBV_WR_RDMA_WRITE, r.a + 3 * PAGE, r.rkey, 64,
		 IBV_WC_SUCCESS));
	TRY(rdma(&s, s.qp, 0x38, IBV_WR_ATOMIC_FETCH_AND_ADD, r.a + 4 * PAGE,
		 r.rkey, 8, IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int rereg_access_resp(struct e2e_proc *p)
{
	struct regions r;
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mr *mr;
	uint32_t qpn;
	uint64_t v;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qpn = s.rem.qpn;
	TRY(regions_make(&r));
	mr = reg_mr_at(s.pd, r.a, REG_LEN, ACC_WRITE);
	TRY(!mr);
	TRY(send_info(&s, &r, mr, 0));
	TRY(expect_async(s.ctx, s.qp, IBV_EVENT_QP_ACCESS_ERR, E2E_WAIT_MS));
	TRY(e2e_recover(&s, s.qp, qpn));
	TRY(rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, ACC_READ));
	TRY(e2e_sync(p, "read only now"));
	TRY(expect_async(s.ctx, s.qp, IBV_EVENT_QP_ACCESS_ERR, E2E_WAIT_MS));
	TRY(e2e_recover(&s, s.qp, qpn));
	TRY(rereg_fails(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			IBV_ACCESS_REMOTE_WRITE, EINVAL,
			"to remote write without local write"));
	TRY(e2e_sync(p, "refused"));
	/* No local write: a receive into the MR fails. */
	TRY(rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
		  IBV_ACCESS_REMOTE_READ));
	TRY(post_recv_qp(s.qp, 0x39, r.a + 5 * PAGE, PAGE, mr->lkey));
	TRY(e2e_sync(p, "no local write now"));
	TRY(expect_err(rcq_of(&s), 0x39, IBV_WC_LOC_PROT_ERR, s.qp->qp_num,
		       "receive into an MR without local write"));
	TRY(e2e_recover(&s, s.qp, qpn));
	TRY(rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, E2E_ACCESS_ALL));
	TRY(e2e_sync(p, "everything now"));
	TRY(e2e_sync(p, "end"));
	fill(r.want_a, 64, 0x31);
	fill(r.want_a + 3 * PAGE, 64, 0x37);
	memcpy(&v, r.want_a + 4 * PAGE, 8);
	v += ADD;
	memcpy(r.want_a + 4 * PAGE, &v, 8);
	TRY(regions_check(&r));
	CHECK(!ibv_dereg_mr(mr), "ibv_dereg_mr failed");
	regions_free(&r);
	return e2e_close(&s);
}

/* ---- all three at once --------------------------------------------------- */

/*
 * TRANSLATION, PD and ACCESS in one call: the MR is then over B, in the
 * PD of QP B, readable only; A is out of it, QP A cannot use it, and it
 * cannot be written.
 */
static int rereg_all_req(struct e2e_proc *p)
{
	struct rereg_info r;
	struct ibv_qp *qpb;
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t qpn, dest_b;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qpn = s.rem.qpn;
	TRY(e2e_extra_qp(&s, s.pd, &qpb, &dest_b));
	TRY(msg_recv(p->peer, &r, sizeof(r), E2E_WAIT_MS));
	TRY(rdma(&s, s.qp, 0x41, IBV_WR_RDMA_WRITE, r.a, r.rkey, 128,
		 IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "rereg now"));
	TRY(e2e_sync(p, "rereg done"));
	TRY(rdma(&s, qpb, 0x42, IBV_WR_RDMA_READ, r.b + 100, r.rkey, 2 * PAGE,
		 IBV_WC_SUCCESS));
	TRY(check_read(&s, SEED_B, 100, 2 * PAGE));
	TRY(rdma(&s, qpb, 0x43, IBV_WR_RDMA_WRITE, r.b, r.rkey, 64,
		 IBV_WC_REM_ACCESS_ERR));
	TRY(e2e_recover(&s, qpb, dest_b));
	TRY(rdma(&s, s.qp, 0x44, IBV_WR_RDMA_READ, r.b, r.rkey, 64,
		 IBV_WC_REM_ACCESS_ERR));
	TRY(e2e_recover(&s, s.qp, qpn));
	TRY(rdma(&s, qpb, 0x45, IBV_WR_RDMA_READ, r.a, r.rkey, 64,
		 IBV_WC_REM_ACCESS_ERR));
	TRY(e2e_recover(&s, qpb, dest_b));
	TRY(e2e_sync(p, "end"));
	CHECK(!ibv_destroy_qp(qpb), "ibv_destroy_qp failed");
	return e2e_close(&s);
}

static int rereg_all_resp(struct e2e_proc *p)
{
	struct ibv_pd *pdb;
	struct ibv_qp *qpb;
	struct regions r;
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mr *mr;
	uint32_t qpn, dest_b;
	int i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qpn = s.rem.qpn;
	pdb = ibv_alloc_pd(s.ctx);
	CHECK(pdb, "ibv_alloc_pd: %s", strerror(errno));
	TRY(e2e_extra_qp(&s, pdb, &qpb, &dest_b));
	TRY(regions_make(&r));
	mr = reg_mr_at(s.pd, r.a, REG_LEN, E2E_ACCESS_ALL);
	TRY(!mr);
	TRY(send_info(&s, &r, mr, 0));
	TRY(e2e_sync(p, "rereg now"));
	TRY(rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD |
			      IBV_REREG_MR_CHANGE_ACCESS,
		  pdb, r.b, REG_LEN, IBV_ACCESS_REMOTE_READ));
	TRY(e2e_sync(p, "rereg done"));
	for (i = 0; i < 3; i++) {
		struct ibv_qp *qp = i == 1 ? s.qp : qpb;

		TRY(expect_async(s.ctx, qp, IBV_EVENT_QP_ACCESS_ERR, E2E_WAIT_MS));
		TRY(e2e_recover(&s, qp, i == 1 ? qpn : dest_b));
	}
	TRY(e2e_sync(p, "end"));
	fill(r.want_a, 128, 0x41);
	TRY(regions_check(&r));
	CHECK(!ibv_dereg_mr(mr), "ibv_dereg_mr failed");
	CHECK(!ibv_destroy_qp(qpb), "ibv_destroy_qp failed");
	CHECK(!ibv_dealloc_pd(pdb), "ibv_dealloc_pd failed");
	regions_free(&r);
	return e2e_close(&s);
}

/* ---- on-demand paging on and off ----------------------------------------- */

/* Region A's first page unmapped and mapped again, filled with pattern seed. */
static int replace_page(struct regions *r, uint32_t seed)
{
	CHECK(!munmap(r->a, PAGE), "munmap: %s", strerror(errno));
	TRY(map_at(r->a, PAGE));
	fill(r->a, PAGE, seed);
	fill(r->want_a, PAGE, seed);
	return 0;
}

/*
 * CHANGE_ACCESS to and from IBV_ACCESS_ON_DEMAND: as an ODP MR it
 * follows the mapping (a page unmapped and mapped again is reached, as
 * a plain MR over the same page, retired by the unmap, is not: a WRITE
 * through it goes nowhere); made plain again it is retired by the next
 * unmap as any plain MR.  Without a userfaultfd no MR is retired: both
 * follow the mapping as the ODP one does, and their WRITEs land in the
 * page mapped anew.
 */
static int rereg_odp_req(struct e2e_proc *p)
{
	struct rereg_info r[2];
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(msg_recv(p->peer, r, sizeof(r), E2E_WAIT_MS));
	TRY(e2e_sync(p, "replaced"));
	/* r[1] is the MR made ODP, r[0] the plain one. */
	TRY(rdma(&s, s.qp, 0x61, IBV_WR_RDMA_WRITE, r[1].a + 64, r[1].rkey, 64,
		 IBV_WC_SUCCESS));
	TRY(rdma(&s, s.qp, 0x62, IBV_WR_RDMA_READ, r[1].a + 1024, r[1].rkey, 512,
		 IBV_WC_SUCCESS));
	TRY(check_read(&s, 0x63, 1024, 512));
	/* Into the replaced page through the retired plain MR: nowhere. */
	TRY(rdma(&s, s.qp, 0x64, IBV_WR_RDMA_WRITE, r[0].a + 128, r[0].rkey, 64,
		 IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "written"));
	TRY(e2e_sync(p, "plain again, replaced"));
	TRY(rdma(&s, s.qp, 0x65, IBV_WR_RDMA_WRITE, r[1].a + 256, r[1].rkey, 64,
		 IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int rereg_odp_resp(struct e2e_proc *p)
{
	struct rereg_info info[2];
	struct regions r;
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mr *mr[2];
	int i;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(regions_make(&r));
	for (i = 0; i < 2; i++) {
		mr[i] = reg_mr_at(s.pd, r.a, REG_LEN, E2E_ACCESS_ALL);
		TRY(!mr[i]);
		info[i] = (struct rereg_info){ (uintptr_t)r.a, (uintptr_t)r.b,
					       mr[i]->rkey, 0 };
	}
	TRY(rereg(mr[1], IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
		  E2E_ACCESS_ALL | IBV_ACCESS_ON_DEMAND));
	TRY(msg_send(p->peer, info, sizeof(info)));
	TRY(replace_page(&r, 0x63));
	TRY(e2e_sync(p, "replaced"));
	TRY(e2e_sync(p, "written"));
	if (!rn_test_have_uffd())
		fill(r.want_a + 128, 64, 0x64); /* through the plain MR */
	fill(r.want_a + 64, 64, 0x61);
	TRY(regions_check(&r));
	TRY(rereg(mr[1], IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
		  E2E_ACCESS_ALL));
	TRY(replace_page(&r, 0x66));
	TRY(e2e_sync(p, "plain again, replaced"));
	TRY(e2e_sync(p, "end"));
	if (!rn_test_have_uffd())
		fill(r.want_a + 256, 64, 0x65);
	TRY(regions_check(&r));
	for (i = 0; i < 2; i++)
		CHECK(!ibv_dereg_mr(mr[i]), "ibv_dereg_mr failed");
	regions_free(&r);
	return e2e_close(&s);
}

/* ---- an MR with a window bound ------------------------------------------- */

/*
 * A window bound to an MR holds it as it is: ibv_rereg_mr fails
 * (IBV_REREG_MR_ERR_CMD, errno EBUSY from the device) for each kind of
 * change, and the MR and window keep working; once the window is gone
 * the MR moves.
 */
static int rereg_bound_req(struct e2e_proc *p)
{
	struct rereg_info r;
	struct e2e_opts o;
	struct e2e_side s;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	TRY(msg_recv(p->peer, &r, sizeof(r), E2E_WAIT_MS));
	TRY(e2e_sync(p, "refused"));
	TRY(rdma(&s, s.qp, 0x51, IBV_WR_RDMA_WRITE, r.a + 64, r.rkey, 64,
		 IBV_WC_SUCCESS));
	TRY(rdma(&s, s.qp, 0x52, IBV_WR_RDMA_READ, r.a + PAGE, r.mw_rkey, 256,
		 IBV_WC_SUCCESS));
	TRY(check_read(&s, SEED_A, PAGE, 256));
	TRY(e2e_sync(p, "accessed"));
	TRY(e2e_sync(p, "moved"));
	TRY(rdma(&s, s.qp, 0x53, IBV_WR_RDMA_WRITE, r.b + 64, r.rkey, 64,
		 IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "end"));
	return e2e_close(&s);
}

static int rereg_bound_resp(struct e2e_proc *p)
{
	struct ibv_mw_bind bind = {
		.wr_id = 0x54,
		.send_flags = IBV_SEND_SIGNALED,
	};
	struct wc_want w = {
		.wr_id = 0x54,
		.status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_BIND_MW,
	};
	struct ibv_pd *pdb;
	struct regions r;
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	int ret;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	pdb = ibv_alloc_pd(s.ctx);
	CHECK(pdb, "ibv_alloc_pd: %s", strerror(errno));
	TRY(regions_make(&r));
	mr = reg_mr_at(s.pd, r.a, REG_LEN, E2E_ACCESS_ALL | IBV_ACCESS_MW_BIND);
	TRY(!mr);
	mw = ibv_alloc_mw(s.pd, IBV_MW_TYPE_1);
	CHECK(mw, "ibv_alloc_mw: %s", strerror(errno));
	bind.bind_info = (struct ibv_mw_bind_info){
		.mr = mr, .addr = (uintptr_t)r.a + PAGE, .length = PAGE,
		.mw_access_flags = IBV_ACCESS_REMOTE_READ,
	};
	ret = ibv_bind_mw(s.qp, mw, &bind);
	CHECK(!ret, "ibv_bind_mw: %s", strerror(ret));
	w.qp_num = s.qp->qp_num;
	TRY(expect_wc(scq_of(&s), &w, "ibv_bind_mw"));
	TRY(rereg_fails(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, r.b, REG_LEN,
			0, EBUSY, "of the translation"));
	TRY(rereg_fails(mr, IBV_REREG_MR_CHANGE_PD, pdb, NULL, 0, 0, EBUSY,
			"of the PD"));
	TRY(rereg_fails(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND, EBUSY,
			"of the rights"));
	CHECK(mr->pd == s.pd, "a refused ibv_rereg_mr changed mr->pd");
	TRY(send_info(&s, &r, mr, mw->rkey));
	TRY(e2e_sync(p, "refused"));
	TRY(e2e_sync(p, "accessed"));
	ret = ibv_dealloc_mw(mw);
	CHECK(!ret, "ibv_dealloc_mw: %s", strerror(ret));
	TRY(rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, r.b, REG_LEN, 0));
	TRY(e2e_sync(p, "moved"));
	TRY(e2e_sync(p, "end"));
	fill(r.want_a + 64, 64, 0x51);
	fill(r.want_b + 64, 64, 0x53);
	TRY(regions_check(&r));
	CHECK(!ibv_dereg_mr(mr), "ibv_dereg_mr failed");
	CHECK(!ibv_dealloc_pd(pdb), "ibv_dealloc_pd failed");
	regions_free(&r);
	return e2e_close(&s);
}

/* ---- a receive posted before ------------------------------------------- */

/*
 * A receive posted into the MR, then the MR moved (TRANSLATION) or given
 * to another PD (PD): the WQE fails its key check when a SEND arrives.
 * As on rxe: a local protection error on the receive, a NAK "remote
 * operational error" to the sender, nothing written anywhere; once both
 * QPs are reset and reconnected, SENDs into the MR where it now is work.
 */
static int rereg_posted_recv_req(struct e2e_proc *p)
{
	struct ibv_qp *qpb;
	struct e2e_opts o;
	struct e2e_side s;
	uint32_t qpn, dest_b;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qpn = s.rem.qpn;
	TRY(e2e_extra_qp(&s, s.pd, &qpb, &dest_b));
	fill(s.buf + LOCAL_OFF, 64, 0x71);
	TRY(e2e_sync(p, "moved"));
	TRY(send_from(&s, s.qp, 0x71, s.base + LOCAL_OFF, 64, s.mr->lkey,
		      IBV_WC_REM_OP_ERR));
	TRY(e2e_recover(&s, s.qp, qpn));
	TRY(e2e_sync(p, "posted where it is"));
	fill(s.buf + LOCAL_OFF, 64, 0x72);
	TRY(send_from(&s, s.qp, 0x72, s.base + LOCAL_OFF, 64, s.mr->lkey,
		      IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "other PD"));
	fill(s.buf + LOCAL_OFF, 64, 0x73);
	TRY(send_from(&s, s.qp, 0x73, s.base + LOCAL_OFF, 64, s.mr->lkey,
		      IBV_WC_REM_OP_ERR));
	TRY(e2e_recover(&s, s.qp, qpn));
	TRY(e2e_sync(p, "posted on QP B"));
	fill(s.buf + LOCAL_OFF, 64, 0x74);
	TRY(send_from(&s, qpb, 0x74, s.base + LOCAL_OFF, 64, s.mr->lkey,
		      IBV_WC_SUCCESS));
	TRY(e2e_sync(p, "end"));
	CHECK(!ibv_destroy_qp(qpb), "ibv_destroy_qp failed");
	return e2e_close(&s);
}

static int rereg_posted_recv_resp(struct e2e_proc *p)
{
	struct ibv_pd *pdb;
	struct ibv_qp *qpb;
	struct regions r;
	struct e2e_opts o;
	struct e2e_side s;
	struct ibv_mr *mr;
	uint32_t qpn, dest_b;

	e2e_default_opts(&o);
	TRY(e2e_setup(&s, p, &o));
	qpn = s.rem.qpn;
	pdb = ibv_alloc_pd(s.ctx);
	CHECK(pdb, "ibv_alloc_pd: %s", strerror(errno));
	TRY(e2e_extra_qp(&s, pdb, &qpb, &dest_b));
	TRY(regions_make(&r));
	mr = reg_mr_at(s.pd, r.a, REG_LEN, E2E_ACCESS_ALL);
	TRY(!mr);
	TRY(post_recv_qp(s.qp, 0x81, r.a + PAGE, PAGE, mr->lkey));
	TRY(rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, r.b, REG_LEN, 0));
	TRY(e2e_sync(p, "moved"));
	TRY(expect_err(rcq_of(&s), 0x81, IBV_WC_LOC_PROT_ERR, s.qp->qp_num,
		       "a receive into the MR's old place"));
	TRY(e2e_recover(&s, s.qp, qpn));
	TRY(post_recv_qp(s.qp, 0x82, r.b + PAGE, PAGE, mr->lkey));
	TRY(e2e_sync(p, "posted where it is"));
	TRY(expect_recv_data(&s, s.qp, s.rem.qpn, 0x82, r.b + PAGE, 0x72, 0,
			     64));
	fill(r.want_b + PAGE, 64, 0x72);
	TRY(post_recv_qp(s.qp, 0x83, r.b + 2 * PAGE, PAGE, mr->lkey));
	TRY(rereg(mr, IBV_REREG_MR_CHANGE_PD, pdb, NULL, 0, 0));
	TRY(e2e_sync(p, "other PD"));
	TRY(expect_err(rcq_of(&s), 0x83, IBV_WC_LOC_PROT_ERR, s.qp->qp_num,
		       "a receive through an MR of another PD"));
	TRY(e2e_recover(&s, s.qp, qpn));
	TRY(post_recv_qp(qpb, 0x84, r.b + 3 * PAGE, PAGE, mr->lkey));
	TRY(e2e_sync(p, "posted on QP B"));
	TRY(expect_recv_data(&s, qpb, dest_b, 0x84, r.b + 3 * PAGE, 0x74, 0,
			     64));
	fill(r.want_b + 3 * PAGE, 64, 0x74);
	TRY(e2e_sync(p, "end"));
	TRY(regions_check(&r));
	CHECK(!ibv_dereg_mr(mr), "ibv_dereg_mr failed");
	CHECK(!ibv_destroy_qp(qpb), "ibv_destroy_qp failed");
	CHECK(!ibv_dealloc_pd(pdb), "ibv_dealloc_pd failed");
	regions_free(&r);
	return e2e_close(&s);
}

/* ================================================================== table */

#define PAIR(g, n, req, resp)                                                  \
	{ .group = g, .name = n, .nroles = 2, .role = { req, resp } }
#define ONE(g, n, fn) { .group = g, .name = n, .nroles = 1, .role = { fn } }

const struct e2e_test e2e_memory_tests[] = {
	ONE("odp", "caps", odp_caps),
	PAIR("odp", "mapped_later", odp_hole_req, odp_hole_resp),
	PAIR("odp", "implicit", implicit_req, implicit_resp),
	ONE("odp", "advise", odp_advise),
	PAIR("rereg", "translation", rereg_translation_req, rereg_translation_resp),
	PAIR("rereg", "pd", rereg_pd_req, rereg_pd_resp),
	PAIR("rereg", "access", rereg_access_req, rereg_access_resp),
	PAIR("rereg", "all_at_once", rereg_all_req, rereg_all_resp),
	PAIR("rereg", "odp_on_off", rereg_odp_req, rereg_odp_resp),
	PAIR("rereg", "bound_window", rereg_bound_req, rereg_bound_resp),
	PAIR("rereg", "posted_recv", rereg_posted_recv_req,
	     rereg_posted_recv_resp),
	{ 0 },
};
