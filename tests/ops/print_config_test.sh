#!/bin/sh
# usage: print_config_test.sh SEQD
# `seqd --print-config` on the real binary: exits 0 without starting the
# server (no listener, no database file made), each value with its source as
# documented (flag > environment > file > default), the store URL's password
# and SEQD_STORE_PASSWORD never printed.
set -eu
seqd=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/seqd-print-config.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*" >&2
  cat "$tmp/out" >&2 || true
  exit 1
}
printf 'http_port = 7000\nmax_step = 500   # a comment\nthreads = 3\n' >"$tmp/seqd.conf"
SEQD_HTTP_PORT=8000 SEQD_MAX_STEP=600 SEQD_STORE_PASSWORD=swordfish \
  "$seqd" --print-config --config "$tmp/seqd.conf" --http-port 9000 \
  --store "sqlite:$tmp/never/seqd.db" --tcp-port 1 >"$tmp/out" 2>"$tmp/err" ||
  fail "exit status $? ($(cat "$tmp/err"))"
[ ! -e "$tmp/never" ] || fail "--print-config opened the store"
want() {
  grep -Eq "^$1 +# $2\$" "$tmp/out" || fail "no line '$1  # $2'"
}
want "http_port = 9000" "flag --http-port"
want "max_step = 600" "environment SEQD_MAX_STEP"
want "threads = 3" "file $tmp/seqd.conf:3"
want "max_count = 10000" "default"
want "# config = $tmp/seqd.conf" "flag --config"
want "# store_password = <redacted>" "environment SEQD_STORE_PASSWORD"
if grep -q swordfish "$tmp/out"; then fail "SEQD_STORE_PASSWORD printed"; fi

"$seqd" --print-config --store 'mysql://seqd:hunter2@db1:3306,db2:3306/seqd' >"$tmp/out" ||
  fail "exit status $?"
if grep -q hunter2 "$tmp/out"; then fail "the store URL's password printed"; fi
want "# store = mysql://seqd:<redacted>@db1:3306,db2:3306/seqd" "flag --store"

# A bad value is still an error (exit 2), as without --print-config.
if "$seqd" --print-config --http-port 70000 >"$tmp/out" 2>&1; then fail "a bad value passed"; fi
echo "print_config: OK"
