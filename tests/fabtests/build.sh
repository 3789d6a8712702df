#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# build.sh DIR: libfabric's fabtests 1.17.0, the test suite of the libfabric
# Debian 12 ships, built from the source kept beside the checkout
# (../shared/fabtests, or RINGNIC_SHARED/fabtests) and installed under DIR;
# done once per DIR.  Needs libfabric-dev, autoconf, automake and libtool
# (scripts/deps.sh).  Nothing of fabtests goes into the repository.
set -eu
dir=$1
tarball=${RINGNIC_SHARED:-$(dirname "$0")/../../../shared}/fabtests/fabtests-1.17.0.tar.gz
[ -x "$dir/bin/runfabtests.sh" ] && exit 0
[ -f "$tarball" ] || { echo "fabtests: no $tarball" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir/src"
tar xzf "$tarball" -C "$dir/src" --strip-components=1
cd "$dir/src"
{
	./autogen.sh && ./configure --prefix="$dir" && make -j"$(nproc)" &&
		make install
} >"$dir/build.log" 2>&1 || {
	tail -n 30 "$dir/build.log" >&2
	echo "fabtests: the build failed ($dir/build.log)" >&2
	exit 1
}
