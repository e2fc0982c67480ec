#!/bin/sh
# usage: package_test.sh BUILD_DIR EXAMPLE_SOURCE_DIR [SEQD_BINARY]
# Installs BUILD_DIR to a temporary prefix, configures and builds the example
# project against it (find_package(seqd), seqd::seqd_client) and runs it:
# --help, against a closed port (must fail cleanly), and, when SEQD_BINARY
# exists, both examples against a seqd started here on SQLite. Fails if any
# step fails.
set -eu
build=$1
example=$2
seqd=${3:-}
. "$(dirname "$0")/test_lib.sh"
with_tmp_dir seqd-package

echo "== install $build to $tmp/prefix"
cmake --install "$build" --prefix "$tmp/prefix"
test -f "$tmp/prefix/lib/cmake/seqd/seqdConfig.cmake"
test -f "$tmp/prefix/include/seqd/client.h"

echo "== configure and build the example against the installed package"
cmake -S "$example" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" -DCMAKE_BUILD_TYPE=Release
cmake --build "$tmp/build" -j2
bin="$tmp/build/seqd-example"

echo "== run it"
"$bin" --help
# Without a server it must fail cleanly (exit 1, UNAVAILABLE).
if "$bin" --endpoints 127.0.0.1:1 order 2>"$tmp/err"; then
  echo "the example succeeded against a closed port" >&2
  exit 1
fi
grep -q UNAVAILABLE "$tmp/err"

if [ -n "$seqd" ] && [ -x "$seqd" ]; then
  echo "== against $seqd"
  start_seqd "$seqd"
  # si_ keys are created on first use (default auto-create rule).
  if ! ids_from_seqd "$bin" si_package; then
    echo "the example got no IDs from seqd:" >&2
    cat "$tmp/err" "$tmp/seqd.log" >&2
    exit 1
  fi
  test "$(wc -l <"$tmp/ids")" -eq 3
  cat "$tmp/ids"
  # The messages example: subscribe, send two, each back as a push and in a pull.
  "$tmp/build/seqd-messages-example" --endpoints "127.0.0.1:$tcp_port" --conv sg_package a b \
    >"$tmp/msgs" 2>"$tmp/err" || { cat "$tmp/msgs" "$tmp/err" >&2; exit 1; }
  cat "$tmp/msgs"
  for line in "pushed seq=1: a" "pushed seq=2: b" "pulled seq=1: a" "pulled seq=2: b"; do
    grep -qxF "$line" "$tmp/msgs" || { echo "no line '$line'" >&2; exit 1; }
  done
elif [ -n "$seqd" ]; then
  echo "no seqd binary at '$seqd'" >&2
  exit 1
else
  echo "(no SEQD_BINARY argument given: the run against a server is for ctest)"
fi
echo "client_package: OK"
