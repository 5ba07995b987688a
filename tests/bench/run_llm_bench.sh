#!/usr/bin/env bash
# LLM proxy benchmark (issue 14): builds brig-llm-bench in the release
# configuration (build/release), installs nginx-light if it is missing (as
# root, with apt-get, its service kept from starting; brig-llm-bench starts
# its own nginx on a loopback port and stops it by pid), and runs it. Not
# part of the tests.
# Usage: tests/bench/run_llm_bench.sh [brig-llm-bench options, e.g. --mib 256]
# BRIG_PRESET=asan: use that build instead (numbers inflated by sanitizers).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
preset=${BRIG_PRESET:-release}
cd "$src"
source tests/bench/build.sh
bench_build "$preset" brig-llm-bench

policy_rc=/usr/sbin/policy-rc.d
if [[ ! -x /usr/sbin/nginx ]]; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "run_llm_bench: nginx missing and not root: its rows are left out" >&2
  elif [[ -e $policy_rc ]]; then
    echo "run_llm_bench: $policy_rc exists; install nginx-light yourself" >&2
  else
    # Installing a daemon's package starts its service; a policy-rc.d that
    # answers 101 keeps it from doing so.
    trap 'rm -f "$policy_rc"' EXIT
    printf '#!/bin/sh\nexit 101\n' >"$policy_rc"
    chmod 755 "$policy_rc"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends nginx-light \
      >/tmp/run_llm_bench.apt.log 2>&1 || echo "run_llm_bench: apt-get install failed" >&2
    rm -f "$policy_rc"
  fi
fi
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
"$src/build/$preset/bin/brig-llm-bench" "$@"
