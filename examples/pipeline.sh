#!/usr/bin/env bash
# brig in a pipeline: one JSON-RPC message per line in, one per line out.
# Modern era (2026-07-28): no initialize; each request carries its version.
# Usage: examples/pipeline.sh [path/to/brig] [workspace]
set -euo pipefail
brig=${1:-brig}
workspace=${2:-$PWD}
meta='"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}'
printf '%s\n' \
  "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{$meta}}" \
  "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{$meta}}" |
  "$brig" serve --workspace "$workspace"
