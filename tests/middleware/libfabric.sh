#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# libfabric.sh PORT: libfabric's verbs provider (libfabric-bin, unmodified)
# over ringnic0: fi_info lists its DGRAM endpoint and the RDM endpoint
# ofi_rxd builds on it, and fi_pingpong passes over the DGRAM endpoint and
# over that RDM endpoint, with data checks.  (The MSG endpoint and RxM need
# an address on a netdev that is not loopback: tests/cm/tools.sh.)
set -u
port=$1
info=$(ringnic-run fi_info -p verbs 2>/dev/null)
for want in "FI_EP_DGRAM" "FI_EP_RDM"; do
	echo "$info" | grep -B3 "type: $want" | grep -q "domain: ringnic0-dgram" || {
		echo "libfabric: fi_info -p verbs lists no $want on ringnic0" >&2
		echo "$info" >&2
		exit 1
	}
done
echo "ok   fi_info: ringnic0-dgram, FI_EP_DGRAM and FI_EP_RDM"
out=$(mktemp /tmp/rn-fi.XXXXXX)
trap 'rm -f "$out" "$out.server"' EXIT
# pingpong LARGEST ARGS...: a server and a client; the client must report
# each size up to LARGEST, each with its 100 iterations.
pingpong() {
	local largest=$1 crc src
	shift
	timeout 120 ringnic-run fi_pingpong "$@" -I 100 -c -B "$port" \
		>"$out.server" 2>&1 &
	spid=$!
	for _ in $(seq 200); do
		ss -Hltn "sport = :$port" | grep -q . && break
		sleep 0.05
	done
	timeout 120 ringnic-run fi_pingpong "$@" -I 100 -c -P "$port" 127.0.0.1 \
		>"$out" 2>&1
	crc=$?
	wait $spid
	src=$?
	if [ $crc -ne 0 ] || [ $src -ne 0 ] ||
		! grep -Eq "^$largest +100 +=100 " "$out"; then
		echo "libfabric: fi_pingpong $*: client $crc, server $src" >&2
		cat "$out" "$out.server" >&2
		exit 1
	fi
	cat "$out"
	echo "ok   fi_pingpong $*"
	port=$((port + 1))
}
# A datagram is at most the path MTU: 4k.
pingpong 4k -p verbs -e dgram -d ringnic0-dgram
pingpong 1m -p "verbs;ofi_rxd" -e rdm -d ringnic0-dgram
