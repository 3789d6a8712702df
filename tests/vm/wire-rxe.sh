#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# wire-rxe.sh BUILD_DIR [KO] [GROUP...]: runs inside the VM (tests/vm/run.sh,
# booted by tests/vm/wire-test.sh) with ib_core and ib_uverbs loaded.
# ringnic on the wire against the kernel's rdma_rxe, with unmodified tools.
#
#   init netns      br0 198.18.0.1/24 2001:2::1/64   rxe0 (rdma_rxe)
#     | veth        (rxe serves only the initial namespace in Linux 6.1)
#   netns rn        vrn 198.18.0.2/24 2001:2::2/64   rnw0: ringnicd, userspace
#     | veth                                         mode, tools via ringnic-run
#   netns rk        vrk 198.18.0.3/24 2001:2::3/64   ringnic0: ringnic.ko and
#                                                    its ringnicd (kernel mode)
#
# The three meet on the bridge br0.  rxe's own UDP socket holds port 4791
# on the wildcard address of the initial namespace (rxe_net.c binds it
# with no SO_REUSEADDR), so no ringnicd can bind 4791 there while rxe is
# loaded: kernel mode runs with ringnic0 made (`rdma link add`) from inside
# netns rk, on vrk, and its ringnicd attached from there.  The RDMA core
# in its default shared netns mode shows ringnic0 in every namespace and
# fills its GID table from vrk's addresses.
#
# GROUPs (default all):
#   user    rxe0 <-> rnw0, ringnic as server and as client, over IPv4:
#           ibv_rc_pingpong (1 B, 4 KiB, 10000 B, buffers checked with -c;
#           -e), ib_write_bw, ib_read_bw, ib_send_bw, ib_atomic_bw,
#           ib_write_lat, ibv_ud_pingpong, ibv_uc_pingpong; over IPv6 the
#           10000 B pingpong, ib_write_bw, ib_read_bw, ib_atomic_bw and UD
#   netem   the same link with netem delay and reordering in both
#           directions: ibv_rc_pingpong -c; with 2 % loss too: ib_write_bw,
#           ib_read_bw, and the retry counters of the ends must have moved
#   kernel  a ringnicd on br0 in the initial namespace: no GID, INIT;
#           ringnic0 (kernel mode) <-> rxe0 and ringnic0 <-> rnw0, both
#           ways: the pingpong over IPv4 and IPv6, WRITE, READ and atomics
#           over IPv4
#   cm      rdma_cm: librdmacm programs with rnw0 in userspace mode (the
#           shim and ringnicd's CM) on one end and the kernel's rdma_cm on
#           rxe0 on the other, ringnic as server and as client: rping
#           (IPv4, IPv6), ucmatose, udaddy (SIDR), ib_write_bw -R,
#           ib_send_bw -R, ib_read_lat -R, rdma_server/rdma_client,
#           qperf -cm1 rc_bw rc_lat,
#           fi_pingpong over libfabric's MSG and RxM endpoints, a server
#           bound to 127.0.0.1 (rdma_cm's wildcard), and a connection to a
#           port nobody listens on (REJECTED 8)
#   kcm     rdma_cm in kernel mode: the kernel's own rdma_cm on ringnic0
#           (its QP1 kept by ringnic.ko, relayed by ringnicd) against
#           rxe0's and against rnw0's (ringnicd's CM), ringnic0 as server
#           and as client: the cm group's tools (against rnw0: a subset)
#   nogso   rnw0's veth with transmit checksum offload off, where 6.1
#           refuses UDP GSO (EIO): ringnicd must say so and send packet by
#           packet, each ICRC sealed for the IPv4 ID it now leaves with,
#           which rxe checks: 64 KiB ib_write_bw and ib_read_bw (rnw0
#           sends the runs of packets) and ibv_rc_pingpong -c against rxe0
# Prints one line per step (and the retry counters a step moved); exits
# with the number of failed steps.
set -u
build=$1
ko=${2:-}
shift 2 2>/dev/null || shift $#
groups=${*:-user netem kernel cm kcm nogso}
src=$(cd "$(dirname "$0")/../.." && pwd)
export RDMAV_DRIVERS=$build/lib/libringnic
export PATH="$build/bin:$PATH"
export RN_PAIR_LAUNCH="" RN_PAIR_TIMEOUT=90 RN_PAIR_ATTEMPTS=5
user_rt=/run/ringnic-w
export RINGNIC_RUNTIME_DIR=$user_rt # for ringnic-run
kern_rt=/run/ringnic-k
logs=/tmp/wire-rxe
failed=0
steps=0
port=18515
daemons=() # the ringnicd pids
mkdir -p $logs

