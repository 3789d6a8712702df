// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "engine/capture.h"
#include "roce/packet.h"

/* The most a record holds: a whole IP packet, as LINKTYPE_RAW takes it. */
#define RN_CAPTURE_SNAPLEN_MAX 65535u
/* Room for bursts while ringnic-dump writes: a few ms at line rate. */
#define RN_CAPTURE_SNDBUF (8 << 20)

struct rn_capture {
	struct rn_list link; /* in the device's captures */
	struct rn_client *client; /* its connection */
	uint32_t qpn; /* or RN_CAPTURE_ANY_QP */
	pid_t pid; /* the QPs' creator, or 0 */
	uint32_t snaplen;
	/* Root and ringnicd's own user see every packet; anyone else the
	 * packets of QPs that their own processes created.
	 */
	bool everything;
	/* Records lost since the last one that went out; the engines count
	 * under lock, which also keeps their records in order.
	 */
	pthread_mutex_t lock;
	uint32_t dropped;
};

int rn_capture_start(struct rn_client *client, uint32_t qpn, pid_t pid,
		     uint32_t snaplen)
{
	struct rn_capture *c;
	int size = RN_CAPTURE_SNDBUF;

	if ((qpn != RN_CAPTURE_ANY_QP && qpn > 0xffffff) || pid < 0)
		return EINVAL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return ENOMEM;
	c->client = client;
	c->qpn = qpn;
	c->pid = pid;
	c->snaplen = snaplen && snaplen < RN_CAPTURE_SNAPLEN_MAX ?
			     snaplen : RN_CAPTURE_SNAPLEN_MAX;
	c->everything = client->uid == 0 || client->uid == geteuid();
	/* Beyond net.core.wmem_max only where ringnicd may (CAP_NET_ADMIN). */
	if (setsockopt(client->fd, SOL_SOCKET, SO_SNDBUFFORCE, &size,
		       sizeof(size)))
		setsockopt(client->fd, SOL_SOCKET, SO_SNDBUF, &size,
			   sizeof(size));
	pthread_mutex_init(&c->lock, NULL);
	rn_list_add_tail(&client->dev->captures, &c->link);
	client->capture = c;
	rn_info("capture by pid %d (uid %u) started: %s\n", client->pid,
		(unsigned)client->uid,
		c->everything ? "every packet" : "its user's QPs");
	return 0;
}

void rn_capture_stop(struct rn_client *client)
{
	struct rn_capture *c = client->capture;

	if (!c)
		return;
	rn_list_del(&c->link);
	client->capture = NULL;
	rn_info("capture by pid %d ended\n", client->pid);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

/* May capture c show a packet of our QP qpn (0: none)? */
static bool sees(struct rn_device *dev, const struct rn_capture *c,
		 uint32_t qpn)
{
	const struct rn_qp *qp = qpn ? rn_qp_by_qpn(dev, qpn) : NULL;

	if (c->everything && !c->pid)
		return true;
	return qp && (c->everything || qp->client->uid == c->client->uid) &&
	       (!c->pid || qp->client->pid == c->pid);
}

/* Does c take a packet of qpn, and of peer_qpn (0: none)?  A packet
 * between two QPs of ours is either's.
 */
static bool takes_qps(struct rn_device *dev, const struct rn_capture *c,
		      uint32_t qpn, uint32_t peer_qpn)
{
	if (c->qpn == RN_CAPTURE_ANY_QP || c->qpn == qpn) {
		if (sees(dev, c, qpn))
			return true;
	}
	return peer_qpn && (c->qpn == RN_CAPTURE_ANY_QP || c->qpn == peer_qpn) &&
	       sees(dev, c, peer_qpn);
}

static bool takes(struct rn_device *dev, const struct rn_capture *c,
		  const struct rn_capture_pkt *pkt)
{
	return takes_qps(dev, c, pkt->qpn, pkt->peer_qpn);
}

uint32_t rn_capture_wanted(struct rn_device *dev, uint32_t qpn,
			   uint32_t peer_qpn)
{
	struct rn_list *pos;
	uint32_t keep = 0;

	for (pos = dev->captures.next; pos != &dev->captures;
	     pos = pos->next) {
		struct rn_capture *c = rn_container_of(pos, struct rn_capture,
						       link);

		if (c->snaplen > keep && takes_qps(dev, c, qpn, peer_qpn))
			keep = c->snaplen;
	}
	return keep;
}

static void send_record(struct rn_capture *c, struct rn_capture_rec *rec,
			const uint8_t *head, size_t head_len,
			const struct rn_capture_pkt *pkt)
{
	size_t keep = c->snaplen;
	struct iovec iov[3] = {
		{ rec, sizeof(*rec) },
		{ (void *)head, head_len < keep ? head_len : keep },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 3 };

	keep -= iov[1].iov_len;
	iov[2] = (struct iovec){ (void *)pkt->body,
				 pkt->body_len < keep ? pkt->body_len : keep };
	pthread_mutex_lock(&c->lock);
	rec->dropped = c->dropped;
	/* A capture that cannot keep up loses records, never the device's
	 * time; one whose reader is gone is closed by the event loop.
	 */
	if (sendmsg(c->client->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
		c->dropped++;
	else
		c->dropped = 0;
	pthread_mutex_unlock(&c->lock);
}

void rn_capture_packet(struct rn_device *dev, const struct rn_capture_pkt *pkt)
{
	struct rn_ip_fields ip = pkt->ip;
	uint8_t head[RN_PKT_IPV6_BYTES + RN_PKT_UDP_BYTES];
	struct rn_capture_rec rec = {
		.qpn = pkt->qpn,
		.dir = pkt->dir,
	};
	struct rn_list *pos;
	struct timespec ts;
	size_t head_len;

	ip.udp_len = (uint32_t)(RN_PKT_UDP_BYTES + pkt->body_len);
	head_len = rn_ip_write(head, &ip);
	rn_udp_write(head + head_len, pkt->sport, pkt->dport, ip.udp_len);
	head_len += RN_PKT_UDP_BYTES;
	rec.len = (uint32_t)(head_len + pkt->body_len);
	clock_gettime(CLOCK_REALTIME, &ts);
	rec.time_ns = (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
	for (pos = dev->captures.next; pos != &dev->captures;
	     pos = pos->next) {
		struct rn_capture *c = rn_container_of(pos, struct rn_capture,
						       link);

		if (takes(dev, c, pkt))
			send_record(c, &rec, head, head_len, pkt);
	}
}
