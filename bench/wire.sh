#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/wire.sh [--mtu N] [BUILD_DIR]: ringnic over the wire between two
# hosts, next to what the same link carries in plain UDP and to ringnic's
# local path, in one run.  Two network namespaces joined by a veth pair
# (198.18.0.1 and .2, MTU 1500 unless --mtu), a ringnicd bound to each end:
#
#   wire    perftest's server in one namespace, its client in the other:
#           ib_write_bw over SIZES (64 B .. 64 KiB), ib_write_bw 64 B with
#           --post_list 32, ib_read_bw and ib_send_bw 64 KiB, ib_send_bw
#           64 B, ib_write_lat 8 B;
#           and with completion events (-e: the applications sleep instead
#           of polling) ib_send_bw 64 KiB and ib_send_lat 8 B;
#           ib_write_lat 8 B again with each ringnicd and perftest pinned:
#           each ringnicd on the CPU its application polls on (together),
#           then on the other CPU (apart)
#   local   the same points with both ends on one ringnicd (shared memory)
#   udp     rn_bench_udp (bench/udp_pump.c) across the same pair: datagrams
#           of 64 B .. 16 KiB with sendmmsg, and with UDP GSO where the MTU
#           allows it, counted by a recvmmsg receiver; 8-byte ping-pong,
#           blocking and busy-polling
#   wake    rn_bench_ref wake: what one process waking another costs on
#           this machine, on one CPU, across two idle CPUs and across two
#           CPUs each busy with a polling process (perftest polls, so the
#           hops between the devices and the applications wait on that)
#
# Each perftest point and each UDP datagram size runs RUNS times (default
# 3) and counts with its median: on two cores shared by both hosts, where
# the scheduler puts the four busy processes moves a point by up to 2x
# from one run to the next.  The CSV keeps the spread.
#
# Beside each ringnic point: ringnicd's CPU (both devices, from
# /proc/PID/task/*/schedstat over the whole perftest run) as cycles at the
# nominal clock of /proc/cpuinfo per message and per byte, and the deltas
# of the devices' hw_counters, so that retransmissions and drops show.
# Prints the ratios, writes bench/results/wire.csv and plots it into
# bench/results/wire.png.  Numbers, never pass/fail.
#
# SIZES, SECONDS_PER_POINT (default 2), LAT_ITERS (default 10000), RUNS and
# RINGNICD_OPTS (more options of both ringnicd, e.g. --no-realtime) may be
# set.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mtu=1500
if [ "${1:-}" = --mtu ]; then
	mtu=$2
	shift 2
fi
build=$(cd "${1:-$here/../build}" && pwd)
sizes=${SIZES:-"64 256 1024 4096 16384 65536"}
udp_sizes="64 256 1024 4096 16384"
seconds=${SECONDS_PER_POINT:-2}
lat_iters=${LAT_ITERS:-10000}
runs=${RUNS:-3}
mkdir -p "$here/results"
csv=$here/results/wire.csv
export PATH="$build/bin:$PATH"

. "$here/wire-hosts.sh"

# ---- perftest between and within the hosts -----------------------------------

bench_port=18700
# Set by place_on only, never taken from the environment.
PLACEMENT='' SERVER_CPU='' CLIENT_CPU=''
echo "path,test,size,post_list,mpps,mbps,lat_us,cycles_per_msg,cycles_per_byte,local_ack_timeout_err,out_of_seq_request,duplicate_request,ratio,runs,min,max" >"$csv"

# median_of COLUMN ROWS...: the row whose COLUMN is the median (the lower
# one of an even count), then that column's minimum and maximum.
median_of() {
	local col=$1
	shift
	printf '%s\n' "$@" | sort -g -k"$col","$col" |
		awk -v c="$col" '{ r[NR] = $0; split($0, f, " "); v[NR] = f[c] }
			END { print r[int((NR + 1) / 2)]; print v[1], v[NR] }'
}

# on_cpu CPU: the prefix that keeps a command on CPU, none if CPU is empty.
on_cpu() { [ -z "$1" ] || echo "taskset -c $1"; }

