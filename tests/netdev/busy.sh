#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# busy.sh BUILD_DIR: an address whose UDP port 4791 another socket holds
# (rdma_rxe in the same network namespace does) is no GID: its entry reads
# as empty, and a port that can use none of its addresses is INIT (physical
# state LinkUp), not ACTIVE.  Why is in ringnicd's log, in the port's
# ringnic_unbound file and on ringnic-run's standard error.  Once the port
# is free the address becomes a GID on its own (ringnicd tries again every
# second), and traffic goes through it.
set -u
. "$(dirname "$0")/lib.sh"
rn_netns "$@"

rn_veth veth0
ip addr add 198.18.0.1/24 dev veth0
rn_udp_hold 4791 198.18.0.1 >"$RINGNIC_RUNTIME_DIR.holder" 2>&1 &
holder=$!
rn_until grep -q holding "$RINGNIC_RUNTIME_DIR.holder" ||
	rn_fail "rn_udp_hold: $(cat "$RINGNIC_RUNTIME_DIR.holder")"

# --local-on-wire: a pingpong on rn0 goes through the address's socket.
rn_start rn0 --netdev veth0 --local-on-wire
port=$(rn_port rn0)
log=$RINGNIC_RUNTIME_DIR.rn0.log
rn_expect_gids rn0 ""
rn_expect_devinfo rn0 state "PORT_INIT (2)"
rn_expect_devinfo rn0 phys_state "LINK_UP (5)"
[ "$(cat "$port/state")" = "2: INIT" ] &&
	[ "$(cat "$port/phys_state")" = "5: LinkUp" ] ||
	rn_fail "published state: $(cat "$port/state" "$port/phys_state")"
[ "$(cat "$port/gids/0")" = 0000:0000:0000:0000:0000:0000:0000:0000 ] &&
	! [ -e "$port/gid_attrs/ndevs/0" ] ||
	rn_fail "GID 0 is not empty in the published tree"
grep -q "198.18.0.1): cannot bind UDP port 4791: Address already in use" "$log" ||
	rn_fail "the log does not say why 198.18.0.1 is no GID"
grep -q "rn0: port 1 INIT" "$log" || rn_fail "the log does not say the port is INIT"
[ "$(cat "$port/ringnic_unbound" 2>&1)" = \
	"198.18.0.1: cannot bind UDP port 4791: Address already in use" ] ||
	rn_fail "ringnic_unbound: $(cat "$port/ringnic_unbound" 2>&1)"
said=$(ringnic-run true 2>&1)
grep -q "^ringnic-run: rn0: 198.18.0.1 is not a GID: cannot bind UDP port 4791: Address already in use" <<<"$said" ||
	rn_fail "ringnic-run said: '$said'"
# The entry fails at once where it is named, as an empty one.
ringnic-run rn_gid_user rn0 empty 0 2>/dev/null | grep -qx empty ||
	rn_fail "entry 0 does not answer as an empty entry"

# Another address, whose port is free: a GID, and the port ACTIVE.  The
# busy address keeps its entry, empty.
rn_asyncwatch rn0 "$RINGNIC_RUNTIME_DIR.events"
ip addr add 198.18.0.2/24 dev veth0
rn_expect_gids rn0 "1=::ffff:198.18.0.2"
rn_expect_devinfo rn0 state "PORT_ACTIVE (4)"
rn_expect_events "$RINGNIC_RUNTIME_DIR.events" "PORT_ACTIVE/1 GID_CHANGE/1"
grep -q "198.18.0.1" "$port/ringnic_unbound" ||
	rn_fail "ringnic_unbound: $(cat "$port/ringnic_unbound" 2>&1)"

# The port freed: 198.18.0.1 becomes a GID with no other change.
kill $holder
wait $holder
rn_expect_gids rn0 "0=::ffff:198.18.0.1 1=::ffff:198.18.0.2"
rn_expect_events "$RINGNIC_RUNTIME_DIR.events" \
	"PORT_ACTIVE/1 GID_CHANGE/1 GID_CHANGE/1"
grep -q "198.18.0.1): UDP port 4791 bound" "$log" ||
	rn_fail "the log does not say 198.18.0.1 is a GID now"
! [ -e "$port/ringnic_unbound" ] ||
	rn_fail "ringnic_unbound is left: $(cat "$port/ringnic_unbound")"
said=$(ringnic-run true 2>&1)
[ -z "$said" ] || rn_fail "ringnic-run still says: '$said'"

# Its socket carries the traffic of a pingpong through GID 0.
sent=$(cat "$port/hw_counters/sent_pkts")
"$(dirname "$0")/../pair.sh" pingpong 18952 \
	ibv_rc_pingpong -d rn0 -g 0 -n 100 -p 18952 -- \
	ibv_rc_pingpong -d rn0 -g 0 -n 100 -p 18952 localhost >/dev/null ||
	rn_fail "ibv_rc_pingpong through 198.18.0.1 failed"
sent_since() { [ "$(cat "$port/hw_counters/sent_pkts")" -ge $((sent + $1)) ]; }
rn_until sent_since 200 ||
	rn_fail "sent_pkts went from $sent to $(cat "$port/hw_counters/sent_pkts")"
sleep 0.3
rn_expect_events "$RINGNIC_RUNTIME_DIR.events" \
	"PORT_ACTIVE/1 GID_CHANGE/1 GID_CHANGE/1"
rn_finish
