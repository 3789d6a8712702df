// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rdma_cm's addresses on ringnic: an id's source address is one of the
 * port's GIDs (or the wildcard), its port is taken in the id's port space
 * as a TCP or UDP port is, and the way to a destination is the one the
 * kernel's routing table gives: the source address a UDP socket connected
 * to it would use (docs/rdma_cm.md, "Addresses").
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "cm/cm.h"

/* Linux's default ip_local_port_range. */
#define EPHEMERAL_FIRST 32768
#define EPHEMERAL_LAST 60999

/*
 * The wildcard, as cma.c counts it: the zero address and the loopback
 * ones.  An id bound to 127.0.0.1 is on no device, listens for every
 * address of the port and shares its port as the wildcard does; so
 * libfabric's verbs provider, which binds "localhost" when told no
 * address, listens as it does on rxe.
 */
static bool addr_any(const struct sockaddr *sa)
{
	const struct in6_addr *a6 = &((const struct sockaddr_in6 *)sa)->sin6_addr;

	if (sa->sa_family == AF_INET) {
		in_addr_t a = ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr);

		return a == INADDR_ANY || (a >> 24) == IN_LOOPBACKNET;
	}
	return IN6_IS_ADDR_UNSPECIFIED(a6) || IN6_IS_ADDR_LOOPBACK(a6);
}

uint16_t rn_cm_addr_port(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
}

static void addr_set_port(struct sockaddr *sa, uint16_t port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons(port);
	else
		((struct sockaddr_in6 *)sa)->sin6_port = htons(port);
}

socklen_t rn_cm_addr_len(const struct sockaddr *sa)
{
	switch (sa->sa_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0;
	}
}

static bool same_ip(const struct sockaddr *a, const struct sockaddr *b)
{
	uint8_t ga[16], gb[16];

	rn_gid_from_sockaddr(ga, a);
	rn_gid_from_sockaddr(gb, b);
	return !memcmp(ga, gb, sizeof(ga));
}

/* May ids a and b, both bound to one port of one space, coexist? */
static bool may_share(const struct rn_cm_id *a, const struct rn_cm_id *b)
{
	const struct sockaddr *sa = (const void *)&a->src;
	const struct sockaddr *sb = (const void *)&b->src;

	if (a->reuseaddr && b->reuseaddr && a->state != RN_CM_LISTEN &&
	    b->state != RN_CM_LISTEN)
		return true;
	if (addr_any(sa) || addr_any(sb))
		return sa->sa_family != sb->sa_family &&
		       ((sa->sa_family == AF_INET6 && a->afonly) ||
			(sb->sa_family == AF_INET6 && b->afonly));
	return !same_ip(sa, sb);
}

static bool port_free(struct rn_cm_id *id, uint16_t port)
{
	struct rn_cm *cm = id->cm;
	uint32_t i;

	for (i = 0; i < cm->ids.size; i++) {
		struct rn_cm_id *o = rn_table_get(&cm->ids, i);

		if (!o || o == id || !o->port_bound || o->ps != id->ps ||
		    rn_cm_addr_port((const void *)&o->src) != port)
			continue;
		if (!may_share(id, o))
			return false;
	}
	return true;
}

/* Take src's port, or an ephemeral one when it is 0. */
static int take_port(struct rn_cm_id *id)
{
	struct sockaddr *sa = (struct sockaddr *)&id->src;
	uint32_t span = EPHEMERAL_LAST - EPHEMERAL_FIRST + 1, start, i;
	uint16_t port = rn_cm_addr_port(sa);

	if (port) {
		if (!port_free(id, port))
			return EADDRINUSE;
		id->port_bound = true;
		return 0;
	}
	if (getrandom(&start, sizeof(start), 0) != sizeof(start))
		start = (uint32_t)getpid();
	for (i = 0; i < span; i++) {
		port = (uint16_t)(EPHEMERAL_FIRST + (start + i) % span);
		if (port_free(id, port)) {
			addr_set_port(sa, port);
			id->port_bound = true;
			return 0;
		}
	}
	return EADDRNOTAVAIL;
}

void rn_cm_release_port(struct rn_cm_id *id)
{
	id->port_bound = false;
}

