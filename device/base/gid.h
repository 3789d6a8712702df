/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * GIDs as RoCEv2 uses them: a GID is an IP address, IPv6 as it is and
 * IPv4 mapped (::ffff:a.b.c.d); and the socket address that holds one.
 */
#ifndef RN_BASE_GID_H
#define RN_BASE_GID_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#define RN_GID_LEN 16

/* An IPv4 or IPv6 socket address. */
union rn_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in v4;
	struct sockaddr_in6 v6;
};

/* Is the GID an IPv4-mapped address (::ffff:a.b.c.d)? */
bool rn_gid_is_ipv4(const uint8_t *gid);
/* All zeros: no address (an empty GID table entry). */
bool rn_gid_is_zero(const uint8_t *gid);
/* IPv6 link-local (fe80::/10). */
bool rn_gid_is_link_local(const uint8_t *gid);
/* A loopback address (127.0.0.0/8, ::1): its packets never leave the host. */
bool rn_gid_is_loopback(const uint8_t *gid);
/* The GID of an address of the family (AF_INET: 4 bytes, AF_INET6: 16). */
void rn_gid_from_addr(uint8_t *gid, int family, const void *addr);
/* The GID of a socket address; all zeros for another family. */
void rn_gid_from_sockaddr(uint8_t *gid, const struct sockaddr *sa);

#endif
