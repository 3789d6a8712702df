#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# installed-e2e.sh: the end-to-end suite against the installed packages,
# with a device already running in the default runtime dir (unit-exec.sh
# starts it): unmodified tools and ringnic-run from PATH, the test programs
# of tests/ compiled against the installed headers and libraries with
# pkg-config's flags only.  No build tree anywhere: the environment is
# checked for one.  Root only.
set -u
tests=$(dirname "$(dirname "$(readlink -f "$0")")")
tmp=$(mktemp -d /tmp/rn-installed.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
failed=()
check() {
	local name=$1
	shift
	echo "=== $name"
	if "$@"; then echo "--- $name ok"; else echo "--- $name FAILED"; failed+=("$name"); fi
}

for var in RDMAV_DRIVERS LD_LIBRARY_PATH LD_PRELOAD SYSFS_PATH RINGNIC_RUNTIME_DIR; do
	[ -z "${!var:-}" ] || { echo "installed-e2e: $var is set" >&2; exit 1; }
done
case :$PATH: in
*/build*) echo "installed-e2e: a build dir on PATH: $PATH" >&2; exit 1 ;;
esac
[ "$(command -v ringnic-run)" = /usr/bin/ringnic-run ] ||
	{ echo "installed-e2e: ringnic-run is not the installed one" >&2; exit 1; }

# ---- the test programs, from their sources --------------------------------------
build() {
	local out=$1 pkgs=$2
	shift 2
	# The project's own flags (C11, _GNU_SOURCE), plus pkg-config's.
	# shellcheck disable=SC2046 # pkg-config prints words
	cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -o "$tmp/$out" "$@" \
		$(pkg-config --cflags --libs $pkgs) -lpthread
}
build rn_e2e "libibverbs ringnic" -I"$tests" "$tests"/e2e/*.c \
	"$tests/have_uffd.c" "$tests/send_fds.c" &&
	build test_post "ringnic cmocka" "$tests/post/test_post.c" &&
	build rn_errors_arm ringnic "$tests/events/common.c" \
		"$tests/events/errors_arm.c" ||
	{ echo "installed-e2e: the tests do not build against the packages" >&2; exit 1; }
lib=$(readlink -f "$(pkg-config --variable=libdir ringnic)/libringnic.so.1")
for prog in rn_e2e test_post rn_errors_arm; do
	used=$(ldd "$tmp/$prog" | awk '$1 == "libringnic.so.1" { print $3 }')
	[ "$(readlink -f "$used")" = "$lib" ] ||
		{ echo "installed-e2e: $prog uses '$used', not $lib" >&2; exit 1; }
done

# ---- unmodified tools ------------------------------------------------------------
check ibv_devices sh -c 'ringnic-run ibv_devices | grep -q ringnic0'
check ibv_devinfo sh -c 'ringnic-run ibv_devinfo -v | grep -q PORT_ACTIVE'
# The installed ringnic-dump reaches the installed device (no traffic yet:
# no packet), and libpcap writes its file.
check ringnic-dump sh -c "timeout --preserve-status -s INT 1 ringnic-dump -w $tmp/dump.pcap;
	[ \$? = 0 ] && [ -s $tmp/dump.pcap ]"
pair() {
	local check=$1 port=$2
	shift 2
	"$tests/pair.sh" "$check" "$port" "$@" -p "$port" -- "$@" -p "$port" localhost
}
check rc_pingpong pair pingpong 18931 ibv_rc_pingpong -g 0 -n 2000
check rc_pingpong_events pair pingpong 18932 ibv_rc_pingpong -g 0 -e -n 2000
check ib_write_bw pair perftest-bw 18933 ib_write_bw
check ib_read_bw pair perftest-bw 18934 ib_read_bw
check ib_send_bw_events pair perftest-bw 18935 ib_send_bw -e
check ib_atomic_bw pair perftest-bw 18936 ib_atomic_bw
check ib_write_lat pair perftest-lat 18937 ib_write_lat

# ---- the suite's own programs ---------------------------------------------------------
check rn_e2e ringnic-run "$tmp/rn_e2e"
check test_post ringnic-run "$tmp/test_post"
check errors_arm ringnic-run "$tmp/rn_errors_arm"
check dv_pkgconfig "$tests/dv/pkgconfig-check.sh"

if [ ${#failed[@]} -gt 0 ]; then
	echo "installed-e2e: failed: ${failed[*]}" >&2
	exit 1
fi
echo "installed-e2e: all passed"
