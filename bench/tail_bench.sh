#!/usr/bin/env bash
# The tail, measured the same way on seqd and redis-server in one run (issue
# 31, goal 5), and seqd's binary protocol beside redis-server's pipelined
# INCR (goal 4). One load generator for all: seqbench (--resp for RESP).
#
#   DURATION=20 PEAK_DURATION=3 ROUNDS=3 bench/tail_bench.sh [SEQD_BINARY]
#
# Starts redis-server (no persistence) and seqd (a temp SQLite store, key
# "bench" with step 100000, --threads $THREADS, RESP and binary listeners),
# servers pinned to the last core and seqbench to the first (PIN=0: not).
#   1. Closed-loop peaks, CONNECTIONS x PIPELINE in flight, INCR bench:
#      seqbench --resp on redis-server and on seqd, seqbench --tcp on seqd.
#   2. Open loop (seqbench --rate, latency from each request's scheduled
#      time, the first WARMUP seconds left out) at half (RATE_FRACTION) of
#      the LOWER RESP peak, the same rate for redis-server RESP, seqd RESP and seqd binary,
#      ROUNDS rounds in alternating order: p50/p99/p999/p9999/max, and the
#      ratios seqd RESP p999 / redis p999 (goal <= 1.0) and seqd binary p999
#      / seqd RESP p999 (goal <= 1.0), per round and of the medians.
#   2b. The same for seqd binary and seqd RESP at the same time, each at half
#      that rate, from one seqbench (--also-resp: both meet the same stalls
#      of the machine and of the client): p999 per round and the median of
#      the rounds' ratios binary / RESP (goal <= 1.0).
#   3. Goal 4: seqbench --tcp, 4 connections x 32 in flight, 1 ID each, one
#      key, against redis-benchmark -c 4 -P 32 INCR bench on redis-server
#      (both one client thread), ROUNDS rounds alternating which goes first:
#      the medians' ratio seqd IDs/s / redis INCR/s (goal >= 1.5).
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-20}           # each open-loop run (plus WARMUP): p999 of 5 s runs spread 0.6-1.8x
PEAK_DURATION=${PEAK_DURATION:-3}  # each closed-loop run
WARMUP=${WARMUP:-1}
ROUNDS=${ROUNDS:-3}
CONNECTIONS=${CONNECTIONS:-4}
PIPELINE=${PIPELINE:-32}
THREADS=${THREADS:-1}                  # seqd's I/O threads (redis-server: one)
CLIENT_THREADS=${CLIENT_THREADS:-1}    # seqbench's (redis-benchmark: one)
N_PIPELINED=${N_PIPELINED:-4000000}    # redis-benchmark requests, goal 4
RATE_FRACTION=${RATE_FRACTION:-0.5}    # the open loop's share of the lower RESP peak

source bench/seqd_bench_lib.sh
bench_need_tools redis-server:redis-server redis-benchmark:redis-tools redis-cli:redis-tools \
  curl:curl
bench_binaries "$@"
SEQD=${BINARIES[0]}
bench_workdir tail-bench
bench_pin

# --- servers ----------------------------------------------------------------
bench_start_redis "$WORK/redis.log"
HTTP_PORT=$(free_port) TCP_PORT=$(free_port) RESP_PORT=$(free_port)
bench_start_seqd "$WORK/seqd.log" "$SEQD" --http-port "$HTTP_PORT" --store "sqlite:$WORK/seqd.db" \
  --tcp-port "$TCP_PORT" --resp-port "$RESP_PORT" --threads "$THREADS" --log-level warn
curl -fsS -o /dev/null -X POST "http://127.0.0.1:$HTTP_PORT/admin/keys" \
  -H 'Content-Type: application/json' -d '{"key":"bench","step":100000}'
wait_ping "$RESP_PORT" seqd "$WORK/seqd.log"

