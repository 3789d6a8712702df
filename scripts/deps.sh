# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Sourced by scripts/demo and scripts/test: installs the Debian 12 packages
# ringnic builds with, tests with and benchmarks with, if any is missing.
RINGNIC_DEPS="build-essential clang cmake pkg-config libibverbs-dev
	libnl-3-dev libnl-route-3-dev libcmocka-dev zlib1g-dev libisal-dev ibverbs-utils
	ibverbs-providers perftest qperf iproute2 util-linux gnuplot-nox pandoc
	valgrind ucx-utils openmpi-bin libopenmpi-dev libfabric-bin nftables
	rdmacm-utils ethtool libseccomp-dev libfabric-dev autoconf automake
	libtool libpcap-dev tshark"

rn_install_deps() {
	local missing= p sudo=
	for p in $RINGNIC_DEPS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
			grep -q "install ok installed" || missing="$missing $p"
	done
	[ -z "$missing" ] && return 0
	[ "$(id -u)" = 0 ] || sudo=sudo
	echo "installing:$missing"
	$sudo apt-get update -q
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q \
		--no-install-recommends $missing
}
