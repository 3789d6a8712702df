// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <string.h>

#include "base/gid.h"

static const uint8_t ipv4_prefix[12] = { [10] = 0xff, [11] = 0xff };

bool rn_gid_is_ipv4(const uint8_t *gid)
{
	return !memcmp(gid, ipv4_prefix, sizeof(ipv4_prefix));
}

bool rn_gid_is_zero(const uint8_t *gid)
{
	static const uint8_t zero[RN_GID_LEN];

	return !memcmp(gid, zero, sizeof(zero));
}

bool rn_gid_is_link_local(const uint8_t *gid)
{
	return gid[0] == 0xfe && (gid[1] & 0xc0) == 0x80;
}

bool rn_gid_is_loopback(const uint8_t *gid)
{
	static const uint8_t ipv6[RN_GID_LEN] = { [15] = 1 };

	if (rn_gid_is_ipv4(gid))
		return gid[12] == 127;
	return !memcmp(gid, ipv6, sizeof(ipv6));
}

void rn_gid_from_addr(uint8_t *gid, int family, const void *addr)
{
	memset(gid, 0, RN_GID_LEN);
	if (family == AF_INET) {
		memcpy(gid, ipv4_prefix, sizeof(ipv4_prefix));
		memcpy(gid + sizeof(ipv4_prefix), addr, 4);
	} else if (family == AF_INET6) {
		memcpy(gid, addr, RN_GID_LEN);
	}
}

void rn_gid_from_sockaddr(uint8_t *gid, const struct sockaddr *sa)
{
	const union rn_sockaddr *u = (const union rn_sockaddr *)sa;

	if (sa->sa_family == AF_INET)
		rn_gid_from_addr(gid, AF_INET, &u->v4.sin_addr);
	else
		rn_gid_from_addr(gid, sa->sa_family, &u->v6.sin6_addr);
}
