#!/usr/bin/env bash
# Ubuntu 23.10+ (kernel.apparmor_restrict_unprivileged_userns=1) lets any
# program create a user namespace but strips its capabilities unless an
# AppArmor profile grants `userns`. This installs such a profile for brig's
# executables only (the way Ubuntu ships one for bwrap and Chrome), and loads it.
# The programs that create user namespaces: brig (`brig run`), brig-server
# (`brig doctor`'s probes) and brig-spawner (every jail of `brig serve`).
# Usage (as root): scripts/install-apparmor-profile.sh [--print] [BIN_DIR]
#   BIN_DIR: where brig is (default build/release/bin of this checkout); its
#   siblings are looked for there and, for an installed brig, in
#   BIN_DIR/../libexec/brig. --print writes the profile to stdout instead.
set -euo pipefail
print=false
if [[ ${1:-} == --print ]]; then
  print=true
  shift
fi
bin_dir=$(realpath "${1:-$(dirname "$0")/../build/release/bin}")
[[ -x $bin_dir/brig ]] || { echo "no brig executable in $bin_dir" >&2; exit 1; }

programs=("$bin_dir/brig")
for name in brig-server brig-spawner; do
  found=""
  for dir in "$bin_dir" "$bin_dir/../libexec/brig"; do
    if [[ -x $dir/$name ]]; then
      found=$(realpath "$dir/$name")
      break
    fi
  done
  [[ -n $found ]] || { echo "no $name next to $bin_dir/brig or in ../libexec/brig" >&2; exit 1; }
  programs+=("$found")
done
# One attachment for all three: /{a,b,c} with the leading '/' taken out.
attach="/{$(IFS=,; echo "${programs[*]#/}")}"

profile_text() {
  cat <<PROFILE
# Installed by brig's scripts/install-apparmor-profile.sh: lets brig create
# the user namespaces its jails are built from. brig confines what runs inside.
abi <abi/4.0>,
include <tunables/global>

profile brig $attach flags=(unconfined) {
  userns,
  include if exists <local/brig>
}
PROFILE
}

if $print; then
  profile_text
  exit 0
fi
command -v apparmor_parser >/dev/null || { echo "apparmor_parser not found: AppArmor is not in use here, nothing to do" >&2; exit 0; }
profile=/etc/apparmor.d/brig
profile_text >"$profile"
apparmor_parser -r "$profile"
echo "loaded $profile for ${programs[*]}"
