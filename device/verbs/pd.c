// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Protection domains. */
#include <errno.h>
#include <stdlib.h>

#include "verbs/verbs.h"

int rn_pd_alloc(struct rn_client *client, uint32_t *handle)
{
	struct rn_pd *pd = calloc(1, sizeof(*pd));
	int64_t h;

	if (!pd)
		return ENOMEM;
	if (client->dev->npds >= client->dev->attr.max_pd) {
		free(pd);
		return ENOMEM;
	}
	h = rn_table_insert(&client->ctx->pds, pd);
	if (h < 0) {
		free(pd);
		return ENOMEM;
	}
	pd->client = client;
	pd->handle = h;
	pd->pdn = client->dev->next_resn.pd++;
	*handle = h;
	client->dev->npds++;
	return 0;
}

int rn_pd_dealloc(struct rn_client *client, uint32_t handle)
{
	struct rn_pd *pd = rn_table_get(&client->ctx->pds, handle);

	if (!pd)
		return EINVAL;
	if (pd->refs)
		return EBUSY;
	rn_table_remove(&client->ctx->pds, handle);
	client->dev->npds--;
	free(pd);
	return 0;
}


int rn_pd_query(struct rn_client *client, uint32_t handle)
{
	return rn_table_get(&client->ctx->pds, handle) ? 0 : EINVAL;
}
