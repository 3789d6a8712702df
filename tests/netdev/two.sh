#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# two.sh BUILD_DIR: two ringnicd on one interface (lo), each serving the
# addresses --address gives it: disjoint GID tables, each following only
# its own addresses, both devices usable (ibv_rc_pingpong on each).
set -u
. "$(dirname "$0")/lib.sh"
rn_netns "$@"

ip addr add 198.18.0.2/24 dev lo
ip addr add 198.18.0.3/24 dev lo
ip addr add 2001:2::2/64 dev lo nodad
rn_start rna --netdev lo --address 198.18.0.2 --address 2001:2::2
rn_start rnb --netdev lo --address 198.18.0.3
rn_expect_gids rna "0=::ffff:198.18.0.2 1=2001:2::2"
rn_expect_gids rnb "0=::ffff:198.18.0.3"
common=$(comm -12 <(rn_gids rna | tr ' ' '\n' | cut -d= -f2 | sort) \
	<(rn_gids rnb | tr ' ' '\n' | cut -d= -f2 | sort))
[ -z "$common" ] || rn_fail "both devices have $common"

# Another address of lo is neither's; one of rnb's goes and comes back.
ip addr add 198.18.0.4/24 dev lo
ip addr del 198.18.0.3/24 dev lo
rn_expect_gids rnb ""
ip addr add 198.18.0.3/24 dev lo
rn_expect_gids rnb "0=::ffff:198.18.0.3"
rn_expect_gids rna "0=::ffff:198.18.0.2 1=2001:2::2"

# Both work, each through its own GID 0.
for dev in rna rnb; do
	"$(dirname "$0")/../pair.sh" pingpong 18951 \
		ibv_rc_pingpong -d $dev -g 0 -n 200 -p 18951 -- \
		ibv_rc_pingpong -d $dev -g 0 -n 200 -p 18951 localhost >/dev/null ||
		rn_fail "ibv_rc_pingpong on $dev failed"
done
rn_finish
