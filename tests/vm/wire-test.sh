#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# tests/vm/wire-test.sh BUILD_DIR [GROUP...]: ringnic on the wire against
# the kernel's rdma_rxe.  Builds ringnic.ko (scripts/build-kmod), boots
# Debian's kernel under qemu (tests/vm/run.sh) and runs
# tests/vm/wire-rxe.sh there (GROUPs: user netem kernel cm kcm nogso;
# default all).
# BUILD_DIR is a built tree (ringnicd, the provider) inside the checkout.
set -euo pipefail
build=$(cd "$1" && pwd)
shift
src=$(cd "$(dirname "$0")/../.." && pwd)
. "$src/scripts/deps.sh"
RINGNIC_DEPS="linux-image-amd64 linux-headers-amd64 qemu-system-x86 busybox-static"
rn_install_deps

# The checkout is shared read-write: the guest hides /tmp (where CI may
# clone) behind its own tmpfs, and a shared dir stays visible.
case $build/ in
"$src"/*) ;;
/tmp/* | /run/* | /var/tmp/* | /dev/shm/*)
	echo "wire-test: $build is hidden in the guest; build inside $src" >&2
	exit 1 ;;
esac
kver=$("$src/scripts/build-kmod" "$build" | tail -n 1)
exec "$src/tests/vm/run.sh" --kernel "$kver" --timeout 2400 --out "$src" \
	--modprobe ib_core,ib_uverbs -- \
	"$src/tests/vm/wire-rxe.sh" "$build" "$build/kmod/ringnic.ko" "$@"
