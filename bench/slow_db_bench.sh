#!/usr/bin/env bash
# Never stall on a slow database: seqd on MariaDB behind a proxy that adds
# DELAY_MS each way (2 x DELAY_MS per round trip), one key from a cold start.
#
#   DELAY_MS=50 DURATION=10 bench/slow_db_bench.sh [SEQD_BINARY...]
#
# For each seqd binary given (default: a Release build of this tree):
#   1. closed loop (seqbench, 4 connections x 16 in flight) on a fresh key
#      whose row step is 1000 (Leaf's default): peak throughput, and after the
#      first second the max latency and how many requests waited for a
#      reservation (seqd_parked_total, counted from 0.8 s: conservative);
#   2. open loop at half that peak on another fresh key (seqbench --rate,
#      latency from each request's scheduled time): p999 and max after the
#      first second.
# Goals: after the first second no request waits, max < 5 ms,
# p999 < 1 ms at half of peak.
#
# SEQD_THREADS (default 2) sets seqd's --threads. SEQD_CPUS and BENCH_CPUS
# (taskset CPU lists, default unset) pin seqd and seqbench apart: on a
# 2-core machine, SEQD_THREADS=1 SEQD_CPUS=0 BENCH_CPUS=1 keeps the load
# generator from preempting the server (and the server's tail from being
# the scheduler's).
set -euo pipefail
cd "$(dirname "$0")/.."
DELAY_MS=${DELAY_MS:-50}
DURATION=${DURATION:-10}
SEQD_THREADS=${SEQD_THREADS:-2}
pin() {  # CPUS COMMAND...: COMMAND, on CPUS if set
  local cpus=$1
  shift
  if [[ -n $cpus ]]; then taskset -c "$cpus" "$@"; else "$@"; fi
}

source bench/seqd_bench_lib.sh
bench_binaries "$@"
bench_workdir slowdb-bench

URL=$(scripts/mariadb.sh start "$WORK/db" 2>/dev/null | tail -1)
DB_PORT=$(python3 -c 'import sys,urllib.parse as u; print(u.urlparse(sys.argv[1]).port)' "$URL")
python3 bench/delay_proxy.py --to "127.0.0.1:$DB_PORT" --delay-ms "$DELAY_MS" \
  >"$WORK/proxy.port" 2>"$WORK/proxy.log" &
PIDS+=($!)
for _ in $(seq 50); do [[ -s $WORK/proxy.port ]] && break; sleep 0.1; done
PROXY_PORT=$(cat "$WORK/proxy.port")
SLOW_URL=${URL/:$DB_PORT\//:$PROXY_PORT/}

metric() {  # HTTP_PORT NAME -> value
  curl -fsS "http://127.0.0.1:$1/metrics" | awk -v n="$2" '$1 == n {print $2}'
}

run_one() {  # SEQD_BINARY LABEL
  local seqd=$1 label=$2 http tcp pid
  http=$(free_port) tcp=$(free_port)
  bench_start_seqd "$WORK/seqd-$label.log" "$seqd" --http-port "$http" --store "$SLOW_URL" \
    --tcp-port "$tcp" --threads "$SEQD_THREADS" --log-level warn
  pid=$SEQD_PID
  # Every thread it has now; later ones inherit the mask.
  [[ -z ${SEQD_CPUS:-} ]] || taskset -a -pc "$SEQD_CPUS" "$pid" >/dev/null
  local closed_key="slow_closed_$label" open_key="slow_open_$label"
  for k in "$closed_key" "$open_key"; do
    curl -fsS -o /dev/null -X POST "http://127.0.0.1:$http/admin/keys" \
      -H 'Content-Type: application/json' -d "{\"key\":\"$k\",\"step\":1000}"
  done

  # 1. Closed loop from a cold start; parked requests counted from t = 0.8 s:
  # seqbench's own clock starts after this script's (process start, connect),
  # and a request sent just after its 1 s warmup must not park unseen before
  # the count is read.
  pin "${BENCH_CPUS:-}" "$SEQBENCH" --tcp "127.0.0.1:$tcp" --key "$closed_key" \
    --connections 4 --pipeline 16 \
    --duration "$DURATION" --warmup 1 --json >"$WORK/closed-$label.json" &
  local bench=$!
  sleep 0.8
  local parked_1s parked_end
  parked_1s=$(metric "$http" seqd_parked_total)
  wait "$bench" || true
  parked_end=$(metric "$http" seqd_parked_total)
  local peak
  peak=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["requests_per_s"])' \
    "$WORK/closed-$label.json")

  # 2. Open loop at half of peak, another cold key.
  local half
  half=$(python3 -c "print(max(1, int($peak / 2)))")
  pin "${BENCH_CPUS:-}" "$SEQBENCH" --tcp "127.0.0.1:$tcp" --key "$open_key" \
    --connections 4 --rate "$half" \
    --duration "$DURATION" --warmup 1 --json >"$WORK/open-$label.json" || true
  kill "$pid" && wait "$pid" 2>/dev/null || true

  python3 - "$label" "$WORK/closed-$label.json" "$WORK/open-$label.json" \
    "$parked_1s" "$parked_end" <<'PY'
import json, sys
label, closed, opened = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
try:
    parked = f"{float(sys.argv[5]) - float(sys.argv[4]):.0f}"
except ValueError:
    parked = "n/a (no seqd_parked_total)"
c, o = closed["latency_us"], opened["latency_us"]
print(f"{label}: closed loop {closed['requests_per_s']:,.0f} req/s; after the first second "
      f"max {c['max'] / 1000:.2f} ms, p999 {c['p999'] / 1000:.3f} ms, "
      f"requests that waited for a reservation {parked}; errors {closed['errors']}")
print(f"{label}: open loop {opened['rate']:,.0f}/s (half of peak); after the first second "
      f"p999 {o['p999'] / 1000:.3f} ms, max {o['max'] / 1000:.2f} ms; errors {opened['errors']}")
PY
}

echo "MariaDB behind a proxy adding ${DELAY_MS} ms each way; ${DURATION}s runs; key step 1000"
n=0
for binary in "${BINARIES[@]}"; do
  n=$((n + 1))
  run_one "$binary" "s$n"
done
