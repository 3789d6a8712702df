#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/vm/inner.sh --out CSV [options] DEVICE...: the part of the VM
# benchmark that runs INSIDE the guest (booted by tests/vm/run.sh).  For
# each DEVICE it runs the unmodified perftest tools as a server + client
# pair on this VM (loopback through the device), one run per point, prints
# a table as it goes and appends rows to CSV:
#
#   device,test,size,metric,value,unit
#
#   ib_write_bw 64 B     msg_rate (Mpps) and bw (MiB/s)
#   ib_write_bw 64 KiB   bw (MiB/s) and msg_rate (Mpps)
#   ib_read_bw  64 KiB   bw, msg_rate
#   ib_send_bw  64 B     msg_rate, bw
#   ib_write_lat 8 B     lat_typical (us)
#
# MiB/s is perftest's own "MB/sec" column (it divides by 2^20).  Bandwidth
# tests run for --seconds (perftest -D, default 2) so that a slow device
# cannot stretch the run; latency runs --lat-iters exchanges (default
# 1000).  A point that fails is recorded as NA and the tail of the tools'
# output is printed; the script never fails on a number.  Repeat the call
# for medians (rows are appended; the header is written once).
#
# DEVICE selects the perftest flags:
#   rxe*                 -d DEV -x 1   (RoCEv2 IPv4 GID of rdma_rxe)
#   siw*                 -d DEV -R     (iWARP needs rdma_cm); server bound to
#                        and client connecting to the IPv4 address of the
#                        netdev siw sits on (10.0.3.15 = eth1 by default),
#                        so rdma_cm picks siw and not rxe
#   ringnic*             -d DEV -x 1   (kernel mode, ringnic.ko)
#   ringnic-user:NAME    -d NAME, both sides started through
#                        ${RINGNIC_RUN:-ringnic-run} (userspace mode; the
#                        caller starts ringnicd, RINGNIC_RUNTIME_DIR is
#                        honoured by ringnic-run)
#   ringnic-wire:S:C     userspace mode over the wire: the server on device S
#                        in network namespace S (ip netns), the client on
#                        device C in namespace C, both through ringnic-run
#                        with -x 0 (GID 0: the IPv4 address of the device's
#                        netdev); the client connects to namespace S's
#                        IPv4 address.  The caller starts the two ringnicd,
#                        each in its namespace, publishing in one
#                        RINGNIC_RUNTIME_DIR
#   anything else        -d DEV
#
# Options:
#   --out CSV            append results here (required)
#   --setup LIST         comma-separated: rxe (rdma_rxe as rxe0 on the
#                        --rxe-netdev, default eth0), siw (siw.ko as siw0
#                        on the --siw-netdev, default eth1)
#   --siw-ko PATH        the siw.ko to insmod for --setup siw
#                        (bench/vm/build-siw.sh builds it)
#   --seconds S          duration of each bandwidth point (default 2)
#   --lat-iters N        exchanges of the latency point (default 1000)
#   --pair-timeout S     kill a server/client pair after S s (default 90)
#
# Only PATH and RINGNIC_* variables reach the guest through
# tests/vm/run.sh, hence options rather than environment variables.
#
# Example (from the host, siw.ko built into the shared --out dir):
#   tests/vm/run.sh --nics 2 --out "$dir" -- bench/vm/inner.sh \
#       --out "$dir/vm.csv" --setup rxe,siw --siw-ko "$dir/siw.ko" rxe0 siw0
set -uo pipefail

csv=
setup=
siw_ko=
seconds=2
lat_iters=1000
rxe_netdev=eth0
siw_netdev=eth1
# One pair (server + client) may take at most this long before both are
# killed and the point is recorded as NA; TCG makes start-up slow.
pair_limit=90
port=18600

usage() {
	sed -n '3,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--out) csv=$2; shift 2 ;;
	--setup) setup=$2; shift 2 ;;
	--siw-ko) siw_ko=$2; shift 2 ;;
	--seconds) seconds=$2; shift 2 ;;
	--lat-iters) lat_iters=$2; shift 2 ;;
	--rxe-netdev) rxe_netdev=$2; shift 2 ;;
	--siw-netdev) siw_netdev=$2; shift 2 ;;
	--pair-timeout) pair_limit=$2; shift 2 ;;
	-h|--help) usage ;;
	--) shift; break ;;
	-*) usage ;;
	*) break ;;
	esac
done
[ -n "$csv" ] || usage
devices=("$@")

log() { echo "inner: $*"; }

# The IPv4 address of netdev $1 (without the prefix length).
netdev_ipv4() {
	ip -4 -o addr show dev "$1" 2>/dev/null |
		awk '{ sub("/.*", "", $4); print $4; exit }'
}

