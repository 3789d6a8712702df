#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# tools.sh BUILD_DIR local|wire: unmodified librdmacm programs over ringnic
# in userspace mode, meeting through rdma_cm alone (no TCP exchange).
#   local: server and client are two processes on host A, both on ringnic0;
#   wire:  the server on ringnic0 (host A), the client on ringnic1 (host B),
#          every CM message a MAD on the veth pair (tests/wire/lib.sh).
# rdmacm-utils (rping, ucmatose, udaddy, rdma_server/rdma_client), perftest
# with -R, qperf's -cm1 tests, libfabric's verbs MSG and RxM endpoints; then
# what a refused or abandoned connection must give: REJECTED with Linux's
# reasons, never a hang.
set -u
. "$(dirname "$0")/../wire/lib.sh"
mode=${2:?usage: tools.sh BUILD_DIR local\|wire}
wire_hosts "$@"
# --debug: its log says when a server listens (tests/pair.sh).
wire_start A ringnic0 --debug
client_host=()
cdev=ringnic0 # the client's device
if [ "$mode" = wire ]; then
	wire_start B ringnic1
	cdev=ringnic1
	export RN_PAIR_CLIENT_NETNS=$B
	client_host=(ip netns exec "$B")
fi
export RN_PAIR_CM_LOG=$RINGNIC_RUNTIME_DIR.ringnic0.log RN_PAIR_TIMEOUT=120
export RN_PAIR_ATTEMPTS=5
port=7471
failed=0
step() { # NAME CHECK PORT SERVER-ARGS... -- CLIENT-ARGS...
	local name=$1 out
	shift
	out=$("$(dirname "$0")/../pair.sh" "$@" 2>&1)
	if [ $? = 0 ]; then
		echo "ok   $name"
	else
		echo "FAIL $name"
		echo "$out" | tail -n 60
		failed=$((failed + 1))
	fi
	port=$((port + 1))
}
# Each tool with its port, the server bound to host A's address.
a4=198.18.0.1
a6=2001:2::1
rping_() {
	step "rping $*" "match:ping data: rdma-ping-99:" $port \
		rping -s -v -V -a $a4 -p $port -C 100 "$@" -- \
		rping -c -v -V -a $a4 -p $port -C 100 "$@"
}
rping_
rping_ -S 60000
step "rping IPv6" "match:ping data: rdma-ping-9:" $port \
	rping -s -v -V -a $a6 -p $port -C 10 -- rping -c -v -V -a $a6 -p $port -C 10
ucmatose_() {
	step "ucmatose $*" "match:return status 0" $port \
		ucmatose -p $port "$@" -- ucmatose -s $a4 -p $port "$@"
}
ucmatose_ -c 8 -C 50
ucmatose_ -c 2 -C 10 -S 65536
ucmatose_ -c 4 -C 10 -m # each connection migrates to a channel of its own
ucmatose_ -c 2 -C 10 -t 32 -a 16 # type of service, ACK timeout
ucmatose_ -c 2 -C 10 -P ib
step "ucmatose IPv6" "match:return status 0" $port \
	ucmatose -p $port -f ipv6 -b $a6 -c 2 -C 10 -- \
	ucmatose -p $port -f ipv6 -s $a6 -c 2 -C 10
step "udaddy" "match:return status 0" 7174 \
	udaddy -c 4 -C 20 -- udaddy -s $a4 -c 4 -C 20
step "rdma_server/rdma_client" "match:rdma_client: end 0" $port \
	rdma_server -s $a4 -p $port -- rdma_client -s $a4 -p $port
for tool in ib_write_bw ib_send_bw ib_read_bw; do
	step "$tool -R" perftest-bw $port \
		$tool -R -d ringnic0 -s 65536 -n 500 -p $port -- \
		$tool -R -d $cdev -s 65536 -n 500 -p $port $a4
done
step "ib_read_lat -R" perftest-lat $port \
	ib_read_lat -R -d ringnic0 -n 500 -p $port -- \
	ib_read_lat -R -d $cdev -n 500 -p $port $a4
# (Not perftest's UD -R: its client sends the SIDR REQ of the data QPs
# as soon as its control connection is up, while the server may not listen
# for them yet; rejected, perftest 4.5 crashes.  udaddy covers SIDR.)
# qperf's control connection is TCP; its RC QPs meet through rdma_cm.
RN_PAIR_CM_LOG= step "qperf -cm1 rc_bw rc_lat" "match:latency +=" 19765 \
	qperf -- qperf -cm1 -m 65536 $a4 rc_bw rc_lat quit

