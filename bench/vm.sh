#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/vm.sh [BUILD_DIR]: ringnic against the kernel's software RDMA
# devices, in one VM run under qemu (TCG) booting Debian's 6.1 kernel:
# ringnic0 (kernel mode, ringnic.ko), rnu0 (ringnic in userspace mode),
# rxe0 (rdma_rxe on a virtio-net NIC) and siw0 (siw built from
# linux-source-6.1, on its own NIC).  The same perftest points on each
# (bench/vm/inner.sh), REPS times (default 3); writes the medians to
# bench/results/vm.csv, plots them into bench/results/vm.png and prints the
# ratios of ringnic to rxe and siw (bench/vm/summary.sh; the raw rows stay
# in bench/results/vm-raw.csv).  Numbers, never pass/fail.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
reps=${REPS:-3}
results=$here/results
work=$(mktemp -d /tmp/rn-vmbench.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$results"

kver=$("$here/../scripts/build-kmod" "$build" | tail -n 1)
"$here/vm/build-siw.sh" "$work" "$kver"
"$here/../tests/vm/run.sh" --kernel "$kver" --nics 2 --out "$work" \
	--timeout 3600 --modprobe ib_core,ib_uverbs \
	--insmod "$build/kmod/ringnic.ko" -- \
	"$here/vm/guest.sh" "$build" "$work" "$reps" || true

raw=$work/vm-raw.csv
[ -s "$raw" ] || { echo "vm.sh: no results" >&2; exit 1; }
cp "$raw" "$results/vm-raw.csv"
"$here/vm/summary.sh" "$results/vm-raw.csv" "$results"
