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
. "$(dirname "$0")/test_lib.sh"
with_tmp_dir seqd-build-tree
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
start_seqd "$seqd"
ids_from_seqd "$tmp/build/seqd-example" si_tree ||
  { cat "$tmp/err" "$tmp/seqd.log" >&2; fail "seqd-example got no IDs"; }
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