# One seqbench run, its JSON in $WORK/NAME.json; prints nothing. Also
# $WORK/NAME.sched: the CPU time SERVER_PID ran and the time it sat
# runnable waiting for a CPU (/proc/PID/schedstat), in ms per second of the
# run: waiting shows a machine too busy to run the server when it could.
sb() {  # NAME SERVER_PID ARGS...
  local name=$1 pid=$2 before after t0 t1
  shift 2
  before=$(cut -d' ' -f1,2 "/proc/$pid/schedstat") t0=$(date +%s%N)
  $CLIENT_CPU "$SEQBENCH" --key bench --connections "$CONNECTIONS" --threads "$CLIENT_THREADS" \
    --json "$@" >"$WORK/$name.json" || true  # errors are in the JSON and printed
  after=$(cut -d' ' -f1,2 "/proc/$pid/schedstat") t1=$(date +%s%N)
  [[ -s $WORK/$name.json ]] || { echo "seqbench $name gave no report" >&2; exit 1; }
  awk -v b="$before" -v a="$after" -v t="$((t1 - t0))" 'BEGIN {
    split(b, x, " "); split(a, y, " ");
    printf "%.0f %.0f\n", (y[1] - x[1]) * 1000 / t, (y[2] - x[2]) * 1000 / t }' >"$WORK/$name.sched"
}

# "LABEL: rate, errors, p50 p99 p999 p9999 max, server and client cpu / wait"
# of a run.
line() {  # NAME LABEL
  python3 - "$WORK/$1.json" "$2" "$WORK/$1.sched" <<'PY'
import json, sys
r, label = json.load(open(sys.argv[1])), sys.argv[2]
cpu, wait = open(sys.argv[3]).read().split()
l = r["latency_us"]
print(f"  {label:<12s} {r['requests_per_s']:>9,.0f} req/s  err {r['errors']:<2d} "
      f"p50 {l['p50']:7.1f}  p99 {l['p99']:8.1f}  p999 {l['p999']:8.1f}  "
      f"p9999 {l['p9999']:8.1f}  max {l['max']:8.1f} us  server {cpu:>3s}/{wait:>3s}  client "
      f"{r['client_cpu_s'] * 1000 / r['duration_s']:3.0f}/{r['client_wait_s'] * 1000 / r['duration_s']:3.0f}"
      + (f"  {r['error_kinds']}" if r["errors"] else ""))
PY
}

calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }

if [[ -n $SERVER_CPU ]]; then
  pinning="servers pinned ($SERVER_CPU), seqbench and redis-benchmark pinned ($CLIENT_CPU)"
else
  pinning="not pinned"
fi
echo "seqd --threads $THREADS (SQLite), redis-server $(redis-server --version | grep -o 'v=[^ ]*')," \
  "seqbench --threads $CLIENT_THREADS; $pinning"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "latencies in us; server A/B, client A/B: ms per second the server (seqbench) ran (A) and"
echo "sat runnable waiting for a CPU (B): a wait is in the latencies, whichever server is measured"

# --- 1. closed-loop peaks ---------------------------------------------------------
echo
echo "== closed loop: $CONNECTIONS connections x $PIPELINE in flight, INCR bench / NEXT_IDS 1, ${PEAK_DURATION}s"
sb peak-redis "$REDIS_PID" --resp "127.0.0.1:$REDIS_PORT" --pipeline "$PIPELINE" --duration "$PEAK_DURATION"
sb peak-seqd-resp "$SEQD_PID" --resp "127.0.0.1:$RESP_PORT" --pipeline "$PIPELINE" --duration "$PEAK_DURATION"
sb peak-seqd-binary "$SEQD_PID" --tcp "127.0.0.1:$TCP_PORT" --pipeline "$PIPELINE" --duration "$PEAK_DURATION"
line peak-redis "redis RESP"
line peak-seqd-resp "seqd RESP"
line peak-seqd-binary "seqd binary"
PEAK_REDIS=$(json_get "$WORK/peak-redis.json" requests_per_s)
PEAK_SEQD=$(json_get "$WORK/peak-seqd-resp.json" requests_per_s)
RATE=$(calc "($PEAK_REDIS < $PEAK_SEQD ? $PEAK_REDIS : $PEAK_SEQD) * $RATE_FRACTION" | cut -d. -f1)
printf '  RESP peaks: seqd / redis %.2f\n' "$(calc "$PEAK_SEQD / $PEAK_REDIS")"