/* Is sa an address of this host (of any interface)? */
static bool host_address(const struct sockaddr *sa)
{
	struct sockaddr_storage ss;
	int fd = socket(sa->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool local;

	if (fd < 0)
		return false;
	memcpy(&ss, sa, rn_cm_addr_len(sa));
	addr_set_port((struct sockaddr *)&ss, 0);
	local = !bind(fd, (struct sockaddr *)&ss, rn_cm_addr_len(sa));
	close(fd);
	return local;
}

/*
 * Make the id's source sa: the wildcard, or one of the port's addresses.
 * Another address of the host has no RDMA device (ENODEV, as the kernel
 * answers); one the host does not have is not available.
 */
static int set_source(struct rn_cm_id *id, const struct sockaddr *sa)
{
	struct rn_device *dev = id->cm->dev;
	uint8_t gid[16];
	int index = -1;

	if (!addr_any(sa)) {
		rn_gid_from_sockaddr(gid, sa);
		index = rn_port_gid_index(dev, gid);
		if (index < 0)
			return host_address(sa) ? ENODEV : EADDRNOTAVAIL;
	}
	memset(&id->src, 0, sizeof(id->src));
	memcpy(&id->src, sa, rn_cm_addr_len(sa));
	id->on_device = index >= 0;
	id->gid_index = index;
	return 0;
}

int rn_cm_bind(struct rn_cm_id *id, const struct sockaddr *sa)
{
	int ret;

	if (!rn_cm_addr_len(sa))
		return EAFNOSUPPORT;
	if (id->state != RN_CM_IDLE)
		return EINVAL;
	ret = set_source(id, sa);
	if (!ret)
		ret = take_port(id);
	if (ret)
		return ret;
	id->state = RN_CM_BOUND;
	return 0;
}

/* The id goes on the port's first GID, its source a loopback address. */
static void loopback_source(struct rn_cm_id *id)
{
	struct sockaddr_in *v4 = (struct sockaddr_in *)&id->src;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&id->src;

	if (id->src.ss_family == AF_INET && v4->sin_addr.s_addr == INADDR_ANY)
		v4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else if (id->src.ss_family == AF_INET6 &&
		 IN6_IS_ADDR_UNSPECIFIED(&v6->sin6_addr))
		v6->sin6_addr = in6addr_loopback;
	id->on_device = true;
	id->gid_index = 0;
}

/*
 * The address the kernel would send from to reach dst: that of a UDP
 * socket connected to it.  Returns 0 or a positive errno.
 */
static int route_source(const struct sockaddr *dst,
			struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	struct sockaddr_storage to;
	int fd, ret = 0;

	memcpy(&to, dst, rn_cm_addr_len(dst));
	addr_set_port((struct sockaddr *)&to, 4791);
	fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (connect(fd, (struct sockaddr *)&to, rn_cm_addr_len(dst)) ||
	    getsockname(fd, (struct sockaddr *)src, &len))
		ret = errno;
	close(fd);
	return ret;
}

int rn_cm_resolve_addr(struct rn_cm_id *id, const struct sockaddr *src,
		       const struct sockaddr *dst)
{
	struct rn_device *dev = id->cm->dev;
	struct sockaddr_storage from;
	struct rn_cm_event *ev;
	int ret, status = 0;
	uint8_t gid[16];

	if (!rn_cm_addr_len(dst))
		return EINVAL;
	if (id->state == RN_CM_IDLE) {
		struct sockaddr_storage any = { .ss_family = dst->sa_family };

		ret = rn_cm_bind(id, src && src->sa_family ? src :
				 (struct sockaddr *)&any);
		if (ret)
			return ret;
	}
	if (id->state != RN_CM_BOUND && id->state != RN_CM_ADDR_RESOLVED)
		return EINVAL;
	if (id->src.ss_family != dst->sa_family)
		return EINVAL;

	/*
	 * The source, where the id is not bound to one already.  A wildcard
	 * or loopback destination resolves, as cma_resolve_loopback does,
	 * but leads nowhere on RoCE: its route fails (ENODEV).
	 */
	id->loopback = addr_any(dst);
	if (id->loopback && !id->on_device) {
		/* cma_bind_loopback: the port's first GID, from the loopback
		 * address of the family.
		 */
		loopback_source(id);
	} else if (!id->on_device) {
		ret = route_source(dst, &from);
		if (ret) {
			status = -ret;
		} else {
			uint16_t port = rn_cm_addr_port((void *)&id->src);

			rn_gid_from_sockaddr(gid, (struct sockaddr *)&from);
			if (rn_port_gid_index(dev, gid) < 0) {
				status = -ENODEV; /* not through our netdev */
			} else {
				addr_set_port((struct sockaddr *)&from,
						    port);
				set_source(id, (struct sockaddr *)&from);
			}
		}
	}
	ev = rn_cm_event(id, status ? RN_CM_EVENT_ADDR_ERROR :
				      RN_CM_EVENT_ADDR_RESOLVED, status);
	if (!status) {
		memset(&id->dst, 0, sizeof(id->dst));
		memcpy(&id->dst, dst, rn_cm_addr_len(dst));
		if (id->loopback)
			memcpy(id->dgid, dev->port.gids[id->gid_index].raw, 16);
		else
			rn_gid_from_sockaddr(id->dgid, dst);
		id->hop_limit = 64; /* IPv4's default TTL, as the route gives */
		id->state = RN_CM_ADDR_RESOLVED;
	}
	rn_cm_event_post(id, ev);
	return 0;
}

struct rn_cm_id *rn_cm_find_listener(struct rn_cm *cm, uint16_t ps,
				     const struct sockaddr *dst)
{
	struct rn_cm_id *wild = NULL;
	uint16_t port = rn_cm_addr_port(dst);
	uint32_t i;

	for (i = 0; i < cm->ids.size; i++) {
		struct rn_cm_id *l = rn_table_get(&cm->ids, i);
		const struct sockaddr *la;

		if (!l || l->state != RN_CM_LISTEN || l->ps != ps)
			continue;
		la = (const void *)&l->src;
		if (rn_cm_addr_port(la) != port)
			continue;
		if (!addr_any(la)) {
			if (la->sa_family == dst->sa_family && same_ip(la, dst))
				return l;
			continue;
		}
		if (la->sa_family == dst->sa_family ||
		    (la->sa_family == AF_INET6 && !l->afonly))
			wild = l;
	}
	return wild;
}
