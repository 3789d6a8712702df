// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * An event-driven client whose device dies under it (the test kills
 * ringnicd when this prints "ready").  It must get
 * IBV_EVENT_DEVICE_FATAL, its wait in ibv_get_cq_event must end, and every
 * verb afterwards must fail with an errno (destroys succeed).  Exit 3 means
 * exactly that happened; anything else is a failure.
 */
#include <pthread.h>
#include <unistd.h>

#include "common.h"

static void *async_thread(void *arg)
{
	struct pair *p = arg;
	struct ibv_async_event ev;
	static int got;

	if (ibv_get_async_event(p->ctx, &ev))
		die("ibv_get_async_event failed instead of reporting");
	got = ev.event_type;
	ibv_ack_async_event(&ev);
	return &got;
}

int main(void)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_RDMA_WRITE }, *bad;
	struct pair p;
	struct ibv_wc wc;
	struct ibv_cq *cq;
	pthread_t async;
	void *cq_ctx, *res;
	int ret;

	alarm(30); /* a hang is a failure, not a stuck test */
	pair_open(&p, 4096);
	if (pthread_create(&async, NULL, async_thread, &p))
		die("pthread_create");
	if (ibv_req_notify_cq(p.cq, 0))
		die("req_notify_cq");
	printf("ready\n");
	fflush(stdout);

	/* Nothing is posted: only the device's death ends this wait. */
	if (!ibv_get_cq_event(p.channel, &cq, &cq_ctx))
		ibv_ack_cq_events(cq, 1);
	pthread_join(async, &res);
	if (*(int *)res != IBV_EVENT_DEVICE_FATAL)
		die("async event %d, not IBV_EVENT_DEVICE_FATAL", *(int *)res);

	ret = ibv_poll_cq(p.cq, 1, &wc);
	if (ret >= 0)
		die("poll_cq on a lost device returned %d", ret);
	ret = ibv_post_send(p.req, &wr, &bad);
	if (ret != ENODEV)
		die("post_send on a lost device: %d", ret);
	if (ibv_req_notify_cq(p.cq, 0) != ENODEV)
		die("req_notify_cq on a lost device succeeded");
	/* EIO is the uverbs core's own answer for a device removed under
	 * its contexts (kernel mode, rdma link delete).
	 */
	if (ibv_alloc_pd(p.ctx) || (errno != ENODEV && errno != EIO))
		die("alloc_pd on a lost device: errno %d", errno);
	pair_close(&p); /* destroys succeed: the device took everything */
	printf("device lost: DEVICE_FATAL, woken, verbs fail with ENODEV\n");
	return 3;
}
