#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdma-cm.sh BUILD_DIR: librdmacm programs in a rootless container, run as
#   unshare --user --map-root-user --net --mount rdma-cm.sh BUILD_DIR
# by any user (scripts/test runs it as rn-test; ctest as root): a network
# namespace of its own whose lo carries 198.18.0.1, and a private ringnicd
# serving that address.  rdma_cm cannot resolve a route to 127.0.0.1 on a
# RoCE device (the kernel's answer too), hence the address.  Server and
# client meet through rdma_cm alone (tests/pair.sh); tests/cm runs the
# whole set as root, between two hosts too.
set -u
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
a4=198.18.0.1
if ! ip link set lo up || ! ip addr add $a4/32 dev lo; then
	echo "rdma-cm.sh: cannot set up lo: run it in a network namespace" \
		"of its own (unshare --user --map-root-user --net)" >&2
	exit 1
fi
export RINGNICD_ARGS="--address $a4 --debug" RN_PAIR_TIMEOUT=120
export PAIR=$here/../pair.sh
exec "$here/../with-device.sh" "$build" bash -c '
a4=$1
export RN_PAIR_CM_LOG=$RINGNIC_RUNTIME_DIR.log
failed=0
step() { # NAME CHECK PORT SERVER-ARGS... -- CLIENT-ARGS...
	local name=$1 out
	shift
	if out=$("$PAIR" "$@" 2>&1); then
		echo "ok   $name"
	else
		echo "FAIL $name"
		echo "$out" | tail -n 40
		failed=$((failed + 1))
	fi
}
step "rping -V" "match:ping data: rdma-ping-49:" 7481 \
	rping -s -v -V -a $a4 -p 7481 -C 50 -- rping -c -v -V -a $a4 -p 7481 -C 50
step ucmatose "match:return status 0" 7482 \
	ucmatose -p 7482 -c 2 -C 10 -- ucmatose -s $a4 -p 7482 -c 2 -C 10
step udaddy "match:return status 0" 7174 \
	udaddy -c 2 -C 10 -- udaddy -s $a4 -c 2 -C 10
step rdma_server/rdma_client "match:rdma_client: end 0" 7483 \
	rdma_server -s $a4 -p 7483 -- rdma_client -s $a4 -p 7483
step "ib_write_bw -R" perftest-bw 7484 \
	ib_write_bw -R -d ringnic0 -s 65536 -n 500 -p 7484 -- \
	ib_write_bw -R -d ringnic0 -s 65536 -n 500 -p 7484 $a4
exit $failed
' rdma-cm $a4
