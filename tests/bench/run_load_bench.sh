#!/usr/bin/env bash
# Load benchmark (issue 15): builds the release configuration (build/release)
# of brig-server and brig-load-bench, then runs mixed calls from 1, 8 and 64
# socket clients, with and without one stalled client. Not part of the tests.
# Usage: tests/bench/run_load_bench.sh [--calls N]
# BRIG_BUILD_LOCK=FILE: build under flock FILE (when others share the tree).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$src/build/release

cd "$src"
source tests/bench/build.sh
bench_build release brig-server brig-spawner brig-worker brig-load-bench

exec "$build/bin/brig-load-bench" "$@"
