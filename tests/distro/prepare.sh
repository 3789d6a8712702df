#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# tests/distro/prepare.sh DIST PACKAGE...: run by scripts/distro-test in
# the cached chroot of DIST (root, with the network) to install PACKAGEs
# and the Build-Depends of /var/tmp/build-dep/debian/control.
set -euo pipefail
dist=$1
shift
export DEBIAN_FRONTEND=noninteractive
dpkg --configure -a # an earlier preparation may have been interrupted
apt-get update -q
apt-get install -y -q --no-install-recommends "$@"
apt-get build-dep -y -q --no-install-recommends -Pnodoc /var/tmp/build-dep
if [ "$dist" = trixie ]; then
	# The kernel headers of Debian 13, for ringnic.ko: linux-headers-*-amd64
	# depends on the kernel image, and that on an initramfs generator, none
	# of which the build needs; unpack just the headers (all in /usr).
	cd /var/tmp
	v=$(apt-cache depends linux-headers-amd64 | sed -n 's/.*Depends: linux-headers-//p')
	apt-get download -q "linux-headers-$v" "linux-headers-${v%-amd64}-common" \
		"linux-kbuild-${v%-amd64}"
	for deb in ./*.deb; do dpkg-deb -x "$deb" /; done
	rm ./*.deb
fi
apt-get clean
