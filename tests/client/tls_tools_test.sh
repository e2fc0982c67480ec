#!/bin/sh
# usage: tls_tools_test.sh SEQCTL SOURCE_DIR
# seqctl's HTTP path over TLS against `openssl s_server -WWW` (which serves
# ./healthz as GET /healthz), with certificates from tests/tls/make_certs.sh:
# the right CA works (IP and DNS names, flags and SEQD_TLS_CA), a foreign CA,
# a wrong server name and plain HTTP fail, and with -Verify (mTLS) only the
# client certificate gets through.
set -eu
seqctl=$1
src=$2
. "$(dirname "$0")/test_lib.sh"
with_tmp_dir seqd-tls-tools

sh "$src/tests/tls/make_certs.sh" "$tmp/certs"
c=$tmp/certs
mkdir "$tmp/www"
printf '{"status":"ok","version":"tls-test","uptime_s":1}' >"$tmp/www/healthz"
port=$(free_port)

# start_server [extra s_server flags]: waits until seqctl gets through. A
# port taken meanwhile (by another test, or the last server's socket) makes
# s_server exit: then it tries a fresh port, up to five times.
start_server() {
  if [ -n "$pid" ]; then kill "$pid"; wait "$pid" 2>/dev/null || true; fi
  for attempt in 1 2 3 4 5; do
    (cd "$tmp/www" && exec openssl s_server -quiet -WWW -accept "$port" \
      -cert "$c/server.crt" -key "$c/server.key" "$@") >"$tmp/s_server.log" 2>&1 &
    pid=$!
    for _ in $(seq 50); do
      if "$seqctl" --http "127.0.0.1:$port" --tls-ca "$c/ca.crt" --tls-cert "$c/client.crt" \
        --tls-key "$c/client.key" ping >/dev/null 2>&1; then
        return 0
      fi
      kill -0 "$pid" 2>/dev/null || break  # it exited: the port was taken
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then break; fi  # up, but not answering
    wait "$pid" 2>/dev/null || true
    echo "s_server could not listen on $port (attempt $attempt); another port" >&2
    port=$(free_port)
  done
  echo "s_server did not come up:" >&2
  cat "$tmp/s_server.log" >&2
  exit 1
}

# ok DESCRIPTION ARGS...: seqctl ARGS ping must succeed.
ok() {
  what=$1
  shift
  if ! "$seqctl" "$@" ping >"$tmp/out" 2>"$tmp/err"; then
    echo "FAIL ($what): seqctl $* ping failed:" >&2
    cat "$tmp/err" >&2
    exit 1
  fi
  grep -q "ok in" "$tmp/out"
  echo "ok: $what"
}

# refused DESCRIPTION TEXT ARGS...: seqctl ARGS ping must fail (exit 1) saying TEXT.
refused() {
  what=$1
  text=$2
  shift 2
  rc=0
  "$seqctl" "$@" ping >"$tmp/out" 2>"$tmp/err" || rc=$?
  if [ "$rc" -ne 1 ] || ! grep -q "$text" "$tmp/err"; then
    echo "FAIL ($what): want exit 1 and '$text', got exit $rc:" >&2
    cat "$tmp/err" >&2
    exit 1
  fi
  echo "refused as it should be: $what ($(cat "$tmp/err"))"
}

start_server
ok "IP SAN" --http "127.0.0.1:$port" --tls-ca "$c/ca.crt"
ok "DNS SAN" --http "localhost:$port" --tls --tls-ca "$c/ca.crt"
ok "--tls-server-name" --http "127.0.0.1:$port" --tls-ca "$c/ca.crt" --tls-server-name localhost
SEQD_TLS_CA=$c/ca.crt ok "SEQD_TLS_CA" --http "127.0.0.1:$port" --tls
refused "foreign CA" "certificate verify failed" --http "127.0.0.1:$port" --tls-ca "$c/other-ca.crt"
refused "system CAs only" "certificate verify failed" --http "127.0.0.1:$port" --tls
refused "wrong server name" "hostname mismatch" --http "127.0.0.1:$port" --tls-ca "$c/ca.crt" \
  --tls-server-name db.example.com
refused "plain HTTP to a TLS port" "127.0.0.1:$port" --http "127.0.0.1:$port"
refused "missing CA file" "No such file" --http "127.0.0.1:$port" --tls-ca "$c/nope.crt"

start_server -Verify 1 -CAfile "$c/ca.crt"
ok "mTLS with the client certificate" --http "127.0.0.1:$port" --tls-ca "$c/ca.crt" \
  --tls-cert "$c/client.crt" --tls-key "$c/client.key"
refused "mTLS without a client certificate" "127.0.0.1:$port" --http "127.0.0.1:$port" \
  --tls-ca "$c/ca.crt"
echo "tls_tools: OK"
