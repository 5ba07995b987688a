# Sourced by tests/bench/run_*_bench.sh, from the source tree's top:
#   bench_build PRESET TARGET...
# configures the CMake preset and builds those targets, holding
# flock $BRIG_BUILD_LOCK while it does when that is set (when others build
# in the same tree).
bench_build() {
  local preset=$1
  shift
  (
    if [[ -n ${BRIG_BUILD_LOCK:-} ]]; then
      exec {lock}>>"$BRIG_BUILD_LOCK"
      flock "$lock"
    fi
    cmake --preset "$preset" >/dev/null
    cmake --build --preset "$preset" -j "$(nproc)" --target "$@"
  )
}
