// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The port's I/O: one UDP socket per GID (its address, port 4791), packets
 * out in batches (sendmmsg), packets in in batches (recvmmsg), the ICRC
 * sealed on every packet sent and checked on every packet received, and
 * the dispatch of what arrives to the QP it names.
 *
 * Sockets are unconnected with IP_PMTUDISC_DO: the kernel then writes
 * IPv4 Identification 0 and DF into every packet, which the ICRC covers
 * (docs/wire.md, "ICRC").  A received IPv4 packet's ID is not visible to a
 * UDP socket; rn_icrc_check_ipv4 recovers it (and DF) from the ICRC itself,
 * so every packet is checked with an ordinary socket: no raw sockets, no
 * privilege beyond binding port 4791.  Packets whose DF was clear are
 * refused: rxe and ringnicd always set it, and refusing it catches the
 * single-bit errors the recovery could otherwise take for a cleared DF.
 *
 * Every packet leaves from port 4791: a userspace socket has one source
 * port, and receivers (rxe included) do not look at it.
 *
 * With several engines each has a socket for each address, all of them in
 * one SO_REUSEPORT group, and a classic BPF program picks the socket of
 * the engine that owns the QP a packet names (rn_wire_steer): a packet
 * reaches its engine without a hop through another.  UDP GRO is off
 * then, since it merges packets of one address pair whatever QP they are
 * for, and a run of packets sent as one (UDP GSO) goes to one QP.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <netinet/udp.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "engine/capture.h"
#include "wire/internal.h"

#ifndef UDP_NO_CHECK6_RX
#define UDP_NO_CHECK6_RX 102
#endif

/* Socket buffers: a window of full-size packets for each of many QPs. */
#define RN_WIRE_SOCKBUF (16 << 20)
/* Receive batches one pass takes from each socket before other work. */
#define RN_WIRE_RX_ROUNDS 4

/*
 * The faster CRC-32 on this CPU (icrc.c: emulated CPUs differ): the least
 * time of a few rounds sealing a packet of 1 KiB payload, not what a
 * preemption added to one round.  Said in the log.
 */
#define CRC_TIMED_PACKETS 32
#define CRC_TIMED_ROUNDS 5

static void pick_crc(const struct rn_device *dev)
{
	static uint8_t pkt[RN_PKT_BTH_BYTES + 1024 + RN_PKT_ICRC_BYTES];
	const struct rn_icrc_flow4 flow = { .dport = RN_PKT_UDP_DPORT };
	uint64_t best_ns = UINT64_MAX;
	unsigned int best = 0, i, round, k;
	char times[128] = "";
	size_t n = 0;

	for (i = 0; rn_icrc_crc_name(i); i++) {
		uint64_t least = UINT64_MAX;

		rn_icrc_use_crc(i);
		for (round = 0; round < CRC_TIMED_ROUNDS; round++) {
			uint64_t start = rn_now_ns(), t;

			for (k = 0; k < CRC_TIMED_PACKETS; k++)
				rn_icrc_seal_ipv4(&flow, (uint16_t)k, pkt,
						  sizeof(pkt));
			t = rn_now_ns() - start;
			if (t < least)
				least = t;
		}
		least /= CRC_TIMED_PACKETS;
		if (least < best_ns) {
			best_ns = least;
			best = i;
		}
		if (n < sizeof(times))
			n += (size_t)snprintf(times + n, sizeof(times) - n,
					      "%s%s %" PRIu64 " ns",
					      i ? ", " : "",
					      rn_icrc_crc_name(i), least);
	}
	rn_icrc_use_crc(best);
	rn_info("%s: ICRC by %s's CRC-32 (a 1 KiB packet: %s)\n", dev->name,
		rn_icrc_crc_name(best), times);
}

/* ---- sockets --------------------------------------------------------------- */

/*
 * A GID as a socket address, port 4791.  An IPv6 link-local address needs
 * its interface: the port's netdev.
 */
socklen_t rn_wire_gid_addr(const struct rn_device *dev, const uint8_t *gid,
			   struct sockaddr_in6 *v6, struct sockaddr_in *v4)
{
	if (rn_gid_is_ipv4(gid)) {
		memset(v4, 0, sizeof(*v4));
		v4->sin_family = AF_INET;
		v4->sin_port = htons(RN_PKT_UDP_DPORT);
		memcpy(&v4->sin_addr, gid + 12, 4);
		return sizeof(*v4);
	}
	memset(v6, 0, sizeof(*v6));
	v6->sin6_family = AF_INET6;
	v6->sin6_port = htons(RN_PKT_UDP_DPORT);
	memcpy(&v6->sin6_addr, gid, 16);
	if (rn_gid_is_link_local(gid))
		v6->sin6_scope_id = dev->port.ifindex;
	return sizeof(*v6);
}

static void set_int(int fd, int level, int name, int value)
{
	setsockopt(fd, level, name, &value, sizeof(value));
}

