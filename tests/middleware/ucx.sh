#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# ucx.sh TRANSPORT PORT TEST...: UCX (ucx-utils, unmodified) over ringnic0
# in two processes: ucx_perftest's server and client for each TEST, with
# UCX held to the one device and TRANSPORT.  Each run must end with a
# result line for every iteration asked; UCT tests (-t put_bw, am_lat, ...)
# go through TRANSPORT itself, UCP ones (tag_bw, ucp_put_lat, ...) through
# UCX_TLS.
set -u
tl=$1
port=$2
shift 2
iters=2000
export UCX_NET_DEVICES=ringnic0:1 UCX_WARN_UNUSED_ENV_VARS=n
# rc_verbs needs ud_verbs beside it for UCP's wire-up.
[ "$tl" = rc_verbs ] && export UCX_TLS=rc_verbs,ud_verbs || export UCX_TLS=$tl
# A ucx_perftest built with MPI (Debian 13's, UCX 1.18; not Debian 12's)
# is an MPI job of one when its stdin is no terminal, and refuses a test of
# two processes: -P 0 turns that off, where there is a -P.
nompi=()
ucx_perftest -h 2>&1 | grep -q -- '-P <0|1>' && nompi=(-P 0)
out=$(mktemp /tmp/rn-ucx.XXXXXX)
rc=0
for t in "$@"; do
	port=$((port + 1))
	args=(-t "$t" -n $iters -w 100 -p $port -f "${nompi[@]}")
	case $t in ucp_* | tag_*) ;; *) args+=(-d ringnic0:1 -x "$tl") ;; esac
	timeout 120 ringnic-run ucx_perftest "${args[@]}" >"$out.server" 2>&1 &
	spid=$!
	for _ in $(seq 200); do
		ss -Hltn "sport = :$port" | grep -q . && break
		sleep 0.05
	done
	timeout 120 ringnic-run ucx_perftest localhost "${args[@]}" >"$out" 2>&1
	crc=$?
	wait $spid
	src=$?
	# The final line: iterations, then latency and bandwidth figures.
	last=$(tail -n 1 "$out")
	if [ $crc -ne 0 ] || [ $src -ne 0 ] ||
		! echo "$last" | awk -v n=$iters '$1 == n && NF >= 8 { ok = 1 } END { exit !ok }'; then
		echo "FAIL $tl $t: client $crc, server $src" >&2
		cat "$out" "$out.server" >&2
		rc=1
		continue
	fi
	echo "ok   $tl $t: $last"
done
rm -f "$out" "$out.server"
exit $rc
