#!/usr/bin/env bash
# Two seqd binaries side by side, in one run: A then B, alternating for
# ROUNDS rounds, each on a fresh SQLite store with --threads $THREADS (1),
# the server pinned to core 0 and the load generator to core 1 (PIN=0: not
# pinned; with THREADS=2, pinning would put both threads on one core).
# Reports each binary's median and the ratio B/A for:
#   http    wrk -t1 -c64, GET /seq/k (pipelining off)
#   binary  seqbench --tcp, 4 connections x 32 in flight, 1 ID per request
#
#   bench/ab_bench.sh OLD_SEQD NEW_SEQD [SEQBENCH]
#   ROUNDS=5 DURATION=3 THREADS=1 PIN=1 bench/ab_bench.sh /tmp/seqd-old build/seqd
#
# Use it before and after a change: the ratio is what to read (the machines
# are shared and noisy; alternating rounds spreads the noise over both).
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 2 ]] || { sed -n '2,15p' "$0"; exit 2; }
A=$1 B=$2
SEQBENCH=${3:-build/bench/seqbench/seqbench}
ROUNDS=${ROUNDS:-5}
DURATION=${DURATION:-3}
THREADS=${THREADS:-1}
command -v wrk >/dev/null || { echo "ab_bench: needs wrk (apt-get install wrk)" >&2; exit 2; }
PIN_SERVER="taskset -c 0"
PIN_LOAD="taskset -c 1"
[[ $(nproc) -ge 2 && ${PIN:-1} != 0 ]] || { PIN_SERVER=""; PIN_LOAD=""; }

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

WORK=$(mktemp -d /tmp/seqd-ab.XXXXXX)
PID=""
cleanup() {
  [[ -n $PID ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# run BINARY ROUND: prints "http_rps binary_ids_per_s"
run() {
  local bin=$1 round=$2 http tcp
  http=$(free_port)
  tcp=$(free_port)
  rm -f "$WORK"/*.db*
  $PIN_SERVER "$bin" --store "sqlite:$WORK/ab.db" --http-port "$http" --tcp-port "$tcp" \
    --threads "$THREADS" --log-level error >"$WORK/seqd-$round.log" 2>&1 &
  PID=$!
  for _ in $(seq 100); do curl -sf "localhost:$http/healthz" >/dev/null && break; sleep 0.05; done
  curl -sf -X POST "localhost:$http/admin/keys" -H 'Content-Type: application/json' -d '{"key":"k","step":100000}' >/dev/null
  curl -sf "localhost:$http/seq/k" >/dev/null
  local rps ids
  rps=$($PIN_LOAD wrk -t1 -c64 -d"${DURATION}s" "http://127.0.0.1:$http/seq/k" |
    awk '/Requests\/sec/ {print $2}')
  ids=$($PIN_LOAD "$SEQBENCH" --tcp "127.0.0.1:$tcp" --key k --connections 4 --pipeline 32 \
    --duration "$DURATION" --threads 1 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["ids_per_s"])')
  kill "$PID"
  wait "$PID" 2>/dev/null || true
  PID=""
  echo "$rps $ids"
}

declare -a AH AB BH BB
for r in $(seq "$ROUNDS"); do
  read -r h t < <(run "$A" "a$r")
  AH+=("$h"); AB+=("$t")
  read -r h t < <(run "$B" "b$r")
  BH+=("$h"); BB+=("$t")
  echo "round $r: A http ${AH[-1]} req/s, binary ${AB[-1]} IDs/s | B http ${BH[-1]} req/s, binary ${BB[-1]} IDs/s"
done

python3 - "${AH[*]}" "${AB[*]}" "${BH[*]}" "${BB[*]}" <<'EOF'
import statistics, sys
ah, ab, bh, bb = ([float(x) for x in a.split()] for a in sys.argv[1:5])
for name, a, b in (("http GET /seq (req/s)", ah, bh), ("binary NEXT_IDS (IDs/s)", ab, bb)):
    ma, mb = statistics.median(a), statistics.median(b)
    print("%-26s A median %12.0f   B median %12.0f   B/A %.2f" % (name, ma, mb, mb / ma))
EOF
