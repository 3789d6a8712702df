#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# mtu.sh BUILD_DIR: active_mtu is the largest IB MTU whose packets fit the
# netdev MTU less 80 bytes of headers, as rxe computes it, and follows
# `ip link set IF mtu N` with no restart; max_mtu stays 4096.  What
# unmodified ibv_devinfo -v shows.
set -u
. "$(dirname "$0")/lib.sh"
rn_netns "$@"

rn_veth veth0
ip addr add 198.18.0.1/24 dev veth0
rn_start rn0 --netdev veth0
# The veth's default MTU.
rn_expect_devinfo rn0 active_mtu "1024 (3)"
for step in 2200:"2048 (4)" 9000:"4096 (5)" 1500:"1024 (3)" \
	4176:"4096 (5)" 4175:"2048 (4)" 2128:"2048 (4)" 2127:"1024 (3)" \
	335:"256 (1)" 68:"256 (1)" 65535:"4096 (5)"; do
	ip link set veth0 mtu "${step%%:*}" || rn_fail "mtu ${step%%:*} refused"
	rn_expect_devinfo rn0 active_mtu "${step#*:}"
	rn_expect_devinfo rn0 max_mtu "4096 (5)"
done
rn_finish

rn_start rn1 --netdev lo
rn_expect_devinfo rn1 active_mtu "4096 (5)"
rn_finish