declare -A addr4=([rxe]=198.18.0.1 [rn]=198.18.0.2 [rk]=198.18.0.3)
declare -A addr6=([rxe]=2001:2::1 [rn]=2001:2::2 [rk]=2001:2::3)
# How each end runs a tool: its namespace and launcher, its device, and
# where its GID table is.
declare -A run=([rxe]="" [rn]="ip netns exec rn ringnic-run" [rk]="ip netns exec rk")
declare -A dev=([rxe]=rxe0 [rn]=rnw0 [rk]=ringnic0)
declare -A gids=([rxe]=/sys/class/infiniband/rxe0/ports/1
	[rn]=$user_rt/sys/class/infiniband/rnw0/ports/1
	[rk]=/sys/class/infiniband/ringnic0/ports/1)
declare -A netns=([rxe]="" [rn]=rn [rk]=rk)

# What a step that outlasts a pair's timeout is stuck on: the tools' and
# the daemons' kernel stacks, the kernel's rdma_cm ids, the kernel-mode
# daemon's last words.  Read when a step fails by timing out.
stuck_report() {
	local pid
	echo "-- still running after $((RN_PAIR_TIMEOUT - 10)) s:"
	for pid in "${daemons[@]}" $(pgrep -d ' ' -f \
		'^(\S*/)?(rping|ucmatose|udaddy|ib_[a-z_]+_(bw|lat)|rdma_(server|client)|fi_pingpong|qperf)( |$)'); do
		[ -r "/proc/$pid/stack" ] || continue
		echo "$pid $(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-80)"
		sed 's/^/     /' "/proc/$pid/stack"
	done
	rdma resource show cm_id
	ip netns exec rk rdma resource show cm_id 2>/dev/null
	tail -n 20 $logs/ringnicd-kernel.log 2>/dev/null
	dmesg | tail -n 20
}

step() {
	local name=$1 rc
	shift
	echo "== $name"
	recovery_counters >$logs/step-before
	steps=$((steps + 1))
	echo $steps >$logs/step-running
	(sleep $((RN_PAIR_TIMEOUT - 10)) &
	 wait $!
	 [ "$(cat $logs/step-running 2>/dev/null)" = $steps ] && stuck_report) &
	watchdog=$!
	"$@"
	rc=$?
	# The watchdog's sleep ends now, and finds the step over: no sleeper
	# outlives the script (it would keep the output dir from unmounting).
	rm -f $logs/step-running
	pkill -P $watchdog sleep
	# What the step cost in retries, for whoever reads a failure.
	recovery_counters | grep -vxFf $logs/step-before | grep -v ' 0$' |
		sed 's/^/   counter now /'
	if [ $rc -eq 0 ]; then
		echo "ok   $name"
	else
		echo "FAIL $name (exit $rc)"
		failed=$((failed + 1))
	fi
}

# The GID of an address as sysfs prints it: IPv4 as ::ffff:a.b.c.d, all
# eight groups of four hex digits.
gid_of() {
	local a=$1 o1 o2 o3 o4
	if [[ $a == *.*.*.* ]]; then
		IFS=. read -r o1 o2 o3 o4 <<<"$a"
		printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x\n' \
			"$o1" "$o2" "$o3" "$o4"
	else
		# Only the 2001:2::N test addresses.
		printf '2001:0002:0000:0000:0000:0000:0000:%04x\n' "0x${a##*::}"
	fi
}

