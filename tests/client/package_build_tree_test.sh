#!/bin/sh
# usage: package_build_tree_test.sh BUILD_DIR EXAMPLE_SOURCE_DIR SEQD_BINARY
# The client package straight from a build tree, without installing:
# configures and builds the example project with -Dseqd_DIR=BUILD_DIR/client,
# then runs both examples against a seqd started here on SQLite: seqd-example
# prints 3 IDs; seqd-messages-example sends two messages to a conversation it
# subscribed to and prints each back as a push and in a pull.
set -eu
build=$(cd "$1" && pwd)
example=$2
seqd=$3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/seqd-build-tree.XXXXXX")
pid=
cleanup() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

echo "== configure and build the examples with -Dseqd_DIR=$build/client"
cmake -S "$example" -B "$tmp/build" -Dseqd_DIR="$build/client" -DCMAKE_BUILD_TYPE=Release \
  >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log" >&2; fail "configure"; }
grep -q "seqd_DIR" "$tmp/build/CMakeCache.txt"
cmake --build "$tmp/build" -j2 >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log" >&2; fail "build"; }

echo "== run them against $seqd"
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}
http_port=$(free_port)
tcp_port=$(free_port)
"$seqd" --store "sqlite:$tmp/seqd.db" --http-port "$http_port" --tcp-port "$tcp_port" \
  --threads 1 --log-level warn >"$tmp/seqd.log" 2>&1 &
pid=$!
ok=
for _ in $(seq 100); do
  if "$tmp/build/seqd-example" --endpoints "127.0.0.1:$tcp_port" si_tree 3 >"$tmp/ids" 2>"$tmp/err"
  then
    ok=1
    break
  fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
[ -n "$ok" ] || { cat "$tmp/err" "$tmp/seqd.log" >&2; fail "seqd-example got no IDs"; }
[ "$(wc -l <"$tmp/ids")" -eq 3 ] || fail "seqd-example printed $(cat "$tmp/ids")"

"$tmp/build/seqd-messages-example" --endpoints "127.0.0.1:$tcp_port" --conv sg_tree hello world \
  >"$tmp/out" 2>"$tmp/err" || { cat "$tmp/out" "$tmp/err" >&2; fail "seqd-messages-example failed"; }
cat "$tmp/out"
for line in "sent seq=1: hello" "sent seq=2: world" "pushed seq=1: hello" "pushed seq=2: world" \
  "pulled seq=1: hello" "pulled seq=2: world"; do
  grep -qxF "$line" "$tmp/out" || fail "no line '$line'"
done
[ "$(wc -l <"$tmp/out")" -eq 6 ] || fail "a message printed twice"
echo "client_package_build_tree: OK"
