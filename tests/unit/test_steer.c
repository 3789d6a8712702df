// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The wire's steering (rn_wire_steer): a group of SO_REUSEPORT sockets,
 * one per engine, bound in engine order on 127.0.0.1, and datagrams
 * whose BTH names QPs of every engine: each must arrive at the socket of
 * the engine that owns its QP (the QPN's index modulo the engines), a
 * datagram too short for a BTH at engine 0's.  The kernel runs the
 * program; nothing here imitates it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "wire/internal.h"

#define MAX_ENGINES 4

static int bind_group(int *fds, uint32_t n, uint16_t *port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	uint32_t i;

	for (i = 0; i < n; i++) {
		fds[i] = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
		assert_true(fds[i] >= 0);
		assert_int_equal(setsockopt(fds[i], SOL_SOCKET, SO_REUSEPORT,
					    &(int){ 1 }, sizeof(int)), 0);
		/* The first takes a free port, the others join it. */
		assert_int_equal(bind(fds[i], (struct sockaddr *)&sa,
				      sizeof(sa)), 0);
		if (!i) {
			assert_int_equal(getsockname(fds[0],
						     (struct sockaddr *)&sa,
						     &len), 0);
			*port = ntohs(sa.sin_port);
		}
	}
	return rn_wire_steer(fds[0], n);
}

/* Which of the group's sockets got the one datagram sent: its index. */
static int receiver(const int *fds, uint32_t n)
{
	struct pollfd p[MAX_ENGINES];
	uint8_t buf[64];
	int who = -1;
	uint32_t i;

	for (i = 0; i < n; i++)
		p[i] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
	assert_int_equal(poll(p, n, 5000), 1);
	for (i = 0; i < n; i++) {
		if (recv(fds[i], buf, sizeof(buf), 0) < 0)
			continue;
		assert_int_equal(who, -1);
		who = (int)i;
	}
	return who;
}

static void send_bth(int out, uint16_t port, uint32_t dqpn, size_t len)
{
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	uint8_t pkt[RN_PKT_BTH_BYTES] = { 0x04 /* RC SEND_ONLY */, 0, 0xff, 0xff };

	pkt[5] = (uint8_t)(dqpn >> 16);
	pkt[6] = (uint8_t)(dqpn >> 8);
	pkt[7] = (uint8_t)dqpn;
	assert_int_equal(sendto(out, pkt, len, 0, (struct sockaddr *)&to,
				sizeof(to)), (ssize_t)len);
}

static void steer_n(uint32_t n)
{
	int fds[MAX_ENGINES], out = socket(AF_INET, SOCK_DGRAM, 0);
	uint32_t gens[] = { 1, 5, 1023 }, g, index, i;
	uint16_t port;

	assert_true(out >= 0);
	assert_int_equal(bind_group(fds, n, &port), 0);
	for (g = 0; g < sizeof(gens) / sizeof(gens[0]); g++) {
		for (index = 0; index < 3 * n; index++) {
			uint32_t qpn = gens[g] << RN_QPN_INDEX_BITS | index;

			send_bth(out, port, qpn, RN_PKT_BTH_BYTES);
			assert_int_equal(receiver(fds, n), (int)(index % n));
		}
	}
	/* No BTH: engine 0, which counts it malformed. */
	send_bth(out, port, 1, 3);
	assert_int_equal(receiver(fds, n), 0);
	for (i = 0; i < n; i++)
		close(fds[i]);
	close(out);
}

static void test_two_engines(void **state)
{
	(void)state;
	steer_n(2);
}

static void test_three_engines(void **state)
{
	(void)state;
	steer_n(3);
}

static void test_four_engines(void **state)
{
	(void)state;
	steer_n(4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_engines),
		cmocka_unit_test(test_three_engines),
		cmocka_unit_test(test_four_engines),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