# gid_index END ADDR: the index of ADDR's RoCE v2 GID in END's table.
gid_index() {
	local dir=${gids[$1]} want f i
	want=$(gid_of "$2")
	for f in "$dir"/gids/*; do
		i=${f##*/}
		[ "$(cat "$f" 2>/dev/null)" = "$want" ] || continue
		[ "$(cat "$dir/gid_attrs/types/$i" 2>/dev/null)" = "RoCE v2" ] || continue
		echo "$i"
		return 0
	done
	return 1
}

wait_gid() { # END ADDR
	for _ in $(seq 150); do
		gid_index "$1" "$2" >/dev/null && return 0
		sleep 0.1
	done
	echo "$1: no RoCE v2 GID for $2 in ${gids[$1]}" >&2
	return 1
}

# The kernel asks for "crc32" (rxe's ICRC) through its modprobe helper,
# which in tests/vm/run.sh's guest finds no modules: load it here.
setup_rxe() {
	modprobe crc32_generic && modprobe -q crc32-pclmul
	modprobe rdma_rxe && modprobe sch_netem || return 1
	ip link add br0 type bridge &&
		ip addr add 198.18.0.1/24 dev br0 &&
		ip addr add 2001:2::1/64 dev br0 nodad &&
		ip link set br0 up || return 1
	local ns
	for ns in rn rk; do
		ip netns add $ns &&
			ip link add "vbr-$ns" type veth peer name "v$ns" netns $ns &&
			ip link set "vbr-$ns" master br0 up &&
			ip -n $ns link set lo up &&
			ip -n $ns addr add "${addr4[$ns]}/24" dev "v$ns" &&
			ip -n $ns addr add "${addr6[$ns]}/64" dev "v$ns" nodad &&
			ip -n $ns link set "v$ns" up || return 1
	done
	rdma link add rxe0 type rxe netdev br0 &&
		wait_gid rxe 198.18.0.1 && wait_gid rxe 2001:2::1
}

# --debug: the log says when an rdma_cm server listens (tests/pair.sh).
start_user() {
	ip netns exec rn ringnicd --name rnw0 --netdev vrn --debug \
		--runtime-dir $user_rt --foreground 2>>$logs/ringnicd-user.log &
	daemons+=($!)
	wait_gid rn 198.18.0.2 && wait_gid rn 2001:2::2
}

start_kernel() {
	[ -n "$ko" ] && insmod "$ko" || return 1
	ip netns exec rk rdma link add ringnic0 type ringnic netdev vrk ||
		return 1
	ip netns exec rk ringnicd --name ringnic0 --runtime-dir $kern_rt \
		--foreground 2>>$logs/ringnicd-kernel.log &
	daemons+=($!)
	wait_gid rk 198.18.0.3 && wait_gid rk 2001:2::3
}

# Why kernel mode runs in its own namespace: a ringnicd in the initial
# one, on rxe's own bridge, cannot bind its GIDs' UDP port 4791.  So none
# of br0's addresses is a GID of its: the port is INIT, not ACTIVE, and
# ringnic-run says why.
port_is_rxes() {
	local log=$logs/ringnicd-init.log pid said
	ringnicd --name rninit --netdev br0 --runtime-dir /run/ringnic-init \
		--foreground 2>$log &
	pid=$!
	for _ in $(seq 100); do
		grep -q "ready in" $log && break
		sleep 0.1
	done
	said=$(ringnic-run --runtime-dir /run/ringnic-init ibv_devinfo -v -d rninit 2>&1)
	kill -TERM $pid
	wait $pid
	cat $log
	echo "$said" | grep -E "ringnic-run|state|GID"
	grep -q "198.18.0.1): cannot bind UDP port 4791: Address already in use" $log &&
		grep -q "state:.*PORT_INIT" <<<"$said" &&
		! grep -q "GID\[" <<<"$said" &&
		grep -q "^ringnic-run: rninit: 198.18.0.1 is not a GID: cannot bind UDP port 4791: Address already in use" <<<"$said"
}

