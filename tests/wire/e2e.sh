#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# e2e.sh BUILD_DIR GROUP...: the e2e groups with each pair across the two
# hosts: requesters on ringnic0 (host A), responders on ringnic1 (host B),
# every packet RoCEv2 over the veth pair.  Afterwards both devices' counters
# are printed, and neither may have seen a malformed or corrupt packet.
set -u
. "$(dirname "$0")/lib.sh"
wire_hosts "$@"
shift
wire_devices
rc=0
for group in "$@"; do
	RINGNIC_E2E_PEER_DEVICE=ringnic1 ringnic-run "$build/bin/rn_e2e" "$group" ||
		rc=1
done
for dev in ringnic0 ringnic1; do
	echo "$dev: $(counters $dev)"
	for c in rx_icrc_errors rx_malformed_packets; do
		[ "$(counter $dev $c)" = 0 ] || wire_fail "$dev counted $c"
	done
done
[ $rc = 0 ] || wire_fail "some subtests failed"
wire_finish
