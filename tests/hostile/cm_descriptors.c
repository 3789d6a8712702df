// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_cm_descriptors: descriptors sent where the rdma_cm socket
 * (kernel-abi/ringnic-cm.h) takes one or none.  A hello with two or
 * three, or a command with any, is refused: ringnicd closes the
 * connection and keeps none of them, which its descriptor count in /proc
 * shows (RINGNICD_PID, RINGNIC_RUNTIME_DIR: tests/with-device.sh).  A
 * well-formed hello is still answered.
 */
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rdma_user_cm.h>

#include "../../kernel-abi/ringnic-cm.h"

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
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} ctl = { { 0 } };
	struct iovec iov = { (void *)msg, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	int fds[4], pair[2], i;

	for (i = 0; i < nfds; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair)) {
			perror("socketpair");
			exit(1);
		}
		close(pair[0]);
		fds[i] = pair[1];
	}
	if (nfds) {
		struct cmsghdr *c;

		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	if (sendmsg(sock, &mh, MSG_NOSIGNAL) != (ssize_t)len) {
		perror("sendmsg");
		exit(1);
	}
	for (i = 0; i < nfds; i++)
		close(fds[i]);
}

static int connect_cm(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	strcpy(sa.sun_path, path);
	if (sock < 0 || connect(sock, (struct sockaddr *)&sa, sizeof(sa))) {
		perror(path);
		exit(1);
	}
	return sock;
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

int main(void)
{
	const char *dir = getenv("RINGNIC_RUNTIME_DIR");
	struct rn_cm_hello hello = { .magic = RN_CM_HELLO_MAGIC };
	struct rdma_ucm_cmd_hdr cmd = { .cmd = RDMA_USER_CM_CMD_GET_EVENT };
	unsigned int before, nfds;
	char byte;
	int sock, fails = 0;

	daemon_pid = getenv("RINGNICD_PID");
	if (!dir || !daemon_pid) {
		fprintf(stderr, "cm_descriptors: run under tests/with-device.sh\n");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/ringnic0.cm", dir);
	before = daemon_fds();

	for (nfds = 0; nfds <= 3; nfds++) {
		char what[64];

		if (nfds == 1)
			continue;
		snprintf(what, sizeof(what), "a hello with %u descriptors", nfds);
		sock = connect_cm();
		send_with_fds(sock, &hello, sizeof(hello), (int)nfds);
		if (hello_answered(sock)) {
			fprintf(stderr, "cm_descriptors: FAIL: %s was answered\n", what);
			fails++;
		}
		close(sock);
		fails += settled(before, what);
	}
	for (nfds = 1; nfds <= 2; nfds++) {
		char what[64];

		snprintf(what, sizeof(what), "a command with %u descriptors", nfds);
		sock = connect_cm();
		send_with_fds(sock, &hello, sizeof(hello), 1);
		if (!hello_answered(sock)) {
			fprintf(stderr, "cm_descriptors: FAIL: a good hello was refused\n");
			fails++;
		}
		send_with_fds(sock, &cmd, sizeof(cmd), (int)nfds);
		if (recv(sock, &byte, 1, 0) != 0) {
			fprintf(stderr, "cm_descriptors: FAIL: %s was served\n", what);
			fails++;
		}
		close(sock);
		fails += settled(before, what);
	}
	printf("cm_descriptors: %s (ringnicd: %u descriptors)\n",
	       fails ? "FAILED" : "PASS", daemon_fds());
	return fails ? 1 : 0;
}