# pair CHECK SERVER CLIENT FAMILY TOOL ARGS...: TOOL between two ends (rxe,
# rn, rk), each on its own device and the RoCE v2 GID of its FAMILY (4 or
# 6) address; the client reaches the server's TCP port over IPv4.
pair() {
	local check=$1 s=$2 c=$3 fam=$4 tool=$5 sflag sg cg
	shift 5
	case $tool in
	ibv_*) sflag=-g ;;
	*) sflag=-x ;;
	esac
	if [ "$fam" = 6 ]; then
		sg=$(gid_index "$s" "${addr6[$s]}") && cg=$(gid_index "$c" "${addr6[$c]}")
	else
		sg=$(gid_index "$s" "${addr4[$s]}") && cg=$(gid_index "$c" "${addr4[$c]}")
	fi || { echo "no GID" >&2; return 1; }
	port=$((port + 1))
	# shellcheck disable=SC2086 # run[] holds a launcher's words
	RN_PAIR_LISTEN_NETNS=${netns[$s]} "$src/tests/pair.sh" "$check" "$port" \
		${run[$s]} "$tool" -d "${dev[$s]}" "$sflag" "$sg" "$@" -p "$port" -- \
		${run[$c]} "$tool" -d "${dev[$c]}" "$sflag" "$cg" "$@" -p "$port" \
		"${addr4[$s]}"
}

# cm_pair CHECK S C PORT SERVER-CMD... -- CLIENT-CMD...: an rdma_cm pair,
# the server on end S (rn or rxe), the client on end C, meeting on PORT.
cm_pair() {
	local check=$1 s=$2 c=$3 p=$4 log= kernel= scmd=()
	shift 4
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		scmd+=("$1")
		shift
	done
	shift
	[ "$s" = rn ] && log=$logs/ringnicd-user.log || kernel=1
	# shellcheck disable=SC2086 # run[] holds a launcher's words
	RN_PAIR_CM_LOG=$log RN_PAIR_CM_KERNEL=$kernel "$src/tests/pair.sh" \
		"$check" "$p" ${run[$s]} "${scmd[@]}" -- ${run[$c]} "$@"
}

# A client of rping at end C finds nobody listening at end S's address.
cm_no_listener() { # S C
	local out
	# shellcheck disable=SC2086
	out=$(timeout 60 ${run[$2]} rping -c -a "${addr4[$1]}" -p 7399 -C 1 2>&1)
	echo "$out"
	grep -q "REJECTED, error 8" <<<"$out"
}

# fi_pingpong over libfabric's verbs provider, server at end S, client at
# end C: they meet through fi_pingpong's TCP control connection, then
# rdma_cm.  The server binds "localhost", which rdma_cm takes for the
# wildcard.
# RxM sizes its CQs by FI_UNIVERSE_SIZE (default 256): more entries than
# rxe's max_cqe (32767), and fi_enable fails with EINVAL; 64 fits.
# Each end names its device (-d): a wildcard listener has none to choose
# by, and in netns rk libfabric lists rxe0 first (ENODEV there).
cm_fi_pair() { # S C LARGEST ARGS...: LARGEST, the last size reported
	local s=$1 c=$2 largest=$3
	shift 3
	# shellcheck disable=SC2086 # run[] holds a launcher's words
	FI_UNIVERSE_SIZE=64 RN_PAIR_LISTEN_NETNS=${netns[$s]} "$src/tests/pair.sh" \
		"match:^$largest +50 +=50 " $port ${run[$s]} \
		fi_pingpong -B $port -I 50 -c -d ${dev[$s]} "$@" -- \
		${run[$c]} fi_pingpong -P $port -I 50 -c -d ${dev[$c]} "$@" \
		"${addr4[$s]}"
}

# qperf's control connection is TCP (its port 19765); its RC QPs meet
# through rdma_cm.
cm_qperf() { # S C
	# shellcheck disable=SC2086 # run[] holds a launcher's words
	RN_PAIR_LISTEN_NETNS=${netns[$1]} "$src/tests/pair.sh" "match:latency +=" \
		19765 ${run[$1]} qperf -- \
		${run[$2]} qperf -cm1 -m 65536 "${addr4[$1]}" rc_bw rc_lat quit
}

