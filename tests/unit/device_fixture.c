// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* A whole device in the test process: see device_fixture.h. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <unistd.h>
#include <cmocka.h>

#include "device_fixture.h"

const uint8_t FX_LOCAL_GID[16] = { [10] = 0xff, [11] = 0xff, 127, 0, 0, 1 };
const uint8_t FX_REMOTE_GID[16] = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 2 };

/* ---- memory the device hands out ------------------------------------------ */

/* Map a memfd the device answered with, as the provider does, and close it. */
static void *map_fd(struct fx *fx, int fd, size_t len)
{
	void *mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	assert_true(mem != MAP_FAILED);
	close(fd);
	assert_true(fx->nmaps < FX_MAPS);
	fx->maps[fx->nmaps].addr = mem;
	fx->maps[fx->nmaps].len = len;
	fx->nmaps++;
	return mem;
}

/* ---- the device and its client ------------------------------------------- */

/* The port bound to lo with one address, as netdev.c's refresh binds it. */
static void bind_port(struct rn_device *dev)
{
	struct rn_link link = {
		.ifindex = 1,
		.ifname = "lo",
		.running = true,
		.mtu = 1500,
	};
	union ibv_gid gid;

	memcpy(gid.raw, FX_LOCAL_GID, 16);
	link.naddrs = 1;
	link.addrs[0] = gid;
	assert_true(rn_port_set_link(dev, &link) & RN_PORT_STATE);
	assert_int_equal(rn_port_set_gids(dev, link.addrs, link.naddrs),
			 RN_PORT_GIDS);
	assert_int_equal(rn_port_gid_first(dev), 0);
}

/*
 * Where netdev.c would call rn_wire_addresses_changed (a UDP socket bound
 * to each GID, port 4791), GID 0 gets a socket that can send nothing: see
 * device_fixture.h.  Its address is what the ICRC is sealed with.
 */
static void wire_sink(struct rn_device *dev)
{
	struct rn_wire_sock *s = &dev->engines[0]->wire->socks[0];

	s->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	assert_true(s->fd >= 0);
	s->gid_index = 0;
	rn_wire_gid_addr(dev, dev->port.gids[0].raw, &s->local.v6, &s->local.v4);
	s->family = s->local.v4.sin_family;
	assert_int_equal(s->family, AF_INET);
}

/*
 * The test process as the device's client: what requests.c's OPEN does
 * (its process attached, a device page, the async pipe), without a
 * control socket.
 */
