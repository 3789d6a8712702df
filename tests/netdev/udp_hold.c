// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_udp_hold PORT ADDRESS...: bind a UDP socket to PORT on each ADDRESS
 * (IPv4 or IPv6; 0.0.0.0 and :: are the wildcards, taken side by side),
 * as another RoCE stack holds 4791 (rdma_rxe binds the wildcards); print
 * "holding" and keep them until killed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int hold(const char *text, unsigned short port)
{
	struct sockaddr_in6 v6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	struct sockaddr_in v4 = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, fd;

	if (inet_pton(AF_INET, text, &v4.sin_addr) == 1) {
		fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (fd >= 0 && !bind(fd, (struct sockaddr *)&v4, sizeof(v4)))
			return fd;
	} else if (inet_pton(AF_INET6, text, &v6.sin6_addr) == 1) {
		fd = socket(AF_INET6, SOCK_DGRAM, 0);
		/* Only IPv6: 0.0.0.0 may be held too. */
		if (fd >= 0 &&
		    !setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one)) &&
		    !bind(fd, (struct sockaddr *)&v6, sizeof(v6)))
			return fd;
	} else {
		fprintf(stderr, "rn_udp_hold: %s: not an address\n", text);
		exit(2);
	}
	fprintf(stderr, "rn_udp_hold: %s port %u: %s\n", text, port, strerror(errno));
	exit(1);
}

int main(int argc, char **argv)
{
	int i;

	if (argc < 3) {
		fprintf(stderr, "usage: rn_udp_hold PORT ADDRESS...\n");
		return 2;
	}
	for (i = 2; i < argc; i++)
		hold(argv[i], (unsigned short)atoi(argv[1]));
	printf("holding\n");
	fflush(stdout);
	for (;;)
		pause();
}
