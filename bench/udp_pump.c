// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_bench_udp: what a network path carries in plain UDP, the ceiling
 * ringnic's RoCEv2 (which is UDP) is measured against.  Four roles, the
 * two ends of each run in two processes (two network namespaces):
 *
 *   sink [-g] ADDR PORT                 count datagrams until 0.5 s pass
 *                                       without one; -g: UDP_GRO
 *   pump [-g] ADDR PORT SIZE SECONDS    send SIZE-byte datagrams as fast as
 *                                       sendmmsg goes; -g: UDP GSO
 *   echo [-b] ADDR PORT                 send every datagram back, until 2 s
 *                                       pass without one
 *   ping [-b] ADDR PORT COUNT           8-byte ping-pong, COUNT round trips
 *                                       (-b on both ends: busy polling)
 *
 * The sink and ping print "name value unit" lines: what was actually
 * received (datagrams/s, payload MB/s and Gbit/s), and half the median
 * round trip.  The pump prints whether GSO was used: a veth whose MTU is
 * below SIZE refuses it, and the pump falls back to one datagram per
 * message (fragmented by IP).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define BATCH 64		/* messages per sendmmsg / recvmmsg */
#define MAX_PAYLOAD 65507	/* the largest UDP payload over IPv4 */
#define GSO_MAX_SEGS 64		/* UDP_MAX_SEGMENTS of older kernels */
#define SOCKBUF (16 << 20)	/* as ringnicd's sockets */
#define IDLE_NS 500000000ull	/* the sink's end of a run */
#define SINK_POLL_NS 100000000ull /* how often a sink looks at the time */
#define FIRST_WAIT_NS 10000000000ull /* how long a sink waits to start */
#define PING_SIZE 8
#define PING_WARMUP 1000
#define PING_RESEND_NS 100000000ull
#define ECHO_IDLE_NS 2000000000ull

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: rn_bench_udp sink [-g] ADDR PORT\n"
		"       rn_bench_udp pump [-g] ADDR PORT SIZE SECONDS\n"
		"       rn_bench_udp echo [-b] ADDR PORT\n"
		"       rn_bench_udp ping [-b] ADDR PORT COUNT\n");
	exit(2);
}

/* A UDP socket bound to ADDR:PORT (bind) or connected to it. */
static int udp_socket(const char *addr, const char *port, bool bind_it)
{
	struct addrinfo hints = { .ai_socktype = SOCK_DGRAM,
				  .ai_flags = AI_NUMERICHOST };
	struct addrinfo *ai;
	int fd, v = SOCKBUF, rc;

	rc = getaddrinfo(addr, port, &hints, &ai);
	if (rc) {
		fprintf(stderr, "%s: %s\n", addr, gai_strerror(rc));
		exit(1);
	}
	fd = socket(ai->ai_family, SOCK_DGRAM, 0);
	if (fd < 0)
		die("socket");
	/* FORCE goes past net.core.*mem_max when we may (root). */
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &v, sizeof(v)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof(v));
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &v, sizeof(v)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof(v));
	if (bind_it ? bind(fd, ai->ai_addr, ai->ai_addrlen) :
		      connect(fd, ai->ai_addr, ai->ai_addrlen))
		die(bind_it ? "bind" : "connect");
	freeaddrinfo(ai);
	return fd;
}

static void set_timeout(int fd, uint64_t ns)
{
	struct timeval tv = { .tv_sec = ns / 1000000000ull,
			      .tv_usec = ns % 1000000000ull / 1000 };

	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)))
		die("SO_RCVTIMEO");
}

/* ---- throughput ---------------------------------------------------------- */

/* Datagrams one received message holds: several when GRO merged them. */
static uint64_t segments(struct msghdr *mh, unsigned int len)
{
	struct cmsghdr *c;
	int gso;

	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_UDP || c->cmsg_type != UDP_GRO)
			continue;
		memcpy(&gso, CMSG_DATA(c), sizeof(gso));
		if (gso > 0)
			return (len + gso - 1) / gso;
	}
	return 1;
}

/*
 * Counts from the end of the first batch to the last one received, so the
 * time the sink waited for the pump to start is not part of the rate.
 */