# cm_matrix S C: the rdma_cm tools, server at end S, client at end C.
# With "quick" (two ringnic ends), what the rxe matrices do not already
# cover for each end: one rping, ucmatose, SIDR, perftest and qperf, and a
# port without a listener.
cm_matrix() { # S C [quick]
	local s=$1 c=$2 quick=${3:-} t="$1->$2 rdma_cm" a4=${addr4[$1]} a6=${addr6[$1]}
	port=$((port + 1))
	step "$t rping -V IPv4" cm_pair "match:ping data: rdma-ping-49:" $s $c \
		$port rping -s -v -V -a $a4 -p $port -C 50 -- \
		rping -c -v -V -a $a4 -p $port -C 50
	port=$((port + 1))
	[ -z "$quick" ] && step "$t rping -V IPv6" cm_pair "match:ping data: rdma-ping-9:" $s $c \
		$port rping -s -v -V -a $a6 -p $port -C 10 -- \
		rping -c -v -V -a $a6 -p $port -C 10
	port=$((port + 1))
	step "$t ucmatose" cm_pair "match:return status 0" $s $c $port \
		ucmatose -b $a4 -p $port -c 4 -C 20 -- \
		ucmatose -s $a4 -p $port -c 4 -C 20
	step "$t udaddy" cm_pair "match:return status 0" $s $c 7174 \
		udaddy -b $a4 -c 2 -C 10 -- udaddy -s $a4 -c 2 -C 10
	port=$((port + 1))
	step "$t ib_write_bw -R" cm_pair perftest-bw $s $c $port \
		ib_write_bw -R -d ${dev[$s]} -n 200 -p $port -- \
		ib_write_bw -R -d ${dev[$c]} -n 200 -p $port $a4
	step "$t qperf -cm1 rc_bw rc_lat" cm_qperf $s $c
	step "$t no listener: REJECTED 8" cm_no_listener $s $c
	[ -n "$quick" ] && return
	port=$((port + 1))
	step "$t ib_send_bw -R" cm_pair perftest-bw $s $c $port \
		ib_send_bw -R -d ${dev[$s]} -n 200 -p $port -- \
		ib_send_bw -R -d ${dev[$c]} -n 200 -p $port $a4
	port=$((port + 1))
	step "$t ib_read_lat -R" cm_pair perftest-lat $s $c $port \
		ib_read_lat -R -d ${dev[$s]} -n 200 -p $port -- \
		ib_read_lat -R -d ${dev[$c]} -n 200 -p $port $a4
	port=$((port + 1))
	step "$t rdma_server/rdma_client" cm_pair "match:rdma_client: end 0" \
		$s $c $port rdma_server -s $a4 -p $port -- \
		rdma_client -s $a4 -p $port
	# A loopback address is rdma_cm's wildcard (cma_any_addr).
	port=$((port + 1))
	step "$t rping, the server bound to 127.0.0.1" cm_pair \
		"match:ping data: rdma-ping-9:" $s $c $port \
		rping -s -v -a 127.0.0.1 -p $port -C 10 -- \
		rping -c -v -a $a4 -p $port -C 10
	port=$((port + 1))
	step "$t fi_pingpong -e msg" cm_fi_pair $s $c 1m -p verbs -e msg
	# RxM: 1 KiB goes eager (SENDs), 1 MiB by rendezvous (the receiver
	# READs it, in parts: requester.c).  Before READs came in parts, 1 MiB
	# went into go-back-N retries under TCG (rnw0's local_ack_timeout_err
	# moved 34 and 68 times) and outlasted the pair's 90 s.
	port=$((port + 1))
	step "$t fi_pingpong RxM 1 KiB" cm_fi_pair $s $c 1k \
		-p "verbs;ofi_rxm" -e rdm -S 1024
	port=$((port + 1))
	step "$t fi_pingpong RxM 1 MiB" cm_fi_pair $s $c 1m \
		-p "verbs;ofi_rxm" -e rdm -S 1048576
}


