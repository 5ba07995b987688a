#!/usr/bin/env bash
# Installs what is missing, builds the CI configuration (Debug + ASan + UBSan)
# and runs every test except benchmarks: once as the calling user and, when
# that user is root, once more as an unprivileged user (root hides bugs).
# Usage: scripts/test.sh [extra ctest args]   (BRIG_FUZZ_SECONDS: see the end)
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
preset=${BRIG_PRESET:-asan}
build=$src/build/$preset

scripts/install-deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" -j "$(nproc)"

# A short, bounded fuzz run of every harness (docs/fuzzing.md): the seeds
# and what a few seconds find beyond them, with the sanitizers; its own
# build (build/fuzz) plus BRIG_FUZZ_SECONDS (default 10) per harness, nproc
# at a time; BRIG_FUZZ_SECONDS=0 skips it. It runs at the lowest priority
# while the tests run: they mostly wait on jails and sockets, so it takes
# the CPU they leave idle instead of adding its minutes after them. Its
# output is shown at the end.
fuzz_seconds=${BRIG_FUZZ_SECONDS:-10}
fuzz_log=$(mktemp /tmp/brig-fuzz.XXXXXX)
trap 'rm -f "$fuzz_log"' EXIT
fuzz=
if ((fuzz_seconds > 0)); then
  nice -n 19 scripts/fuzz.sh "$fuzz_seconds" >"$fuzz_log" 2>&1 &
  fuzz=$!
fi

status=0
echo "== tests as $(id -un) (uid $(id -u))"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" "$@" || status=1

if [[ $(id -u) -eq 0 ]]; then
  # The unprivileged run: jail, server, security and conformance tests as a
  # plain user. The build tree is copied to a fresh 0755 directory (the clone
  # may sit under a 0700 home) and its ctest files are re-pointed there.
  user=${BRIG_TEST_USER:-brig-test}
  id -u "$user" >/dev/null 2>&1 || useradd --create-home --shell /usr/sbin/nologin "$user"
  home=$(getent passwd "$user" | cut -d: -f6)
  copy=$(mktemp -d /tmp/brig-unpriv.XXXXXX)
  chmod 0755 "$copy"
  trap 'rm -rf "$copy" "$fuzz_log"' EXIT
  tar -C "$build" --exclude='*.o' --exclude='*.a' --exclude=CMakeFiles -cf - . | tar -C "$copy" -xf -
  find "$copy" -name CTestTestfile.cmake -exec sed -i "s#$build#$copy#g" {} +
  chown -R "$user:" "$copy"
  echo "== tests as $user (uid $(id -u "$user"))"
  setpriv --reuid="$user" --regid="$user" --init-groups --inh-caps=-all --bounding-set=-all \
    env -i PATH=/usr/local/bin:/usr/bin:/bin HOME="$home" USER="$user" LANG=C.UTF-8 \
    ctest --test-dir "$copy" --output-on-failure -j "$(nproc)" -L 'jail|server|security|conformance' "$@" \
    || status=1
fi

if [[ -n $fuzz ]]; then
  wait "$fuzz" || status=1
  echo "== fuzz, ${fuzz_seconds} s per harness"
  cat "$fuzz_log"
fi
exit $status
