#!/usr/bin/env bash
# Ubuntu 23.10+ (kernel.apparmor_restrict_unprivileged_userns=1) lets any
# program create a user namespace but strips its capabilities unless an
# AppArmor profile grants `userns`. This installs such a profile for brig's
# executables only (the way Ubuntu ships one for bwrap and Chrome), and loads it.
# Usage (as root): scripts/install-apparmor-profile.sh [BIN_DIR]
#   BIN_DIR defaults to build/release/bin of this checkout.
set -euo pipefail
bin_dir=$(realpath "${1:-$(dirname "$0")/../build/release/bin}")
[[ -x $bin_dir/brig ]] || { echo "no brig executable in $bin_dir" >&2; exit 1; }
command -v apparmor_parser >/dev/null || { echo "apparmor_parser not found: AppArmor is not in use here, nothing to do" >&2; exit 0; }

profile=/etc/apparmor.d/brig
cat >"$profile" <<PROFILE
# Installed by brig's scripts/install-apparmor-profile.sh: lets brig create
# the user namespaces its jails are built from. brig confines what runs inside.
abi <abi/4.0>,
include <tunables/global>

profile brig $bin_dir/{brig,brig-server} flags=(unconfined) {
  userns,
  include if exists <local/brig>
}
PROFILE
apparmor_parser -r "$profile"
echo "loaded $profile for $bin_dir/{brig,brig-server}"