/* Big buffers: past rmem_max/wmem_max when we may (CAP_NET_ADMIN). */
/* The TTL (hop limit) the socket gives packets that do not set one. */
static uint8_t get_ttl(int fd, sa_family_t family)
{
	socklen_t len = sizeof(int);
	int v = 64;

	if (family == AF_INET)
		getsockopt(fd, IPPROTO_IP, IP_TTL, &v, &len);
	else
		getsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_HOPS, &v, &len);
	return v > 0 && v < 256 ? (uint8_t)v : 64;
}

static void size_buffers(int fd)
{
	int v = RN_WIRE_SOCKBUF;

	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)))
		set_int(fd, SOL_SOCKET, SO_RCVBUF, v);
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)))
		set_int(fd, SOL_SOCKET, SO_SNDBUF, v);
}

static void sock_close(struct rn_wire *w, struct rn_wire_sock *s)
{
	if (s->fd < 0)
		return;
	epoll_ctl(w->engine->epoll_fd, EPOLL_CTL_DEL, s->fd, NULL);
	close(s->fd);
	s->fd = -1;
}

static int sock_open(struct rn_wire *w, struct rn_wire_sock *s,
		     const uint8_t *gid)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &s->watch };
	socklen_t len = rn_wire_gid_addr(w->dev, gid, &s->local.v6, &s->local.v4);
	int fd;

	s->family = s->local.v4.sin_family;
	fd = socket(s->family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    IPPROTO_UDP);
	if (fd < 0)
		return errno;
	/* Traffic class 0, ECT(0): a packet that differs says so (tx_control). */
	if (s->family == AF_INET) {
		set_int(fd, IPPROTO_IP, IP_TOS, RN_WIRE_ECN_ECT0);
		set_int(fd, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO);
		set_int(fd, IPPROTO_IP, IP_RECVTTL, 1);
		set_int(fd, IPPROTO_IP, IP_RECVTOS, 1);
	} else {
		set_int(fd, IPPROTO_IPV6, IPV6_TCLASS, RN_WIRE_ECN_ECT0);
		set_int(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
		set_int(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, IPV6_PMTUDISC_DO);
		set_int(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, 1);
		set_int(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1);
		/* rxe sends UDP checksum 0, which IPv6 sockets refuse. */
		set_int(fd, IPPROTO_UDP, UDP_NO_CHECK6_RX, 1);
	}
	size_buffers(fd);
	s->ttl = get_ttl(fd, s->family);
	/* UDP GSO (Linux 4.18): runs of equal packets as one datagram. */
	s->gso = !setsockopt(fd, SOL_UDP, UDP_SEGMENT, &(int){ 0 }, sizeof(int));
	/* UDP GRO (Linux 5.0): such runs may come in as one, not cut up by
	 * the ingress (a veth peer's GSO datagram, a NIC's GRO).
	 */
	if (w->dev->nengines == 1)
		set_int(fd, SOL_UDP, UDP_GRO, 1);
	else
		set_int(fd, SOL_SOCKET, SO_REUSEPORT, 1);
	if (bind(fd, (struct sockaddr *)&s->local, len) ||
	    epoll_ctl(w->engine->epoll_fd, EPOLL_CTL_ADD, fd, &ev)) {
		int ret = errno;

		close(fd);
		return ret;
	}
	s->watch = (struct rn_watch){ RN_WATCH_WIRE, s };
	s->fd = fd;
	return 0;
}

static bool sock_matches(const struct rn_device *dev,
			 const struct rn_wire_sock *s, const uint8_t *gid)
{
	struct sockaddr_in6 v6;
	struct sockaddr_in v4;
	socklen_t len = rn_wire_gid_addr(dev, gid, &v6, &v4);

	return s->fd >= 0 && !memcmp(&s->local, len == sizeof(v4) ?
						   (void *)&v4 : (void *)&v6,
				     len);
}

/*
 * The program of a group of n engines' sockets: the BTH's destination QP
 * (the UDP payload's bytes 5 to 7), its index modulo n is the engine
 * (verbs/qp.c), which is its socket's place in the group (the order they
 * were bound in).  A packet too short for a BTH goes to engine 0, which
 * drops it.  Returns 0 or errno.
 */
int rn_wire_steer(int fd, uint32_t n)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 4),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, RN_QPN_INDEX_MASK),
		BPF_STMT(BPF_ALU | BPF_MOD | BPF_K, n),
		BPF_STMT(BPF_RET | BPF_A, 0),
	};
	struct sock_fprog prog = { .len = 4, .filter = code };

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog,
			  sizeof(prog)) ? errno : 0;
}

/*
 * With several engines their sockets share the port: first see that
 * nobody else has it (a socket alone, bound for a moment), since another
 * process of our user could join the group unseen.
 */
