// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the control protocol, and then the shared memory.  An
 * input is a client's whole life: a sequence of control messages (each
 * may carry a pipe, as OPEN and CREATE_CQ do), then bytes sprayed over
 * every page the client shares with the device (device page, QP and CQ
 * memory) before the engine runs over them.  Nothing may crash, leak or
 * write outside; the client is released at the end as if it had died.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "verbs/requests.h"
#include "verbs/verbs.h"

static struct rn_device dev;
/*
 * The client is a sleeping child: memory the input registers and the
 * engine then writes is the child's, so the fuzzer cannot hit itself.
 */
static pid_t client_pid;

static void init_once(void)
{
	/* A port on lo: GIDs 0 (::ffff:127.0.0.1) and 1 (::1) for address
	 * vectors to name.
	 */
	union ibv_gid lo[2] = {
		{ .raw = { [10] = 0xff, [11] = 0xff, [12] = 127, [15] = 1 } },
		{ .raw = { [15] = 1 } },
	};

	client_pid = fork();
	if (client_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	signal(SIGPIPE, SIG_IGN);
	rn_log_init(true, false);
	dev.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	dev.kdev_fd = -1;
	if (dev.epoll_fd < 0 || rn_device_setup(&dev, 0))
		abort();
	rn_port_set_gids(&dev, lo, 2);
	dev.max_clients = 16;
	dev.max_shared_bytes = 1ull << 30;
}

/* One message: flags (bit 0: attach a pipe), length, bytes. */
static size_t one_request(struct rn_client *client, const uint8_t *data,
			  size_t size, bool *closed)
{
	struct rn_msg m = { 0 };
	struct rn_reply r;
	size_t len;
	int i, p[2];

	if (size < 3)
		return size;
	len = (data[1] | data[2] << 8) % (RN_CTL_MSG_MAX + 1);
	if (len > size - 3)
		len = size - 3;
	memcpy(m.req.buf, data + 3, len);
	m.len = len;
	m.sender = client_pid; /* its requests after OPEN confirm it */
	if (data[0] & 1 && !pipe2(p, O_CLOEXEC)) {
		close(p[0]);
		m.fds[m.nfds++] = p[1];
	}
	*closed = !rn_request(client, &m, &r);
	for (i = 0; i < m.nfds; i++)
		close(m.fds[i]);
	if (!*closed)
		for (i = 0; i < r.nfds; i++)
			if (!client->ctx || r.fds[i] != client->ctx->wake_fd)
				close(r.fds[i]);
	return 3 + len;
}

static void spray(uint8_t *mem, size_t len, const uint8_t **data, size_t *size)
{
	size_t n = *size < len ? *size : len;

	memcpy(mem, *data, n);
	*data += n;
	*size -= n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool ready;
	struct rn_client *client;
	bool closed = false;
	uint32_t i;
	int n;

	if (!ready) {
		init_once();
		ready = true;
	}
	client = calloc(1, sizeof(*client));
	rn_client_init(client, &dev, client_pid, getuid());
	rn_list_add_tail(&dev.clients, &client->link);

	/* Up to 32 requests, while the client follows the protocol. */
	for (n = 0; n < 32 && size >= 3 && !closed; n++) {
		size_t used = one_request(client, data, size, &closed);

		data += used;
		size -= used;
	}
	/* The rest of the input is what the client wrote into shared memory. */
	if (client->opened && !closed) {
		spray((uint8_t *)client->ctx->dev_page, RN_DEV_PAGE_SIZE, &data, &size);
		for (i = 0; i < client->ctx->qps.size; i++) {
			struct rn_qp *qp = client->ctx->qps.slot[i];

			if (qp)
				spray(qp->mem, qp->mem_size, &data, &size);
		}
		for (i = 0; i < client->ctx->cqs.size; i++) {
			struct rn_cq *cq = client->ctx->cqs.slot[i];

			if (cq)
				spray(cq->mem, cq->mem_size, &data, &size);
		}
		for (n = 0; n < 4; n++)
			rn_engine_pass(dev.engines[0], rn_now_ns());
	}
	rn_client_release(client);
	rn_list_del(&client->link);
	free(client);
	return 0;
}
