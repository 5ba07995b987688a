#!/usr/bin/env bash
# Jail benchmark: builds the release configuration (build/release) of brig and
# brig-jail-bench, then times `brig run -- /bin/true` against bubblewrap with
# the same isolation, alternating, and reports brig's setup by step and the
# memory of brig's own processes. Not part of the tests.
# Usage: tests/bench/run_jail_bench.sh [--runs N] [--workspace DIR]
# BRIG_BUILD_LOCK=FILE: build under flock FILE (when others share the tree).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$src/build/release

command -v bwrap >/dev/null || { echo "bwrap is missing: scripts/install-deps.sh installs it" >&2; exit 1; }

cd "$src"
source tests/bench/build.sh
bench_build release brig brig-jail-bench

# The workspace must not be / or the home directory: a fresh one under /tmp.
ws=$(mktemp -d /tmp/brig-jail-bench.XXXXXX)
trap 'rm -rf "$ws"' EXIT
exec_bench() { "$build/bin/brig-jail-bench" --brig "$build/bin/brig" --bwrap "$(command -v bwrap)" --workspace "$ws" "$@"; }
exec_bench "$@"
