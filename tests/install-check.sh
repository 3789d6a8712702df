#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# install-check.sh BUILD_DIR: cmake --install into a staging dir puts every
# piece where a distro would, every man page is installed, and the
# installed ringnic-run points at the installed shim, not at the build tree.
set -eu
build=$1
stage=$(mktemp -d /tmp/rn-install.XXXXXX)
trap 'rm -rf "$stage"' EXIT
DESTDIR=$stage cmake --install "$build" >/dev/null
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:PATH=//p' "$build/CMakeCache.txt")
prefix=$(sed -n 's/^CMAKE_INSTALL_PREFIX:PATH=//p' "$build/CMakeCache.txt")
case $libdir in /*) ;; *) libdir=$prefix/$libdir ;; esac
mandir=$prefix/share/man
unitdir=$(sed -n 's/^RINGNIC_SYSTEMD_UNIT_DIR:PATH=//p' "$build/CMakeCache.txt")
gendir=$(sed -n 's/^RINGNIC_SYSTEMD_GENERATOR_DIR:PATH=//p' "$build/CMakeCache.txt")
# The provider's name carries libibverbs' private ABI (RingnicIbverbsAbi.cmake).
pabi=$(sed -n 's/^RINGNIC_IBVERBS_PABI:INTERNAL=//p' "$build/CMakeCache.txt")
provider=$libdir/libibverbs/libringnic-rdmav$pabi.so
# GNUInstallDirs: etc/ is /etc for the prefix /usr, under the prefix otherwise.
etc=$(sed -n 's/^CMAKE_INSTALL_SYSCONFDIR:PATH=//p' "$build/CMakeCache.txt")
case $etc in /*) ;; *) [ "$prefix" = /usr ] && etc=/$etc || etc=$prefix/$etc ;; esac
for f in "$prefix/sbin/ringnicd" "$prefix/bin/ringnic-run" \
	"$prefix/bin/ringnic-dump" \
	"$libdir/libringnic.so.1" "$libdir/libringnic.so" \
	"$provider" \
	"$libdir/ringnic/libringnic-shim.so" \
	"$libdir/pkgconfig/ringnic.pc" \
	"$prefix/include/infiniband/ringnicdv.h" \
	"$unitdir/ringnicd.service" "$unitdir/ringnicd@.service" \
	"$gendir/ringnicd-generator" "$etc/ringnic/ringnicd.conf" \
	/etc/libibverbs.d/ringnic.driver; do
	[ -e "$stage$f" ] || { echo "missing: $f" >&2; exit 1; }
done
# Every man page the build knows (it knows every page of the sources).
while read -r md; do
	page=$(basename "$md" .md)
	[ -e "$stage$mandir/man${page##*.}/$page" ] ||
		{ echo "$md is not installed" >&2; exit 1; }
done <"$build/man/sources.txt"
# The provider libibverbs loads is the library applications link to.
[ "$(readlink -f "$stage$provider")" = \
  "$(readlink -f "$stage$libdir/libringnic.so.1")" ] ||
	{ echo "the provider is not libringnic.so.1" >&2; exit 1; }
# ... and registers with that private ABI, bound to its symbol version.
objdump -T "$stage$libdir/libringnic.so.1" |
	grep -Eq "\(?IBVERBS_PRIVATE_$pabi\)? +verbs_register_driver_$pabi\$" ||
	{ echo "libringnic.so.1 does not register with PABI $pabi" >&2; exit 1; }
# Every direct verb the library exports has a man page that is installed.
for sym in $(objdump -T "$stage$libdir/libringnic.so.1" |
	awk '/RINGNIC_/ && $NF ~ /^ringnicdv_/ { print $NF }'); do
	[ -e "$stage$mandir/man3/$sym.3" ] ||
		{ echo "$sym has no installed man page" >&2; exit 1; }
done
grep -q "^driver " "$stage/etc/libibverbs.d/ringnic.driver"
grep -q "$libdir/ringnic/libringnic-shim.so" "$stage$prefix/bin/ringnic-run"
if grep -q "$build" "$stage$prefix/bin/ringnic-run"; then
	echo "installed ringnic-run refers to the build tree" >&2
	exit 1
fi
echo "install layout ok"