static void open_client(struct fx *fx)
{
	struct rn_device *dev = &fx->dev;
	struct rn_client *c = calloc(1, sizeof(*c));
	struct rn_context *ctx = rn_context_new(dev);
	int p[2];

	assert_non_null(c);
	assert_non_null(ctx);
	rn_client_init(c, dev, getpid(), getuid());
	rn_context_join(ctx, c);
	assert_int_equal(rn_client_attach(c), 0);
	assert_int_equal(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
	fx->async_rd = p[0];
	c->async_fd = p[1];
	assert_int_equal(rn_charge(c, RN_DEV_PAGE_SIZE), 0);
	ctx->dev_page = rn_shared_alloc(RN_DEV_PAGE_SIZE, &ctx->dev_page_fd);
	assert_non_null(ctx->dev_page);
	fx->page = map_fd(fx, dup(ctx->dev_page_fd), RN_DEV_PAGE_SIZE);
	rn_list_add_tail(&dev->contexts, &ctx->link);
	ctx->engine = rn_engine_for_context(dev);
	rn_engine_context_added(ctx);
	c->opened = true;
	c->confirmed = true;
	rn_list_add_tail(&dev->clients, &c->link);
	dev->nclients++;
	fx->client = c;
}

struct fx *fx_new(void)
{
	struct fx *fx = calloc(1, sizeof(*fx));
	struct rn_device *dev;

	assert_non_null(fx);
	dev = &fx->dev;
	/* What main() sets before setup(), then setup()'s own part. */
	snprintf(dev->name, sizeof(dev->name), "fx0");
	dev->kdev_fd = -1;
	dev->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	assert_true(dev->epoll_fd >= 0);
	assert_int_equal(rn_device_setup(dev, 0x0200000000000001ull), 0);
	dev->max_clients = 16;
	dev->max_shared_bytes = 1ull << 30;
	bind_port(dev);
	wire_sink(dev);
	open_client(fx);
	assert_int_equal(rn_pd_alloc(fx->client, &fx->pd), 0);
	return fx;
}

/* What rn_device_setup allocated (ringnicd leaves it to exit). */
static void device_free(struct rn_device *dev)
{
	rn_wire_close(dev);
	free(dev->engines[0]->wire);
	free(dev->engines[0]->bounce);
	free(dev->engines[0]->stage);
	free(dev->engines[0]->batch);
	free(dev->engines[0]->timers.heap);
	close(dev->engines[0]->epoll_fd);
	close(dev->engines[0]->kick_fd);
	free(dev->engines[0]);
	free(dev->engines);
	free(dev->timers.heap);
	free(dev->mr_tags);
	free(dev->mw_tags);
	free(dev->qpn_gens);
	rn_table_destroy(&dev->mr_keys);
	rn_table_destroy(&dev->mw_keys);
	rn_table_destroy(&dev->qpns);
	rn_table_destroy(&dev->srqns);
	rn_table_destroy(&dev->xrcds);
	close(dev->epoll_fd);
}

void fx_free(struct fx *fx)
{
	unsigned int i;

	/* As control.c's rn_client_destroy, without the socket. */
	rn_client_release(fx->client);
	rn_list_del(&fx->client->link);
	fx->dev.nclients--;
	free(fx->client);
	assert_int_equal(fx->dev.engines[0]->ntimers, 0);
	assert_int_equal(fx->dev.shared_bytes, 0);
	device_free(&fx->dev);
	for (i = 0; i < fx->nmaps; i++)
		munmap(fx->maps[i].addr, fx->maps[i].len);
	for (i = 0; i < fx->nbufs; i++)
		free(fx->bufs[i]);
	close(fx->async_rd);
	free(fx);
}

bool fx_event(struct fx *fx, uint32_t *type, uint64_t *element)
{
	struct {
		uint64_t element;
		uint32_t event_type;
		uint32_t reserved;
	} ev;

	if (read(fx->async_rd, &ev, sizeof(ev)) != sizeof(ev))
		return false;
	*type = ev.event_type;
	*element = ev.element;
	return true;
}

bool fx_pass(struct fx *fx)
{
	return rn_engine_pass(fx->dev.engines[0], rn_now_ns());
}

/* ---- MRs ---------------------------------------------------------------------- */

void fx_mr_reg(struct fx *fx, uint32_t pd, void *addr, uint64_t len,
	       uint32_t access, struct fx_mr *mr)
{
	struct rn_ctl_reg_mr_req req = { .pd = pd, .access = access };
	struct rn_ctl_reg_mr_resp resp;

	req.addr = req.iova = (uintptr_t)addr;
	req.length = len;
	assert_int_equal(rn_mr_reg(fx->client, &req, &resp), 0);
	mr->buf = addr;
	mr->len = len;
	mr->handle = resp.handle;
	mr->lkey = resp.lkey;
	mr->rkey = resp.rkey;
}

void fx_mr_new(struct fx *fx, uint64_t len, uint32_t access, uint8_t fill,
	       struct fx_mr *mr)
{
	uint8_t *buf = aligned_alloc(4096, (len + 4095) & ~4095ull);

	assert_non_null(buf);
	assert_true(fx->nbufs < FX_MAPS);
	fx->bufs[fx->nbufs++] = buf;
	memset(buf, fill, len);
	fx_mr_reg(fx, fx->pd, buf, len, access, mr);
}

void fx_mr_dereg(struct fx *fx, struct fx_mr *mr)
{
	assert_int_equal(rn_mr_dereg(fx->client, mr->handle), 0);
}

struct rn_sge fx_sge(const struct fx_mr *mr, uint64_t off, uint32_t len)
{
	return (struct rn_sge){ (uintptr_t)mr->buf + off, len, mr->lkey };
}

/* ---- CQs ---------------------------------------------------------------------- */

void fx_cq_new(struct fx *fx, uint32_t entries, struct fx_cq *cq)
{
	struct rn_ctl_create_cq_req req = { .cqe = entries };
	struct rn_ctl_create_cq_resp resp;
	int channel = -1, memfd;
	uint8_t *mem;

	req.user_handle = (uintptr_t)cq;
	assert_int_equal(rn_cq_create(fx->client, &req, &resp, &channel, &memfd),
			 0);
	mem = map_fd(fx, memfd, resp.mmap_size);
	/* providers/ringnic/cq.c: cq_layout */
	*cq = (struct fx_cq){
		.handle = resp.handle,
		.ctrl = (struct rn_cq_ctrl *)mem,
		.ring = (struct rn_cqe *)(mem + RN_CQ_RING_OFFSET),
		.entries = resp.ring_entries,
	};
	while ((1u << cq->log2_entries) < cq->entries)
		cq->log2_entries++;
}

/* providers/ringnic/poll.c: next_cqe, then release_cqes */
bool fx_poll(struct fx_cq *cq, struct rn_cqe *out)
{
	const struct rn_cqe *cqe = &cq->ring[cq->cons & (cq->entries - 1)];

	if (__atomic_load_n(&cqe->owner, __ATOMIC_ACQUIRE) !=
	    RN_CQE_PHASE(cq->cons, cq->log2_entries))
		return false;
	*out = *cqe;
	cq->cons++;
	__atomic_store_n(&cq->ctrl->cons, cq->cons, __ATOMIC_RELEASE);
	return true;
}

/* ---- QPs ---------------------------------------------------------------------- */

void fx_qp_create(struct fx *fx, struct rn_ctl_create_qp_req req,
		  struct fx_qp *qp)
{
	struct rn_ctl_create_qp_resp resp;
	uint8_t *mem;
	int memfd;

	req.user_handle = (uintptr_t)qp;
	assert_int_equal(rn_qp_create(fx->client, &req, &resp, &memfd), 0);
	mem = map_fd(fx, memfd, resp.mmap_size);
	/* providers/ringnic/qp.c: qp_create */
	*qp = (struct fx_qp){
		.fx = fx,
		.handle = resp.handle,
		.qpn = resp.qpn,
		.cap = resp.cap,
		.ctrl = (struct rn_qp_ctrl *)mem,
		.sq = mem + resp.sq_offset,
		.sq_slots = resp.sq_slots,
		.rq = mem + resp.rq_offset,
		.rq_slots = resp.rq_slots,
		.dq = rn_table_get(&fx->client->ctx->qps, resp.handle),
	};
	assert_non_null(qp->dq);
}

void fx_qp_new(struct fx *fx, struct fx_cq *send_cq, struct fx_cq *recv_cq,
	       const struct rn_qp_cap *cap, struct fx_qp *qp)
{
	struct rn_ctl_create_qp_req req = {
		.pd = fx->pd,
		.send_cq = send_cq->handle,
		.recv_cq = recv_cq->handle,
		.qp_type = IBV_QPT_RC,
		.cap = { 16, 16, 4, 4, 64, 0 },
	};

	if (cap)
		req.cap = *cap;
	fx_qp_create(fx, req, qp);
}

struct fx_conn fx_conn_default(uint32_t dest_qpn)
{
	return (struct fx_conn){
		.dest_qpn = dest_qpn,
		.dgid = FX_LOCAL_GID,
		.sq_psn = 0x100,
		.rq_psn = 0x100,
		.path_mtu = IBV_MTU_1024,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.min_rnr_timer = 1,
		.max_rd_atomic = 4,
		.max_dest_rd_atomic = 4,
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	};
}

void fx_qp_modify(struct fx_qp *qp, enum ibv_qp_state state, uint32_t mask,
		  const struct rn_qp_attr *attr)
{
	struct rn_ctl_modify_qp_req req = {
		.handle = qp->handle,
		.attr_mask = mask | IBV_QP_STATE,
		.attr = *attr,
	};

	req.attr.qp_state = state;
	assert_int_equal(rn_qp_modify(qp->fx->client, &req), 0);
	assert_int_equal(fx_qp_state(qp), state);
}

void fx_qp_connect(struct fx_qp *qp, const struct fx_conn *c)
{
	struct rn_qp_attr a = {
		.port_num = 1,
		.qp_access_flags = c->access,
		.path_mtu = c->path_mtu,
		.dest_qp_num = c->dest_qpn,
		.rq_psn = c->rq_psn,
		.sq_psn = c->sq_psn,
		.max_dest_rd_atomic = c->max_dest_rd_atomic,
		.max_rd_atomic = c->max_rd_atomic,
		.min_rnr_timer = c->min_rnr_timer,
		.timeout = c->timeout,
		.retry_cnt = c->retry_cnt,
		.rnr_retry = c->rnr_retry,
		.qkey = c->qkey,
		.ah_attr = { .is_global = 1, .sgid_index = 0, .hop_limit = 64,
			     .port_num = 1 },
	};
	uint32_t init = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	uint32_t rtr = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		       IBV_QP_RQ_PSN;
	uint32_t rts = IBV_QP_SQ_PSN;

	/* What ibv_modify_qp(3) asks of each type (qp_rules.c). */
	switch (qp->dq->qp_type) {
	case IBV_QPT_UD:
		init = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
		rtr = 0;
		break;
	case IBV_QPT_RC:
		rtr |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		rts |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		       IBV_QP_MAX_QP_RD_ATOMIC;
		break;
	case IBV_QPT_XRC_RECV:
		rtr |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		rts |= IBV_QP_TIMEOUT;
		break;
	}
	memcpy(a.ah_attr.dgid, c->dgid, 16);
	fx_qp_modify(qp, IBV_QPS_INIT, init, &a);
	fx_qp_modify(qp, IBV_QPS_RTR, rtr, &a);
	fx_qp_modify(qp, IBV_QPS_RTS, rts, &a);
	/* The destination decides the path of a connected QP (connection.c). */
	if (qp->dq->qp_type != IBV_QPT_UD)
		assert_int_equal(qp->dq->wire != NULL,
				 memcmp(c->dgid, FX_LOCAL_GID, 16) != 0 ||
					 qp->fx->dev.local_on_wire);
}

void fx_qp_pair(struct fx_qp *a, struct fx_qp *b)
{
	struct fx_conn ca = fx_conn_default(b->qpn), cb = fx_conn_default(a->qpn);

	fx_qp_connect(a, &ca);
	fx_qp_connect(b, &cb);
}

enum ibv_qp_state fx_qp_state(const struct fx_qp *qp)
{
	return __atomic_load_n(&qp->ctrl->state, __ATOMIC_ACQUIRE);
}

/* ---- posting -------------------------------------------------------------------- */

/* providers/ringnic/post.c: rn_wqe_write, for an RC QP (no destination). */
static uint64_t write_wqe(struct fx_qp *qp, struct rn_send_wqe *hdr,
			  const void *payload, uint32_t len)
{
	uint8_t buf[RN_SEND_HDR_SIZE + RN_MAX_INLINE];
	uint64_t at = qp->sq_prod;

	assert_true(len <= sizeof(buf) - RN_SEND_HDR_SIZE);
	if (!hdr->nslots)
		hdr->nslots = RN_SEND_WQE_SLOTS(len);
	memcpy(buf, hdr, RN_SEND_HDR_SIZE);
	if (len)
		memcpy(buf + RN_SEND_HDR_SIZE, payload, len);
	rn_ring_write(qp->sq, qp->sq_slots, qp->sq_prod, buf,
		      RN_SEND_HDR_SIZE + len);
	qp->sq_prod = (qp->sq_prod + hdr->nslots) & RN_DB_SEQ_MASK;
	return at;
}

uint64_t fx_post_send(struct fx_qp *qp, const struct rn_send_wqe *hdr,
		      const struct rn_sge *sge)
{
	struct rn_send_wqe h = *hdr;

	return write_wqe(qp, &h, sge, h.num_sge * sizeof(struct rn_sge));
}

uint64_t fx_post_inline(struct fx_qp *qp, const struct rn_send_wqe *hdr,
			const void *data, uint32_t len)
{
	struct rn_send_wqe h = *hdr;

	assert_true(len <= RN_MAX_INLINE);
	h.flags |= RN_WQE_INLINE;
	h.num_sge = 0;
	h.inline_len = len;
	return write_wqe(qp, &h, data, len);
}

/* providers/ringnic/post.c: rn_ring (ringnic-devpage.h's protocol). */
void fx_ring_record(struct fx_qp *qp, uint64_t record)
{
	struct rn_doorbells *db = &qp->fx->page->qp;
	uint32_t q = qp->handle;

	__atomic_store_n(&qp->ctrl->sq_db, record, __ATOMIC_RELEASE);
	__atomic_fetch_or(&db->pending[q / 64], 1ull << (q % 64),
			  __ATOMIC_SEQ_CST);
	__atomic_fetch_or(&db->summary, 1ull << (q / 64), __ATOMIC_SEQ_CST);
}

void fx_ring(struct fx_qp *qp)
{
	fx_ring_record(qp, RN_DB_RECORD(qp->handle, qp->sq_prod));
}

/* providers/ringnic/recv.c: recv_write */
static uint32_t write_recv(uint8_t *ring, uint32_t slots, uint32_t prod,
			   uint64_t wr_id, const struct rn_sge *sge,
			   unsigned int n)
{
	uint8_t buf[RN_RECV_HDR_SIZE + RN_MAX_SGE * sizeof(struct rn_sge)] = { 0 };
	struct rn_recv_wqe *hdr = (struct rn_recv_wqe *)buf;

	assert_true(n <= RN_MAX_SGE);
	hdr->wr_id = wr_id;
	hdr->num_sge = n;
	hdr->nslots = RN_RECV_WQE_SLOTS(n);
	memcpy(buf + RN_RECV_HDR_SIZE, sge, n * sizeof(*sge));
	rn_ring_write(ring, slots, prod, buf,
		      RN_RECV_HDR_SIZE + n * sizeof(*sge));
	return hdr->nslots;
}

void fx_post_recv(struct fx_qp *qp, uint64_t wr_id, const struct rn_sge *sge,
		  unsigned int n)
{
	qp->rq_prod += write_recv(qp->rq, qp->rq_slots, qp->rq_prod, wr_id, sge,
				  n);
	__atomic_store_n(&qp->ctrl->rq_prod, qp->rq_prod, __ATOMIC_RELEASE);
}

/* ---- SRQs ----------------------------------------------------------------------- */

void fx_srq_new(struct fx *fx, struct rn_ctl_create_srq_req req,
		struct fx_srq *srq)
{
	struct rn_ctl_create_srq_resp resp;
	uint8_t *mem;
	int memfd;

	req.user_handle = (uintptr_t)srq;
	assert_int_equal(rn_srq_create(fx->client, &req, &resp, &memfd), 0);
	mem = map_fd(fx, memfd, resp.mmap_size);
	/* providers/ringnic/srq.c: srq_attach */
	*srq = (struct fx_srq){
		.handle = resp.handle,
		.srqn = resp.srqn,
		.ctrl = (struct rn_srq_ctrl *)mem,
		.ring = mem + RN_SRQ_RING_OFFSET,
		.slots = resp.ring_slots,
	};
}

void fx_post_srq_recv(struct fx_srq *srq, uint64_t wr_id,
		      const struct rn_sge *sge, unsigned int n)
{
	srq->prod += write_recv(srq->ring, srq->slots, srq->prod, wr_id, sge, n);
	srq->wr_prod++;
	__atomic_store_n(&srq->ctrl->prod, srq->prod, __ATOMIC_RELEASE);
	__atomic_store_n(&srq->ctrl->wr_prod, srq->wr_prod, __ATOMIC_RELEASE);
}

/* ---- the wire ------------------------------------------------------------------ */

unsigned int fx_wire_take(struct fx *fx, struct fx_pkt *out, unsigned int max)
{
	struct rn_wire *w = fx->dev.engines[0]->wire;
	unsigned int i, n = w->ntx;

	assert_true(n <= max);
	for (i = 0; i < n; i++) {
		memcpy(out[i].buf, w->tx[i].buf, w->tx[i].len);
		out[i].len = w->tx[i].len;
		assert_int_equal(rn_pkt_parse(out[i].buf, out[i].len, &out[i].p),
				 RN_PKT_OK);
	}
	w->ntx = 0;
	return n;
}

bool fx_wire_arrive(struct fx *fx, const struct sockaddr_in *from, uint8_t tos,
		    const struct rn_pkt *p)
{
	struct rn_device *dev = &fx->dev;
	struct rn_wire_sock *s = &dev->engines[0]->wire->socks[0];
	static uint8_t buf[RN_WIRE_PKT_MAX];
	struct rn_wire_pkt pkt = {
		.sock = s,
		.from = (const struct sockaddr *)from,
		.ttl = 64,
		.tos = tos,
	};
	struct rn_icrc_flow4 flow = {
		.saddr = from->sin_addr,
		.daddr = s->local.v4.sin_addr,
		.sport = ntohs(from->sin_port),
		.dport = RN_PKT_UDP_DPORT,
	};
	size_t len;

	len = rn_pkt_build(p, buf, sizeof(buf));
	if (!len)
		return false;
	rn_icrc_seal_ipv4(&flow, (uint16_t)(len * 7919), buf, len);
	rn_wire_receive_packet(dev->engines[0]->wire, pkt, buf, len);
	return true;
}

void fx_wire_recv(struct fx_qp *qp, const struct rn_pkt *p)
{
	struct rn_wire_qp *wq = qp->dq->wire;

	assert_non_null(wq);
	assert_int_equal(wq->peer.family, AF_INET);
	assert_true(fx_wire_arrive(qp->fx, &wq->peer.addr.v4, RN_WIRE_ECN_ECT0, p));
}

void fx_wire_batch_end(struct fx *fx)
{
	/* netio.c: the end of receive_batch */
	rn_wire_write_flush(fx->dev.engines[0]->wire);
	rn_wire_send_acks(fx->dev.engines[0]->wire);
}

void fx_wire_deliver(struct fx_qp *qp, const struct rn_pkt *p)
{
	fx_wire_recv(qp, p);
	fx_wire_batch_end(qp->fx);
}

bool fx_wire_run(struct fx_qp *qp, unsigned int budget)
{
	assert_non_null(qp->dq->wire);
	rn_engine_doorbell(qp->dq);
	return qp->dq->transport->run(qp->dq, rn_now_ns(), budget);
}

void fx_assert_event(struct fx *fx, uint32_t want, const void *element)
{
	uint64_t el;
	uint32_t type;

	assert_true(fx_event(fx, &type, &el));
	assert_int_equal(type, want);
	assert_int_equal(el, (uintptr_t)element);
}

void fx_assert_no_event(struct fx *fx)
{
	uint64_t el;
	uint32_t type;

	assert_false(fx_event(fx, &type, &el));
}

uint64_t fx_counter(struct fx *fx, enum rn_counter c)
{
	return fx->dev.engines[0]->counters[c];
}
