#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/run.sh [BUILD_DIR]: ringnic against the machine's own ceilings, in
# one run.  Starts a private ringnicd, runs the unmodified perftest tools
# (ib_write_bw 64 B message rate, ib_write_bw 64 KiB bandwidth,
# ib_write_lat 8 B) and the references of rn_bench_ref, prints a table and
# writes it as CSV to bench/results/quick.csv.  Numbers, never pass/fail.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
mkdir -p "$here/results"
csv=$here/results/quick.csv
. "$here/lib.sh"

echo "metric,value,unit" >"$csv"
emit() {
	printf "%-34s %10s %s\n" "$1" "$2" "$3"
	echo "$1,$2,$3" >>"$csv"
}

row=$(perftest ib_write_bw -s 64 -D 2)
emit ib_write_bw_64B_msg_rate "$(echo "$row" | awk '{ print $5 }')" Mpps
row=$(perftest ib_write_bw -s 65536 -D 2)
emit ib_write_bw_64KiB_bw "$(echo "$row" | awk '{ printf "%.2f", $4 / 1000 }')" GB/s
row=$(perftest ib_write_lat -s 8 -n 10000)
emit ib_write_lat_8B_typical "$(echo "$row" | awk '{ print $5 }')" us
rn_bench_ref | while read -r name value unit; do
	emit "$name" "$value" "$unit"
done
echo "(csv: $csv)"
