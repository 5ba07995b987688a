#!/usr/bin/env bash
# MCP server benchmark: builds the release configuration (build/release),
# installs the pinned official SDK server (@modelcontextprotocol/server-everything)
# next to it, and runs brig-mcp-bench against both. Not part of the tests.
# Usage: tests/bench/run_mcp_bench.sh [brig-mcp-bench options, see --help]
# BRIG_BUILD_LOCK=FILE: build under flock FILE (when others share the tree).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$src/build/release

cd "$src"
source tests/bench/build.sh
bench_build release brig brig-server brig-spawner brig-worker brig-test-server brig-mcp-bench

# The SDK server, pinned by tests/bench/package-lock.json, installed in the build tree.
peer=$build/bench-node
mkdir -p "$peer"
cp -p "$src/tests/bench/package.json" "$src/tests/bench/package-lock.json" "$peer/"
if [[ ! -f $peer/node_modules/.package-lock.json || $peer/package-lock.json -nt $peer/node_modules/.package-lock.json ]]; then
  (cd "$peer" && npm ci --no-audit --no-fund --prefer-offline --loglevel=error)
fi

exec "$build/bin/brig-mcp-bench" \
  --brig "$build/bin/brig-test-server" \
  --front "$build/bin/brig" \
  --node "$(command -v node)" \
  --everything "$peer/node_modules/@modelcontextprotocol/server-everything/dist/index.js" \
  "$@"