static int port_free(struct rn_device *dev, const uint8_t *gid)
{
	union rn_sockaddr sa;
	socklen_t len = rn_wire_gid_addr(dev, gid, &sa.v6, &sa.v4);
	int fd = socket(sa.sa.sa_family, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);
	int ret = 0;

	if (fd < 0)
		return errno;
	if (sa.sa.sa_family == AF_INET6)
		set_int(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
	if (bind(fd, &sa.sa, len))
		ret = errno;
	close(fd);
	return ret;
}

/* Entry i's socket on every engine, steered; 0 or why not. */
static int socks_open(struct rn_device *dev, unsigned int i, const uint8_t *gid)
{
	uint32_t k;
	int ret = dev->nengines > 1 ? port_free(dev, gid) : 0;

	for (k = 0; !ret && k < dev->nengines; k++) {
		struct rn_wire *w = dev->engines[k]->wire;

		w->socks[i].gid_index = i;
		ret = sock_open(w, &w->socks[i], gid);
	}
	if (!ret && dev->nengines > 1)
		ret = rn_wire_steer(dev->engines[0]->wire->socks[i].fd,
				    dev->nengines);
	if (ret)
		while (k--)
			sock_close(dev->engines[k]->wire,
				   &dev->engines[k]->wire->socks[i]);
	return ret;
}

/* Entry i's sockets for gid, 0 or why not; told when that changes. */
static int sock_for(struct rn_device *dev, unsigned int i, const uint8_t *gid)
{
	int was = dev->port.gid_errors[i], ret;
	char a[INET6_ADDRSTRLEN] = "?";

	ret = socks_open(dev, i, gid);
	if (ret == was)
		return ret;
	if (rn_gid_is_ipv4(gid))
		inet_ntop(AF_INET, gid + 12, a, sizeof(a));
	else
		inet_ntop(AF_INET6, gid, a, sizeof(a));
	if (ret)
		rn_warn("%s: GID %u (%s): cannot bind UDP port %u: %s%s\n",
			dev->name, i, a, RN_PKT_UDP_DPORT, strerror(ret),
			ret == EADDRINUSE ? " (another RoCE stack in this network "
					    "namespace, such as rdma_rxe?)" : "");
	else
		rn_info("%s: GID %u (%s): UDP port %u bound\n", dev->name, i, a,
			RN_PKT_UDP_DPORT);
	return ret;
}

/*
 * The GID table changed, or entries wait for their socket: a socket for
 * each address in it, and no other.  An address whose UDP port cannot be
 * bound keeps its entry, the reason in dev->port.gid_errors, which makes
 * it no GID (core/port.c).  Returns how many entries wait for a socket:
 * a loopback GID without one is a GID all the same, and waits for none.
 */
unsigned int rn_wire_addresses_changed(struct rn_device *dev)
{
	unsigned int i, k, unbound = 0;

	for (k = 0; k < dev->nengines; k++)
		rn_wire_flush(dev->engines[k]->wire);
	for (i = 0; i < RN_GID_TABLE_LEN; i++) {
		const uint8_t *gid = dev->port.gids[i].raw;

		if (!rn_gid_is_zero(gid) &&
		    sock_matches(dev, &dev->engines[0]->wire->socks[i], gid))
			continue;
		for (k = 0; k < dev->nengines; k++)
			sock_close(dev->engines[k]->wire,
				   &dev->engines[k]->wire->socks[i]);
		dev->port.gid_errors[i] = rn_gid_is_zero(gid) ? 0 :
							      sock_for(dev, i, gid);
		/* A loopback GID is one without its socket: no retry. */
		unbound += !rn_port_gid_valid(dev, i) && !rn_gid_is_zero(gid);
	}
	return unbound;
}

void rn_wire_close(struct rn_device *dev)
{
	unsigned int i, k;

	for (k = 0; dev->engines && k < dev->nengines; k++) {
		struct rn_wire *w = dev->engines[k] ? dev->engines[k]->wire : NULL;

		if (!w)
			continue;
		for (i = 0; i < RN_GID_TABLE_LEN; i++)
			sock_close(w, &w->socks[i]);
		rn_wire_fault_free(w);
	}
}

/* ---- sending ------------------------------------------------------------------ */

/*
 * UDP GSO: a run of packets of one size (the last may be shorter) to one
 * address leaves as one datagram that the kernel cuts into them
 * (docs/wire.md, "GSO and GRO"), with IPv4 IDs 0, 1, 2, ... that their
 * ICRCs were sealed with.  At most 64 segments (UDP_MAX_SEGMENTS of 6.1
 * before 6.1.107), and the datagram within 64 KiB with the largest IP
 * header.
 */
#define RN_WIRE_GSO_SEGS 64
#define RN_WIRE_GSO_BYTES (65535 - 40 - 8)

/* Seal tx's ICRC as the kernel will send it from s, with IPv4 ID ip_id. */
static void seal(const struct rn_wire_sock *s, struct rn_wire_tx *tx,
		 uint16_t ip_id)
{
	if (s->family == AF_INET) {
		struct rn_icrc_flow4 f = {
			.saddr = s->local.v4.sin_addr,
			.daddr = tx->to.v4.sin_addr,
			.sport = RN_PKT_UDP_DPORT,
			.dport = RN_PKT_UDP_DPORT,
		};

		rn_icrc_seal_ipv4(&f, ip_id, tx->buf, tx->len);
	} else {
		struct rn_icrc_flow6 f = {
			.saddr = s->local.v6.sin6_addr,
			.daddr = tx->to.v6.sin6_addr,
			.sport = RN_PKT_UDP_DPORT,
			.dport = RN_PKT_UDP_DPORT,
		};

		rn_icrc_seal_ipv6(&f, tx->buf, tx->len);
	}
	if (tx->bad_icrc)
		tx->buf[tx->len - 1] ^= 0xff;
}

/* Whether tx may follow prev (the last queued) in its GSO run. */
static bool joins_run(const struct rn_wire_tx *prev,
		      const struct rn_wire_tx *tx)
{
	const struct rn_wire_tx *first = prev - prev->seg;

	return prev->len == first->len && tx->len <= first->len &&
	       prev->seg + 1u < RN_WIRE_GSO_SEGS &&
	       (prev->seg + 2u) * first->len <= RN_WIRE_GSO_BYTES &&
	       tx->tos == first->tos && tx->ttl == first->ttl &&
	       tx->dqpn == first->dqpn && tx->tolen == first->tolen &&
	       !memcmp(&tx->to, &first->to, tx->tolen);
}

/*
 * A message's ancillary data: the segment size; the TOS when not the
 * socket's (traffic class 0, ECT(0)); the TTL when not the socket's.
 */
struct tx_control {
	union {
		char buf[CMSG_SPACE(sizeof(uint16_t)) + 2 * CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	};
};

static size_t put_int_cmsg(struct tx_control *ctl, size_t len, int level,
			   int type, int value)
{
	struct cmsghdr *c = (struct cmsghdr *)(ctl->buf + len);

	c->cmsg_len = CMSG_LEN(sizeof(value));
	c->cmsg_level = level;
	c->cmsg_type = type;
	memcpy(CMSG_DATA(c), &value, sizeof(value));
	return len + CMSG_SPACE(sizeof(value));
}

static size_t tx_control(const struct rn_wire_sock *s,
			 const struct rn_wire_tx *first, unsigned int nseg,
			 struct tx_control *ctl)
{
	struct cmsghdr *c = &ctl->align;
	uint16_t gso_size = (uint16_t)first->len;
	bool v4 = s->family == AF_INET;
	size_t len = 0;

	if (nseg > 1) {
		c->cmsg_len = CMSG_LEN(sizeof(gso_size));
		c->cmsg_level = SOL_UDP;
		c->cmsg_type = UDP_SEGMENT;
		memcpy(CMSG_DATA(c), &gso_size, sizeof(gso_size));
		len += CMSG_SPACE(sizeof(gso_size));
	}
	if (first->tos != RN_WIRE_ECN_ECT0)
		len = put_int_cmsg(ctl, len, v4 ? IPPROTO_IP : IPPROTO_IPV6,
				   v4 ? IP_TOS : IPV6_TCLASS, first->tos);
	if (first->ttl)
		len = put_int_cmsg(ctl, len, v4 ? IPPROTO_IP : IPPROTO_IPV6,
				   v4 ? IP_TTL : IPV6_HOPLIMIT, first->ttl);
	return len;
}

/*
 * A run the kernel refused as one datagram: EIO where it cannot segment
 * (6.1's udp_send_skb: an IPsec route, no checksum offload; then no more
 * runs on this socket), sent again packet by packet, each sealed for the
 * ID 0 it now leaves with.
 */
static void send_singly(struct rn_wire *w, struct rn_wire_sock *s,
			struct rn_wire_tx *first, unsigned int nseg)
{
	unsigned int i;

	for (i = 0; i < nseg; i++) {
		struct rn_wire_tx *tx = &first[i];
		struct tx_control ctl;
		struct iovec iov = { tx->buf, tx->len };
		struct msghdr mh = {
			.msg_name = &tx->to,
			.msg_namelen = tx->tolen,
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = ctl.buf,
		};

		seal(s, tx, 0);
		tx->seg = 0; /* as a capture shows it: it left alone, ID 0 */
		mh.msg_controllen = tx_control(s, tx, 1, &ctl);
		if (!mh.msg_controllen)
			mh.msg_control = NULL;
		if (sendmsg(s->fd, &mh, MSG_DONTWAIT) < 0)
			rn_wire_count(w, RN_CNT_SEND_ERR);
	}
}

/* Hand the batch to the kernel; what it refuses is dropped and counted. */
void rn_wire_flush(struct rn_wire *w)
{
	struct rn_wire_sock *s;
	struct mmsghdr msgs[RN_WIRE_TX_BATCH];
	struct iovec iov[RN_WIRE_TX_BATCH];
	struct tx_control ctl[RN_WIRE_TX_BATCH];
	unsigned int first[RN_WIRE_TX_BATCH], nseg[RN_WIRE_TX_BATCH];
	unsigned int i, nmsg = 0, done = 0;

	/* No packet says a WRITE arrived before its payload is in memory. */
	rn_wire_write_out(w);
	if (!w->ntx)
		return;
	s = &w->socks[w->tx_sock];
	for (i = 0; i < w->ntx; i++) {
		struct rn_wire_tx *tx = &w->tx[i];
		struct mmsghdr *m;

		iov[i] = (struct iovec){ tx->buf, tx->len };
		if (tx->seg) {
			msgs[nmsg - 1].msg_hdr.msg_iovlen++;
			nseg[nmsg - 1]++;
			continue;
		}
		first[nmsg] = i;
		nseg[nmsg] = 1;
		m = &msgs[nmsg++];
		*m = (struct mmsghdr){ .msg_hdr = {
			.msg_name = &tx->to,
			.msg_namelen = tx->tolen,
			.msg_iov = &iov[i],
			.msg_iovlen = 1,
		} };
	}
	for (i = 0; i < nmsg; i++) {
		struct msghdr *mh = &msgs[i].msg_hdr;

		mh->msg_controllen = tx_control(s, &w->tx[first[i]], nseg[i],
						&ctl[i]);
		mh->msg_control = mh->msg_controllen ? ctl[i].buf : NULL;
	}
	while (s->fd >= 0 && done < nmsg) {
		int n = sendmmsg(s->fd, msgs + done, nmsg - done, MSG_DONTWAIT);

		if (n > 0) {
			done += n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (nseg[done] > 1 && errno == EIO) {
			/* Once: runs already in this batch fail the same way. */
			if (s->gso)
				rn_info("wire: the kernel refuses UDP GSO on this route: packets leave one by one\n");
			s->gso = false;
			send_singly(w, s, &w->tx[first[done]], nseg[done]);
		} else {
			/* Full buffers, no route, a message over the path
			 * MTU: these packets are lost, as on a wire; the
			 * transport recovers them.
			 */
			for (i = 0; i < nseg[done]; i++)
				rn_wire_count(w, RN_CNT_SEND_ERR);
		}
		done++;
	}
	if (rn_capturing(w->dev))
		for (i = 0; i < w->ntx; i++)
			rn_wire_capture_tx(w->dev, s, &w->tx[i]);
	w->ntx = 0;
}

/* The packet built at tx[ntx] joins the batch, from socket si. */
static void queue(struct rn_wire *w, unsigned int si)
{
	struct rn_wire_sock *s = &w->socks[si];
	struct rn_wire_tx *tx = &w->tx[w->ntx];

	tx->seg = w->ntx && s->gso && joins_run(&w->tx[w->ntx - 1], tx) ?
			  w->tx[w->ntx - 1].seg + 1 : 0;
	seal(s, tx, tx->seg);
	w->tx_sock = si;
	w->ntx++;
	rn_wire_count(w, RN_CNT_SENT_PKTS);
}

/*
 * Queue packet p to peer.  Its payload is p->payload, or when 'fill' is
 * given what fill(arg, ...) writes in place.  A peer we have no socket
 * for is a packet dropped here (counted), as a NIC without a route drops
 * it: the transport's timers deal with it.  Returns what fill returned.
 */
enum rn_dma_status rn_wire_send(struct rn_wire *w,
				const struct rn_wire_peer *peer,
				const struct rn_pkt *p, rn_wire_fill_fn fill,
				void *arg)
{
	unsigned int si = peer->sgid_index;
	struct rn_wire_sock *s = &w->socks[si];
	unsigned int hdr = rn_pkt_hdr_len(p->opcode);
	struct rn_wire_tx *tx;
	struct rn_pkt q = *p;
	enum rn_dma_status st;

	if (s->fd < 0 || s->family != peer->family) {
		rn_wire_count(w, RN_CNT_NO_ROUTE);
		return RN_DMA_OK;
	}
	if (w->ntx && (w->tx_sock != (int)si || w->ntx == RN_WIRE_TX_BATCH))
		rn_wire_flush(w);
	tx = &w->tx[w->ntx];
	if (fill && q.payload_len) {
		st = fill(arg, tx->buf + hdr, q.payload_len);
		if (st)
			return st;
		q.payload = tx->buf + hdr;
	}
	tx->len = rn_pkt_build(&q, tx->buf, sizeof(tx->buf));
	/* Congestion control governs the connected transports alone. */
	tx->tos = peer->tclass & ~RN_WIRE_ECN_MASK;
	if (rn_pkt_transport(q.opcode) != RN_PKT_UD &&
	    rn_pkt_transport(q.opcode) != RN_PKT_CN)
		tx->tos |= RN_WIRE_ECN_ECT0;
	tx->ttl = peer->hop_limit;
	if (!tx->len) {
		rn_warn("wire: cannot build a packet of opcode %#x\n", q.opcode);
		return RN_DMA_OK;
	}
	tx->tolen = peer->family == AF_INET ? sizeof(tx->to.v4) :
					      sizeof(tx->to.v6);
	tx->qpn = peer->qpn;
	tx->dqpn = q.dqpn;
	tx->bad_icrc = false;
	memcpy(&tx->to, &peer->addr, tx->tolen);
	if (!w->dev->faulty_qps) {
		queue(w, si);
		return RN_DMA_OK;
	}
	switch (rn_wire_fault_tx(w, tx, si)) {
	case RN_WIRE_TX_AS_IS:
		queue(w, si);
		break;
	case RN_WIRE_TX_TAKEN:
		return RN_DMA_OK;
	case RN_WIRE_TX_TWICE:
		queue(w, si);
		rn_wire_send_again(w, si, &w->tx[w->ntx - 1]);
		break;
	}
	rn_wire_fault_sent(w, tx->qpn);
	return RN_DMA_OK;
}

void rn_wire_send_again(struct rn_wire *w, unsigned int si,
			const struct rn_wire_tx *tx)
{
	struct rn_wire_sock *s = &w->socks[si];

	/* Its address gone since it was built (held back by a fault). */
	if (s->fd < 0 || s->family != tx->to.sa.sa_family) {
		rn_wire_count(w, RN_CNT_NO_ROUTE);
		return;
	}
	if (w->ntx && (w->tx_sock != (int)si || w->ntx == RN_WIRE_TX_BATCH))
		rn_wire_flush(w);
	memcpy(&w->tx[w->ntx], tx, sizeof(*tx));
	queue(w, si);
}

/* ---- receiving ---------------------------------------------------------------- */

static bool peer_is(const struct rn_wire_peer *peer,
		     const struct rn_wire_pkt *pkt)
{
	if (pkt->sock->gid_index != peer->sgid_index ||
	    pkt->from->sa_family != peer->family)
		return false;
	if (peer->family == AF_INET)
		return ((const struct sockaddr_in *)pkt->from)->sin_addr.s_addr ==
		       peer->addr.v4.sin_addr.s_addr;
	return !memcmp(&((const struct sockaddr_in6 *)pkt->from)->sin6_addr,
		       &peer->addr.v6.sin6_addr, sizeof(struct in6_addr));
}

/*
 * The TTL (hop limit) and TOS (traffic class) the packets arrived with;
 * returns the size of each when GRO merged several (UDP_GRO), else 0.
 */
static size_t read_cmsgs(struct msghdr *mh, struct rn_wire_pkt *pkt)
{
	struct cmsghdr *c;
	size_t merged = 0;

	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		int v = 0;

		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TTL) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			pkt->ttl = v;
		} else if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
			pkt->tos = *CMSG_DATA(c);
		} else if (c->cmsg_level == IPPROTO_IPV6 &&
			   c->cmsg_type == IPV6_HOPLIMIT) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			pkt->ttl = v;
		} else if (c->cmsg_level == IPPROTO_IPV6 &&
			   c->cmsg_type == IPV6_TCLASS) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			pkt->tos = v;
		} else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			merged = v > 0 ? (size_t)v : 0;
		}
	}
	return merged;
}