# pair SERVER CLIENT TOOL ARGS...: perftest's server on host SERVER, its
# client on host CLIENT, connecting to SERVER's address; the client's first
# result row in $row.  SERVER_CPU and CLIENT_CPU, if set, pin them.
pair() {
	local server=$1 client=$2 tool=$3 pid
	shift 3
	bench_port=$((bench_port + 1))
	# shellcheck disable=SC2046  # the prefix: words, or none
	in_ns "$server" $(on_cpu "${SERVER_CPU:-}") timeout 120 ringnic-run \
		"$tool" -x 0 -p $bench_port "$@" >"$work/server.out" 2>&1 &
	pid=$!
	until in_ns "$server" ss -Hltn "sport = :$bench_port" | grep -q .; do
		kill -0 $pid 2>/dev/null || break
		sleep 0.05
	done
	# shellcheck disable=SC2046
	row=$(in_ns "$client" $(on_cpu "${CLIENT_CPU:-}") timeout 120 \
		ringnic-run "$tool" -x 0 -p $bench_port "$@" "${addr[$server]}" 2>&1 |
		tee "$work/client.out" |
		awk '/#bytes/ { t = 1; next } t && $1 ~ /^[0-9]+$/ { print; exit }')
	wait $pid || true
	[ -n "$row" ] || {
		echo "wire.sh: $tool $* failed:" >&2
		tail -n 5 "$work/client.out" "$work/server.out" >&2
		exit 1
	}
}

# point PATH TOOL SIZE POST_LIST ARGS...: one perftest run on PATH (wire:
# server on host 0, client on host 1; local: both on host 0), with
# ringnicd's CPU and counters around it; prints and records it.  PLACEMENT,
# if set, names where place_on put the processes: a test of its own.
point() {
	local path=$1 tool=$2 size=$3 pl=$4 c0 c1 d0 d1 n0 n1 a0 a1
	local mpps='' mbps='' lat='' msgs cpu cyc_msg cyc_byte
	local test=$2${PLACEMENT:+_$PLACEMENT}
	shift 4
	# With completion events: a test of its own in the CSV.
	case " $* " in *" -e "*) test=${tool}_events ;; esac
	local rows=() r spread
	c0=$(counters 0) c1=$(counters 1) n0=$(cpu_ns 0) n1=$(cpu_ns 1)
	for ((r = 0; r < runs; r++)); do
		if [ "$path" = wire ]; then
			pair 0 1 "$tool" -s "$size" "$@"
		else
			pair 0 0 "$tool" -s "$size" "$@"
		fi
		rows+=("$row")
	done
	a0=$(cpu_ns 0) a1=$(cpu_ns 1)
	d0=$(delta "$c0" "$(counters 0)") d1=$(delta "$c1" "$(counters 1)")
	# The CPU and the counters are those of every run: so are the
	# messages.  Column 5 is MsgRate, or t_typical for a latency.
	msgs=$(printf '%s\n' "${rows[@]}" | awk '{ n += $2 } END { print n }')
	{ read -r row; read -r spread; } < <(median_of 5 "${rows[@]}")
	case $tool in
	*_lat)	# bytes iterations t_min t_max t_typical ...: round trips
		lat=$(echo "$row" | awk '{ print $5 }') ;;
	*)	# bytes iterations BW_peak BW_average MsgRate; perftest's
		# MB/sec is MiB/s: made MB/s (10^6) here, as for UDP
		mbps=$(echo "$row" | awk '{ printf "%.1f", $4 * 1.048576 }')
		mpps=$(echo "$row" | awk '{ printf "%.4f", $5 }') ;;
	esac
	cpu=$(((a0 - n0) + (a1 - n1)))
	cyc_msg=$(awk -v c=$cpu -v f="$mhz" -v n="$msgs" \
		'BEGIN { printf "%.0f", c * f / 1e3 / n }')
	if [ -n "$lat" ]; then
		cyc_byte=''
		printf "%-5s %-12s %6s B        %8s us typical         | ringnicd %s cycles/round trip" \
			"$path" "$test" "$size" "$lat" "$cyc_msg"
	else
		cyc_byte=$(awk -v c="$cyc_msg" -v s="$size" \
			'BEGIN { printf "%.2f", c / s }')
		printf "%-5s %-12s %6s B pl %-2s  %8s Mpps %8s MB/s | ringnicd %s cycles/msg, %s cycles/B" \
			"$path" "$test" "$size" "$pl" "$mpps" "$mbps" "$cyc_msg" \
			"$cyc_byte"
	fi
	printf " (CPU: a %d ms, b %d ms)\n" $(((a0 - n0) / 1000000)) \
		$(((a1 - n1) / 1000000))
	[ "$runs" = 1 ] ||
		printf "      median of %d runs: %s .. %s %s\n" "$runs" \
			"${spread% *}" "${spread#* }" "$([ -n "$lat" ] && echo us || echo Mpps)"
	printf "      counters host %s: %s\n" "${host[0]}" "${d0:-none}"
	[ "$path" = local ] ||
		printf "      counters host %s: %s\n" "${host[1]}" "${d1:-none}"
	echo "$path,$test,$size,$pl,$mpps,$mbps,$lat,$cyc_msg,$cyc_byte,$(sum_of "$d0 $d1" local_ack_timeout_err),$(sum_of "$d0 $d1" out_of_seq_request),$(sum_of "$d0 $d1" duplicate_request),,$runs,${spread% *},${spread#* }" >>"$csv"
}

