#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# link.sh BUILD_DIR: the port state follows the link of its veth as rxe's
# does: up and running (carrier) -> ACTIVE / LinkUp, else DOWN / Disabled,
# in the published files and in QUERY_PORT as unmodified ibv_devinfo -v
# shows them; each change is an IBV_EVENT_PORT_ERR or IBV_EVENT_PORT_ACTIVE
# naming port 1 for unmodified ibv_asyncwatch.  lo has no carrier: up is
# ACTIVE.
set -u
. "$(dirname "$0")/lib.sh"
rn_netns "$@"

rn_veth veth0
ip addr add 198.18.0.1/24 dev veth0
rn_start rn0 --netdev veth0
port=$(rn_port rn0)
events_file=$RINGNIC_RUNTIME_DIR.events
rn_asyncwatch rn0 "$events_file"
events=

expect_state() { # ACTIVE|DOWN
	if [ "$1" = ACTIVE ]; then
		rn_expect_devinfo rn0 state "PORT_ACTIVE (4)"
		rn_expect_devinfo rn0 phys_state "LINK_UP (5)"
		[ "$(cat "$port/state")" = "4: ACTIVE" ] &&
			[ "$(cat "$port/phys_state")" = "5: LinkUp" ]
	else
		rn_expect_devinfo rn0 state "PORT_DOWN (1)"
		rn_expect_devinfo rn0 phys_state "DISABLED (3)"
		[ "$(cat "$port/state")" = "1: DOWN" ] &&
			[ "$(cat "$port/phys_state")" = "3: Disabled" ]
	fi || rn_fail "published state: $(cat "$port/state" "$port/phys_state")"
}

# step CMD... STATE EVENT
step() {
	local n=$#
	"${@:1:n-2}" || rn_fail "${*:1:n-2} failed"
	expect_state "${@:n-1:1}"
	events="${events:+$events }${*:n:1}/1"
	rn_expect_events "$events_file" "$events"
}

expect_state ACTIVE
step ip link set veth0 down DOWN PORT_ERR
step ip link set veth0 up ACTIVE PORT_ACTIVE
# The peer down: veth0 is up but without carrier.
step ip link set veth0-p down DOWN PORT_ERR
step ip link set veth0-p up ACTIVE PORT_ACTIVE
# The GIDs stay while the link is down (IPv4 addresses do).
step ip link set veth0 down DOWN PORT_ERR
rn_expect_gids rn0 "0=::ffff:198.18.0.1"
step ip link set veth0 up ACTIVE PORT_ACTIVE
sleep 0.3
rn_expect_events "$events_file" "$events"
rn_finish

# lo: up is ACTIVE; down is DOWN (its addresses go with it but 127.0.0.1).
rn_start rn1 --netdev lo
rn_expect_devinfo rn1 state "PORT_ACTIVE (4)"
ip link set lo down
rn_expect_devinfo rn1 state "PORT_DOWN (1)"
ip link set lo up
rn_expect_devinfo rn1 state "PORT_ACTIVE (4)"
rn_finish