# The kernel loads crypto algorithms on demand through its modprobe
# helper, which in tests/vm/run.sh's guest runs outside the chroot and
# finds no modules: load them here, the accelerated one when it exists.
load_crc() {
	modprobe "$1_generic" || return 1
	modprobe -q "$2" || true
}

# modprobe rdma_rxe (+ the "crc32" it needs for ICRCs); rxe0 on
# $rxe_netdev.
setup_rxe() {
	load_crc crc32 crc32-pclmul || return 1
	modprobe rdma_rxe || return 1
	modprobe ib_uverbs || return 1
	if ! rdma link show rxe0/1 >/dev/null 2>&1; then
		rdma link add rxe0 type rxe netdev "$rxe_netdev" || return 1
	fi
	log "rxe0 on $rxe_netdev ($(netdev_ipv4 "$rxe_netdev"))"
}

# setup_siw SIWKO: its dependencies (per modinfo) and what userspace
# iWARP needs (uverbs, rdma_cm + rdma_ucm, iw_cm, a crc32c), then siw.ko;
# siw0 on $siw_netdev.
setup_siw() {
	local ko=$1 m
	[ -n "$ko" ] && [ -e "$ko" ] || {
		log "setup siw: no siw.ko (--siw-ko; bench/vm/build-siw.sh builds it)"
		return 1
	}
	# siw asks the crypto API for "crc32c" (MPA CRC).
	load_crc crc32c crc32c-intel || return 1
	for m in $(modinfo -F depends "$ko" | tr , ' ') \
		ib_uverbs iw_cm rdma_cm rdma_ucm; do
		modprobe "$m" || return 1
	done
	if [ ! -d /sys/module/siw ]; then
		insmod "$ko" || return 1
	fi
	if ! rdma link show siw0/1 >/dev/null 2>&1; then
		rdma link add siw0 type siw netdev "$siw_netdev" || return 1
	fi
	log "siw0 on $siw_netdev ($(netdev_ipv4 "$siw_netdev"))"
}

for s in ${setup//,/ }; do
	case $s in
	rxe) setup_rxe || log "setup rxe failed" ;;
	siw) setup_siw "$siw_ko" || log "setup siw failed" ;;
	*) log "unknown --setup $s"; exit 2 ;;
	esac
done

mkdir -p "$(dirname "$csv")"
[ -s "$csv" ] || echo "device,test,size,metric,value,unit" >"$csv"
tmp=$(mktemp -d /tmp/inner.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# Set for each device: how the server and the client are started (a
# launcher's words, then the tool, then the flags), where to look for the
# server's listening socket and the address the client connects to.
srv_run=()
srv_flags=()
cli_run=()
cli_flags=()
listen_ns=()
dev_addr=127.0.0.1
device_config() {
	local spec=$1 ip s c
	srv_run=()
	cli_run=()
	listen_ns=()
	dev_addr=127.0.0.1
	case $spec in
	ringnic-user:*)
		# shellcheck disable=SC2206  # RINGNIC_RUN may carry options
		srv_run=(${RINGNIC_RUN:-ringnic-run})
		srv_flags=(-d "${spec#ringnic-user:}") ;;
	ringnic-wire:*:*)
		IFS=: read -r _ s c <<<"$spec"
		srv_run=(ip netns exec "$s" ringnic-run)
		srv_flags=(-d "$s" -x 0)
		cli_run=(ip netns exec "$c" ringnic-run)
		cli_flags=(-d "$c" -x 0)
		listen_ns=(ip netns exec "$s")
		dev_addr=$(ip -n "$s" -4 -o addr show scope global |
			awk '{ sub("/.*", "", $4); print $4; exit }')
		return ;;
	rxe* | ringnic*)
		srv_flags=(-d "$spec" -x 1) ;;
	siw*)
		srv_flags=(-d "$spec" -R)
		# rdma_cm picks the device by IP address: use siw's own.
		ip=$(rdma link show "$spec/1" 2>/dev/null |
			awk '{ for (i = 1; i < NF; i++) if ($i == "netdev") print $(i + 1) }')
		dev_addr=$(netdev_ipv4 "${ip:-$siw_netdev}")
		dev_addr=${dev_addr:-10.0.3.15}
		cli_flags=("${srv_flags[@]}")
		# The server listens on siw's address only.
		srv_flags+=(--source_ip "$dev_addr")
		return ;;
	*)
		srv_flags=(-d "$spec") ;;
	esac
	# One device, one namespace: the client is started as the server.
	cli_run=("${srv_run[@]}")
	cli_flags=("${srv_flags[@]}")
}

# The numbers of perftest's results table: every data row after '#bytes'.
rows() {
	awk '/#bytes/ { t = 1; next } t && $1 ~ /^[0-9]+$/ { print }' "$1"
}

