// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * XRC domains.  A domain is the device's, not a context's: contexts that
 * open the same file (its inode, proved by the descriptor they pass) share
 * one, as with the kernel's uverbs, and it goes when the last open and the
 * last XRC SRQ or XRC_RECV QP in it do.
 *
 * In kernel mode the kernel itself keeps domains by inode and shares them
 * between its contexts: a kernel context opens only new, private domains
 * here, and names domains by their device-wide id, which the kernel stub
 * (trusted) keeps for each of its domains.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "verbs/verbs.h"
#include "base/table.h"

static struct rn_xrcd *find_named(struct rn_device *dev, const struct stat *st)
{
	uint32_t i;

	for (i = 0; i < dev->xrcds.size; i++) {
		struct rn_xrcd *x = dev->xrcds.slot[i];

		if (x && x->named && x->file_dev == st->st_dev &&
		    x->file_ino == st->st_ino)
			return x;
	}
	return NULL;
}

static struct rn_xrcd *xrcd_new(struct rn_device *dev, const struct stat *st)
{
	struct rn_xrcd *x = calloc(1, sizeof(*x));
	int64_t id;

	if (!x)
		return NULL;
	id = rn_table_insert(&dev->xrcds, x);
	if (id < 0) {
		free(x);
		return NULL;
	}
	x->id = id;
	if (st) {
		x->named = true;
		x->file_dev = st->st_dev;
		x->file_ino = st->st_ino;
	}
	return x;
}

static void xrcd_free_unused(struct rn_device *dev, struct rn_xrcd *x)
{
	if (x->opens || x->users)
		return;
	rn_table_remove(&dev->xrcds, x->id);
	free(x);
}

void rn_xrcd_get(struct rn_xrcd *x)
{
	x->users++;
}

void rn_xrcd_put(struct rn_device *dev, struct rn_xrcd *x)
{
	x->users--;
	xrcd_free_unused(dev, x);
}

/* The domain a request of this client names. */
struct rn_xrcd *rn_xrcd_of(struct rn_client *client, uint32_t handle)
{
	if (client->kctx)
		return rn_table_get(&client->dev->xrcds, handle);
	return rn_table_get(&client->ctx->xrcds, handle);
}

int rn_xrcd_open(struct rn_client *client, const struct rn_ctl_open_xrcd_req *req,
		 int fd, struct rn_ctl_open_xrcd_resp *resp)
{
	struct rn_device *dev = client->dev;
	struct rn_xrcd *x = NULL;
	struct stat st;
	int64_t h;

	if (req->oflags & ~(O_CREAT | O_EXCL))
		return EINVAL;
	if (fd >= 0) {
		if (client->kctx || fstat(fd, &st))
			return EINVAL;
		x = find_named(dev, &st);
		/* The kernel's answers: a missing domain without O_CREAT is
		 * EAGAIN, an existing one with O_EXCL is EINVAL.
		 */
		if (!x && !(req->oflags & O_CREAT))
			return EAGAIN;
		if (x && req->oflags & O_EXCL)
			return EINVAL;
	}
	if (!x) {
		x = xrcd_new(dev, fd >= 0 ? &st : NULL);
		if (!x)
			return ENOMEM;
	}
	x->opens++;
	if (client->kctx) {
		resp->handle = x->id; /* the kernel stub holds it */
		return 0;
	}
	h = rn_table_insert(&client->ctx->xrcds, x);
	if (h < 0) {
		x->opens--;
		xrcd_free_unused(dev, x);
		return ENOMEM;
	}
	resp->handle = h;
	return 0;
}

int rn_xrcd_close(struct rn_client *client, uint32_t handle)
{
	struct rn_xrcd *x = rn_xrcd_of(client, handle);

	if (!x)
		return EINVAL;
	/* As the kernel: the last open of a domain still in use is refused. */
	if (x->opens == 1 && x->users)
		return EBUSY;
	if (!client->kctx)
		rn_table_remove(&client->ctx->xrcds, handle);
	x->opens--;
	xrcd_free_unused(client->dev, x);
	return 0;
}

/* A context that goes lets go of the domains it opened. */
void rn_xrcd_release(struct rn_client *client, uint32_t handle)
{
	struct rn_xrcd *x = rn_table_get(&client->ctx->xrcds, handle);

	rn_table_remove(&client->ctx->xrcds, handle);
	x->opens--;
	xrcd_free_unused(client->dev, x);
}