static enum rn_pkt_status check_icrc(struct rn_wire *w, struct rn_wire_pkt *pkt,
				     const uint8_t *buf, size_t len)
{
	const struct rn_wire_sock *s = pkt->sock;

	if (s->family == AF_INET) {
		const struct sockaddr_in *from = (const void *)pkt->from;
		struct rn_icrc_flow4 f = {
			.saddr = from->sin_addr,
			.daddr = s->local.v4.sin_addr,
			.sport = ntohs(from->sin_port),
			.dport = RN_PKT_UDP_DPORT,
		};
		struct rn_icrc_ipid id;
		enum rn_pkt_status st;

		st = rn_icrc_check_ipv4(&w->solver, &f, buf, len, &id);
		if (st == RN_PKT_OK && !id.df)
			st = RN_PKT_BAD_ICRC;
		pkt->ip_id = id.id;
		return st;
	} else {
		const struct sockaddr_in6 *from = (const void *)pkt->from;
		struct rn_icrc_flow6 f = {
			.saddr = from->sin6_addr,
			.daddr = s->local.v6.sin6_addr,
			.sport = ntohs(from->sin6_port),
			.dport = RN_PKT_UDP_DPORT,
		};

		return rn_icrc_check_ipv6(&f, buf, len);
	}
}

