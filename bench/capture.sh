#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/capture.sh [BUILD_DIR]: what a running ringnic-dump costs the wire
# and the local path.  Two hosts (wire-hosts.sh: a veth pair, MTU 1500, a
# ringnicd on each end); perftest's ib_write_bw from host b to host a (the
# wire), then with both ends on host a's device (the local path, whose
# packets the capture makes up), 64 B with --post_list 32 and 64 KiB, each
# SECONDS_PER_POINT (default 2) seconds, RUNS times (default 3) in turn
# without and with ringnic-dump -w capturing host a's device into a file
# in /tmp: each pair of runs gives a ratio, and the median ratio is
# printed with the packets captured and dropped.
# Writes bench/results/capture.csv.  Numbers, never pass/fail.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mtu=1500
build=$(cd "${1:-$here/../build}" && pwd)
seconds=${SECONDS_PER_POINT:-2}
runs=${RUNS:-3}
mkdir -p "$here/results"
csv=$here/results/capture.csv
export PATH="$build/bin:$PATH"

. "$here/wire-hosts.sh"

bench_port=18800
# rate PATH SIZE ARGS...: ib_write_bw's MsgRate (Mpps) and MB/s (10^6),
# b to a (PATH wire) or a to a (local).
rate() {
	local client_ns=1 size=$2 pid row
	[ "$1" = wire ] || client_ns=0
	shift 2
	bench_port=$((bench_port + 1))
	in_ns 0 timeout 120 ringnic-run ib_write_bw -x 0 -p $bench_port \
		-s "$size" -D "$seconds" "$@" >/dev/null 2>&1 &
	pid=$!
	until in_ns 0 ss -Hltn "sport = :$bench_port" | grep -q .; do
		kill -0 $pid 2>/dev/null || break
		sleep 0.05
	done
	row=$(in_ns $client_ns timeout 120 ringnic-run ib_write_bw -x 0 -p $bench_port \
		-s "$size" -D "$seconds" "$@" "${addr[0]}" 2>&1 |
		awk '/#bytes/ { t = 1; next } t && $1 ~ /^[0-9]+$/ {
			printf "%.4f %.1f\n", $5, $4 * 1.048576; exit }')
	wait $pid || true
	[ -n "$row" ] || { echo "capture.sh: ib_write_bw -s $size $* failed" >&2; exit 1; }
	echo "$row"
}

echo "path,size,post_list,run,mpps,mpps_captured,ratio,captured,dropped" >"$csv"
for point in "wire 64 32" "wire 65536 1" "local 64 32" "local 65536 1"; do
	read -r path size pl <<<"$point"
	args=()
	[ "$pl" = 1 ] || args=(--post_list "$pl")
	ratios=()
	for ((r = 1; r <= runs; r++)); do
		read -r plain _ < <(rate "$path" "$size" "${args[@]}")
		RINGNIC_RUNTIME_DIR=${rundir[0]} ringnic-dump -w "$work/cap.pcap" \
			2>"$work/dump.err" &
		dump=$!
		until grep -q "capturing on" "$work/dump.err"; do sleep 0.05; done
		read -r captured _ < <(rate "$path" "$size" "${args[@]}")
		kill -INT $dump
		wait $dump || true
		npkts=$(awk '/packets captured/ { print $1 }' "$work/dump.err")
		ndrop=$(awk '/packets dropped/ { print $1 }' "$work/dump.err")
		ratio=$(awk -v a="$captured" -v b="$plain" 'BEGIN { printf "%.3f", a / b }')
		ratios+=("$ratio")
		rm -f "$work/cap.pcap"
		echo "$path,$size,$pl,$r,$plain,$captured,$ratio,$npkts,$ndrop" >>"$csv"
		printf "%-5s ib_write_bw %6s B pl %-2s run %d: %s Mpps, captured %s Mpps (x%s); %s packets captured, %s dropped\n" \
			"$path" "$size" "$pl" "$r" "$plain" "$captured" "$ratio" "$npkts" "$ndrop"
	done
	printf "%-5s ib_write_bw %6s B pl %-2s: with a capture running, x%s of the rate without (median of %d)\n" \
		"$path" "$size" "$pl" "$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{ r[NR] = $1 } END { print r[int((NR + 1) / 2)] }')" "$runs"
done
echo "written: $csv"
