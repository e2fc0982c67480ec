#!/usr/bin/env bash
# TLS throughput as a ratio of plain, side by side in one run: one seqd
# without TLS, one with TLS on every listener (certificates from
# tests/tls/make_certs.sh), alternating for ROUNDS rounds, each on a fresh
# SQLite store with --threads 1, the server pinned to core 0 and seqbench to
# core 1. Reports each side's median and TLS/plain for:
#   binary  seqbench --tcp, 4 connections x 32 in flight, 1 ID per request
#   http    seqbench --http, 4 keep-alive connections x 16 pipelined GET /seq/k
#
#   bench/tls_bench.sh [SEQD] [SEQBENCH]
#   ROUNDS=5 DURATION=3 bench/tls_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SEQD=${1:-build/seqd}
SEQBENCH=${2:-build/bench/seqbench/seqbench}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-3}
PIN_SERVER="taskset -c 0"
PIN_LOAD="taskset -c 1"
[[ $(nproc) -ge 2 ]] || { PIN_SERVER=""; PIN_LOAD=""; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

WORK=$(mktemp -d /tmp/seqd-tls-bench.XXXXXX)
PID=""
cleanup() {
  [[ -n $PID ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
sh tests/tls/make_certs.sh "$WORK/pki"

# run tls|plain ROUND: prints "binary_ids_per_s http_req_per_s"
run() {
  local mode=$1 round=$2 http tcp scheme="http" tls_server=() tls_client=()
  http=$(free_port)
  tcp=$(free_port)
  rm -f "$WORK"/*.db*
  if [[ $mode == tls ]]; then
    tls_server=(--tls-cert "$WORK/pki/server.crt" --tls-key "$WORK/pki/server.key")
    tls_client=(--tls-ca "$WORK/pki/ca.crt")
    scheme="https"
  fi
  $PIN_SERVER "$SEQD" --store "sqlite:$WORK/b.db" --http-port "$http" --tcp-port "$tcp" \
    --threads 1 --log-level error "${tls_server[@]}" >"$WORK/seqd-$mode-$round.log" 2>&1 &
  PID=$!
  for _ in $(seq 100); do
    curl -sf --cacert "$WORK/pki/ca.crt" "$scheme://127.0.0.1:$http/healthz" >/dev/null && break
    sleep 0.05
  done
  curl -sf --cacert "$WORK/pki/ca.crt" -X POST "$scheme://127.0.0.1:$http/admin/keys" \
    -H 'Content-Type: application/json' -d '{"key":"k","step":100000}' >/dev/null
  local ids rps
  ids=$($PIN_LOAD "$SEQBENCH" --tcp "127.0.0.1:$tcp" "${tls_client[@]}" --key k --connections 4 \
    --pipeline 32 --duration "$DURATION" --threads 1 --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["ids_per_s"])')
  rps=$($PIN_LOAD "$SEQBENCH" --http "127.0.0.1:$http" "${tls_client[@]}" --key k --connections 4 \
    --pipeline 16 --duration "$DURATION" --threads 1 --json |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["requests_per_s"])')
  kill "$PID"
  wait "$PID" 2>/dev/null || true
  PID=""
  echo "$ids $rps"
}

declare -a PB PH TB TH
for r in $(seq "$ROUNDS"); do
  read -r b h < <(run plain "$r")
  PB+=("$b"); PH+=("$h")
  read -r b h < <(run tls "$r")
  TB+=("$b"); TH+=("$h")
  echo "round $r: plain binary ${PB[-1]} IDs/s, http ${PH[-1]} req/s | tls binary ${TB[-1]} IDs/s, http ${TH[-1]} req/s"
done

python3 - "${PB[*]}" "${PH[*]}" "${TB[*]}" "${TH[*]}" <<'PY'
import statistics, sys
pb, ph, tb, th = ([float(x) for x in a.split()] for a in sys.argv[1:5])
for name, p, t in (("binary NEXT_IDS (IDs/s)", pb, tb), ("http GET /seq (req/s)", ph, th)):
    mp, mt = statistics.median(p), statistics.median(t)
    print("%-26s plain median %12.0f   tls median %12.0f   tls/plain %.2f" % (name, mp, mt, mt / mp))
PY