# The server's TCP port is open, in the server's namespace.
listening() {
	"${listen_ns[@]}" ss -Hltn "sport = :$port" 2>/dev/null | grep -q .
}

# pair TOOL ARGS...: server, then the client once the server listens
# (perftest 4.5's client crashes on a refused rdma_cm connect).  Leaves
# the outputs in $tmp/server and $tmp/client; returns the client's status.
pair() {
	local spid crc src i
	port=$((port + 1))
	timeout -k 5 "$pair_limit" "${srv_run[@]}" "$@" "${srv_flags[@]}" \
		-p "$port" >"$tmp/server" 2>&1 &
	spid=$!
	# Both the perftest TCP socket and iWARP's kernel listener show here.
	for ((i = 0; i < 600; i++)); do
		listening && break
		kill -0 $spid 2>/dev/null || break
		sleep 0.05
	done
	if ! listening; then
		echo "server never listened on port $port" >"$tmp/client"
		kill $spid 2>/dev/null
		wait $spid 2>/dev/null
		return 1
	fi
	timeout -k 5 "$pair_limit" "${cli_run[@]}" "$@" "${cli_flags[@]}" \
		-p "$port" "$dev_addr" >"$tmp/client" 2>&1
	crc=$?
	wait $spid
	src=$?
	[ $crc -eq 0 ] && [ $src -eq 0 ]
}

# run_point TOOL SIZE SANE ARGS...: one pair; on success the client's
# first result row is in $row and passes the awk condition SANE.  perftest
# fits its cycle counter to the clock and gives up (r^2 too low) when the
# vCPUs are starved, as under TCG on a busy host: try that again, at most
# twice; if it never calibrates, its numbers mean nothing (NA).
run_point() {
	local tool=$1 size=$2 sane=$3 attempt ok
	shift 3
	row=
	for attempt in 1 2 3; do
		pair "$tool" -s "$size" -F "$@"
		ok=$?
		grep -qs "Correlation coefficient r^2" "$tmp/client" "$tmp/server" ||
			break
		log "perftest could not calibrate its clock (attempt $attempt)"
		ok=1
	done
	row=$(rows "$tmp/client" | head -n 1)
	if [ $ok -ne 0 ] || [ -z "$row" ] ||
		! echo "$row" | awk "{ exit !($sane) }"; then
		row=
		echo "  $tool -s $size failed; client:"
		tail -n 5 "$tmp/client" | sed 's/^/    /'
		echo "  server:"
		tail -n 5 "$tmp/server" | sed 's/^/    /'
		return 1
	fi
}

# emit DEVICE TEST SIZE METRIC VALUE UNIT
emit() {
	printf "%-22s %-13s %6s %-12s %10s %s\n" "$@"
	echo "$1,$2,$3,$4,$5,$6" >>"$csv"
}

# bw DEVICE TOOL SIZE PRIMARY: bandwidth and message rate of one run,
# PRIMARY (msg_rate or bw) first.
bw() {
	local dev=$1 tool=$2 size=$3 primary=$4 mibs=NA mpps=NA
	# columns: bytes iterations BW_peak BW_average MsgRate
	if run_point "$tool" "$size" '$4 > 0 && $5 > 0' -D "$seconds"; then
		mibs=$(echo "$row" | awk '{ printf "%.2f", $4 }')
		mpps=$(echo "$row" | awk '{ printf "%.6f", $5 }')
	fi
	if [ "$primary" = msg_rate ]; then
		emit "$dev" "$tool" "$size" msg_rate "$mpps" Mpps
		emit "$dev" "$tool" "$size" bw "$mibs" MiB/s
	else
		emit "$dev" "$tool" "$size" bw "$mibs" MiB/s
		emit "$dev" "$tool" "$size" msg_rate "$mpps" Mpps
	fi
}

# lat DEVICE TOOL SIZE: typical latency.
lat() {
	local dev=$1 tool=$2 size=$3 us=NA
	# columns: bytes iterations t_min t_max t_typical ...
	if run_point "$tool" "$size" '$3 > 0 && $5 >= $3' -n "$lat_iters"; then
		us=$(echo "$row" | awk '{ printf "%.2f", $5 }')
	fi
	emit "$dev" "$tool" "$size" lat_typical "$us" us
}

since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
start=$(date +%s.%N)
printf "%-22s %-13s %6s %-12s %10s %s\n" device test size metric value unit
for dev in "${devices[@]}"; do
	t0=$(date +%s.%N)
	device_config "$dev"
	bw "$dev" ib_write_bw 64 msg_rate
	bw "$dev" ib_write_bw 65536 bw
	lat "$dev" ib_write_lat 8
	bw "$dev" ib_read_bw 65536 bw
	bw "$dev" ib_send_bw 64 msg_rate
	log "$dev: $(since "$t0") s"
done
log "all: $(since "$start") s (csv: $csv)"
exit 0
