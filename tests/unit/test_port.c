// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Port 1 (port.c): active_mtu from the netdev MTU as rxe computes it, the
 * port state from the link, the GID table's index stability as the
 * kernel's GID cache keeps it, and addresses whose UDP port the wire could
 * not bind, which are no GIDs.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "verbs/verbs.h"

static struct rn_device dev;

static int setup(void **state)
{
	(void)state;
	memset(&dev, 0, sizeof(dev));
	dev.kdev_fd = -1; /* userspace mode */
	rn_list_init(&dev.clients);
	rn_port_init(&dev);
	return 0;
}

static union ibv_gid gid(const char *text)
{
	union ibv_gid g = {};
	uint8_t a[16];

	if (inet_pton(AF_INET, text, a) == 1) {
		g.raw[10] = g.raw[11] = 0xff;
		memcpy(g.raw + 12, a, 4);
	} else {
		assert_int_equal(inet_pton(AF_INET6, text, a), 1);
		memcpy(g.raw, a, 16);
	}
	return g;
}

/* The table must be exactly these addresses (NULL: empty), in order. */
static void expect_table(const char *const want[RN_GID_TABLE_LEN])
{
	for (int i = 0; i < RN_GID_TABLE_LEN; i++) {
		if (!want[i]) {
			assert_false(rn_port_gid_valid(&dev, i));
			continue;
		}
		union ibv_gid g = gid(want[i]);

		assert_true(rn_port_gid_valid(&dev, i));
		assert_memory_equal(dev.port.gids[i].raw, g.raw, 16);
		assert_int_equal(rn_port_gid_index(&dev, g.raw), i);
	}
}

static unsigned int set(const char *const *addrs)
{
	union ibv_gid g[RN_GID_TABLE_LEN + 4];
	uint32_t n = 0;

	for (; *addrs; addrs++)
		g[n++] = gid(*addrs);
	return rn_port_set_gids(&dev, g, n);
}

