#!/usr/bin/env bash
# Runs examples/pipeline.sh and examples/socket_client.mjs against the built
# brig and checks every JSON configuration in examples/ parses.
# Usage: examples_test.sh BIN_DIR NODE
set -euo pipefail
bin=$1
node=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d /tmp/brig-ex.XXXXXX)
server=
cleanup() {
  [[ -n $server ]] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$tmp/ws"
fail() { echo "FAIL: $*" >&2; exit 1; }

for f in "$here"/*.json; do
  "$node" -e 'JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"))' "$f" ||
    fail "$f is not JSON"
done

out=$("$here/pipeline.sh" "$bin/brig" "$tmp/ws" 2>"$tmp/pipeline.err")
[[ $(wc -l <<<"$out") -eq 2 ]] || fail "pipeline.sh: expected 2 responses, got: $out"
grep -q '"id":1,.*"supportedVersions"' <<<"$out" || fail "pipeline.sh: no server/discover answer: $out"
grep -q '"id":2,.*"tools":\[' <<<"$out" || fail "pipeline.sh: no tools/list answer: $out"

sock=$tmp/s.sock
"$bin/brig-test-server" serve --listen "unix://$sock" --workspace "$tmp/ws" 2>"$tmp/server.err" &
server=$!
for _ in $(seq 200); do [[ -S $sock ]] && break; sleep 0.05; done
[[ -S $sock ]] || fail "the socket server did not start: $(cat "$tmp/server.err")"
out=$("$node" "$here/socket_client.mjs" "$sock" echo '{"text":"hello from the example"}')
grep -q '^connected to brig' <<<"$out" || fail "socket_client.mjs did not connect: $out"
grep -q '^tool echo' <<<"$out" || fail "socket_client.mjs did not list tools: $out"
grep -q '"text": "hello from the example"' <<<"$out" || fail "socket_client.mjs call failed: $out"
echo "examples ok"
