#!/usr/bin/env bash
# Builds the libFuzzer harnesses (the `fuzz` preset: g++, ASan + UBSan,
# coverage; docs/fuzzing.md) and runs each for a bounded time, starting from
# its seed corpus in tests/fuzz/corpus/<harness>/. Fails if any harness
# crashes, leaks, times out or aborts on a broken invariant; the input that
# did is left as build/fuzz/artifacts/<harness>/crash-* (add it to the seed
# corpus once the cause is fixed).
# Usage: scripts/fuzz.sh [seconds-per-harness (default 60)] [harness...]
#   BRIG_FUZZ_RUNS=N     stop each harness after N inputs instead
#   BRIG_FUZZ_JOBS=N     parallel harnesses (default: nproc)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
all=(request_scan policy_loader spec_codec command_message worker_wire glob ignore_file
  http_head dns_message)
harnesses=("${@:-${all[@]}}")
build=build/fuzz

cmake --preset fuzz >/dev/null
cmake --build --preset fuzz -j "$(nproc)"

run_one() {
  local h=$1
  local work=$build/corpus/$h artifacts=$build/artifacts/$h
  if [[ ! -d tests/fuzz/corpus/$h ]]; then
    echo "no seed corpus tests/fuzz/corpus/$h" >"$build/$h.log"
    return 1
  fi
  mkdir -p "$work" "$artifacts"
  local limit=(-max_total_time="$seconds")
  [[ -n ${BRIG_FUZZ_RUNS:-} ]] && limit=(-runs="$BRIG_FUZZ_RUNS")
  # New inputs go to a scratch corpus under build/, so the repository's seeds
  # stay small and reviewed. -timeout: one input over 10 s is a hang.
  # detect_leaks: a leak is a finding too (LeakSanitizer, at exit and per input).
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "$build/bin/${h}_fuzz" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
    -print_final_stats=1 -artifact_prefix="$artifacts/" "$work" "tests/fuzz/corpus/$h" \
    >"$build/$h.log" 2>&1
}

jobs=${BRIG_FUZZ_JOBS:-$(nproc)}
status=0
total=0
declare -A pids
for h in "${harnesses[@]}"; do
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  run_one "$h" &
  pids[$h]=$!
done
for h in "${harnesses[@]}"; do
  if wait "${pids[$h]}"; then result=ok; else result=FAILED status=1; fi
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$build/$h.log" | tail -1)
  cov=$(grep -oE 'ft: [0-9]+ corp: [0-9]+' "$build/$h.log" | tail -1 || true)
  total=$((total + ${runs:-0}))
  printf '%-16s %-6s %10s inputs  %s\n' "$h" "$result" "${runs:-?}" "$cov"
  [[ $result == ok ]] || tail -40 "$build/$h.log"
done
echo "fuzz: $total inputs in all"
exit $status
