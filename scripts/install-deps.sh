#!/usr/bin/env bash
# Installs the Debian 12 packages brig needs to build, run and test, and only
# those that are missing, so running it again costs one dpkg query.
set -euo pipefail

packages=(
  # toolchain
  g++ cmake ninja-build pkg-config git
  # libraries (DESIGN.md: Dependencies)
  libasio-dev libseccomp-dev libcap-dev libtomlplusplus-dev libspdlog-dev
  libfmt-dev nlohmann-json3-dev libcli11-dev libre2-dev libnftables-dev
  libhttp-parser-dev libssl-dev
  # tests: GoogleTest, the official MCP clients (Node), setpriv for the
  # unprivileged run, iproute2/nftables for network namespace tests
  googletest libgtest-dev libgmock-dev nodejs npm util-linux iproute2 nftables
  # benchmark peers (tests/bench)
  bubblewrap ripgrep
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
# Debian's "nodejs" may be satisfied by a node installed outside dpkg.
if command -v node >/dev/null && command -v npm >/dev/null; then
  kept=()
  for p in "${missing[@]}"; do [[ $p == nodejs || $p == npm ]] || kept+=("$p"); done
  missing=("${kept[@]+"${kept[@]}"}")
fi

if ((${#missing[@]} == 0)); then
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}" >&2
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