static void test_mtu(void **state)
{
	static const struct {
		uint32_t netdev;
		enum ibv_mtu ib;
	} cases[] = {
		{ 0, IBV_MTU_256 },	    { 68, IBV_MTU_256 },
		{ 335, IBV_MTU_256 },	    { 336, IBV_MTU_256 },
		{ 591, IBV_MTU_256 },	    { 592, IBV_MTU_512 },
		{ 1103, IBV_MTU_512 },	    { 1104, IBV_MTU_1024 },
		{ 1500, IBV_MTU_1024 },	    { 2127, IBV_MTU_1024 },
		{ 2128, IBV_MTU_2048 },	    { 4175, IBV_MTU_2048 },
		{ 4176, IBV_MTU_4096 },	    { 9000, IBV_MTU_4096 },
		{ 65536, IBV_MTU_4096 },    { UINT32_MAX, IBV_MTU_4096 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(rn_port_mtu_of(cases[i].netdev), cases[i].ib);
}

static void test_link(void **state)
{
	struct rn_link l = { .ifindex = 3, .ifname = "veth0", .running = true,
			     .mtu = 1500 };
	struct rn_port_attr a;

	(void)state;
	/* Unbound: down, 256. */
	rn_port_query(&dev, &a);
	assert_int_equal(a.state, IBV_PORT_DOWN);
	assert_int_equal(a.active_mtu, IBV_MTU_256);

	assert_int_equal(rn_port_set_link(&dev, &l),
			 RN_PORT_NETDEV | RN_PORT_STATE | RN_PORT_MTU);
	assert_int_equal(rn_port_set_link(&dev, &l), 0);
	rn_port_query(&dev, &a);
	assert_int_equal(a.state, IBV_PORT_ACTIVE);
	assert_int_equal(a.phys_state, 5);
	assert_int_equal(a.active_mtu, IBV_MTU_1024);
	assert_int_equal(a.max_mtu, IBV_MTU_4096);
	assert_int_equal(rn_port_mtu_bytes(&dev), 1024);

	l.running = false;
	assert_int_equal(rn_port_set_link(&dev, &l), RN_PORT_STATE);
	rn_port_query(&dev, &a);
	assert_int_equal(a.state, IBV_PORT_DOWN);
	assert_int_equal(a.phys_state, 3);

	l.mtu = 9000;
	assert_int_equal(rn_port_set_link(&dev, &l), RN_PORT_MTU);
	assert_int_equal(dev.port.active_mtu, IBV_MTU_4096);

	/* Renamed: followed.  Gone: down, the last MTU kept. */
	strcpy(l.ifname, "wan0");
	l.running = true;
	assert_int_equal(rn_port_set_link(&dev, &l), RN_PORT_NETDEV | RN_PORT_STATE);
	assert_string_equal(dev.port.ifname, "wan0");
	memset(&l, 0, sizeof(l));
	l.running = true;
	assert_int_equal(rn_port_set_link(&dev, &l), RN_PORT_NETDEV | RN_PORT_STATE);
	assert_false(dev.port.link_up);
	assert_int_equal(dev.port.active_mtu, IBV_MTU_4096);
}

static void test_gid_stability(void **state)
{
	(void)state;
	assert_int_equal(set((const char *[]){ "198.18.0.1", "2001:2::1",
					       "fe80::1", NULL }),
			 RN_PORT_GIDS);
	expect_table((const char *[RN_GID_TABLE_LEN]){ "198.18.0.1", "2001:2::1",
						       "fe80::1" });
	/* The same addresses, in another order: nothing moves. */
	assert_int_equal(set((const char *[]){ "fe80::1", "2001:2::1",
					       "198.18.0.1", NULL }), 0);
	/* One goes: a hole; the rest keep their index. */
	assert_int_equal(set((const char *[]){ "fe80::1", "198.18.0.1", NULL }),
			 RN_PORT_GIDS);
	expect_table((const char *[RN_GID_TABLE_LEN]){ "198.18.0.1", NULL,
						       "fe80::1" });
	assert_int_equal(rn_port_gid_mask(&dev), 0x5);
	assert_int_equal(rn_port_gid_first(&dev), 0);
	/* In kernel mode the kernel already checked what a QP names. */
	dev.kdev_fd = 3;
	assert_true(rn_port_gid_nameable(&dev, 1));
	assert_false(rn_port_gid_nameable(&dev, RN_GID_TABLE_LEN));
	assert_false(rn_port_gid_valid(&dev, 1));
	dev.kdev_fd = -1;
	assert_false(rn_port_gid_nameable(&dev, 1));
	/* New ones take the first empty entries. */
	set((const char *[]){ "fe80::1", "198.18.0.1", "198.18.0.9",
			      "2001:2::9", NULL });
	expect_table((const char *[RN_GID_TABLE_LEN]){ "198.18.0.1", "198.18.0.9",
						       "fe80::1", "2001:2::9" });
	/* All gone, then back: from entry 0 again. */
	set((const char *[]){ NULL });
	expect_table((const char *[RN_GID_TABLE_LEN]){ NULL });
	assert_int_equal(rn_port_gid_first(&dev), -1);
	set((const char *[]){ "2001:2::9", NULL });
	expect_table((const char *[RN_GID_TABLE_LEN]){ "2001:2::9" });
}

/* An entry a QP or AH names is not free until the last one lets go. */
static void test_gid_held(void **state)
{
	(void)state;
	set((const char *[]){ "198.18.0.1", "198.18.0.2", NULL });
	rn_port_gid_hold(&dev, 0);
	rn_port_gid_hold(&dev, 0);
	rn_port_gid_hold(&dev, -1); /* no GRH: nothing held */
	set((const char *[]){ "198.18.0.2", NULL });
	expect_table((const char *[RN_GID_TABLE_LEN]){ NULL, "198.18.0.2" });
	/* Even its own address comes back elsewhere. */
	set((const char *[]){ "198.18.0.2", "198.18.0.1", NULL });
	expect_table((const char *[RN_GID_TABLE_LEN]){ NULL, "198.18.0.2",
						       "198.18.0.1" });
	rn_port_gid_put(&dev, 0);
	set((const char *[]){ "198.18.0.2", "198.18.0.1", "198.18.0.3", NULL });
	expect_table((const char *[RN_GID_TABLE_LEN]){ NULL, "198.18.0.2",
						       "198.18.0.1", "198.18.0.3" });
	rn_port_gid_put(&dev, 0);
	rn_port_gid_put(&dev, -1);
	set((const char *[]){ "198.18.0.2", "198.18.0.1", "198.18.0.3",
			      "198.18.0.4", NULL });
	expect_table((const char *[RN_GID_TABLE_LEN]){ "198.18.0.4", "198.18.0.2",
						       "198.18.0.1", "198.18.0.3" });
}

/* More addresses than entries: the first ones fit, the rest wait. */
static void test_gid_full(void **state)
{
	const char *addrs[RN_GID_TABLE_LEN + 3];
	char text[RN_GID_TABLE_LEN + 2][16];
	int i;

	(void)state;
	for (i = 0; i < RN_GID_TABLE_LEN + 2; i++) {
		snprintf(text[i], sizeof(text[i]), "198.18.1.%d", i + 1);
		addrs[i] = text[i];
	}
	addrs[i] = NULL;
	assert_int_equal(set(addrs), RN_PORT_GIDS);
	assert_int_equal(rn_port_gid_mask(&dev), (1u << RN_GID_TABLE_LEN) - 1);
	assert_int_equal(rn_port_gid_index(&dev, gid("198.18.1.17").raw), -1);
	/* One of the first goes: the first waiting one takes its entry. */
	addrs[3] = addrs[RN_GID_TABLE_LEN + 1];
	addrs[RN_GID_TABLE_LEN + 1] = NULL;
	set(addrs);
	assert_int_equal(rn_port_gid_index(&dev, gid("198.18.1.4").raw), -1);
	assert_int_equal(rn_port_gid_index(&dev, gid("198.18.1.18").raw), 3);
	assert_int_equal(rn_port_gid_index(&dev, gid("198.18.1.17").raw), -1);
}

/*
 * An address the wire has no socket for keeps its entry but is no GID,
 * unless it is a loopback address whose QPs meet through memory; a port
 * whose addresses are all such is INIT, with the link up.
 */
static void test_gid_unbound(void **state)
{
	struct rn_link l = { .ifindex = 3, .ifname = "veth0", .running = true,
			     .mtu = 1500 };
	struct rn_port_attr a;
	union ibv_gid seen[RN_GID_TABLE_LEN];

	(void)state;
	rn_port_set_link(&dev, &l);
	set((const char *[]){ "198.18.0.1", NULL });
	dev.port.gid_errors[0] = EADDRINUSE;
	expect_table((const char *[RN_GID_TABLE_LEN]){ NULL });
	assert_int_equal(rn_port_gid_index(&dev, gid("198.18.0.1").raw), -1);
	assert_int_equal(rn_port_address_index(&dev, gid("198.18.0.1").raw), 0);
	assert_int_equal(rn_port_gid_first(&dev), -1);
	assert_int_equal(rn_port_gid_mask(&dev), 0);
	rn_port_gid_table(&dev, seen);
	assert_true(rn_gid_is_zero(seen[0].raw));
	rn_port_query(&dev, &a);
	assert_int_equal(a.state, IBV_PORT_INIT);
	assert_int_equal(a.phys_state, 5);
	/* The link down: DOWN, whatever the addresses. */
	l.running = false;
	assert_int_equal(rn_port_set_link(&dev, &l), RN_PORT_STATE);
	assert_int_equal(rn_port_state(&dev), IBV_PORT_DOWN);
	l.running = true;
	assert_int_equal(rn_port_set_link(&dev, &l), RN_PORT_STATE);
	assert_int_equal(rn_port_state(&dev), IBV_PORT_INIT);

	/* It keeps its entry: a new address takes the next one, a GID. */
	set((const char *[]){ "198.18.0.1", "198.18.0.2", NULL });
	expect_table((const char *[RN_GID_TABLE_LEN]){ NULL, "198.18.0.2" });
	assert_int_equal(rn_port_state(&dev), IBV_PORT_ACTIVE);
	rn_port_gid_table(&dev, seen);
	assert_true(rn_gid_is_zero(seen[0].raw));
	assert_memory_equal(seen[1].raw, gid("198.18.0.2").raw, 16);
	/* Bound at last. */
	dev.port.gid_errors[0] = 0;
	expect_table((const char *[RN_GID_TABLE_LEN]){ "198.18.0.1", "198.18.0.2" });

	/* Gone while unbound: its entry is free, with no reason left. */
	dev.port.gid_errors[0] = EADDRINUSE;
	set((const char *[]){ "198.18.0.2", NULL });
	assert_int_equal(dev.port.gid_errors[0], 0);
	assert_int_equal(rn_port_address_index(&dev, gid("198.18.0.1").raw), -1);

	/* Loopback addresses need no socket, unless QPs go on the wire. */
	set((const char *[]){ "127.0.0.1", "::1", "198.18.0.2", NULL });
	dev.port.gid_errors[0] = EADDRINUSE;
	dev.port.gid_errors[2] = EADDRINUSE;
	expect_table((const char *[RN_GID_TABLE_LEN]){ "127.0.0.1", "198.18.0.2",
						       "::1" });
	dev.local_on_wire = true;
	expect_table((const char *[RN_GID_TABLE_LEN]){ NULL, "198.18.0.2" });
	dev.port.gid_errors[1] = EACCES;
	assert_int_equal(rn_port_state(&dev), IBV_PORT_INIT);
	/* No address at all: ACTIVE, as rxe's port. */
	set((const char *[]){ NULL });
	assert_int_equal(rn_port_state(&dev), IBV_PORT_ACTIVE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_mtu, setup),
		cmocka_unit_test_setup(test_link, setup),
		cmocka_unit_test_setup(test_gid_stability, setup),
		cmocka_unit_test_setup(test_gid_held, setup),
		cmocka_unit_test_setup(test_gid_full, setup),
		cmocka_unit_test_setup(test_gid_unbound, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
