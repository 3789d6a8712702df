// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Address handles: where UD sends go, checked once when made. */
#include <errno.h>
#include <stdlib.h>

#include "verbs/verbs.h"
#include "base/table.h"

int rn_ah_create(struct rn_client *client, const struct rn_ctl_create_ah_req *req,
		 struct rn_ctl_create_ah_resp *resp)
{
	struct rn_device *dev = client->dev;
	struct rn_pd *pd = rn_table_get(&client->ctx->pds, req->pd);
	const struct rn_ah_attr *a = &req->attr;
	struct rn_ah *ah;
	int64_t h;

	/* RoCE has no LIDs: an AH carries a GRH, whose source GID the port
	 * has (the kernel's errors).
	 */
	if (!pd || a->port_num != 1 || !a->is_global ||
	    a->sgid_index >= RN_GID_TABLE_LEN)
		return EINVAL;
	if (!rn_port_gid_nameable(dev, a->sgid_index))
		return ENODATA;
	if (dev->nahs >= dev->attr.max_ah)
		return ENOMEM;
	ah = calloc(1, sizeof(*ah));
	if (!ah)
		return ENOMEM;
	h = rn_table_insert(&client->ctx->ahs, ah);
	if (h < 0) {
		free(ah);
		return ENOMEM;
	}
	ah->client = client;
	ah->pd = pd;
	ah->handle = h;
	ah->attr = *a;
	/* A flow label is 20 bits; UCX, for one, passes ~0. */
	ah->attr.flow_label &= 0xfffff;
	rn_port_gid_hold(dev, a->sgid_index);
	pd->refs++;
	dev->nahs++;
	resp->handle = h;
	return 0;
}

int rn_ah_destroy(struct rn_client *client, uint32_t handle)
{
	struct rn_ah *ah = rn_table_get(&client->ctx->ahs, handle);

	if (!ah)
		return EINVAL;
	rn_table_remove(&client->ctx->ahs, handle);
	rn_port_gid_put(client->dev, ah->attr.sgid_index);
	ah->pd->refs--;
	client->dev->nahs--;
	free(ah);
	return 0;
}
