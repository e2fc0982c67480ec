#!/usr/bin/env bash
# RESP INCR on one key: seqd's RESP listener beside redis-server, both driven
# by redis-benchmark in the same run (goal: seqd >= 1.0x redis).
#
#   bench/resp_bench.sh [SEQD]    # no argument: builds seqd Release in $BUILD_DIR
#   ROUNDS=5 CLIENTS=64 PIPELINE=32 N=200000 N_PIPELINED=2000000 THREADS=2 PIN=0
#
# For P1 (no pipelining) and P$PIPELINE, ROUNDS rounds of
# `redis-benchmark -c $CLIENTS -n N [-P $PIPELINE] INCR bench`, one on each
# server, the server that goes first alternating from round to round. Prints
# every round, then the medians of both rates and their ratio seqd/redis,
# and the servers' CPU time and context switches (voluntary and not, all
# their threads) per request, and how busy redis-benchmark was (its CPU time
# over the run's wall time: near 1.00 it, not the server, sets the rate)
# (medians).
#
# seqd: temp SQLite, key "bench" with step 100000, --threads $THREADS (2:
# its network threads). redis-server: one main thread (io-threads 1, its
# default), no persistence (--save '' --appendonly no), in a temp dir.
# PIN=1 puts both servers on the last core and redis-benchmark on the first
# (then seqd's threads share that one core); PIN=0 (the default) leaves the
# placement to the scheduler. Run it under `flock /tmp/seqd-bench.lock`.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/seqd_bench_lib.sh

N=${N:-200000}
N_PIPELINED=${N_PIPELINED:-2000000}
CLIENTS=${CLIENTS:-64}
PIPELINE=${PIPELINE:-32}
ROUNDS=${ROUNDS:-5}
THREADS=${THREADS:-2}

bench_need_tools redis-server:redis-server redis-benchmark:redis-tools redis-cli:redis-tools curl:curl