# matrix A B FAMILY [quick]: the tools with A as server and B as client;
# "quick" keeps one pingpong size and the RC perftest tools that move data
# both ways (WRITE, READ, atomics), and UD.
matrix() {
	local a=$1 b=$2 fam=$3 quick=${4:-} t="$1->$2 IPv$3" sizes="1 4096 10000"
	[ -n "$quick" ] && sizes=10000
	for size in $sizes; do
		step "$t ibv_rc_pingpong -s $size -c" pair pingpong $a $b $fam \
			ibv_rc_pingpong -n 100 -s $size -c
	done
	[ -z "$quick" ] && step "$t ibv_rc_pingpong -e -c" \
		pair pingpong $a $b $fam ibv_rc_pingpong -n 100 -e -c
	for tool in ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw; do
		[ -n "$quick" ] && [ $tool = ib_send_bw ] && continue
		step "$t $tool" pair perftest-bw $a $b $fam $tool -n 200
	done
	[ -z "$quick" ] && step "$t ib_write_lat" \
		pair perftest-lat $a $b $fam ib_write_lat -n 200
	step "$t ibv_ud_pingpong" pair pingpong $a $b $fam ibv_ud_pingpong -n 100 -s 1000
	[ -z "$quick" ] && step "$t ibv_uc_pingpong -c" \
		pair pingpong $a $b $fam ibv_uc_pingpong -n 100 -c
}

# The counters of every device that only loss, reordering and retries
# move, one "device/counter value" a line.
recovery_counters() {
	local f
	for f in /sys/class/infiniband/rxe0/ports/1/hw_counters/* \
		$user_rt/sys/class/infiniband/rnw0/ports/1/hw_counters/* \
		$kern_rt/sys/class/infiniband/ringnic0/ports/1/hw_counters/*; do
		case ${f##*/} in
		duplicate_request | out_of_seq_request | rcvd_seq_err | \
			completer_retry_err | local_ack_timeout_err | \
			packet_seq_err | implied_nak_seq_err)
			[ -e "$f" ] && echo "$(cut -d/ -f5- <<<"${f#"$user_rt"}") $(cat "$f")" ;;
		esac
	done
}

# netem on both directions of the rxe0 <-> rnw0 link: every packet delayed
# 2 ms except a tenth, sent at once (so overtaking others), and LOSS % lost.
netem() { # LOSS | off
	local rule="delay 2ms reorder 90% 50% loss ${1}%"
	if [ "$1" != off ]; then
		# shellcheck disable=SC2086
		tc qdisc replace dev vbr-rn root netem $rule &&
			ip netns exec rn tc qdisc replace dev vrn root netem $rule
	else
		tc qdisc del dev vbr-rn root
		ip netns exec rn tc qdisc del dev vrn root
	fi
}

moved() { # BEFORE AFTER: some recovery counter grew
	[ "$1" != "$2" ] || { echo "no recovery counter moved" >&2; return 1; }
	grep -vxF "$1" <<<"$2"
}

step "rxe0 on br0, netns rn and rk on veths" setup_rxe
step "ringnicd rnw0 (userspace) in netns rn" start_user
[ $failed = 0 ] || exit $failed
if [[ " $groups " == *" user "* ]]; then
	matrix rn rxe 4
	matrix rxe rn 4
	matrix rn rxe 6 quick
	matrix rxe rn 6 quick
	# 1 MiB READs: rnw0 asks rxe0 in parts of 256 responses (requester.c);
	# rxe0 asks rnw0 for all 1024 at once.
	for ends in "rxe rn" "rn rxe"; do
		read -r a b <<<"$ends"
		step "$a->$b IPv4 ib_read_bw 1 MiB" pair perftest-bw $a $b 4 \
			ib_read_bw -n 20 -s 1048576
	done
