#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# libfabric.sh PORT: libfabric's verbs provider (libfabric-bin, unmodified)
# over ringnic0: fi_info lists its DGRAM endpoint and the RDM endpoint
# ofi_rxd builds on it, and fi_pingpong passes over that RDM endpoint with
# data checks.  (A verbs EQ always opens an rdma_cm event channel, so the
# plain DGRAM pingpong and MSG endpoints wait for ringnic's rdma_cm.)
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
args=(-p "verbs;ofi_rxd" -e rdm -d ringnic0-dgram -I 100 -c)
out=$(mktemp /tmp/rn-fi.XXXXXX)
trap 'rm -f "$out" "$out.server"' EXIT
timeout 120 ringnic-run fi_pingpong "${args[@]}" -B "$port" >"$out.server" 2>&1 &
spid=$!
for _ in $(seq 200); do
	ss -Hltn "sport = :$port" | grep -q . && break
	sleep 0.05
done
timeout 120 ringnic-run fi_pingpong "${args[@]}" -P "$port" 127.0.0.1 >"$out" 2>&1
crc=$?
wait $spid
src=$?
# One result row per size, up to 1m, each with its 100 iterations.
rows=$(awk '$2 == 100 && $3 == "=100"' "$out" | wc -l)
if [ $crc -ne 0 ] || [ $src -ne 0 ] || [ "$rows" -lt 6 ]; then
	echo "libfabric: fi_pingpong rdm: client $crc, server $src, $rows rows" >&2
	cat "$out" "$out.server" >&2
	exit 1
fi
cat "$out"
echo "ok   fi_pingpong -e rdm (verbs;ofi_rxd)"