# libfabric's verbs provider (libfabric 1.17): it offers ringnic0 for
# FI_EP_MSG, and fi_pingpong passes over a MSG endpoint and over RxM's RDM
# endpoint, which is built on MSG endpoints.  The two meet through the
# server's name sent over fi_pingpong's TCP control connection, then
# rdma_cm.  The server names no address: the verbs provider binds
# "localhost", which rdma_cm takes for the wildcard, as the kernel does.
if ringnic-run fi_info -p verbs | grep -A2 "domain: ringnic0\$" |
	grep -q "type: FI_EP_MSG"; then
	echo "ok   fi_info -p verbs: ringnic0 for FI_EP_MSG"
else
	echo "FAIL fi_info -p verbs: no ringnic0 for FI_EP_MSG"
	failed=$((failed + 1))
fi
# Each names its domain: ringnic-run lists both devices in wire mode, and
# a wildcard listener is on no device to choose one by.
fi_pingpong_() {
	RN_PAIR_CM_LOG= step "fi_pingpong $*" "match:^1m +100 +=100 " $port \
		fi_pingpong -d ringnic0 -B $port "$@" -- \
		fi_pingpong -d $cdev -P $port "$@" $a4
}
fi_pingpong_ -p verbs -e msg -I 100 -c
# RxM over the message endpoint.  Its teardown used to crash libfabric
# (SIGSEGV in libfabric.so) until the provider took a destroyed QP's
# completions out of its CQs, as mlx5 does (docs/rdma_cm.md): a crash is a
# failure again.  With a receive queue per connection RxM can lose the
# last message at teardown on such a device (a hang, now and then, under
# load: docs/testing.md, libfabric's fabtests), so RxM gets a shared
# receive context, as in tests/fabtests.
FI_OFI_RXM_USE_SRX=1 fi_pingpong_ -p "verbs;ofi_rxm" -e rdm -I 100 -c

expect_fail() { # NAME MESSAGE CMD...: CMD fails, saying MESSAGE
	local name=$1 message=$2 out
	shift 2
	out=$(timeout 30 "$@" 2>&1)
	if [ $? != 0 ] && echo "$out" | grep -q "$message"; then
		echo "ok   $name"
	else
		echo "FAIL $name: $out"
		failed=$((failed + 1))
	fi
}
# No listener on the port: Linux's REJ "invalid service ID" (8), at once.
expect_fail "no listener: REJECTED 8" "REJECTED, error 8" \
	"${client_host[@]}" ringnic-run rping -c -a $a4 -p 7400 -C 1

# rdma_cm's loopback addresses are its wildcard (cma.c's cma_any_addr):
# a server bound to 127.0.0.1 takes connections to host A's address, and a
# client of 127.0.0.1 resolves its address but finds no route (ENODEV), as
# the kernel answers on rxe.
step "rping, the server bound to 127.0.0.1" "match:ping data: rdma-ping-9:" \
	$port rping -s -v -a 127.0.0.1 -p $port -C 10 -- \
	rping -c -v -a $a4 -p $port -C 10
expect_fail "client of 127.0.0.1: no route" "rdma_resolve_route: No such device" \
	ringnic-run rping -c -a 127.0.0.1 -p 7403 -C 1
# An address of host A that no RDMA device has: ENODEV, as the kernel's.
ip addr add 198.18.9.1/32 dev lo
expect_fail "bind to a host address without RDMA: ENODEV" \
	"rdma_bind_addr: No such device" ringnic-run rping -s -a 198.18.9.1 -p 7402

# A server that dies holding an undecided connect request: its listener
# and the request go with its channel, and the client is rejected (28,
# consumer-defined) instead of waiting out the CM's retries.
ringnic-run rping -s -a $a4 -p 7401 -C 1 >/dev/null 2>&1 &
server=$!
sleep 1
kill -STOP $server
timeout 60 "${client_host[@]}" ringnic-run rping -c -a $a4 -p 7401 -C 1 \
	>"$RINGNIC_RUNTIME_DIR.abandoned" 2>&1 &
client=$!
sleep 1
kill -KILL $server
wait $server 2>/dev/null
wait $client
if ! grep -q "REJECTED, error 28" "$RINGNIC_RUNTIME_DIR.abandoned"; then
	echo "FAIL abandoned request: $(cat "$RINGNIC_RUNTIME_DIR.abandoned")"
	failed=$((failed + 1))
else
	echo "ok   abandoned request: REJECTED 28"
fi

wire_clean_counters ringnic0 ${client_host:+ringnic1} || failed=$((failed + $?))
[ $failed = 0 ] || wire_fail "$failed failed"
wire_finish
