#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/vm/guest.sh BUILD_DIR OUT_DIR REPS: inside the VM of bench/vm.sh
# (ib_core, ib_uverbs and ringnic.ko loaded, eth0 and eth1 up).  Brings up
# the four devices side by side: ringnic0 (kernel mode, ringnic.ko on
# eth0, its ringnicd attached), rnu0 (ringnic in userspace mode, its own
# ringnicd), rxe0 (rdma_rxe on eth0) and siw0 (siw.ko on eth1); then runs
# bench/vm/inner.sh over all four REPS times, appending to OUT_DIR/vm-raw.csv.
# RINGNIC_BENCH_DEVICES narrows the devices measured; RINGNIC_BENCH_POLL_US
# sets both ringnicds' --poll-us.
set -u
build=$1
out=$2
reps=$3
here=$(cd "$(dirname "$0")" && pwd)
export PATH="$build/bin:$PATH"
# The provider, not installed: libibverbs loads it from the build tree;
# ringnic-run finds it there by itself.
export RDMAV_DRIVERS=$build/lib/libringnic

devices=${RINGNIC_BENCH_DEVICES:-ringnic0 ringnic-user:rnu0 rxe0 siw0}
poll=()
[ -n "${RINGNIC_BENCH_POLL_US:-}" ] && poll=(--poll-us "$RINGNIC_BENCH_POLL_US")

rdma link add ringnic0 type ringnic netdev eth0 || exit 1
ringnicd --name ringnic0 --runtime-dir /run/ringnic-k --foreground "${poll[@]}" \
	2>/tmp/ringnicd-k.log &
export RINGNIC_RUNTIME_DIR=/run/ringnic-u
ringnicd --name rnu0 --foreground "${poll[@]}" 2>/tmp/ringnicd-u.log &
for _ in $(seq 100); do
	ibv_devinfo -d ringnic0 2>/dev/null | grep -q PORT_ACTIVE &&
		ringnic-run ibv_devinfo -d rnu0 >/dev/null 2>&1 && break
	sleep 0.1
done
for rep in $(seq "$reps"); do
	echo "== repetition $rep of $reps"
	setup=
	[ "$rep" = 1 ] && setup="--setup rxe,siw --siw-ko $out/siw.ko"
	# shellcheck disable=SC2086
	"$here/inner.sh" --out "$out/vm-raw.csv" $setup $devices
done
