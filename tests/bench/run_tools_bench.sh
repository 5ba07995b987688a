#!/usr/bin/env bash
# Tools benchmark (issue 4): builds the release configuration (build/release)
# of brig and brig-tools-bench, installs the pinned reference MCP filesystem
# server, extracts the Linux tree of Debian's linux-source-6.1 into /dev/shm
# (this machine's page cache drops files within a minute; tmpfs keeps them),
# makes it a git repository so that rg honours its ignore files, and runs
# brig-tools-bench: exec vs bwrap, search vs rg -j1, read_file and find_files
# vs @modelcontextprotocol/server-filesystem. Not part of the tests.
# Usage: tests/bench/run_tools_bench.sh [brig-tools-bench options, see --help]
#   e.g. --only search --search-runs 3
# The tree takes ~1.4 GiB of RAM while it runs and is removed at exit.
# BRIG_BUILD_LOCK=FILE: build under flock FILE (when others share the tree).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$src/build/release
tarball=/usr/src/linux-source-6.1.tar.xz

for tool in bwrap rg node npm git; do
  command -v $tool >/dev/null || { echo "$tool is missing: scripts/install-deps.sh installs it" >&2; exit 1; }
done
[[ -f $tarball ]] || { echo "$tarball is missing: apt-get install -y linux-source-6.1" >&2; exit 1; }

cd "$src"
source tests/bench/build.sh
bench_build release brig brig-server brig-spawner brig-worker brig-tools-bench

# The reference servers, pinned by tests/bench/package-lock.json, in the build tree.
peer=$build/bench-node
mkdir -p "$peer"
cp -p "$src/tests/bench/package.json" "$src/tests/bench/package-lock.json" "$peer/"
if [[ ! -f $peer/node_modules/.package-lock.json || $peer/package-lock.json -nt $peer/node_modules/.package-lock.json ]]; then
  (cd "$peer" && npm ci --no-audit --no-fund --prefer-offline --loglevel=error)
fi

# The workspace: the kernel tree, a 1 MiB text file and a one-line file.
ws=$(mktemp -d /dev/shm/brig-tools-bench.XXXXXX)
trap 'rm -rf "$ws"' EXIT
echo "extracting $tarball into $ws ..." >&2
tar -xJf "$tarball" -C "$ws"
kernel=linux-source-6.1
# Debian's packaging appends "/*" and "!/debian/" to the top .gitignore
# (ignore everything at the top level): without removing them rg and brig
# would search nothing.
sed -i -e '\#^/\*$#d' -e '\#^!/debian/$#d' "$ws/$kernel/.gitignore"
git -C "$ws/$kernel" init -q
# Real C text (tabs, quotes, backslashes for the JSON escape), cut at 1 MiB.
# (cat whole files, then cut: head would end cat with SIGPIPE under pipefail)
find "$ws/$kernel/kernel" -name '*.c' -print0 | sort -z | xargs -0 cat >"$ws/text-1MiB.txt"
truncate -s 1M "$ws/text-1MiB.txt"
echo "one line" >"$ws/one-line.txt"

"$build/bin/brig-tools-bench" --brig "$build/bin/brig" --workspace "$ws" \
  --kernel "$kernel" --text text-1MiB.txt --tiny one-line.txt \
  --node "$(command -v node)" \
  --filesystem "$peer/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" \
  --bwrap "$(command -v bwrap)" --rg "$(command -v rg)" "$@"
