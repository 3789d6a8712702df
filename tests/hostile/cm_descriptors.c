// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_cm_descriptors: descriptors sent where the rdma_cm socket
 * (kernel-abi/ringnic-cm.h) takes one or none.  A hello with none, two or
 * three, a command with any, and an empty or oversized message with some,
 * are refused: ringnicd closes the connection and keeps none of them,
 * which its descriptor count in /proc shows (RINGNICD_PID,
 * RINGNIC_RUNTIME_DIR: tests/with-device.sh).  A well-formed hello is
 * still answered.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rdma_user_cm.h>

#include "../../kernel-abi/ringnic-cm.h"
#include "../send_fds.h"

static const char *daemon_pid;
static char path[108];

static unsigned int daemon_fds(void)
{
	char dir[64];
	struct dirent *e;
	unsigned int n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%s/fd", daemon_pid);
	d = opendir(dir);
	if (!d) {
		perror(dir);
		exit(1);
	}
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Sends len bytes of msg with nfds fresh descriptors (socketpair ends). */
static void send_with_fds(int sock, const void *msg, size_t len, int nfds)
{
	int fds[RN_TEST_SEND_FDS_MAX] = { -1, -1, -1, -1 }, pair[2], i, ret;

	for (i = 0; i < nfds; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair)) {
			perror("socketpair");
			exit(1);
		}
		close(pair[0]);
		fds[i] = pair[1];
	}
	ret = rn_test_send_fds(sock, msg, len, fds, nfds, 0);
	if (ret) {
		fprintf(stderr, "sendmsg: %s\n", strerror(ret));
		exit(1);
	}
	for (i = 0; i < nfds; i++)
		close(fds[i]);
}

/* A connection whose receives give up after five seconds. */
static int connect_cm(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { 5, 0 };
	int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	strcpy(sa.sun_path, path);
	if (sock < 0 || connect(sock, (struct sockaddr *)&sa, sizeof(sa)) ||
	    setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv))) {
		perror(path);
		exit(1);
	}
	return sock;
}

/* ringnicd's count once it holds still: the same over three samples. */
static unsigned int steady_fds(void)
{
	struct timespec ts = { 0, 10 * 1000000 };
	unsigned int n = daemon_fds(), same = 0, i;

	for (i = 0; i < 200 && same < 3; i++) {
		unsigned int m;

		nanosleep(&ts, NULL);
		m = daemon_fds();
		same = m == n ? same + 1 : 0;
		n = m;
	}
	return n;
}

/* Whether ringnicd answered the hello (true) or hung up (false). */
static bool hello_answered(int sock)
{
	struct rn_cm_hello_reply reply;

	return recv(sock, &reply, sizeof(reply), 0) == sizeof(reply) &&
	       reply.status == 0;
}

/* ringnicd back to 'want' descriptors within two seconds. */
static int settled(unsigned int want, const char *what)
{
	struct timespec ts = { 0, 10 * 1000000 };
	unsigned int n = 0;
	int i;

	for (i = 0; i < 200 && (n = daemon_fds()) != want; i++)
		nanosleep(&ts, NULL);
	if (n == want)
		return 0;
	fprintf(stderr, "cm_descriptors: FAIL: %s: ringnicd has %u descriptors, %u before\n",
		what, n, want);
	return 1;
}

/* What is sent: after a good hello or as the first message. */
struct attempt {
	const char *what;
	bool after_hello;
	size_t len; /* 0: an empty message */
	int nfds;
};

static const struct attempt attempts[] = {
	{ "a hello with no descriptor", false, sizeof(struct rn_cm_hello), 0 },
	{ "a hello with 2 descriptors", false, sizeof(struct rn_cm_hello), 2 },
	{ "a hello with 3 descriptors", false, sizeof(struct rn_cm_hello), 3 },
	{ "an empty first message with 2 descriptors", false, 0, 2 },
	{ "an oversized first message with 2 descriptors", false, 4096, 2 },
	{ "a command with 1 descriptor", true, sizeof(struct rdma_ucm_cmd_hdr), 1 },
	{ "a command with 2 descriptors", true, sizeof(struct rdma_ucm_cmd_hdr), 2 },
	{ "an empty command with 1 descriptor", true, 0, 1 },
	{ "an oversized command with 2 descriptors", true, 4096, 2 },
};

int main(void)
{
	const char *dir = getenv("RINGNIC_RUNTIME_DIR");
	struct rn_cm_hello hello = { .magic = RN_CM_HELLO_MAGIC };
	static uint8_t msg[4096];
	unsigned int before, i;
	int sock, fails = 0;
	ssize_t got;
	char byte;

	daemon_pid = getenv("RINGNICD_PID");
	if (!dir || !daemon_pid) {
		fprintf(stderr, "cm_descriptors: run under tests/with-device.sh\n");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/ringnic0.cm", dir);
	before = steady_fds();

	for (i = 0; i < sizeof(attempts) / sizeof(attempts[0]); i++) {
		const struct attempt *a = &attempts[i];

		memset(msg, 0, sizeof(msg));
		sock = connect_cm();
		if (a->after_hello) {
			struct rdma_ucm_cmd_hdr cmd = { .cmd = RDMA_USER_CM_CMD_GET_EVENT };

			send_with_fds(sock, &hello, sizeof(hello), 1);
			if (!hello_answered(sock)) {
				fprintf(stderr, "cm_descriptors: FAIL: a good hello was refused\n");
				fails++;
			}
			memcpy(msg, &cmd, sizeof(cmd));
		} else {
			memcpy(msg, &hello, sizeof(hello));
		}
		send_with_fds(sock, msg, a->len, a->nfds);
		/* Refused: the connection is closed, nothing answered. */
		got = recv(sock, &byte, 1, 0);
		if (got) {
			fprintf(stderr, "cm_descriptors: FAIL: %s was %s\n", a->what,
				got > 0 ? "answered" : "neither answered nor refused");
			fails++;
		}
		close(sock);
		fails += settled(before, a->what);
	}
	printf("cm_descriptors: %zu attempts: %s (ringnicd: %u descriptors)\n",
	       sizeof(attempts) / sizeof(attempts[0]), fails ? "FAILED" : "PASS",
	       daemon_fds());
	return fails ? 1 : 0;
}
