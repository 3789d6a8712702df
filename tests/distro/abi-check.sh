#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# abi-check.sh: the installed provider is bound to the private ABI of the
# installed libibverbs: libibverbs.so.1 exports the register function and
# every IBVERBS_PRIVATE_ symbol libringnic.so.1 takes from it, with the
# version it asks for, and the provider's link in libibverbs' directory has
# the suffix of rdma-core's own providers there (librxe-rdmavNN.so).
set -eu
libdir=$(pkg-config --variable=libdir libibverbs)
# "VERSION NAME" of the dynamic symbols of $1 that match $2.
symbols() {
	objdump -T "$1" | awk -v want="$2" '$0 ~ want {
		v = $(NF - 1); gsub(/[()]/, "", v); print v, $NF }' | sort -u
}
exported=$(symbols "$libdir/libibverbs.so.1" 'IBVERBS_PRIVATE_')
imported=$(symbols "$libdir/libringnic.so.1" 'UND.*IBVERBS_PRIVATE_')
missing=$(comm -13 <(echo "$exported") <(echo "$imported"))
[ -z "$missing" ] || { echo "abi-check: libibverbs.so.1 lacks: $missing" >&2; exit 1; }
register=$(echo "$imported" | awk '$2 ~ /^verbs_register_driver_/')
pabi=${register##*_}
[ -n "$pabi" ] && [ "$register" = "IBVERBS_PRIVATE_$pabi verbs_register_driver_$pabi" ] ||
	{ echo "abi-check: libringnic.so.1 registers with '$register'" >&2; exit 1; }
rxe=$(ls "$libdir"/libibverbs/librxe-rdmav*.so)
[ "$rxe" = "$libdir/libibverbs/librxe-rdmav$pabi.so" ] ||
	{ echo "abi-check: PABI $pabi, but rdma-core installed $rxe" >&2; exit 1; }
[ "$(readlink -f "$libdir/libibverbs/libringnic-rdmav$pabi.so")" = \
	"$(readlink -f "$libdir/libringnic.so.1")" ] ||
	{ echo "abi-check: no libringnic-rdmav$pabi.so for libringnic.so.1" >&2; exit 1; }
echo "   $register: $(echo "$imported" | wc -l) private symbols, all exported" \
	"by libibverbs $(pkg-config --modversion libibverbs)"
