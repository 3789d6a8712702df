#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/verbs.sh [BUILD_DIR]: the QP types and the middleware side by side,
# in one run against one private ringnicd: ib_send_bw's 64 B message rate
# over RC, UC and UD, ib_send_lat 8 B over RC and UD, and UCX's
# ucx_perftest (rc_verbs) put_bw 64 KiB and am_lat 8 B beside perftest's
# ib_write_bw 64 KiB and ib_send_lat 8 B.  Prints a table with the ratios
# and writes bench/results/verbs.csv.  Numbers, never pass/fail.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
mkdir -p "$here/results"
csv=$here/results/verbs.csv
. "$here/lib.sh"

echo "metric,value,unit" >"$csv"
emit() {
	printf "%-34s %10s %s\n" "$1" "$2" "$3"
	echo "$1,$2,$3" >>"$csv"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? a / b : 0 }'; }

# ucx_perftest TEST SIZE LAYOUT ITERS: its final row, UCX held to
# ringnic0's rc_verbs (columns: iterations, latency 50%ile, average,
# overall in us; bandwidth average, overall in MB/s; message rates).
ucx() {
	local port args
	bench_port=$((bench_port + 1))
	port=$bench_port
	args=(-t "$1" -s "$2" -D "$3" -d ringnic0:1 -x rc_verbs -p $port
	      -n "$4" -w 100 -f)
	export UCX_NET_DEVICES=ringnic0:1 UCX_TLS=rc_verbs,ud_verbs
	ringnic-run ucx_perftest "${args[@]}" >/dev/null 2>&1 &
	until ss -Hltn "sport = :$port" | grep -q .; do sleep 0.05; done
	ringnic-run ucx_perftest localhost "${args[@]}" | tail -n 1
	wait
}

for c in RC UC UD; do
	row=$(perftest ib_send_bw -c $c -s 64 -D 2)
	emit "ib_send_bw_${c}_64B_msg_rate" "$(echo "$row" | awk '{ print $5 }')" Mpps
done
rc=$(awk -F, '$1 == "ib_send_bw_RC_64B_msg_rate" { print $2 }' "$csv")
ud=$(awk -F, '$1 == "ib_send_bw_UD_64B_msg_rate" { print $2 }' "$csv")
emit ud_to_rc_64B_msg_rate "$(ratio "$ud" "$rc")" x

for c in RC UD; do
	row=$(perftest ib_send_lat -c $c -s 8 -n 10000)
	emit "ib_send_lat_${c}_8B_typical" "$(echo "$row" | awk '{ print $5 }')" us
done

row=$(perftest ib_write_bw -s 65536 -D 2)
wbw=$(echo "$row" | awk '{ printf "%.0f", $4 }')
emit ib_write_bw_64KiB_bw "$wbw" MB/s
ubw=$(ucx put_bw 65536 zcopy 20000 | awk '{ printf "%.0f", $6 }')
emit ucx_put_bw_64KiB_bw "$ubw" MB/s
emit ucx_to_perftest_64KiB_bw "$(ratio "$ubw" "$wbw")" x

slat=$(awk -F, '$1 == "ib_send_lat_RC_8B_typical" { print $2 }' "$csv")
ulat=$(ucx am_lat 8 short 20000 | awk '{ print $2 }')
emit ucx_am_lat_8B_typical "$ulat" us
emit ucx_to_perftest_8B_lat "$(ratio "$ulat" "$slat")" x
echo "(csv: $csv)"
