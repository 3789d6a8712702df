// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The device as a whole: its layers set up in order (core, engine, the
 * local path, the wire), and a client's objects torn down in dependency
 * order when it goes.
 */
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "local/local.h"
#include "verbs/verbs.h"
#include "wire/wire.h"

/* What a device is before it is published: attributes, empty tables, its
 * engine with both transports.
 */
int rn_device_setup(struct rn_device *dev, uint64_t guid)
{
	int ret = rn_device_init(dev, guid);

	if (ret)
		return ret;
	rn_qp_counters_init(dev);
	return rn_engine_init(dev) ?: rn_local_init(dev) ?: rn_wire_init(dev);
}

/*
 * Everything a client holds, in dependency order: QPs (attached to SRQs,
 * completing into CQs), windows (bound to MRs), then MRs, AHs, SRQs, CQs,
 * the domains it opened and PDs.
 */
static void objects_destroy(struct rn_client *client)
{
	uint32_t i;

#define EACH(table) \
	for (i = 0; i < client->table.size; i++) \
		if (client->table.slot[i])
	EACH(qps)
		rn_qp_release(client, i);
	EACH(mws)
		rn_mw_release(client->mws.slot[i]);
	EACH(mrs)
		rn_mr_release(client->mrs.slot[i]);
	EACH(ahs)
		rn_ah_destroy(client, i);
	EACH(srqs)
		rn_srq_release(client->srqs.slot[i]);
	EACH(cqs)
		rn_cq_release(client->cqs.slot[i]);
	EACH(xrcds)
		rn_xrcd_release(client, i);
	EACH(pds)
		rn_pd_dealloc(client, i);
#undef EACH
	rn_table_destroy(&client->qps);
	rn_table_destroy(&client->mws);
	rn_table_destroy(&client->mrs);
	rn_table_destroy(&client->ahs);
	rn_table_destroy(&client->srqs);
	rn_table_destroy(&client->cqs);
	rn_table_destroy(&client->xrcds);
	rn_table_destroy(&client->pds);
}

/* Everything the client made, and what OPEN gave it. */
void rn_client_release(struct rn_client *client)
{
	/* Closing the uffd unregisters all at once, before the MRs go. */
	rn_guard_close(client);
	objects_destroy(client);
	if (client->wake_fd >= 0) {
		epoll_ctl(client->dev->epoll_fd, EPOLL_CTL_DEL, client->wake_fd,
			  NULL);
		close(client->wake_fd);
	}
	if (client->async_fd >= 0)
		close(client->async_fd);
	if (client->dev_page) {
		munmap(client->dev_page, RN_DEV_PAGE_SIZE);
		rn_uncharge(client, RN_DEV_PAGE_SIZE);
	}
	rn_client_detach(client);
}
