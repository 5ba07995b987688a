#!/usr/bin/env bash
# Egress benchmark (issue 13): builds the release configuration
# (build/release) of brig and brig-egress-bench, installs tinyproxy and squid
# if they are missing (as root, with apt-get, their services kept from
# starting), starts each on a loopback port with a minimal configuration in
# a temporary directory, runs brig-egress-bench against them, and stops them
# by pid. Not part of the tests.
# Usage: tests/bench/run_egress_bench.sh [brig-egress-bench options, e.g. --only latency]
# BRIG_BUILD_LOCK=FILE: build under flock FILE (when others share the tree).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$src/build/release

cd "$src"
source tests/bench/build.sh
bench_build release brig brig-netfilter brig-egress-bench

tmp=$(mktemp -d /tmp/brig-egress-bench.XXXXXX)
pids=()
policy_rc=/usr/sbin/policy-rc.d
policy_rc_saved=
cleanup() {
  # Only the peers this script started, by pid.
  for pid in "${pids[@]}"; do
    kill "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  if [[ -n $policy_rc_saved ]]; then
    if [[ $policy_rc_saved == none ]]; then rm -f "$policy_rc"; else mv "$policy_rc_saved" "$policy_rc"; fi
  fi
  rm -rf "$tmp"
}
trap cleanup EXIT

# --- the peers' packages. Installing a daemon's package starts its service;
# a policy-rc.d that answers 101 ("action forbidden") stops invoke-rc.d and
# deb-systemd-invoke from doing so. An existing policy-rc.d is put back.
missing=()
[[ -x /usr/bin/tinyproxy ]] || missing+=(tinyproxy)
[[ -x /usr/sbin/squid ]] || missing+=(squid)
if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "run_egress_bench: ${missing[*]} missing and not root: those peers are skipped" >&2
  else
    if [[ -e $policy_rc ]]; then
      policy_rc_saved=$tmp/policy-rc.d.saved
      cp -p "$policy_rc" "$policy_rc_saved"
    else
      policy_rc_saved=none
    fi
    printf '#!/bin/sh\n# run_egress_bench.sh: no service starts while it installs its peers\nexit 101\n' >"$policy_rc"
    chmod 755 "$policy_rc"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >"$tmp/apt.log" 2>&1 ||
      { tail -20 "$tmp/apt.log" >&2; echo "run_egress_bench: apt-get install failed" >&2; exit 1; }
    if [[ $policy_rc_saved == none ]]; then rm -f "$policy_rc"; else mv "$policy_rc_saved" "$policy_rc"; fi
    policy_rc_saved=
  fi
fi

# Many idle tunnels: every proxy needs two fds per tunnel.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

# A free loopback port: random, and nothing answers on it.
free_port() {
  local p
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % 20000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
  done
  echo "run_egress_bench: no free port" >&2
  exit 1
}
wait_port() {  # port name logfile
  for _ in $(seq 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    sleep 0.05
  done
  echo "run_egress_bench: $2 did not listen on 127.0.0.1:$1; its log:" >&2
  tail -20 "$3" >&2
  exit 1
}

up_port=$(free_port)
hold_port=$(free_port)
args=(--brig "$build/bin/brig" --upstream-port "$up_port" --holder-port "$hold_port")
# The peers drop root for an unprivileged user, which must reach their files.
chmod 755 "$tmp"

if [[ -x /usr/bin/tinyproxy ]]; then
  tp_port=$(free_port)
  mkdir -m 777 "$tmp/tinyproxy"
  # No LogFile and no Syslog: with -d tinyproxy logs to stdout, which goes
  # to the temporary directory. MaxClients covers the idle-tunnel section.
  cat >"$tmp/tinyproxy/tinyproxy.conf" <<EOF
User nobody
Group nogroup
Port $tp_port
Listen 127.0.0.1
Timeout 600
MaxClients 4000
Allow 127.0.0.1
ConnectPort $up_port
ConnectPort $hold_port
DisableViaHeader Yes
LogLevel Warning
EOF
  /usr/bin/tinyproxy -d -c "$tmp/tinyproxy/tinyproxy.conf" >"$tmp/tinyproxy/out.log" 2>&1 &
  pids+=($!)
  tp_pid=$!
  wait_port "$tp_port" tinyproxy "$tmp/tinyproxy/out.log"
  args+=(--tinyproxy "$tp_port" --tinyproxy-pid "$tp_pid")
  echo "tinyproxy $(/usr/bin/tinyproxy -v 2>&1 | head -1 | awk '{print $2}') on 127.0.0.1:$tp_port (pid $tp_pid)"
fi

if [[ -x /usr/sbin/squid ]]; then
  sq_port=$(free_port)
  mkdir -m 777 "$tmp/squid"
  # No cache (every response must come from the upstream), no access log,
  # cache.log in the temporary directory, no pinger helper; CONNECT only to
  # the bench's two upstream ports, from 127.0.0.1 only.
  cat >"$tmp/squid/squid.conf" <<EOF
http_port 127.0.0.1:$sq_port
pid_filename $tmp/squid/squid.pid
cache_log $tmp/squid/cache.log
access_log none
cache_store_log none
logfile_rotate 0
coredump_dir $tmp/squid
cache deny all
cache_mem 8 MB
pinger_enable off
via off
forwarded_for delete
max_filedescriptors 16384
shutdown_lifetime 1 seconds
acl bench_src src 127.0.0.1/32
acl bench_ports port $up_port $hold_port
acl CONNECT method CONNECT
http_access allow CONNECT bench_src bench_ports
http_access deny CONNECT
http_access allow bench_src
http_access deny all
EOF
  /usr/sbin/squid -N -f "$tmp/squid/squid.conf" >"$tmp/squid/out.log" 2>&1 &
  pids+=($!)
  sq_pid=$!
  wait_port "$sq_port" squid "$tmp/squid/cache.log"
  args+=(--squid "$sq_port" --squid-pid "$sq_pid")
  echo "squid $(/usr/sbin/squid -v | head -1 | awk '{print $4}') on 127.0.0.1:$sq_port (pid $sq_pid)"
fi

"$build/bin/brig-egress-bench" "${args[@]}" "$@"