# --- 2. open loop at half of the lower RESP peak -------------------------------------
echo
echo "== open loop: $RATE req/s ($RATE_FRACTION x the lower RESP peak) over $CONNECTIONS connections," \
  "${DURATION}s after ${WARMUP}s warmup; latency from each request's scheduled time"
open_args=(--rate "$RATE" --warmup "$WARMUP" --duration "$(calc "$DURATION + $WARMUP")")
for round in $(seq "$ROUNDS"); do
  echo "round $round"
  order=(redis seqd-resp seqd-binary)
  ((round % 2 == 0)) && order=(seqd-binary seqd-resp redis)
  for what in "${order[@]}"; do
    case $what in
      redis) sb "open-$round-redis" "$REDIS_PID" --resp "127.0.0.1:$REDIS_PORT" "${open_args[@]}" ;;
      seqd-resp) sb "open-$round-seqd-resp" "$SEQD_PID" --resp "127.0.0.1:$RESP_PORT" "${open_args[@]}" ;;
      seqd-binary) sb "open-$round-seqd-binary" "$SEQD_PID" --tcp "127.0.0.1:$TCP_PORT" "${open_args[@]}" ;;
    esac
  done
  line "open-$round-redis" "redis RESP"
  line "open-$round-seqd-resp" "seqd RESP"
  line "open-$round-seqd-binary" "seqd binary"
done
python3 - "$WORK" "$ROUNDS" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
runs = {w: [json.load(open(f"{work}/open-{r}-{w}.json")) for r in range(1, rounds + 1)]
        for w in ("redis", "seqd-resp", "seqd-binary")}
med = {w: {q: statistics.median(r["latency_us"][q] for r in rs)
           for q in ("p50", "p99", "p999", "p9999", "max")} for w, rs in runs.items()}
for r in range(rounds):
    p = {w: runs[w][r]["latency_us"]["p999"] for w in runs}
    print(f"  round {r + 1}: p999 seqd RESP / redis {p['seqd-resp'] / p['redis']:.2f}, "
          f"seqd binary / seqd RESP {p['seqd-binary'] / p['seqd-resp']:.2f}")
print(f"medians of {rounds} rounds (us):")
for w, label in (("redis", "redis RESP"), ("seqd-resp", "seqd RESP"), ("seqd-binary", "seqd binary")):
    m = med[w]
    print(f"  {label:<16s} p50 {m['p50']:8.1f}  p99 {m['p99']:8.1f}  p999 {m['p999']:8.1f}  "
          f"p9999 {m['p9999']:8.1f}  max {m['max']:9.1f}")
r1 = med["seqd-resp"]["p999"] / med["redis"]["p999"]
r2 = med["seqd-binary"]["p999"] / med["seqd-resp"]["p999"]
print(f"goal 5: p999 seqd RESP / redis-server RESP = {r1:.2f} (goal <= 1.0: "
      f"{'met' if r1 <= 1.0 else 'MISSED'})")
print(f"goal 5: p999 seqd binary / seqd RESP       = {r2:.2f} (goal <= 1.0: "
      f"{'met' if r2 <= 1.0 else 'MISSED'})")
errors = sum(r["errors"] for rs in runs.values() for r in rs)
if errors:
    print(f"  ({errors} errors in the open-loop runs: see above)")
PY

# --- 2b. binary and RESP at the same time ------------------------------------------
# Run one after the other, the two protocols meet different stalls of this
# machine (single rounds' p999 ratios spread 0.6-1.8). Run at once from one
# seqbench (--also-resp: the same clock sends both sides' requests in the
# same ticks, in alternating order), each at half the rate, they meet the
# same stalls of the server and of the client. (Two seqbench processes, one
# per protocol, also measured how the scheduler shared the client's core
# between them: with RESP on both sides, their p50s differed by 2-30 us.)
echo
HALF=$(calc "$RATE / 2" | cut -d. -f1)
echo "== paired: seqd binary and seqd RESP at the same time from one seqbench, $HALF req/s" \
  "each over $CONNECTIONS connections each, ${DURATION}s after ${WARMUP}s warmup, $ROUNDS rounds"