static int sink(const char *addr, const char *port, bool gro)
{
	static uint8_t bufs[BATCH][MAX_PAYLOAD];
	static char ctl[BATCH][CMSG_SPACE(sizeof(int))];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	uint64_t start = 0, last = 0, datagrams = 0, bytes = 0;
	uint64_t begun = now_ns();
	int fd = udp_socket(addr, port, true), one = 1, i, n;

	if (gro && setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one)))
		die("UDP_GRO");
	set_timeout(fd, SINK_POLL_NS);
	for (;;) {
		uint64_t t;

		memset(msgs, 0, sizeof(msgs));
		for (i = 0; i < BATCH; i++) {
			iov[i] = (struct iovec){ bufs[i], MAX_PAYLOAD };
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
			msgs[i].msg_hdr.msg_control = ctl[i];
			msgs[i].msg_hdr.msg_controllen = sizeof(ctl[i]);
		}
		n = recvmmsg(fd, msgs, BATCH, MSG_WAITFORONE, NULL);
		t = now_ns();
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			die("recvmmsg");
		if (n <= 0) {
			if (start ? t - last > IDLE_NS :
				    t - begun > FIRST_WAIT_NS)
				break;
			continue;
		}
		if (!start) {
			start = last = t;
			continue;
		}
		for (i = 0; i < n; i++) {
			datagrams += segments(&msgs[i].msg_hdr, msgs[i].msg_len);
			bytes += msgs[i].msg_len;
		}
		last = t;
	}
	if (!datagrams) {
		fprintf(stderr, "rn_bench_udp sink: nothing received\n");
		return 1;
	}
	printf("received %llu datagrams\n", (unsigned long long)datagrams);
	printf("seconds %.3f s\n", (last - start) / 1e9);
	printf("rate %.4f Mpps\n", datagrams * 1e3 / (last - start));
	printf("payload %.1f MB/s\n", bytes * 1e3 / (last - start));
	printf("payload_gbit %.3f Gbit/s\n", bytes * 8.0 / (last - start));
	return 0;
}

/*
 * With GSO each message carries as many SIZE-byte segments as one UDP
 * packet of at most 64 KiB holds; the kernel (or whatever device
 * segments it) cuts it into datagrams.
 */
static int pump(const char *addr, const char *port, size_t size,
		double seconds, bool gso)
{
	static uint8_t payload[MAX_PAYLOAD];
	struct mmsghdr msgs[BATCH];
	struct iovec iov[BATCH];
	uint64_t end, sent = 0;
	int fd = udp_socket(addr, port, false), v = size, i, n;
	size_t per_msg = size;

	if (!size || size > MAX_PAYLOAD)
		usage();
	if (gso && setsockopt(fd, SOL_UDP, UDP_SEGMENT, &v, sizeof(v)))
		gso = false;
	memset(payload, 0x5a, sizeof(payload));
again:
	if (gso) {
		per_msg = MAX_PAYLOAD / size;
		if (per_msg > GSO_MAX_SEGS)
			per_msg = GSO_MAX_SEGS;
		per_msg *= size;
	}
	memset(msgs, 0, sizeof(msgs));
	for (i = 0; i < BATCH; i++) {
		iov[i] = (struct iovec){ payload, per_msg };
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
	}
	end = now_ns() + seconds * 1e9;
	while (now_ns() < end) {
		n = sendmmsg(fd, msgs, BATCH, 0);
		if (n < 0) {
			/* GSO of segments above the MTU is refused here. */
			if (gso && !sent && (errno == EINVAL || errno == EIO ||
					      errno == EMSGSIZE)) {
				v = 0;
				setsockopt(fd, SOL_UDP, UDP_SEGMENT, &v,
					   sizeof(v));
				gso = false;
				per_msg = size;
				goto again;
			}
			/* A full queue or an unreachable moment: go on. */
			if (errno == ENOBUFS || errno == ECONNREFUSED ||
			    errno == EAGAIN || errno == EINTR)
				continue;
			die("sendmmsg");
		}
		sent += (uint64_t)n * (per_msg / size);
	}
	printf("sent %llu datagrams\n", (unsigned long long)sent);
	printf("gso %s\n", gso ? "on" : "off");
	return 0;
}

/* ---- latency ------------------------------------------------------------- */

/*
 * One datagram within timeout_ns: blocking (the caller has set
 * SO_RCVTIMEO to the same timeout) or spinning on a non-blocking receive.
 */