# ---- where the processes run --------------------------------------------------

# The CPUs this script may use, one per line, from a list such as 0-3,6.
allowed_cpus() {
	awk '$1 == "Cpus_allowed_list:" { print $2 }' /proc/self/status |
		tr , '\n' | awk -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); c++) print c }'
}
mapfile -t cpu < <(allowed_cpus)
# Each ringnicd's CPUs as it started, to give back.
daemon_cpus=()
for i in 0 1; do
	daemon_cpus[i]=$(taskset -c -p "${daemon[$i]}" | awk '{ print $NF }')
done

# place_on NAME CPU_A CPU_B SERVER CLIENT: each ringnicd (all its threads)
# and perftest's server (host a) and client (host b) pinned to a CPU;
# place_on with no arguments lets them run where they ran before.
place_on() {
	local i cpus
	PLACEMENT=${1:-} SERVER_CPU=${4:-} CLIENT_CPU=${5:-}
	for i in 0 1; do
		if [ "$#" = 0 ]; then
			cpus=${daemon_cpus[i]}
		elif [ "$i" = 0 ]; then
			cpus=$2
		else
			cpus=$3
		fi
		taskset -a -p -c "$cpus" "${daemon[$i]}" >/dev/null
	done
}

# ib_write_lat's hops are wake-ups, and what each costs depends on which
# CPU the woken process shares with which polling one: the point again with
# each ringnicd on the CPU its application polls on, and on the other one.
pinned_latency() {
	[ "${#cpu[@]}" -ge 2 ] || return 0
	place_on together "${cpu[1]}" "${cpu[0]}" "${cpu[1]}" "${cpu[0]}"
	point wire ib_write_lat 8 1 -n "$lat_iters"
	place_on apart "${cpu[0]}" "${cpu[1]}" "${cpu[1]}" "${cpu[0]}"
	point wire ib_write_lat 8 1 -n "$lat_iters"
	place_on
}

# ---- perftest's points ---------------------------------------------------------