for round in $(seq "$ROUNDS"); do
  # Errors are in the JSON and printed.
  $CLIENT_CPU "$SEQBENCH" --tcp "127.0.0.1:$TCP_PORT" --also-resp "127.0.0.1:$RESP_PORT" \
    --key bench --connections "$CONNECTIONS" --threads "$CLIENT_THREADS" --json --rate "$HALF" \
    --warmup "$WARMUP" --duration "$(calc "$DURATION + $WARMUP")" >"$WORK/paired-$round.json" || true
done
python3 - "$WORK" "$ROUNDS" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
ratios = []
for r in range(1, rounds + 1):
    b = json.load(open(f"{work}/paired-{r}.json"))
    s = b["also_resp"]
    if not b["requests"] or not s["requests"]:
        sys.exit(f"paired round {r}: a seqbench run answered nothing")
    lb, ls = b["latency_us"], s["latency_us"]
    ratios.append(lb["p999"] / ls["p999"])
    print(f"  round {r}: binary p50 {lb['p50']:6.1f} p99 {lb['p99']:7.1f} p999 {lb['p999']:7.1f}"
          f" p9999 {lb['p9999']:7.1f} | RESP p50 {ls['p50']:6.1f} p99 {ls['p99']:7.1f}"
          f" p999 {ls['p999']:7.1f} p9999 {ls['p9999']:7.1f} us | p999 ratio {ratios[-1]:.2f}"
          + (f"  errors {b['errors']}/{s['errors']}" if b["errors"] or s["errors"] else ""))
m = statistics.median(ratios)
print(f"goal 5 (paired): p999 seqd binary / seqd RESP = {m:.2f}, median of {rounds} rounds"
      f" (goal <= 1.0: {'met' if m <= 1.0 else 'MISSED'})")
PY

# --- 3. goal 4: binary single IDs vs redis-server's pipelined INCR --------------------
echo
echo "== goal 4: seqbench --tcp 4 x 32, 1 ID each, one key vs redis-benchmark -c 4 -P 32 INCR bench"
echo "   ($ROUNDS rounds, the server that goes first alternating; the ratio is of the medians)"
goal4_redis() {  # prints redis-benchmark's INCR/s
  local rate
  rate=$(timeout 300 $CLIENT_CPU redis-benchmark -p "$REDIS_PORT" -c 4 -P 32 -n "$N_PIPELINED" \
    --csv INCR bench | awk -F'"' '$2 == "INCR bench" { print $4 }' | tail -1)
  [[ -n $rate ]] || { echo "redis-benchmark gave no result" >&2; exit 1; }
  echo "$rate"
}
SEQD_RATES=() REDIS_RATES=()
for round in $(seq "$ROUNDS"); do
  ((round % 2 == 0)) && REDIS_RATES+=("$(goal4_redis)")
  sb "goal4-seqd-$round" "$SEQD_PID" --tcp "127.0.0.1:$TCP_PORT" --connections 4 --pipeline 32 \
    --count 1 --duration "$PEAK_DURATION"
  SEQD_RATES+=("$(json_get "$WORK/goal4-seqd-$round.json" ids_per_s)")
  ((round % 2 == 1)) && REDIS_RATES+=("$(goal4_redis)")
  echo "round $round"
  line "goal4-seqd-$round" "seqd binary"
  printf '  %-12s %9.0f req/s  (redis-benchmark, %d requests)\n' "redis INCR" \
    "${REDIS_RATES[-1]}" "$N_PIPELINED"
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
SEQD_IDS=$(median "${SEQD_RATES[@]}") REDIS_RATE=$(median "${REDIS_RATES[@]}")
printf 'medians: seqd binary %.0f IDs/s, redis-server %.0f INCR/s\n' "$SEQD_IDS" "$REDIS_RATE"
G4=$(calc "$SEQD_IDS / $REDIS_RATE")
printf 'goal 4: seqd binary IDs/s / redis-server INCR/s = %.2f (goal >= 1.5: %s)\n' "$G4" \
  "$(awk "BEGIN { print ($G4 >= 1.5) ? \"met\" : \"MISSED\" }")"
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