static ssize_t recv_wait(int fd, void *buf, size_t len, bool busy,
			 uint64_t timeout_ns, struct sockaddr_storage *from,
			 socklen_t *fromlen)
{
	uint64_t deadline = now_ns() + timeout_ns;
	ssize_t n;

	if (!busy)
		return recvfrom(fd, buf, len, 0, (struct sockaddr *)from,
				fromlen);
	for (;;) {
		n = recvfrom(fd, buf, len, MSG_DONTWAIT,
			     (struct sockaddr *)from, fromlen);
		if (n >= 0 || errno != EAGAIN || now_ns() > deadline)
			return n;
	}
}

static int echo(const char *addr, const char *port, bool busy)
{
	uint8_t buf[2048];
	struct sockaddr_storage from;
	uint64_t timeout = FIRST_WAIT_NS;
	int fd = udp_socket(addr, port, true);

	set_timeout(fd, timeout);
	for (;;) {
		socklen_t fromlen = sizeof(from);
		ssize_t n = recv_wait(fd, buf, sizeof(buf), busy, timeout,
				      &from, &fromlen);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* The pinger is gone without its "done". */
			if (errno == EAGAIN && timeout != FIRST_WAIT_NS)
				return 0;
			die("echo: recvfrom");
		}
		if (timeout == FIRST_WAIT_NS) {
			timeout = ECHO_IDLE_NS;
			set_timeout(fd, timeout);
		}
		/* A zero-length datagram is the pinger's "done". */
		if (!n)
			return 0;
		sendto(fd, buf, n, 0, (struct sockaddr *)&from, fromlen);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Each round trip carries a sequence number; a lost datagram is sent again
 * after 100 ms and its (long) round trip still counts, as a lost packet
 * costs a verbs ping-pong a retransmission.
 */
static int ping(const char *addr, const char *port, long count, bool busy)
{
	uint64_t *rtt, seq, got, t0;
	int fd = udp_socket(addr, port, false);
	long i;

	if (count <= 0)
		usage();
	rtt = calloc(count, sizeof(*rtt));
	if (!rtt)
		die("calloc");
	set_timeout(fd, PING_RESEND_NS);
	for (i = -PING_WARMUP; i < count; i++) {
		seq = i + PING_WARMUP;
		t0 = now_ns();
		if (send(fd, &seq, PING_SIZE, 0) != PING_SIZE)
			die("ping: send");
		for (;;) {
			ssize_t n = recv_wait(fd, &got, sizeof(got), busy,
					      PING_RESEND_NS, NULL, NULL);

			if (n == PING_SIZE && got == seq)
				break;
			if (n < 0 && errno == EAGAIN) {
				if (send(fd, &seq, PING_SIZE, 0) != PING_SIZE)
					die("ping: send");
			} else if (n < 0 && errno != EINTR) {
				die("ping: recv");
			}
		}
		if (i >= 0)
			rtt[i] = now_ns() - t0;
	}
	send(fd, NULL, 0, 0);
	qsort(rtt, count, sizeof(*rtt), cmp_u64);
	printf("rtt_half_median %.2f us\n", rtt[count / 2] / 2e3);
	printf("rtt_half_p99 %.2f us\n", rtt[count * 99 / 100] / 2e3);
	free(rtt);
	return 0;
}

int main(int argc, char **argv)
{
	bool flag = false;
	const char *role;

	if (argc < 2)
		usage();
	role = argv[1];
	argv += 2;
	argc -= 2;
	if (argc && (!strcmp(argv[0], "-g") || !strcmp(argv[0], "-b"))) {
		flag = true;
		argv++;
		argc--;
	}
	if (!strcmp(role, "sink") && argc == 2)
		return sink(argv[0], argv[1], flag);
	if (!strcmp(role, "pump") && argc == 4)
		return pump(argv[0], argv[1], strtoul(argv[2], NULL, 0),
			    strtod(argv[3], NULL), flag);
	if (!strcmp(role, "echo") && argc == 2)
		return echo(argv[0], argv[1], flag);
	if (!strcmp(role, "ping") && argc == 3)
		return ping(argv[0], argv[1], strtol(argv[2], NULL, 0), flag);
	usage();
}