/* The QP a packet of a connected transport is for, if it may take it. */
static struct rn_wire_qp *connected_qp(struct rn_wire *w,
				       const struct rn_wire_pkt *pkt)
{
	struct rn_qp *qp = rn_qp_by_qpn(w->dev, pkt->p.dqpn);
	struct rn_wire_qp *wq = qp ? qp->wire : NULL;
	bool request = pkt->op->flags & RN_PKT_F_REQ;

	/* Another engine's QP: a packet that came in a run sent to another
	 * QP (UDP GSO of an older peer), which the steering could not split.
	 */
	if (!wq || qp->engine != w->engine ||
	    wq->transport != rn_pkt_transport(pkt->p.opcode) ||
	    !peer_is(&wq->peer, pkt))
		return NULL;
	/* An XRC initiator only completes, a target only responds. */
	if ((request && qp->qp_type == IBV_QPT_XRC_SEND) ||
	    (!request && qp->qp_type == IBV_QPT_XRC_RECV))
		return NULL;
	return wq;
}

/* A CNP: the QP it names slows down, if it sends to where the CNP came from. */
static void cnp_received(struct rn_wire *w, const struct rn_wire_pkt *pkt)
{
	struct rn_qp *qp = rn_qp_by_qpn(w->dev, pkt->p.dqpn);
	struct rn_wire_qp *wq = qp ? qp->wire : NULL;

	if (!wq || qp->engine != w->engine || !wq->sends ||
	    !peer_is(&wq->peer, pkt)) {
		rn_wire_count(w, RN_CNT_CNP_IGNORED);
		return;
	}
	rn_wire_count(w, RN_CNT_CNP_HANDLED);
	rn_wire_cc_cut(wq, rn_now_ns());
}

