#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/vm/build-siw.sh OUTDIR [KVER]: builds siw.ko (soft-iWARP, the
# kernel's software iWARP device) out of tree for Debian's kernel KVER and
# copies it to OUTDIR/siw.ko.  Debian's 6.1 kernel ships rdma_rxe but has
# CONFIG_RDMA_SIW unset, and the VM benchmarks use siw as a reference next
# to rxe and ringnic.  Nothing of it is kept in the tree: the sources come
# from Debian's linux-source-6.1 (installed with apt-get when missing), and
# only drivers/infiniband/sw/siw is extracted, into a temporary directory.
#
#   KVER defaults to the newest 6.1 kernel in /lib/modules that has a
#   build directory (linux-headers-KVER); the host's running kernel does
#   not matter, the module is for the guest.
#   The build is skipped when OUTDIR/siw.ko is newer than the source
#   tarball and was built for KVER.
#   A linux-source version that differs from the headers' is reported; it
#   usually builds and loads anyway (same 6.1 stable ABI, symbol CRCs are
#   checked by modpost and by the kernel at insmod time).
set -euo pipefail
[ $# -ge 1 ] && [ $# -le 2 ] || {
	echo "usage: $0 OUTDIR [KVER]" >&2
	exit 2
}
mkdir -p "$1"
out=$(cd "$1" && pwd)
kver=${2:-}
if [ -z "$kver" ]; then
	kver=$(ls -d /lib/modules/6.1.*/build 2>/dev/null | sort -V | tail -n 1 |
		awk -F/ '{ print $4 }')
fi
[ -n "$kver" ] && [ -e "/lib/modules/$kver/build/Makefile" ] || {
	echo "build-siw: no kernel headers for '${kver:-6.1.*}' (apt-get install linux-headers-amd64)" >&2
	exit 1
}
tarball=/usr/src/linux-source-6.1.tar.xz
ko=$out/siw.ko

if [ ! -e "$tarball" ]; then
	echo "build-siw: installing linux-source-6.1"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq linux-source-6.1 >/dev/null
fi

vermagic() { modinfo -F vermagic "$1" 2>/dev/null | awk '{ print $1 }'; }
if [ "$ko" -nt "$tarball" ] && [ "$(vermagic "$ko")" = "$kver" ]; then
	echo "build-siw: $ko is up to date ($kver)"
	exit 0
fi

# The source and the headers should come from the same Debian upload.
src_ver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null || echo "?")
hdr_ver=$(dpkg-query -W -f='${Version}' "linux-headers-$kver" 2>/dev/null || echo "?")
if [ "$src_ver" != "$hdr_ver" ]; then
	echo "build-siw: warning: linux-source-6.1 $src_ver but linux-headers-$kver $hdr_ver (building anyway)" >&2
fi

tmp=$(mktemp -d /tmp/build-siw.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
echo "build-siw: extracting drivers/infiniband/sw/siw from $tarball"
tar -xJf "$tarball" -C "$tmp" --strip-components=4 \
	linux-source-6.1/drivers/infiniband/sw/siw
dir=$tmp/siw
[ -e "$dir/Makefile" ] || {
	echo "build-siw: $tarball has no drivers/infiniband/sw/siw" >&2
	exit 1
}
echo "build-siw: building for $kver (linux-source $src_ver, headers $hdr_ver)"
# siw's Makefile is a plain Kbuild fragment (obj-$(CONFIG_RDMA_SIW)); its
# headers are all in the headers package (rdma/*, uapi/rdma/siw-abi.h) and
# the symbols it needs (ib_core, iw_cm) are in its Module.symvers.
make -s -C "/lib/modules/$kver/build" M="$dir" CONFIG_RDMA_SIW=m \
	-j"$(nproc)" modules
# Debug info is of no use without the vmlinux (and is 90% of the size).
strip --strip-debug -o "$dir/siw.stripped.ko" "$dir/siw.ko"
install -m 0644 "$dir/siw.stripped.ko" "$ko"
echo "build-siw: $ko ($(vermagic "$ko"), depends: $(modinfo -F depends "$ko"))"