fi
if [[ " $groups " == *" netem "* ]]; then
	before=$(recovery_counters)
	# ibv_rc_pingpong's side that receives last exits at once: were its
	# last ACK lost, its peer's retries would meet no QP and end, rightly,
	# in RETRY_EXC (tests/wire/faults.sh).  So the pingpongs see delay and
	# reordering, and perftest, whose ends stay in step, the loss too.
	step "netem: delay and reordering both ways" netem 0
	for ends in "rn rxe" "rxe rn"; do
		read -r a b <<<"$ends"
		step "$a->$b IPv4 netem ibv_rc_pingpong -s 10000 -c" \
			pair pingpong $a $b 4 ibv_rc_pingpong -n 100 -s 10000 -c
	done
	step "netem: delay, reordering and 2 % loss both ways" netem 2
	for ends in "rn rxe" "rxe rn"; do
		read -r a b <<<"$ends"
		t="$a->$b IPv4 netem"
		step "$t ib_write_bw" pair perftest-bw $a $b 4 ib_write_bw -n 200 -s 4096
		step "$t ib_read_bw" pair perftest-bw $a $b 4 ib_read_bw -n 200 -s 4096
	done
	step "netem: the ends saw loss and recovered" moved "$before" "$(recovery_counters)"
	netem off
fi
if [[ " $groups " == *" kernel "* ]]; then
	step "initial netns: UDP 4791 is rxe's, a ringnicd there has no GID, INIT" \
		port_is_rxes
	step "ringnic0 (ringnic.ko) in netns rk, its ringnicd attached" start_kernel
	for fam in 4 6; do
		for ends in "rk rxe" "rxe rk" "rk rn" "rn rk"; do
			read -r a b <<<"$ends"
			t="$a->$b IPv$fam"
			step "$t ibv_rc_pingpong -s 10000 -c" pair pingpong $a $b $fam \
				ibv_rc_pingpong -n 100 -s 10000 -c
			[ $fam = 6 ] && continue
			for tool in ib_write_bw ib_read_bw ib_atomic_bw; do
				step "$t $tool" pair perftest-bw $a $b $fam $tool -n 200
			done
		done
	done
fi

if [[ " $groups " == *" cm "* ]]; then
	step "the kernel's rdma_cm for rxe0" modprobe rdma_ucm
	cm_matrix rn rxe
	cm_matrix rxe rn
fi

if [[ " $groups " == *" kcm "* ]]; then
	[[ " $groups " == *" kernel "* ]] || step \
		"ringnic0 (ringnic.ko) in netns rk, its ringnicd attached" start_kernel
	step "the kernel's rdma_cm for rxe0 and ringnic0" modprobe rdma_ucm
	cm_matrix rk rxe
	cm_matrix rxe rk
	cm_matrix rk rn quick
	cm_matrix rn rk quick
fi

if [[ " $groups " == *" nogso "* ]]; then
	# Last: the refusal turns GSO off for good on rnw0's socket.
	step "vrn without transmit checksum offload" \
		ip netns exec rn ethtool -K vrn tx off
	# rnw0 sends the data: the client of WRITE, the server of READ.
	step "rxe->rn IPv4 no GSO ib_write_bw 64 KiB" pair perftest-bw rxe rn 4 \
		ib_write_bw -n 200 -s 65536
	step "rn->rxe IPv4 no GSO ib_read_bw 64 KiB" pair perftest-bw rn rxe 4 \
		ib_read_bw -n 200 -s 65536
	step "rn->rxe IPv4 no GSO ibv_rc_pingpong -s 65536 -c" pair pingpong \
		rn rxe 4 ibv_rc_pingpong -n 100 -s 65536 -c
	step "ringnicd said GSO was refused" grep -q \
		"refuses UDP GSO on this route" $logs/ringnicd-user.log
fi

step "every ringnicd still runs" kill -0 "${daemons[@]}"
echo "== counters"
grep -H . /sys/class/infiniband/rxe0/ports/1/hw_counters/* \
	$user_rt/sys/class/infiniband/rnw0/ports/1/hw_counters/* \
	$kern_rt/sys/class/infiniband/ringnic0/ports/1/hw_counters/* 2>/dev/null |
	grep -v ':0$'
echo "== ringnicd logs"
tail -n 50 $logs/*.log
echo "wire-rxe: $failed failed"
exit $failed