static void dispatch(struct rn_wire *w, const struct rn_wire_pkt *pkt)
{
	struct rn_wire_qp *wq;

	switch (rn_pkt_transport(pkt->p.opcode)) {
	case RN_PKT_CN:
		rn_wire_write_flush(w);
		cnp_received(w, pkt);
		return;
	case RN_PKT_UD:
		rn_wire_write_flush(w);
		rn_wire_ud_recv(w, pkt);
		return;
	default:
		break;
	}
	wq = connected_qp(w, pkt);
	if (!wq || !rn_wire_write_joins(w, wq, pkt))
		rn_wire_write_flush(w);
	if (!wq) {
		rn_wire_count(w, RN_CNT_NO_QP);
		return;
	}
	/* Most packets arrive ECN-capable (ECT(0)) and unmarked. */
	if ((pkt->tos & RN_WIRE_ECN_MASK) == RN_WIRE_ECN_CE)
		rn_wire_cc_marked(wq, pkt, rn_now_ns());
	if (pkt->op->flags & RN_PKT_F_REQ)
		rn_wire_responder_recv(wq, pkt);
	else
		rn_wire_completer_recv(wq, pkt);
}

/* One packet, buf[0, len), of what arrived as pkt says. */
void rn_wire_receive_packet(struct rn_wire *w, struct rn_wire_pkt pkt,
			    uint8_t *buf, size_t len)
{
	enum rn_pkt_status parsed, st;

	/* A capture sees packets as they came, bad ones too. */
	st = parsed = rn_pkt_parse(buf, len, &pkt.p);
	if (!parsed)
		st = check_icrc(w, &pkt, buf, len);
	if (rn_capturing(w->dev))
		rn_wire_capture_rx(w->dev, &pkt, buf, len);
	if (parsed) {
		rn_wire_count(w, RN_CNT_RX_MALFORMED);
		return;
	}
	if (st) {
		rn_wire_count(w, RN_CNT_RX_ICRC);
		return;
	}
	pkt.op = rn_pkt_op(pkt.p.opcode);
	pkt.udp_len = 8 + len;
	rn_wire_count(w, RN_CNT_RCVD_PKTS);
	dispatch(w, &pkt);
}

