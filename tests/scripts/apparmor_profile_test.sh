#!/usr/bin/env bash
# scripts/install-apparmor-profile.sh --print: the profile attaches to every
# program that creates user namespaces (brig, brig-server, brig-spawner), in
# a build tree and in an installed layout (bin/ + libexec/brig/).
# Usage: apparmor_profile_test.sh SCRIPT BIN_DIR
set -euo pipefail
script=$1
bin=$(realpath "$2")
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$(bash "$script" --print "$bin")
for name in brig brig-server brig-spawner; do
  grep -q "profile brig /{.*${bin#/}/$name[,}]" <<<"$out" || fail "build tree: $name not attached: $out"
done
grep -q '^  userns,$' <<<"$out" || fail "no userns rule: $out"

installed=$(mktemp -d)
trap 'rm -rf "$installed"' EXIT
mkdir -p "$installed/bin" "$installed/libexec/brig"
cp "$bin/brig" "$installed/bin/"
cp "$bin/brig-server" "$bin/brig-spawner" "$installed/libexec/brig/"
out=$(bash "$script" --print "$installed/bin")
for path in bin/brig libexec/brig/brig-server libexec/brig/brig-spawner; do
  grep -q "${installed#/}/$path[,}]" <<<"$out" || fail "installed: $path not attached: $out"
done

rm "$installed/libexec/brig/brig-spawner"
if bash "$script" --print "$installed/bin" >/dev/null 2>&1; then
  fail "a missing brig-spawner must be an error, not a profile without it"
fi
echo "apparmor profile ok"