if (($# == 0)); then
  BUILD_DIR=${BUILD_DIR:-build-release}
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSEQD_BUILD_TESTS=OFF \
    -DSEQD_BUILD_BENCH=OFF >/dev/null
  cmake --build "$BUILD_DIR" -j2 --target seqd >/dev/null
  SEQD="$BUILD_DIR/seqd"
else
  SEQD=$1
fi

SERVER_CORE="" CLIENT_CPU=()
if [[ ${PIN:-0} != 0 ]] && (($(nproc) >= 2)); then
  SERVER_CORE=$(($(nproc) - 1))
  CLIENT_CPU=(taskset -c 0)
fi
pin_server() { [[ -z $SERVER_CORE ]] || taskset -apc "$SERVER_CORE" "$1" >/dev/null; }

bench_workdir resp-bench

calc() { awk "BEGIN { printf \"%.6f\", $1 }"; }
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# --- servers ----------------------------------------------------------------
HTTP_PORT=$(free_port) SEQD_PORT=$(free_port) TCP_PORT=$(free_port)
bench_start_seqd "$WORK/seqd.log" "$SEQD" --http-port "$HTTP_PORT" \
  --store "sqlite:$WORK/seqd.db" --tcp-port "$TCP_PORT" --resp-port "$SEQD_PORT" \
  --threads "$THREADS" --log-level warn
curl -fsS -o /dev/null -X POST "http://127.0.0.1:$HTTP_PORT/admin/keys" \
  -H 'Content-Type: application/json' -d '{"key":"bench","step":100000}'
wait_ping "$SEQD_PORT" seqd "$WORK/seqd.log"
pin_server "$SEQD_PID"

SERVER_CPU="" bench_start_redis "$WORK/redis.log"  # pinned below, every thread
pin_server "$REDIS_PID"

echo "seqd:  --threads $THREADS ($(ls /proc/"$SEQD_PID"/task | wc -l) threads in all), INCR bench -> $(redis-cli -p "$SEQD_PORT" INCR bench)"
echo "redis: $(redis-server --version | awk '{ print $3 }'), 1 main thread (io-threads 1), INCR bench -> $(redis-cli -p "$REDIS_PORT" INCR bench)"
if [[ -n $SERVER_CORE ]]; then
  echo "pinned: servers (all their threads) on core $SERVER_CORE, redis-benchmark on core 0"
else
  echo "not pinned: $(nproc) cores shared by the servers and redis-benchmark; load: $(cut -d' ' -f1-3 /proc/loadavg)"
fi

# --- runs -------------------------------------------------------------------
CLK_TCK=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
switches() { cat /proc/"$1"/task/*/status 2>/dev/null | awk '/ctxt_switches/ { n += $2 } END { print n + 0 }'; }

# One redis-benchmark run: "<requests/s> <server CPU us per request> <server
# context switches per request> <redis-benchmark's CPU share: its CPU time
# over the run's wall time; near 1.0, the client is the limit>".
run_one() {  # PID PORT N EXTRA...
  local pid=$1 port=$2 n=$3 t0 t1 c0 c1 w0 w1 rate client
  shift 3
  c0=$(switches "$pid")
  t0=$(cpu_ticks "$pid")
  w0=$(date +%s%N)
  # `times` in the subshell: its children's (redis-benchmark's) user and system time.
  ( timeout 300 "${CLIENT_CPU[@]}" redis-benchmark -p "$port" -c "$CLIENTS" -n "$n" "$@" \
      --csv INCR bench >"$WORK/run.csv"
    times >"$WORK/run.times" )
  w1=$(date +%s%N)
  t1=$(cpu_ticks "$pid")
  c1=$(switches "$pid")
  rate=$(awk -F'"' '$2 == "INCR bench" { print $4 }' "$WORK/run.csv" | tail -1)
  [[ -n $rate ]] || { echo "redis-benchmark gave no result on port $port" >&2; exit 1; }
  # "0m1.234s 0m0.567s" on the second line: minutes and seconds, user then system.
  client=$(awk -v w="$((w1 - w0))" 'NR == 2 {
    s = 0; for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] }
    printf "%.3f", s * 1e9 / w }' "$WORK/run.times")
  echo "$rate $(calc "($t1 - $t0) * 1000000 / $CLK_TCK / $n") $(calc "($c1 - $c0) / $n") $client"
}

declare -A RATE CPU CS CLIENT last
for round in $(seq "$ROUNDS"); do
  for p in 1 "$PIPELINE"; do
    n=$N; ((p > 1)) && n=$N_PIPELINED
    order=(seqd redis); ((round % 2 == 0)) && order=(redis seqd)
    for who in "${order[@]}"; do
      if [[ $who == seqd ]]; then r=($(run_one "$SEQD_PID" "$SEQD_PORT" "$n" -P "$p"))
      else r=($(run_one "$REDIS_PID" "$REDIS_PORT" "$n" -P "$p")); fi
      RATE[$who,$p]+="${r[0]} " CPU[$who,$p]+="${r[1]} " CS[$who,$p]+="${r[2]} "
      CLIENT[$who,$p]+="${r[3]} "
      last[$who]=${r[0]} last[$who,client]=${r[3]}
    done
    printf 'round %d P%-3d %-11s seqd %10.0f/s  redis %10.0f/s  seqd/redis %.2f  client busy %.2f / %.2f\n' \
      "$round" "$p" "(${order[0]} 1st)" "${last[seqd]}" "${last[redis]}" \
      "$(calc "${last[seqd]} / ${last[redis]}")" "${last[seqd,client]}" "${last[redis,client]}"
  done
done

echo
echo "medians of $ROUNDS rounds, redis-benchmark -c $CLIENTS INCR bench; seqd --threads $THREADS, redis 1 main thread:"
for p in 1 "$PIPELINE"; do
  s=$(tr ' ' '\n' <<<"${RATE[seqd,$p]}" | grep . | median)
  r=$(tr ' ' '\n' <<<"${RATE[redis,$p]}" | grep . | median)
  sc=$(tr ' ' '\n' <<<"${CPU[seqd,$p]}" | grep . | median)
  rc=$(tr ' ' '\n' <<<"${CPU[redis,$p]}" | grep . | median)
  ss=$(tr ' ' '\n' <<<"${CS[seqd,$p]}" | grep . | median)
  rs=$(tr ' ' '\n' <<<"${CS[redis,$p]}" | grep . | median)
  sb=$(tr ' ' '\n' <<<"${CLIENT[seqd,$p]}" | grep . | median)
  rb=$(tr ' ' '\n' <<<"${CLIENT[redis,$p]}" | grep . | median)
  printf 'P%-3d seqd %10.0f/s (cpu %.2f us/req, %.3f cs/req, client busy %.2f)  redis %10.0f/s (cpu %.2f us/req, %.3f cs/req, client busy %.2f)  ratio seqd/redis %.2f\n' \
    "$p" "$s" "$sc" "$ss" "$sb" "$r" "$rc" "$rs" "$rb" "$(calc "$s / $r")"
done
echo "seqd after the runs: INCR bench -> $(redis-cli -p "$SEQD_PORT" INCR bench)"
