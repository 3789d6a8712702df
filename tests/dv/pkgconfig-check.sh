#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# pkgconfig-check.sh [BUILD_DIR]
#
# Builds consumer.c with nothing but the flags of `pkg-config --cflags
# --libs ringnic`, and checks that it runs on the library pkg-config named.
# With BUILD_DIR: against a staging install of that build, link and load
# only.  Without: against the installed ringnic, with a device (under
# ringnic-run).
set -eu
src=$(dirname "$(readlink -f "$0")")
tmp=$(mktemp -d /tmp/rn-pc.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

if [ $# -ge 1 ]; then
	DESTDIR=$tmp/stage cmake --install "$1" >/dev/null
	export PKG_CONFIG_SYSROOT_DIR=$tmp/stage
	export PKG_CONFIG_PATH
	PKG_CONFIG_PATH=$(dirname "$(find "$tmp/stage" -name ringnic.pc)")
fi
flags=$(pkg-config --cflags --libs ringnic)
echo "pkg-config --cflags --libs ringnic: $flags"
# shellcheck disable=SC2086 # the flags are words
cc -Wall -Wextra -Werror -o "$tmp/consumer" "$src/consumer.c" $flags
libdir=$(pkg-config --variable=libdir ringnic)

if [ $# -ge 1 ]; then
	# pkgconf puts the sysroot in front of libdir, pkg-config does not.
	case $libdir in
	"$PKG_CONFIG_SYSROOT_DIR"/*) ;;
	*) libdir=$PKG_CONFIG_SYSROOT_DIR$libdir ;;
	esac
	export LD_LIBRARY_PATH=$libdir
	run=("$tmp/consumer" --link-only)
else
	run=(ringnic-run "$tmp/consumer")
fi
used=$(ldd "$tmp/consumer" | awk '$1 == "libringnic.so.1" { print $3 }')
if [ "$(readlink -f "$used")" != "$(readlink -f "$libdir/libringnic.so.1")" ]; then
	echo "consumer loads '$used', not $libdir/libringnic.so.1" >&2
	exit 1
fi
"${run[@]}"