echo "two hosts: ${addr[0]} <-veth MTU $mtu-> ${addr[1]}; ringnic active_mtu $ib_mtu; cycles at $mhz MHz (/proc/cpuinfo)"
for path in wire local; do
	for s in $sizes; do
		point $path ib_write_bw "$s" 1 -D "$seconds"
	done
	point $path ib_write_bw 64 32 --post_list 32 -D "$seconds"
	point $path ib_read_bw 65536 1 -D "$seconds"
	point $path ib_send_bw 65536 1 -D "$seconds"
	point $path ib_send_bw 64 1 -D "$seconds"
	point $path ib_write_lat 8 1 -n "$lat_iters"
	# perftest's duration mode does not take -e: a count of messages.
	point $path ib_send_bw 65536 1 -e -n $((seconds * 2500))
	point $path ib_send_lat 8 1 -e -n "$lat_iters"
	if [ "$path" = wire ]; then
		pinned_latency
	fi
done

# ---- the link's own UDP ceiling -----------------------------------------------

udp_port=19700

# udp PATH SIZE [-g]: rn_bench_udp pump on host 1 to its sink on host 0;
# -g: GSO on the pump (and, for PATH udp_gso_gro, GRO on the sink).
udp() {
	local path=$1 size=$2 gso=${3:-} gro='' mode sink rows=() r row spread
	local mpps mbps gbit
	[ "$path" = udp_gso_gro ] && gro=-g
	for ((r = 0; r < runs; r++)); do
		udp_port=$((udp_port + 1))
		in_ns 0 rn_bench_udp sink ${gro:+"$gro"} "${addr[0]}" $udp_port >"$work/sink.out" &
		sink=$!
		sleep 0.2
		mode=$(in_ns 1 rn_bench_udp pump ${gso:+"$gso"} "${addr[0]}" $udp_port "$size" \
			"$seconds" | awk '$1 == "gso" { print $2 }')
		wait $sink || { echo "wire.sh: udp $size $gso: no datagram arrived" >&2; exit 1; }
		# GSO refused (a segment above the MTU): the plain run measured that.
		if [ -n "$gso" ] && [ "$mode" != on ]; then
			printf "%-11s %6s B  GSO refused by the link (MTU %s)\n" "$path" "$size" "$mtu"
			return
		fi
		# Mpps, MB/s, Gbit/s
		rows+=("$(awk '$1 == "rate" { r = $2 } $1 == "payload" { b = $2 }
			$1 == "payload_gbit" { g = $2 } END { print r, b, g }' "$work/sink.out")")
	done
	{ read -r row; read -r spread; } < <(median_of 1 "${rows[@]}")
	read -r mpps mbps gbit <<<"$row"
	printf "%-11s %6s B  %s Mpps %s MB/s (%s Gbit/s) received\n" "$path" "$size" \
		"$mpps" "$mbps" "$gbit"
	[ "$runs" = 1 ] ||
		printf "            median of %d runs: %s .. %s Mpps\n" "$runs" "${spread% *}" "${spread#* }"
	echo "$path,datagrams,$size,,$mpps,$mbps,,,,,,,,$runs,${spread% *},${spread#* }" >>"$csv"
}

# pingpong MODE [-b]: 8-byte UDP round trips, echo on host 0.
pingpong() {
	local mode=$1 busy=${2:-} half echo
	udp_port=$((udp_port + 1))
	in_ns 0 rn_bench_udp echo ${busy:+"$busy"} "${addr[0]}" $udp_port &
	echo=$!
	sleep 0.2
	half=$(in_ns 1 rn_bench_udp ping ${busy:+"$busy"} "${addr[0]}" $udp_port "$lat_iters" |
		awk '$1 == "rtt_half_median" { print $2 }')
	wait $echo
	printf "udp_pingpong %-8s     8 B  %s us (round trip / 2, median)\n" "$mode" "$half"
	echo "udp_pingpong,$mode,8,,,,$half,,,,,," >>"$csv"
}

for s in $udp_sizes; do
	udp udp "$s"
	udp udp_gso "$s" -g
done
# GRO hands the sink whole GSO packets that veth never cut: bytes through
# the link with no per-datagram work at all; shown, never a ceiling.
udp udp_gso_gro "$ib_mtu" -g
pingpong blocking
pingpong busy -b

# ---- the machine's wake-up floor ----------------------------------------------

rn_bench_ref wake | while read -r name value unit; do
	printf "%-20s %8s %s (one wake-up: half a pipe round trip, median)\n" \
		"$name" "$value" "$unit"
	echo "wake,$name,,,,,$value,,,,,," >>"$csv"
done

# ---- ratios -------------------------------------------------------------------

# get PATH TEST SIZE POST_LIST COLUMN
get() {
	awk -F, -v p="$1" -v t="$2" -v s="$3" -v pl="$4" -v c="$5" '
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		$1 == p && $2 == t && $3 == s && (pl == "" || $4 == pl) { print $col[c]; exit }' "$csv"
}

# The UDP ceiling for datagrams of SIZE: plain or GSO, the higher.
ceiling() {
	local a b
	a=$(get udp datagrams "$1" "" "$2")
	b=$(get udp_gso datagrams "$1" "" "$2")
	awk -v a="${a:-0}" -v b="${b:-0}" 'BEGIN { print (a > b ? a : b) }'
}

ratio() {
	local name=$1 value
	value=$(awk -v a="$2" -v b="$3" 'BEGIN { printf "%.3f", b ? a / b : 0 }')
	printf "%-46s %7s  (%s / %s)\n" "$name" "$value" "$2" "$3"
	echo "ratio,$name,,,,,,,,,,,$value" >>"$csv"
}

echo
echo "ratios (one run; medians of $runs):"
wbw=$(get wire ib_write_bw 65536 1 mbps)
ratio wire_write_64KiB_to_udp_4KiB_datagrams "$wbw" "$(ceiling 4096 mbps)"
[ "$ib_mtu" = 4096 ] ||
	ratio "wire_write_64KiB_to_udp_${ib_mtu}B_datagrams" "$wbw" \
		"$(ceiling "$ib_mtu" mbps)"
ratio wire_write_64B_pl32_to_udp_64B_datagrams \
	"$(get wire ib_write_bw 64 32 mpps)" "$(ceiling 64 mpps)"
wlat=$(get wire ib_write_lat 8 1 lat_us)
ratio wire_write_lat_to_udp_pingpong_blocking "$wlat" \
	"$(get udp_pingpong blocking 8 "" lat_us)"
ratio wire_write_lat_to_udp_pingpong_busy "$wlat" \
	"$(get udp_pingpong busy 8 "" lat_us)"
ratio wire_write_lat_to_wake_cross_cpu_busy "$wlat" \
	"$(get wake wake_cross_cpu_busy "" "" lat_us)"
for placement in together apart; do
	[ -n "$(get wire ib_write_lat_$placement 8 1 lat_us)" ] || continue
	ratio "wire_write_lat_${placement}_to_udp_pingpong_blocking" \
		"$(get wire ib_write_lat_$placement 8 1 lat_us)" \
		"$(get udp_pingpong blocking 8 "" lat_us)"
done
ratio wire_send_lat_events_to_udp_pingpong_blocking \
	"$(get wire ib_send_lat_events 8 1 lat_us)" \
	"$(get udp_pingpong blocking 8 "" lat_us)"
ratio wire_read_to_write_64KiB "$(get wire ib_read_bw 65536 1 mbps)" "$wbw"
ratio wire_send_to_write_64KiB "$(get wire ib_send_bw 65536 1 mbps)" "$wbw"
ratio wire_send_events_to_write_64KiB \
	"$(get wire ib_send_bw_events 65536 1 mbps)" "$wbw"
ratio wire_send_to_write_64B "$(get wire ib_send_bw 64 1 mpps)" \
	"$(get wire ib_write_bw 64 1 mpps)"
ratio wire_to_local_write_64KiB "$wbw" "$(get local ib_write_bw 65536 1 mbps)"
ratio wire_to_local_write_64B_pl32 "$(get wire ib_write_bw 64 32 mpps)" \
	"$(get local ib_write_bw 64 32 mpps)"
ratio wire_to_local_write_lat "$wlat" "$(get local ib_write_lat 8 1 lat_us)"

# ---- plot ----------------------------------------------------------------------

# One data file per line of the plot (awk conditions on the CSV).
series() { awk -F, "$2" "$csv" >"$work/$1.dat"; }
series wire '$1 == "wire" && $2 == "ib_write_bw" && $4 == 1'
series local '$1 == "local" && $2 == "ib_write_bw" && $4 == 1'
series wire32 '$1 == "wire" && $4 == 32'
series local32 '$1 == "local" && $4 == 32'
series udp '$1 == "udp"'
series gso '$1 == "udp_gso"'
series read '$1 == "wire" && $2 == "ib_read_bw"'
series send '$1 == "wire" && $2 == "ib_send_bw"'
series send_events '$1 == "wire" && $2 == "ib_send_bw_events"'
# Short labels: the latency panel is narrow.
awk -F, '$2 ~ /_lat/ { t = $2; sub(/^ib_/, "", t); sub(/_events$/, " -e", t)
		printf "\"%s %s\",%s\n", $1, t, $7 }
	$1 == "udp_pingpong" { printf "\"UDP %s\",%s\n", $2, $7 }
	$1 == "wake" { t = $2; sub(/^wake_/, "wake ", t); gsub(/_/, " ", t)
		printf "\"%s\",%s\n", t, $7 }' \
	"$csv" >"$work/lat.dat"

