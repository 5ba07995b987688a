#!/usr/bin/env bash
# Installs what is missing, builds the release configuration and starts
# `brig serve` on the built-in default policy with the current directory (or
# BRIG_WORKSPACE) as the workspace. Extra arguments go to `brig serve`.
set -euo pipefail
here=$PWD
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release -j "$(nproc)" >&2
cd "$here"
exec "$root/build/release/bin/brig" serve --workspace "${BRIG_WORKSPACE:-$here}" "$@"
