#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# tests/vm/kernel-test.sh BUILD_DIR [GROUP...]: the kernel stub's test.
#  1. builds ringnic.ko from a DKMS-shaped copy of kernel/ and kernel-abi/
#     (BUILD_DIR/kmod) against Debian's 6.1 headers with W=1: any warning
#     fails;
#  2. boots Debian's kernel under qemu (tests/vm/run.sh --debug-kernel:
#     slub_debug, kmemleak, dmesg and taint checked afterwards), loads
#     ib_core, ib_uverbs and ringnic.ko and runs tests/vm/kernel-mode.sh
#     (GROUPs: tools fatal unload pidreuse cycles; default all).
# BUILD_DIR is a built tree (ringnicd, the provider, tests/events).
set -euo pipefail
build=$(cd "$1" && pwd)
shift
src=$(cd "$(dirname "$0")/../.." && pwd)
. "$src/scripts/deps.sh"
RINGNIC_DEPS="linux-image-amd64 linux-headers-amd64 qemu-system-x86 busybox-static"
rn_install_deps

echo "== ringnic.ko, W=1"
kver=$("$src/scripts/build-kmod" "$build" | tail -n 1)
kmod=$build/kmod
modinfo "$kmod/ringnic.ko" | grep -E '^(vermagic|depends|license)'

echo "== under qemu: $kver"
# The checkout is shared read-write: the guest hides /tmp (where CI may
# clone) behind its own tmpfs, and a shared dir stays visible.
case $build/ in
"$src"/*) ;;
/tmp/* | /run/* | /var/tmp/* | /dev/shm/*)
	echo "kernel-test: $build is hidden in the guest; build inside $src" >&2
	exit 1 ;;
esac
exec "$src/tests/vm/run.sh" --kernel "$kver" --debug-kernel --timeout 1500 \
	--out "$src" --modprobe ib_core,ib_uverbs --insmod "$kmod/ringnic.ko" -- \
	"$src/tests/vm/kernel-mode.sh" "$build" "$kmod/ringnic.ko" "$@"