gnuplot <<GP
set terminal pngcairo size 1500,480 font ",10" noenhanced
set output "$here/results/wire.png"
set datafile separator ","
set multiplot layout 1,3 title "ringnic over a veth pair between two namespaces (MTU $mtu; $(date +%F), $(nproc) cores): wire vs the pair's own UDP vs the local path"
set logscale x 2
set format x "%.0b%BB"
set xlabel "message / datagram size"
set grid
set key font ",8"
set logscale y
set ylabel "Mpps"
set title "message rate"
set key bottom left
plot "$work/wire.dat" using 3:5 with linespoints lw 2 title "ringnic wire ib_write_bw", \
	"$work/local.dat" using 3:5 with linespoints title "ringnic local ib_write_bw", \
	"$work/udp.dat" using 3:5 with linespoints dt 2 title "UDP sendmmsg", \
	"$work/gso.dat" using 3:5 with linespoints dt 2 title "UDP GSO", \
	"$work/wire32.dat" using 3:5 with points pt 7 ps 1.5 title "ringnic wire, --post_list 32", \
	"$work/local32.dat" using 3:5 with points pt 5 ps 1.5 title "ringnic local, --post_list 32", \
	"$work/send.dat" using 3:5 with points pt 11 ps 1.5 title "ringnic wire ib_send_bw"
