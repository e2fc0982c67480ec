#!/usr/bin/env bash
# The network protocols in one run, on this machine. Read ratios, not
# absolute numbers. With two or more cores the servers are pinned to one core
# and the load generators to another (PIN=0 turns that off): unpinned, the
# scheduler sometimes puts client and server on one core and the ratio
# between two runs swings by ±30%.
#   1. INCR throughput of seqd's RESP listener next to redis-server, both with
#      redis-benchmark, without and with pipelining;
#   2. seqbench on seqd's binary protocol: single IDs, pipelined;
#   3. seqbench on the binary protocol: batches of 1000 IDs.
# Every ID seqd hands out is backed by a segment reserved in its store.
#
#   N=200000 N_PIPELINED=2000000 CLIENTS=64 PIPELINE=32 THREADS=1 \
#   DURATION=5 bench/protocols_bench.sh
#
# Builds seqd Release in build-release, runs seqd (temp SQLite, key "bench"
# with step 100000, --threads $THREADS) and redis-server (no persistence),
# then `redis-benchmark -c $CLIENTS -n N INCR bench` without and with
# -P $PIPELINE, alternating seqd / redis, ROUNDS times each.
#
# redis-benchmark's `-t incr` is not used: it INCRs "counter:__rand_int__"
# (a valid seqd key, but an unknown one); the explicit command hits the key
# we created, on both servers.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${N:-200000}
N_PIPELINED=${N_PIPELINED:-2000000}
CLIENTS=${CLIENTS:-64}
PIPELINE=${PIPELINE:-32}
ROUNDS=${ROUNDS:-5}
THREADS=${THREADS:-1}
BUILD_DIR=${BUILD_DIR:-build-release}

# --- tools ------------------------------------------------------------------
source bench/seqd_bench_lib.sh
bench_need_tools redis-server:redis-server redis-benchmark:redis-tools curl:curl

# --- build ------------------------------------------------------------------
if [[ -z ${SKIP_BUILD:-} ]]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSEQD_BUILD_TESTS=OFF \
    -DSEQD_BUILD_BENCH=OFF >/dev/null
  cmake --build "$BUILD_DIR" -j2 --target seqd seqbench >/dev/null
fi
SEQD="$BUILD_DIR/seqd"
SEQBENCH="$BUILD_DIR/bench/seqbench/seqbench"
DURATION=${DURATION:-5}

# CPU pinning: servers on the last core, load generators on the first.
bench_pin

calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }

