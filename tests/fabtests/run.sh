#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# run.sh BUILD_DIR [RUN...]: libfabric's own test suite, fabtests 1.17.0
# (build.sh), its quick set over ringnic in userspace mode, as libfabric's
# maintainers run it on a provider: "verbs" and "verbs;ofi_rxm", each with
# server and client on one ringnicd (both on ringnic0, host A) and across
# the two hosts of tests/wire (the server on ringnic1 in host B, the client
# on ringnic0; hosts/ssh stands in for ssh).  Each host has a runtime dir
# of its own, so that each sees its own device only.  libfabric's verbs
# provider wants an address on a netdev that is not loopback, which the
# veth pair gives.
# The quick set's unit tests of the runs go one run after another:
# fi_getinfo_test binds rdma_cm ids to its default port 9228 on every
# address, which a concurrent run's bind of the same port on the same
# device refuses (EADDRINUSE, as the kernel's rdma_cm does); the verbs
# provider then returns infos without a source address, and the test
# fails.  Then the functional and short tests of the runs go at once,
# each on addresses of its own and in a PID namespace of its own
# (runfabtests.sh kills every fi_* process it sees when it ends).  Any
# Fail fails, and so does a run that passes fewer tests than it did when this was written (a test gone to Notrun, ENOSYS
# or ENODATA, is a regression too).  What is not run, and why: exclude.txt.
set -u
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../wire/lib.sh"
wire_hosts "$@"
ft=$build/fabtests
"$here/build.sh" "$ft" || wire_fail "cannot build fabtests"
# More addresses: each run has its own on host A, since the runs go at
# once and some tests bind fixed ports (fi_msg_sockets' client takes
# 9229 on its -s address), and the runs of ofi_rxm have their own on B.
ip addr add 198.18.0.3/24 dev wa && ip addr add 198.18.0.5/24 dev wa &&
	ip addr add 198.18.0.6/24 dev wa && on_b ip addr add 198.18.0.4/24 dev wb ||
	wire_fail "cannot add the more addresses"
wire_start A ringnic0
dir_b=$RINGNIC_RUNTIME_DIR.b
mkdir -m 700 "$dir_b"
RINGNIC_RUNTIME_DIR=$dir_b wire_start B ringnic1
export PATH="$here/hosts:$PATH" RN_FT_B=$B RN_FT_B_DIR=$dir_b \
	RN_FT_B_ADDRS="198.18.0.2 198.18.0.4"

# RDM endpoints are RxM's, in the runs of "verbs" too.  RxM with a receive
# queue per connection loses a message now and then, on any device whose
# ibv_destroy_qp takes the QP's receive completions out of its CQ (mlx5,
# ringnic): the race in docs/testing.md.  With a shared receive context,
# whose receives outlive the QP, it loses none.
export FI_OFI_RXM_USE_SRX=1

# NAME PROVIDER SERVER CLIENT [HOSTS]: the fewest tests that pass today.
runs=(
	"verbs-one-device verbs 198.18.0.1 198.18.0.1 64"
	"verbs-two-hosts verbs 198.18.0.2 198.18.0.5 64"
	"rxm-one-device verbs;ofi_rxm 198.18.0.3 198.18.0.3 48"
	"rxm-two-hosts verbs;ofi_rxm 198.18.0.4 198.18.0.6 48"
)
# RUN...: only the runs of those names (scripts/test: one of each provider,
# one on each path); none: all four.
if [ $# -gt 1 ]; then
	chosen=()
	for r in "${runs[@]}"; do
		for want in "${@:2}"; do
			[ "${r%% *}" = "$want" ] && chosen+=("$r")
		done
	done
	[ ${#chosen[@]} = $(($# - 1)) ] || wire_fail "no such run among: ${runs[*]%% *}"
	runs=("${chosen[@]}")
fi
out=$RINGNIC_RUNTIME_DIR.fabtests
# libfabric writes a backtrace file where a test crashes: not in the tree.
mkdir "$out.d" && cd "$out.d" || wire_fail "no scratch dir"
# run_set RUN SETS: runfabtests.sh's SETS of that run, into $out.RUN.SETS.
run_set() {
	local name prov server client hosts=()
	read -r name prov server client _ <<<"$1"
	[ "$server" = "$client" ] || hosts=("$server" "$client")
	unshare --pid --fork --mount-proc ringnic-run \
		"$ft/bin/runfabtests.sh" -p "$ft/bin" -T 60 -t "$2" -v \
		-f "$here/exclude.txt" -s "$server" -c "$client" "$prov" \
		"${hosts[@]}" >"$out.$name.$2" 2>&1
}
for r in "${runs[@]}"; do
	run_set "$r" unit
done
pids=()
for r in "${runs[@]}"; do
	run_set "$r" functional,short &
	pids+=($!)
done
for pid in "${pids[@]}"; do
	wait "$pid"
done

total() { # RUN WHAT: the count of runfabtests.sh's summary lines, both sets
	awk -v what="$2" '$0 ~ "^# Total " what " " { n += $NF; seen++ }
		END { if (seen == 2) print n }' "$out.$1.unit" "$out.$1.functional,short"
}
failed=0
printf '%-18s %6s %8s %6s\n' run pass notrun fail
for r in "${runs[@]}"; do
	read -r name prov server client floor <<<"$r"
	pass=$(total "$name" Pass) notrun=$(total "$name" Notrun/Excluded)
	fail=$(total "$name" Fail)
	printf '%-18s %6s %8s %6s\n' "$name" "${pass:-?}" "${notrun:-?}" \
		"${fail:-?}"
	if [ -z "$pass" ] || [ "${fail:-1}" != 0 ] || [ "$pass" -lt "$floor" ]; then
		echo "--- $name ($prov): fewer than $floor passed, or some failed:"
		for f in "$out.$name".*; do
			grep -B2 -A40 "result: Fail" "$f" | head -n 200
			tail -n 8 "$f"
		done
		failed=1
	fi
done
[ $failed = 0 ] || wire_fail "fabtests failed"
wire_clean_counters ringnic0 && RINGNIC_RUNTIME_DIR=$dir_b wire_clean_counters ringnic1 ||
	wire_fail "bad packets on the wire"
wire_finish
[ -e "$dir_b" ] && wire_fail "left behind: $(find "$dir_b" | head -5)"
exit 0
