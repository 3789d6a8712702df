// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A plugin linked against libibverbs, which the program only loads with
 * dlopen (RTLD_LOCAL): how UCX uses verbs.  Its calls to the completion
 * channel verbs reach ringnic-run's shim, which must find libibverbs even
 * though the program's global scope does not have it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

int plugin_run(void);

int plugin_run(void)
{
	struct ibv_comp_channel *ch;
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_cq *cq, *ev_cq;
	void *ev_ctx;
	int n, fd, ret;

	list = ibv_get_device_list(&n);
	if (!list || !n) {
		fprintf(stderr, "plugin: no device (%s)\n", strerror(errno));
		return 1;
	}
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!ctx) {
		fprintf(stderr, "plugin: ibv_open_device: %s\n", strerror(errno));
		return 1;
	}
	ch = ibv_create_comp_channel(ctx);
	if (!ch) {
		fprintf(stderr, "plugin: ibv_create_comp_channel: %s\n",
			strerror(errno));
		return 1;
	}
	fd = ch->fd;
	cq = ibv_create_cq(ctx, 16, NULL, ch, 0);
	if (!cq) {
		fprintf(stderr, "plugin: ibv_create_cq: %s\n", strerror(errno));
		return 1;
	}
	/* The channel works: arming a CQ that is empty gives no event. */
	fcntl(fd, F_SETFL, O_NONBLOCK);
	ibv_req_notify_cq(cq, 0);
	if (!ibv_get_cq_event(ch, &ev_cq, &ev_ctx) || errno != EAGAIN) {
		fprintf(stderr, "plugin: an event from an empty CQ\n");
		return 1;
	}
	if ((ret = ibv_destroy_cq(cq))) {
		fprintf(stderr, "plugin: ibv_destroy_cq: %s\n", strerror(ret));
		return 1;
	}
	ret = ibv_destroy_comp_channel(ch);
	if (ret) {
		fprintf(stderr, "plugin: ibv_destroy_comp_channel: %s\n",
			strerror(ret));
		return 1;
	}
	/* Destroyed means closed: nothing leaked. */
	if (fcntl(fd, F_GETFD) != -1 || errno != EBADF) {
		fprintf(stderr, "plugin: the channel's fd %d is still open\n", fd);
		return 1;
	}
	ibv_close_device(ctx);
	printf("plugin: completion channel created and destroyed\n");
	return 0;
}
