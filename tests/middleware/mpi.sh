#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# mpi.sh RN_MPI_CHECK: Open MPI (openmpi-bin, unmodified) runs rn_mpi_check
# in two ranks over UCX, held to ringnic0 and its verbs transports: no
# shared memory, no TCP.  UCX's own report must show the ranks' endpoints
# on rc_verbs/ringnic0:1.
set -u
check=$1
out=$(mktemp /tmp/rn-mpi.XXXXXX)
trap 'rm -f "$out"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# pml ucx for messages, osc ucx for one-sided; no BTL but self (openib and
# ofi would probe the device for nothing, vader is shared memory).
timeout 300 ringnic-run mpirun -np 2 --oversubscribe --mca pml ucx \
	--mca osc ucx --mca btl self \
	-x UCX_NET_DEVICES=ringnic0:1 -x UCX_TLS=rc_verbs,ud_verbs \
	-x UCX_WARN_UNUSED_ENV_VARS=n -x UCX_LOG_LEVEL=info \
	-x SYSFS_PATH -x LD_PRELOAD -x RDMAV_DRIVERS "$check" >"$out" 2>&1
rc=$?
grep -v 'UCX  INFO' "$out"
if [ $rc -ne 0 ] || ! grep -q 'alltoall ok' "$out"; then
	echo "mpi: mpirun exited $rc" >&2
	cat "$out" >&2
	exit 1
fi
# An endpoint's configuration: "ep_cfg[1]: tag(rc_verbs/ringnic0:1) ..."
# (UCX 1.13), "ucp_context_0 intra-node cfg#1 tag(rc_verbs/ringnic0:1) ..."
# (1.18 on; not the self endpoint).
cfgs=$(grep -E '(ep_cfg\[[0-9]+\]:|cfg#[0-9]+) ' "$out" | grep -v ' self cfg#')
if ! echo "$cfgs" | grep -q 'rc_verbs/ringnic0:1'; then
	echo "mpi: UCX did not say it used rc_verbs/ringnic0:1" >&2
	echo "$cfgs" >&2
	exit 1
fi
echo "$cfgs" | grep -m1 'rc_verbs/ringnic0:1'
