// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The device as a whole: its layers set up in order (core, engine, the
 * local path, the wire), and a client's objects torn down in dependency
 * order when it goes.
 */
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include "local/local.h"
#include "verbs/verbs.h"
#include "wire/wire.h"

/* What a device is before it is published: attributes, empty tables, its
 * engines (dev->nengines, at least one) with both transports each.
 */
int rn_device_setup(struct rn_device *dev, uint64_t guid)
{
	int ret = rn_device_init(dev, guid);
	uint32_t i;

	if (ret)
		return ret;
	rn_qp_counters_init(dev);
	ret = rn_engines_init(dev);
	for (i = 0; !ret && i < dev->nengines; i++)
		ret = rn_local_init(dev->engines[i]) ?:
		      rn_wire_init(dev->engines[i]);
	return ret;
}

/*
 * Everything a context holds, in dependency order: QPs (attached to SRQs,
 * completing into CQs), windows (bound to MRs), then MRs, AHs, SRQs, CQs,
 * the domains it opened and PDs.  client is its last live member.
 */
static void objects_destroy(struct rn_client *client)
{
	struct rn_context *ctx = client->ctx;
	uint32_t i;

#define EACH(table) \
	for (i = 0; i < ctx->table.size; i++) \
		if (ctx->table.slot[i])
	EACH(qps)
		rn_qp_release(client, i);
	EACH(mws)
		rn_mw_release(ctx->mws.slot[i]);
	EACH(mrs)
		rn_mr_release(ctx->mrs.slot[i]);
	EACH(ahs)
		rn_ah_destroy(client, i);
	EACH(srqs)
		rn_srq_release(ctx->srqs.slot[i]);
	EACH(cqs)
		rn_cq_release(ctx->cqs.slot[i]);
	EACH(xrcds)
		rn_xrcd_release(client, i);
	EACH(pds)
		rn_pd_dealloc(client, i);
#undef EACH
	rn_table_destroy(&ctx->qps);
	rn_table_destroy(&ctx->mws);
	rn_table_destroy(&ctx->mrs);
	rn_table_destroy(&ctx->ahs);
	rn_table_destroy(&ctx->srqs);
	rn_table_destroy(&ctx->cqs);
	rn_table_destroy(&ctx->xrcds);
	rn_table_destroy(&ctx->pds);
}

/* The context of its last live member, client, with all it holds. */
static void context_destroy(struct rn_client *client)
{
	struct rn_context *ctx = client->ctx;
	struct rn_list *pos, *tmp;

	objects_destroy(client);
	if (ctx->wake_fd >= 0) {
		epoll_ctl(ctx->engine->epoll_fd, EPOLL_CTL_DEL, ctx->wake_fd,
			  NULL);
		close(ctx->wake_fd);
	}
	if (ctx->cmd_fd >= 0)
		close(ctx->cmd_fd);
	if (ctx->dev_page) {
		munmap(ctx->dev_page, RN_DEV_PAGE_SIZE);
		close(ctx->dev_page_fd);
		rn_uncharge(client, RN_DEV_PAGE_SIZE);
	}
	rn_list_del(&ctx->link);
	if (ctx->engine)
		rn_engine_context_removed(ctx);
	/* The retired members go with it; client is its caller's. */
	rn_list_for_each_safe(pos, tmp, &ctx->members) {
		struct rn_client *m =
			rn_container_of(pos, struct rn_client, ctx_link);

		rn_list_del(pos);
		if (m != client)
			free(m);
	}
	client->ctx = NULL;
	free(ctx);
}

/* Whether an object of the context names m: as its maker, or an opener. */
static bool context_names(const struct rn_context *ctx,
			  const struct rn_client *m)
{
	uint32_t i, j;

#define MADE_BY(table, type)                                                  \
	for (i = 0; i < ctx->table.size; i++) {                               \
		const type *o = ctx->table.slot[i];                           \
		if (o && o->client == m)                                      \
			return true;                                          \
	}
	MADE_BY(pds, struct rn_pd)
	MADE_BY(mrs, struct rn_mr)
	MADE_BY(mws, struct rn_mw)
	MADE_BY(cqs, struct rn_cq)
	MADE_BY(ahs, struct rn_ah)
	MADE_BY(srqs, struct rn_srq)
	MADE_BY(qps, struct rn_qp)
#undef MADE_BY
	for (i = 0; i < ctx->qps.size; i++) {
		const struct rn_qp *qp = ctx->qps.slot[i];

		for (j = 0; qp && j < qp->nopeners; j++)
			if (qp->openers[j].client == m)
				return true;
	}
	return false;
}

void rn_context_prune(struct rn_context *ctx)
{
	struct rn_list *pos, *tmp;

	rn_list_for_each_safe(pos, tmp, &ctx->members) {
		struct rn_client *m =
			rn_container_of(pos, struct rn_client, ctx_link);

		if (m->retired && !context_names(ctx, m)) {
			rn_list_del(pos);
			free(m);
		}
	}
}

/*
 * A member goes while others live: what it made stays the context's, but
 * its address space is gone with its process, and its MRs with it: an
 * access to them fails (RN_MEM_UNMAPPED), as one to a range unmapped
 * under an MR does.  True: the context keeps the client for its objects.
 */
static bool retire(struct rn_client *client)
{
	struct rn_context *ctx = client->ctx;
	uint32_t i;

	for (i = 0; i < ctx->mrs.size; i++) {
		struct rn_mr *mr = ctx->mrs.slot[i];

		if (mr && mr->client == client) {
			mr->guarded = false; /* its uffd is closed */
			mr->unmapped = true;
			mr->gone_start = mr->gone_end = 0;
		}
	}
	rn_dbg("client pid %d retired; its context lives on\n", client->pid);
	client->pid = 0; /* what the kernel shows of a gone owner */
	client->retired = true;
	if (context_names(ctx, client))
		return true;
	rn_list_del(&client->ctx_link);
	client->ctx = NULL;
	return false;
}

/*
 * What the client holds of its process, then its context if no other
 * member lives.  True: the client is retired, and its context keeps it
 * (for the objects it made) until then; the caller must not free it.
 */
bool rn_client_release(struct rn_client *client)
{
	/* Closing the uffd unregisters all at once, before the MRs go. */
	rn_guard_close(client);
	if (client->async_fd >= 0)
		close(client->async_fd);
	client->async_fd = -1;
	rn_client_detach(client);
	if (!client->ctx)
		return false;
	if (--client->ctx->live)
		return retire(client);
	context_destroy(client);
	return false;
}
