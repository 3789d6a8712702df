#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# default.sh BUILD_DIR: without --netdev the port is bound to the interface
# of the IPv4 default route, else of the IPv6 default route, else to lo;
# and what --netdev and --address refuse.
set -u
. "$(dirname "$0")/lib.sh"
rn_netns "$@"

# The interface the port of a device started now is bound to.
bound_to() {
	local ndev
	rn_start rn0
	# The port is up before its addresses are in (netlink): GID 0 can be
	# published empty first, with no ndev yet.
	ndev="$(rn_port rn0)/gid_attrs/ndevs/0"
	for _ in $(seq 100); do
		[ -e "$ndev" ] && break
		sleep 0.05
	done
	cat "$ndev"
	rn_finish >/dev/null
}

# No default route: lo, and GID 0 is 127.0.0.1.
[ "$(bound_to)" = lo ] || rn_fail "not bound to lo without a default route"
rn_start rn0
rn_expect_gids rn0 "0=::ffff:127.0.0.1 1=::1"
rn_finish >/dev/null

# An IPv6 default route only.
rn_veth veth6
ip addr add 2001:2::1/64 dev veth6 nodad
ip -6 route add default via 2001:2::2 dev veth6
[ "$(bound_to)" = veth6 ] || rn_fail "not bound to the IPv6 default route's veth6"

# An IPv4 default route wins over the IPv6 one.
rn_veth veth4
ip addr add 198.18.0.1/24 dev veth4
ip route add default via 198.18.0.2 dev veth4
[ "$(bound_to)" = veth4 ] || rn_fail "not bound to the IPv4 default route's veth4"
rn_start rn0
rn_expect_gids rn0 "0=::ffff:198.18.0.1"
rn_finish >/dev/null

# --netdev wins over the default route.
rn_start rn0 --netdev veth6
rn_expect_gids rn0 "0=2001:2::1"
rn_finish >/dev/null

# Refused: an interface that does not exist (1), a name too long or an
# address that is none (2: usage).
expect_exit() { # STATUS MESSAGE ringnicd-args...
	local want=$1 msg=$2 out rc
	shift 2
	out=$(ringnicd --foreground --no-realtime --name rnx "$@" 2>&1)
	rc=$?
	[ $rc -eq "$want" ] && echo "$out" | grep -q "$msg" ||
		rn_fail "ringnicd $*: exit $rc, said: $out"
}
expect_exit 1 "no network interface nosuch0" --netdev nosuch0
expect_exit 2 "not an interface name" --netdev abcdefghijklmnopq
expect_exit 2 "not an IPv4 or IPv6 address" --address 198.18.0.300
expect_exit 2 "not an IPv4 or IPv6 address" --address veth4
[ -e "$RINGNIC_RUNTIME_DIR" ] && rn_fail "a refused ringnicd left $RINGNIC_RUNTIME_DIR"
echo "default.sh ok"