/*
 * A datagram: one packet, or (GRO) a run of packets of one size from one
 * sender, the last one maybe shorter, each checked on its own.
 */
static void receive(struct rn_wire *w, struct rn_wire_sock *s,
		    struct rn_wire_rx *rx, struct mmsghdr *m)
{
	struct rn_wire_pkt pkt = {
		.sock = s,
		.from = (const struct sockaddr *)&rx->from,
		.ttl = 64,
	};
	size_t len = m->msg_len, each, off;

	if (m->msg_hdr.msg_flags & MSG_TRUNC || m->msg_hdr.msg_namelen == 0 ||
	    pkt.from->sa_family != s->family) {
		rn_wire_count(w, RN_CNT_RX_MALFORMED);
		return;
	}
	each = read_cmsgs(&m->msg_hdr, &pkt);
	if (!each || each > len)
		each = len;
	/* No packet is longer than the largest MTU's (nor empty). */
	if (!each || each > RN_WIRE_PKT_MAX) {
		rn_wire_count(w, RN_CNT_RX_MALFORMED);
		return;
	}
	for (off = 0; off < len; off += each)
		rn_wire_receive_packet(w, pkt, rx->buf + off,
				       len - off < each ? len - off : each);
}

/* One batch from socket s; returns how many packets it held. */
static int receive_batch(struct rn_wire *w, struct rn_wire_sock *s)
{
	struct mmsghdr msgs[RN_WIRE_RX_BATCH];
	struct iovec iov[RN_WIRE_RX_BATCH];
	int i, n;

	for (i = 0; i < RN_WIRE_RX_BATCH; i++) {
		iov[i] = (struct iovec){ w->rx[i].buf, sizeof(w->rx[i].buf) };
		msgs[i] = (struct mmsghdr){ .msg_hdr = {
			.msg_name = &w->rx[i].from,
			.msg_namelen = sizeof(w->rx[i].from),
			.msg_iov = &iov[i],
			.msg_iovlen = 1,
			.msg_control = w->rx[i].cmsg,
			.msg_controllen = sizeof(w->rx[i].cmsg),
		} };
	}
	n = recvmmsg(s->fd, msgs, RN_WIRE_RX_BATCH, MSG_DONTWAIT, NULL);
	for (i = 0; i < n; i++)
		receive(w, s, &w->rx[i], &msgs[i]);
	rn_wire_write_flush(w);
	/* The ACKs this batch asked for, coalesced: one per QP. */
	rn_wire_send_acks(w);
	return n;
}

