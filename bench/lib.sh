# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Sourced by the bench scripts: a private ringnicd for the run, and
# perftest client/server pairs against it.  Needs $build (the build dir).
export PATH="$build/bin:$PATH"
export RINGNIC_RUNTIME_DIR
RINGNIC_RUNTIME_DIR=$(mktemp -d /tmp/ringnic-bench.XXXXXX)
bench_port=18700

ringnicd --runtime-dir "$RINGNIC_RUNTIME_DIR"
trap 'kill -TERM "$(cat "$RINGNIC_RUNTIME_DIR/ringnic0.pid")" || :' EXIT

# perftest TOOL ARGS...: the client's result rows (one per size).
perftest() {
	local tool=$1 server
	shift
	bench_port=$((bench_port + 1))
	ringnic-run "$tool" -p $bench_port "$@" >/dev/null 2>&1 &
	server=$!
	until ss -Hltn "sport = :$bench_port" | grep -q .; do sleep 0.05; done
	ringnic-run "$tool" -p $bench_port "$@" localhost |
		awk '/#bytes/ { t = 1; next } t && $1 ~ /^[0-9]+$/ { print }'
	wait $server
}
