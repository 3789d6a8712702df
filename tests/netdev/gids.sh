#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# gids.sh BUILD_DIR: the GID table of a port bound to a veth follows the
# interface's addresses (ip addr add/del, IPv4 and IPv6, global and
# link-local) with no restart, as the kernel's GID cache does: an entry
# keeps its index while its address exists, a removed address leaves an
# empty entry (zeros, no ndev), a new address takes the first free entry,
# and an entry a QP or AH still names is not free.  Unmodified ibv_devinfo
# shows the table, unmodified ibv_asyncwatch gets IBV_EVENT_GID_CHANGE for
# every change.
set -u
. "$(dirname "$0")/lib.sh"
rn_netns "$@"

rn_veth veth0
ip addr add 198.18.0.1/24 dev veth0
rn_start rn0 --netdev veth0
port=$(rn_port rn0)
rn_asyncwatch rn0 "$RINGNIC_RUNTIME_DIR.events"
events=

# step CMD... TABLE: run CMD, then the table must become TABLE, with one
# more GID_CHANGE.
step() {
	local table=${*: -1}
	"${@:1:$#-1}" || rn_fail "$* failed"
	rn_expect_gids rn0 "$table"
	events="${events:+$events }GID_CHANGE/1"
	rn_expect_events "$RINGNIC_RUNTIME_DIR.events" "$events"
}

rn_expect_gids rn0 "0=::ffff:198.18.0.1"
[ "$(cat "$port/gids/0")" = 0000:0000:0000:0000:0000:ffff:c612:0001 ] ||
	rn_fail "gids/0 is $(cat "$port/gids/0")"
[ "$(cat "$port/gid_attrs/ndevs/0")" = veth0 ] &&
	[ "$(cat "$port/gid_attrs/types/0")" = "RoCE v2" ] ||
	rn_fail "GID 0 is not a RoCE v2 GID of veth0"

step ip addr add 2001:2::1/64 dev veth0 nodad \
	"0=::ffff:198.18.0.1 1=2001:2::1"
step ip addr add 198.18.1.5/24 dev veth0 \
	"0=::ffff:198.18.0.1 1=2001:2::1 2=::ffff:198.18.1.5"
step ip addr del 198.18.0.1/24 dev veth0 \
	"1=2001:2::1 2=::ffff:198.18.1.5"
[ "$(cat "$port/gids/0")" = 0000:0000:0000:0000:0000:0000:0000:0000 ] &&
	! [ -e "$port/gid_attrs/ndevs/0" ] ||
	rn_fail "GID 0 is not empty in the published tree"
# The first free entry; a link-local address as any other.
step ip addr add fe80::c612:7/64 dev veth0 nodad \
	"0=fe80::c612:7 1=2001:2::1 2=::ffff:198.18.1.5"
[ "$(cat "$port/gids/0")" = fe80:0000:0000:0000:0000:0000:c612:0007 ] ||
	rn_fail "gids/0 is $(cat "$port/gids/0")"

# Entry 2 held by a QP and an AH: emptied when its address goes, but not
# given to the next address while they name it.
holder_in=$RINGNIC_RUNTIME_DIR.hold
mkfifo "$holder_in"
ringnic-run rn_gid_user rn0 hold 2 <"$holder_in" >"$RINGNIC_RUNTIME_DIR.holder" 2>&1 &
holder=$!
exec {feed}>"$holder_in"
rn_until grep -q holding "$RINGNIC_RUNTIME_DIR.holder" ||
	rn_fail "rn_gid_user hold: $(cat "$RINGNIC_RUNTIME_DIR.holder")"
step ip addr del 198.18.1.5/24 dev veth0 "0=fe80::c612:7 1=2001:2::1"
step ip addr add 198.18.2.6/24 dev veth0 \
	"0=fe80::c612:7 1=2001:2::1 3=::ffff:198.18.2.6"
ringnic-run rn_gid_user rn0 empty 2 | grep -qx empty ||
	rn_fail "entry 2 does not answer as an empty entry"
exec {feed}>&-
wait $holder || rn_fail "rn_gid_user hold failed"
step ip addr add 198.18.3.7/24 dev veth0 \
	"0=fe80::c612:7 1=2001:2::1 2=::ffff:198.18.3.7 3=::ffff:198.18.2.6"
# The same address again: its old entry went, it takes the first free one.
step ip addr del 2001:2::1/64 dev veth0 \
	"0=fe80::c612:7 2=::ffff:198.18.3.7 3=::ffff:198.18.2.6"
step ip addr add 2001:2::1/64 dev veth0 nodad \
	"0=fe80::c612:7 1=2001:2::1 2=::ffff:198.18.3.7 3=::ffff:198.18.2.6"

# Nothing else was announced.
sleep 0.3
rn_expect_events "$RINGNIC_RUNTIME_DIR.events" "$events"
rn_finish
