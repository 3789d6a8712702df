// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the CM's MADs from the network.  A device on
 * 198.18.0.1 has an rdma_cm channel with a listener on TCP port 7471 and
 * a UDP one on 7174 (made through the UCMA commands); the input is a run
 * of datagrams to QP1, each a 16-byte sender GID and a MAD of up to 256
 * bytes.  Nothing may crash or leak, and however many REQs come, the ids
 * stay within the listeners' backlogs.  Comm IDs are made predictable so
 * that REPs, RTUs and DREQs can name the ids the REQs made.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "cm/cm.h"
#include "verbs/verbs.h"

#define BACKLOG 8
#define RECORD (16 + RN_CM_MAD_LEN)

static struct rn_device dev;

static void check(bool ok)
{
	if (!ok)
		abort();
}

static void init_once(void)
{
	union ibv_gid gid = {
		.raw = { [10] = 0xff, [11] = 0xff, 198, 18, 0, 1 },
	};

	dev.epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	check(dev.epoll_fd >= 0 && !rn_device_setup(&dev, htobe64(0x1234)));
	rn_port_set_gids(&dev, &gid, 1);
}

static void command(struct rn_cm_channel *ch, const void *cmd, size_t len,
		    uint32_t op, uint16_t out, void *resp)
{
	uint8_t msg[512], buf[512];
	struct rdma_ucm_cmd_hdr hdr = { op, (uint16_t)len, out };
	uint32_t resp_len = 0;

	memcpy(msg, &hdr, sizeof(hdr));
	memcpy(msg + sizeof(hdr), cmd, len);
	check(!rn_cm_command(ch, msg, sizeof(hdr) + len, buf, &resp_len));
	if (resp)
		memcpy(resp, buf, resp_len);
}

static void listener(struct rn_cm_channel *ch, uint16_t ps, uint16_t port)
{
	struct rdma_ucm_create_id create = { .uid = 1, .ps = ps };
	struct rdma_ucm_create_id_resp id;
	struct rdma_ucm_bind_ip bind = { 0 };
	struct rdma_ucm_listen listen = { .backlog = BACKLOG };
	struct sockaddr_in *sin = (struct sockaddr_in *)&bind.addr;

	create.qp_type = ps == RDMA_PS_UDP ? IBV_QPT_UD : IBV_QPT_RC;
	command(ch, &create, sizeof(create), RDMA_USER_CM_CMD_CREATE_ID,
		sizeof(id), &id);
	sin->sin_family = AF_INET;
	sin->sin_port = htons(port);
	sin->sin_addr.s_addr = htonl(0xc6120001); /* 198.18.0.1 */
	bind.id = id.id;
	command(ch, &bind, sizeof(bind), RDMA_USER_CM_CMD_BIND_IP, 0, NULL);
	listen.id = id.id;
	command(ch, &listen, sizeof(listen), RDMA_USER_CM_CMD_LISTEN, 0, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint32_t timers, armed;
	static bool ready;
	struct rn_cm_channel *ch;
	struct rn_cm *cm;

	if (!ready) {
		init_once();
		timers = dev.engines[0]->ntimers;
		armed = dev.engines[0]->timers.n;
		ready = true;
	}
	cm = rn_cm_init(&dev);
	ch = calloc(1, sizeof(*ch));
	check(cm && ch);
	cm->comm_gen = 0;
	cm->hi_tid = 0;
	ch->cm = cm;
	ch->fd = -1;
	ch->event_fd = -1;
	rn_list_init(&ch->events);
	rn_list_init(&ch->ids);
	rn_list_add_tail(&cm->channels, &ch->link);
	cm->nchannels = 1;
	listener(ch, RDMA_PS_TCP, 7471);
	listener(ch, RDMA_PS_UDP, 7174);

	while (size > 16) {
		size_t len = size - 16 < RN_CM_MAD_LEN ? size - 16 :
							  RN_CM_MAD_LEN;

		rn_cm_mad_recv(&dev, 0, data, data + 16, (uint32_t)len);
		data += 16 + len;
		size -= 16 + len;
	}
	/* Two listeners, and what their backlogs let in. */
	check(cm->ids.used <= 2 + 2 * BACKLOG);
	rn_cm_close(&dev);
	check(dev.engines[0]->ntimers == timers && dev.engines[0]->timers.n == armed);
	return 0;
}
