#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/congestion.sh [BUILD_DIR]: ringnic's congestion control (ECN marks,
# CNPs, the paced requester: device/wire/congestion.c) between the two
# hosts of wire-hosts.sh.  Host a's nftables set ECN CE on a share of the
# RoCEv2 packets it receives, as a congested switch would:
#
#   timeline  64 KiB from host b to host a, a result each second;
#             CE_PERCENT of the packets marked from second MARK_FROM to
#             MARK_UNTIL: the rate falls, then recovers
#   fairness  two transfers side by side, with and without the marks:
#             each one's share of the link
#
# TOOL (default ib_write_bw) moves the data: ib_write_bw's client on host
# b writes to host a; with TOOL=ib_read_bw, host a's client reads from
# host b, whose READ responses are what is marked and paced.
# Beside each second: the CE-marked packets, the CNPs host a sent and the
# CNPs host b slowed down for (hw_counters).  Writes
# bench/results/congestion.csv and congestion.png (congestion-TOOL.* for
# another TOOL).  Numbers, never pass/fail.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mtu=1500
build=$(cd "${1:-$here/../build}" && pwd)
ce_percent=${CE_PERCENT:-10}
mark_from=${MARK_FROM:-4}
mark_until=${MARK_UNTIL:-8}
total=${TOTAL_SECONDS:-12}
tool=${TOOL:-ib_write_bw}
case $tool in
ib_write_bw) out=congestion ;;
ib_read_bw) out=congestion-$tool ;;
*) echo "congestion.sh: TOOL is ib_write_bw or ib_read_bw" >&2; exit 2 ;;
esac
mkdir -p "$here/results"
csv=$here/results/$out.csv
export PATH="$build/bin:$PATH"

. "$here/wire-hosts.sh"

# marks PERCENT: host a marks that share of the RoCEv2 packets it receives.
marks() {
	in_ns 0 nft delete table ip congestion 2>/dev/null || true
	[ "$1" = 0 ] && return
	in_ns 0 nft -f - <<-EOF
	table ip congestion {
		chain in {
			type filter hook input priority 0;
			udp dport 4791 numgen random mod 100 < $1 ip ecn set ce;
		}
	}
	EOF
}

value() { # HOST COUNTER
	cat "$(port_dir "$1")/hw_counters/$2"
}

bench_port=18800
# The data goes from host b to host a: the server is where it lands for
# WRITE (host a), where it comes from for READ (host b).
server_host=0
[ "$tool" = ib_read_bw ] && server_host=1
client_host=$((1 - server_host))
# writer PORT SECONDS ARGS...: TOOL 64 KiB, its client's rows (one per
# second with --run_infinitely) to $work/writer.PORT
writer() {
	local port=$1 secs=$2 server
	shift 2
	in_ns $server_host timeout $((secs + 10)) ringnic-run "$tool" -x 0 \
		-p "$port" -s 65536 "$@" >"$work/server.$port" 2>&1 &
	server=$!
	until in_ns $server_host ss -Hltn "sport = :$port" | grep -q .; do
		sleep 0.05
	done
	in_ns $client_host timeout "$secs" ringnic-run stdbuf -oL "$tool" -x 0 \
		-p "$port" -s 65536 "$@" "${addr[$server_host]}" \
		>"$work/writer.$port" 2>&1 || true
	kill "$server" 2>/dev/null || true
	wait "$server" || true
}

echo "second,ce_percent,mbps,ecn_marked,cnp_sent,cnp_handled" >"$csv"
echo "timeline: $tool 64 KiB b -> a; CE on $ce_percent % from second $mark_from to $mark_until"
bench_port=$((bench_port + 1))
writer $bench_port $((total + 1)) -D 1 --run_infinitely &
writer_pid=$!
# Each second: the writer's last row (MiB/s) and the counters' deltas.
prev=("$(value 0 np_ecn_marked_roce_packets)" "$(value 0 np_cnp_sent)" \
	"$(value 1 rp_cnp_handled)")
