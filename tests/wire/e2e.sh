#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# e2e.sh BUILD_DIR GROUP...: the e2e groups with each pair across the two
# hosts: requesters on ringnic0 (host A), responders on ringnic1 (host B),
# every packet RoCEv2 over the veth pair.  Afterwards both devices' counters
# are printed, and neither may have seen a malformed or corrupt packet but
# those the other corrupted on purpose (injected_icrc_errors: the faults
# group).
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
done
[ "$(counter ringnic0 rx_icrc_errors)" = "$(counter ringnic1 injected_icrc_errors)" ] ||
	wire_fail "ringnic0 counted rx_icrc_errors"
[ "$(counter ringnic1 rx_icrc_errors)" = "$(counter ringnic0 injected_icrc_errors)" ] ||
	wire_fail "ringnic1 counted rx_icrc_errors"
for dev in ringnic0 ringnic1; do
	[ "$(counter $dev rx_malformed_packets)" = 0 ] ||
		wire_fail "$dev counted rx_malformed_packets"
done
[ $rc = 0 ] || wire_fail "some subtests failed"
wire_finish