WORK=$(mktemp -d /tmp/seqd-redis-bench.XXXXXX)
SEQD_PID="" REDIS_PID=""
cleanup() {
  [[ -n $SEQD_PID ]] && kill "$SEQD_PID" 2>/dev/null && wait "$SEQD_PID" 2>/dev/null
  [[ -n $REDIS_PID ]] && kill "$REDIS_PID" 2>/dev/null && wait "$REDIS_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- seqd -------------------------------------------------------------------
HTTP_PORT=$(free_port)
SEQD_PORT=$(free_port)
TCP_PORT=$(free_port)
$SERVER_CPU "$SEQD" --store "sqlite:$WORK/seqd.db" --http-port "$HTTP_PORT" --tcp-port "$TCP_PORT" \
  --resp-port "$SEQD_PORT" --threads "$THREADS" --log-level warn >"$WORK/seqd.log" 2>&1 &
SEQD_PID=$!
wait_ping "$SEQD_PORT" seqd "$WORK/seqd.log"
curl -fsS -o /dev/null -X POST "http://127.0.0.1:$HTTP_PORT/admin/keys" \
  -H 'Content-Type: application/json' -d '{"key":"bench","step":100000}'
echo "seqd  sample: INCR bench -> $(redis-cli -p "$SEQD_PORT" INCR bench)"

# --- redis ------------------------------------------------------------------
REDIS_PORT=$(free_port)
$SERVER_CPU redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
  >"$WORK/redis.log" 2>&1 &
REDIS_PID=$!
wait_ping "$REDIS_PORT" redis "$WORK/redis.log"
echo "redis sample: INCR bench -> $(redis-cli -p "$REDIS_PORT" INCR bench)"

# --- runs -------------------------------------------------------------------
# CPU time (user + system, in clock ticks) a process has used so far.
cpu_ticks() {  # PID
  awk '{ print $14 + $15 }' "/proc/$1/stat"
}
CLK_TCK=$(getconf CLK_TCK)

# One redis-benchmark run: prints its requests per second (from its --csv
# line) and the server's CPU time per request in microseconds. Unpipelined,
# redis-benchmark itself tops out (its one thread is busy 100% of the time,
# the servers are not), so the CPU each server spends per request is the
# steadier measure of the server itself.
run_one() {  # SERVER_PID PORT N EXTRA_ARGS...
  local pid=$1 port=$2 n=$3
  shift 3
  local t0 t1 rate
  t0=$(cpu_ticks "$pid")
  rate=$(timeout 300 $CLIENT_CPU redis-benchmark -p "$port" -c "$CLIENTS" -n "$n" "$@" --csv INCR bench |
    awk -F'"' '$2 == "INCR bench" { print $4 }' | tail -1)
  t1=$(cpu_ticks "$pid")
  [[ -n $rate ]] && echo "$rate $(calc "($t1 - $t0) * 1000000 / $CLK_TCK / $n")"
}

report() {  # LABEL N EXTRA_ARGS...
  local label=$1 n=$2
  shift 2
  local s_sum=0 r_sum=0 sc_sum=0 rc_sum=0 s r
  echo
  echo "== $label: redis-benchmark -c $CLIENTS -n $n $* INCR bench"
  echo "         (rate in requests/s; cpu = the server's CPU time per request)"
  for round in $(seq "$ROUNDS"); do
    s=($(run_one "$SEQD_PID" "$SEQD_PORT" "$n" "$@"))
    r=($(run_one "$REDIS_PID" "$REDIS_PORT" "$n" "$@"))
    if ((${#s[@]} != 2 || ${#r[@]} != 2)); then
      echo "redis-benchmark gave no result (seqd='${s[*]}' redis='${r[*]}')" >&2
      exit 1
    fi
    printf 'round %d: seqd %10.0f cpu %5.2f us   redis %10.0f cpu %5.2f us   rate seqd/redis %.2f\n' \
      "$round" "${s[0]}" "${s[1]}" "${r[0]}" "${r[1]}" "$(calc "${s[0]} / ${r[0]}")"
    s_sum=$(calc "$s_sum + ${s[0]}")
    r_sum=$(calc "$r_sum + ${r[0]}")
    sc_sum=$(calc "$sc_sum + ${s[1]}")
    rc_sum=$(calc "$rc_sum + ${r[1]}")
  done
  printf 'mean:    seqd %10.0f cpu %5.2f us   redis %10.0f cpu %5.2f us   rate seqd/redis %.2f\n' \
    "$(calc "$s_sum / $ROUNDS")" "$(calc "$sc_sum / $ROUNDS")" "$(calc "$r_sum / $ROUNDS")" \
    "$(calc "$rc_sum / $ROUNDS")" "$(calc "$s_sum / $r_sum")"
  printf '         server CPU per request redis/seqd %.2f (above 1: seqd does a request with less CPU)\n' \
    "$(calc "$rc_sum / $sc_sum")"
}

if [[ -n $SERVER_CPU ]]; then
  echo "seqd --threads $THREADS; servers pinned ($SERVER_CPU), load generators pinned ($CLIENT_CPU)"
else
  echo "seqd --threads $THREADS; not pinned: $(nproc) cores shared by servers and load generators"
fi
report "unpipelined" "$N"
report "pipelined" "$N_PIPELINED" -P "$PIPELINE"

# --- binary protocol ------------------------------------------------------------
# redis-server is idle from here on; stop it so it takes no CPU.
kill "$REDIS_PID" && wait "$REDIS_PID" 2>/dev/null || true
REDIS_PID=""
echo
echo "== binary protocol, single IDs: seqbench --connections 4 --pipeline 32 --count 1"
$CLIENT_CPU "$SEQBENCH" --tcp "127.0.0.1:$TCP_PORT" --key bench --connections 4 --pipeline 32 --count 1 \
  --duration "$DURATION"
echo
echo "== binary protocol, batches of 1000: seqbench --connections 4 --pipeline 4 --count 1000"
$CLIENT_CPU "$SEQBENCH" --tcp "127.0.0.1:$TCP_PORT" --key bench --connections 4 --pipeline 4 --count 1000 \
  --duration "$DURATION"

# The IDs seqd handed out are still unique and increasing.
echo
echo "seqd after the runs: INCR bench -> $(redis-cli -p "$SEQD_PORT" INCR bench)"