rows=0
for t in $(seq 1 "$total"); do
	pct=0
	[ "$t" -gt "$mark_from" ] && [ "$t" -le "$mark_until" ] && pct=$ce_percent
	[ "$t" = $((mark_from + 1)) ] && marks "$ce_percent"
	[ "$t" = $((mark_until + 1)) ] && marks 0
	sleep 1
	now=("$(value 0 np_ecn_marked_roce_packets)" "$(value 0 np_cnp_sent)" \
		"$(value 1 rp_cnp_handled)")
	row=$(awk '$1 == 65536 { r = $4 } END { print r }' "$work/writer.$bench_port")
	n=$(grep -c '^ *65536' "$work/writer.$bench_port" || true)
	# A second with no new row (the writer's clock lags ours) says nothing.
	if [ "$n" -gt "$rows" ]; then
		rows=$n
		mbps=$(awk -v r="$row" 'BEGIN { printf "%.1f", r * 1.048576 }')
	else
		mbps=
	fi
	printf "%3d s  CE %2s %%  %8s MB/s  marked %6d  CNPs sent %6d  handled %6d\n" \
		"$t" "$pct" "${mbps:--}" $((now[0] - prev[0])) $((now[1] - prev[1])) \
		$((now[2] - prev[2]))
	echo "$t,$pct,$mbps,$((now[0] - prev[0])),$((now[1] - prev[1])),$((now[2] - prev[2]))" >>"$csv"
	prev=("${now[@]}")
done
marks 0
wait $writer_pid || true

# fairness PERCENT: two writers at once; each one's MB/s, and min / max.
fairness() {
	local p1 p2 a b first
	marks "$1"
	bench_port=$((bench_port + 2))
	p1=$bench_port p2=$((bench_port + 1))
	writer $p1 6 -D 4 &
	first=$!
	writer $p2 6 -D 4
	wait $first || true
	marks 0
	a=$(awk '$1 == 65536 { printf "%.1f", $4 * 1.048576; exit }' "$work/writer.$p1")
	b=$(awk '$1 == 65536 { printf "%.1f", $4 * 1.048576; exit }' "$work/writer.$p2")
	printf "fairness, CE %2s %%: %s MB/s and %s MB/s, min/max %s\n" "$1" "$a" "$b" \
		"$(awk -v a="${a:-0}" -v b="${b:-0}" 'BEGIN { m = a > b ? a : b; printf "%.3f", m ? (a < b ? a : b) / m : 0 }')"
	echo "fairness_ce_$1,,$a,$b,," >>"$csv"
}
fairness 0
fairness "$ce_percent"

awk -F, 'NR > 1 && $1 ~ /^[0-9]+$/' "$csv" >"$work/timeline.dat"
gnuplot <<GP
set terminal pngcairo size 1000,480 font ",10" noenhanced
set output "$here/results/$out.png"
set datafile separator ","
set title "ringnic wire, $tool 64 KiB b -> a over a veth pair: CE on $ce_percent % of packets in seconds $((mark_from + 1))-$mark_until ($(date +%F), $(nproc) cores)"
set xlabel "second"
set ylabel "MB/s"
set y2label "per second"
set y2tics
set ytics nomirror
set yrange [0:*]
set y2range [0:*]
set grid
set key top right
set object 1 rect from $mark_from, graph 0 to $mark_until, graph 1 fc rgb "#ffe0e0" fs solid 0.5 behind
plot "$work/timeline.dat" using 1:3 with linespoints lw 2 title "$tool MB/s", \
	"" using 1:5 axes x1y2 with linespoints dt 2 title "CNPs sent (host a)", \
	"" using 1:4 axes x1y2 with linespoints dt 3 title "CE-marked packets"
GP
echo "csv: $csv"
echo "plot: $here/results/$out.png"
