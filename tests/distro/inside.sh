#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# tests/distro/inside.sh smoke|full DIST: what scripts/distro-test runs in
# the chroot of DIST (root, a network namespace of its own, the source in
# /src, everything else it writes in /build):
#  1. gcc and clang builds, tests included, warnings as errors;
#  2. the tests, with the gcc build: smoke: ibv_devinfo -v, ibv_rc_pingpong,
#     ib_write_bw, ib_send_lat, the e2e suite and the unit tests; full: all
#     of ctest but what the distribution cannot run (it says what: sid's
#     UCX has no verbs transports);
#  3. ringnic.ko with W=1 against the distribution's kernel headers, if any;
#  4. dpkg-buildpackage -b, apt-get install of the .debs, the library's
#     ABI as installed, and the smoke test again against the installed
#     files only (full: and the end-to-end suite of tests/package).
set -euo pipefail
mode=$1
dist=$2
export DEBIAN_FRONTEND=noninteractive
jobs=$(nproc)
section() { printf '\n==== %s: %s [%d s]\n' "$dist" "$*" $SECONDS; }
mkdir -p /build

for cc in gcc clang; do
	section "$cc $($cc -dumpversion): build, tests included, -Werror"
	CC=$cc cmake -S /src -B "/build/$cc" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		>"/build/$cc.cmake.log" || { cat "/build/$cc.cmake.log"; exit 1; }
	grep 'libibverbs' "/build/$cc.cmake.log"
	cmake --build "/build/$cc" -j"$jobs" >"/build/$cc.build.log" 2>&1 ||
		{ grep -B5 -A20 -E 'error|warning' "/build/$cc.build.log" | head -80; exit 1; }
done

section "tests ($mode) with the gcc build"
filter=()
# smoke: not unit_notify, a stress test of a minute and more.
[ "$mode" = smoke ] && filter=(-E '^unit_notify$'
	-R '^(tool_ibv_devinfo|tool_rc_pingpong_4k|perftest_write_bw_default|perftest_send_lat|e2e_.*|unit_.*|stub_install_layout)$')
# full: all but what the distribution's packages cannot run, said here.
# Debian unstable's UCX (1.23.0~rc1-1) is built without its InfiniBand
# transports (no uct_ib module): no rc_verbs or ud_verbs for the UCX tests
# and for Open MPI, whose pml is UCX.
if [ "$mode" = full ] && ! grep -q '^#define HAVE_IB ' <<<"$(ucx_info -b)"; then
	echo "   not run: middleware_ucx_info, middleware_ucx_rc, middleware_ucx_ud," \
		"middleware_mpi: UCX $(ucx_info -v | sed -n 's/^# Library version: //p')" \
		"here has no InfiniBand transports (ucx_info -b: no HAVE_IB)"
	filter=(-E '^(middleware_ucx_.*|middleware_mpi)$')
fi
(cd /build/gcc && ctest -j"$jobs" --output-on-failure --timeout 600 "${filter[@]}")

kver=$(ls /usr/src | sed -n 's/^linux-headers-\(.*-amd64\)$/\1/p' | tail -n 1)
if [ -n "$kver" ]; then
	section "ringnic.ko for $kver, W=1"
	/src/scripts/build-kmod /build/gcc "$kver" >/dev/null
	modinfo /build/gcc/kmod/ringnic.ko | grep -E '^(vermagic|depends)'
fi

section "dpkg-buildpackage -b; apt-get install of the .debs"
mkdir -p /build/deb
cp -a /src /build/deb/ringnic
(cd /build/deb/ringnic && dpkg-buildpackage -us -uc -b -Pnodoc) \
	>/build/deb.log 2>&1 || { tail -40 /build/deb.log; exit 1; }
debs=$(ls /build/deb/*.deb | grep -v -- -dbgsym_)
for deb in $debs; do
	echo "   $(basename "$deb"): $(dpkg-deb -f "$deb" Depends)"
done
apt-get install -y -q $debs >/build/install.log 2>&1 ||
	{ cat /build/install.log; exit 1; }
/src/tests/distro/abi-check.sh
if [ -n "$kver" ]; then
	# ringnic-dkms's postinst has built and installed it for $kver.
	status=$(dkms status ringnic -k "$kver")
	echo "   dkms: $status"
	case $status in
	*": installed"*) ;;
	*) cat /build/install.log; exit 1 ;;
	esac
fi

section "the installed files: ringnicd, smoke test"
ringnicd
trap 'kill $(cat /run/ringnic/ringnic0.pid) 2>/dev/null || :' EXIT
/src/tests/distro/smoke.sh
if [ "$mode" = full ]; then
	section "the installed files: the end-to-end suite"
	/src/tests/package/installed-e2e.sh
fi
