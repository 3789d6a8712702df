#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/vm.sh [BUILD_DIR]: ringnic against the kernel's software RDMA
# devices, in one VM run under qemu (TCG) booting Debian's 6.1 kernel:
# ringnic0 (kernel mode, ringnic.ko), rnu0 (ringnic in userspace mode,
# both ends on one ringnicd: the local path), ringnic in userspace mode
# over the wire (rnw0 -> rnw1: RoCEv2 between two network namespaces of
# the guest joined by a veth pair), rxe0 (rdma_rxe on a virtio-net NIC)
# and siw0 (siw built from linux-source-6.1, on its own NIC).  The same
# perftest points on each (bench/vm/inner.sh), REPS times (default 3);
# writes the medians to bench/results/vm.csv, plots them into
# bench/results/vm.png and prints the ratios of ringnic to rxe and siw,
# and of the wire to rxe, to the local path and to plain UDP over the
# same veth pair, measured in the same VM, and the least CPU a KiB takes
# on the wire there: its ICRC and its copies out of and into a process
# (bench/vm/summary.sh; the raw rows stay in bench/results/vm-raw.csv).
# Numbers, never pass/fail.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/.." && pwd)
build=$(cd "${1:-$src/build}" && pwd)
reps=${REPS:-3}
results=$here/results
# The guest sees one host dir besides the read-only root: the checkout,
# shared read-write (it hides /tmp, where CI may clone, behind a tmpfs).
# So the build and the work dir must be inside it.
case $build/ in
"$src"/*) ;;
/tmp/* | /run/* | /var/tmp/* | /dev/shm/*)
	echo "vm.sh: $build is hidden in the guest; build inside $src" >&2
	exit 1 ;;
esac
work=$(mktemp -d "$build/vmbench.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$results"

kver=$("$src/scripts/build-kmod" "$build" | tail -n 1)
"$here/vm/build-siw.sh" "$work" "$kver"
"$src/tests/vm/run.sh" --kernel "$kver" --nics 2 --out "$src" \
	--timeout 3600 --modprobe ib_core,ib_uverbs \
	--insmod "$build/kmod/ringnic.ko" -- \
	"$here/vm/guest.sh" "$build" "$work" "$reps" || true

raw=$work/vm-raw.csv
[ -s "$raw" ] || { echo "vm.sh: no results" >&2; exit 1; }
cp "$raw" "$results/vm-raw.csv"
"$here/vm/summary.sh" "$results/vm-raw.csv" "$results"