set ylabel "MB/s (payload)"
set title "bandwidth"
set key top left
plot "$work/wire.dat" using 3:6 with linespoints lw 2 title "ringnic wire ib_write_bw", \
	"$work/local.dat" using 3:6 with linespoints title "ringnic local ib_write_bw", \
	"$work/udp.dat" using 3:6 with linespoints dt 2 title "UDP sendmmsg", \
	"$work/gso.dat" using 3:6 with linespoints dt 2 title "UDP GSO", \
	"$work/read.dat" using 3:6 with points pt 9 ps 1.5 title "ringnic wire ib_read_bw", \
	"$work/send.dat" using 3:6 with points pt 11 ps 1.5 title "ringnic wire ib_send_bw", \
	"$work/send_events.dat" using 3:6 with points pt 13 ps 1.5 title "ringnic wire ib_send_bw -e"
unset logscale
unset format x
set xtics rotate by 90 right font ",8"
set bmargin 9
set xlabel ""
set ylabel "us (typical / median)"
set title "latency, 8 B (log scale)"
set style fill solid 0.5
set boxwidth 0.6
set logscale y
set yrange [1:*]
plot "$work/lat.dat" using 0:2:xtic(1) with boxes notitle, \
	"" using 0:2:(sprintf("%.1f", \$2)) with labels offset char 0,0.7 notitle
unset multiplot
GP
echo "csv: $csv"
echo "plot: $here/results/wire.png"