/*
 * Work the transport has without waiting for a packet or a timer: READ
 * responses or atomic ACKs of a QP the pacer does not hold.
 */
static bool responses_pending(const struct rn_wire *w)
{
	struct rn_list *pos, *tmp;

	rn_list_for_each_safe(pos, tmp, &w->work) {
		const struct rn_wire_qp *wq =
			rn_container_of(pos, struct rn_wire_qp, work_link);

		if (!wq->cc.paced)
			return true;
	}
	return false;
}

/* Take what arrived on socket s (a few batches at most). */
static bool receive_from(struct rn_wire *w, struct rn_wire_sock *s)
{
	bool progress = false;
	unsigned int round;

	for (round = 0; s->fd >= 0 && round < RN_WIRE_RX_ROUNDS; round++) {
		int n = receive_batch(w, s);

		if (n <= 0)
			break;
		progress = true;
		if (n < RN_WIRE_RX_BATCH)
			break;
	}
	return progress;
}

/*
 * The engine's look at the wire, every pass: the sockets connected QPs
 * use.  The others (datagrams, strays) wait for the event loop, which
 * calls rn_wire_readable: a system call per pass per idle socket would
 * cost the local path.
 */
static bool receive_all(struct rn_wire *w)
{
	bool progress = false;
	unsigned int i;

	for (i = 0; i < RN_GID_TABLE_LEN; i++)
		if (w->socks[i].qps)
			progress |= receive_from(w, &w->socks[i]);
	rn_wire_flush(w);
	return progress;
}

/* Engine e's epoll saw socket s readable (its struct rn_wire_sock *). */
void rn_wire_readable(struct rn_engine *e, void *sock)
{
	receive_from(e->wire, sock);
	rn_wire_flush(e->wire);
}

/* ---- the wire as the engine sees it ---------------------------------------- */

/* The engine's look at the wire, every pass: only while QPs are on it. */
static bool network_receive(struct rn_engine *e)
{
	return e->wire->nqps && receive_all(e->wire);
}

static bool network_reply(struct rn_engine *e, uint64_t now)
{
	return rn_wire_reply(e->wire, now);
}

static void network_flush(struct rn_engine *e)
{
	rn_wire_flush(e->wire);
}

static bool network_pending(const struct rn_engine *e)
{
	return responses_pending(e->wire);
}

static const struct rn_network_ops wire_network = {
	.receive = network_receive,
	.reply = network_reply,
	.flush = network_flush,
	.pending = network_pending,
	.ud_send = rn_wire_ud_send,
};

/* Engine e's share of the wire. */
int rn_wire_init(struct rn_engine *e)
{
	struct rn_device *dev = e->dev;
	struct rn_wire *w = calloc(1, sizeof(*w));
	unsigned int i;

	if (!w)
		return ENOMEM;
	w->dev = dev;
	w->engine = e;
	for (i = 0; i < RN_GID_TABLE_LEN; i++)
		w->socks[i].fd = -1;
	rn_list_init(&w->acks);
	rn_list_init(&w->work);
	rn_icrc_solver_init(&w->solver);
	if (e->index == 0) /* the CRC is the process's: chosen once */
		pick_crc(dev);
	rn_wire_fault_init(w);
	e->wire = w;
	rn_engine_set_network(e, &wire_network);
	return 0;
}

void rn_wire_set_gsi(struct rn_device *dev, rn_wire_gsi_fn fn)
{
	uint32_t k;

	for (k = 0; k < dev->nengines; k++)
		dev->engines[k]->wire->gsi_recv = fn;
}
