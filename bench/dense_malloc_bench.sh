#!/usr/bin/env bash
# OpenIM's Malloc on seqd's dense keys against OpenIM's own path, in one run.
#
# The anchor is OpenIM's allocation on a cache hit: redis-server running the
# malloc script of its seq design (EVALSHA on a MALLOC_SEQ:<conv> hash with
# CURR and LAST; every call a hit, state 0), not durable. Against it, on the
# same load (CALLERS closed-loop callers, a conversation picked at random
# among CONVS per call, SIZE seqs each): seqd's dense Malloc on MariaDB
# (NEXT_BLOCK_ONCE with a fresh token per call: durable and gap-free), and
# seqd's segment keys (NEXT_BLOCK, holes allowed). One load generator for
# all three: client/go/cmd/seqd-mallocbench. Rounds alternate the order;
# the ratios are of the medians over the rounds.
#
#   CALLERS=64 CONVS=1000 SIZE=1 DURATION=10 ROUNDS=3 DB_THREADS=8 \
#     bench/dense_malloc_bench.sh [SEQD_BINARY]
#
# Default binary: a Release build of this tree in $BUILD_DIR (build-release).
# Goal (issue 45): dense / redis >= 1.0 in calls/s.
set -euo pipefail
cd "$(dirname "$0")/.."
CALLERS=${CALLERS:-64}
CONVS=${CONVS:-1000}
SIZE=${SIZE:-1}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
DB_THREADS=${DB_THREADS:-8}
CONNECTIONS=${CONNECTIONS:-4}

source bench/seqd_bench_lib.sh
bench_need_tools redis-server:redis-server redis-cli:redis-tools curl:curl
SEQBENCH=${SEQBENCH:-/bin/true}  # bench_binaries looks for it; not used here
bench_binaries "$@"
bench_workdir dense-malloc-bench
SEQD=${BINARIES[0]}

MALLOC=$WORK/seqd-mallocbench
(cd client/go && GOPROXY=off GOFLAGS=-mod=mod go build -o "$MALLOC" ./cmd/seqd-mallocbench)

MYSQL_URL=$(scripts/mariadb.sh start "$WORK/db" 2>/dev/null | tail -1)
bench_start_redis "$WORK/redis.log"
http=$(free_port) tcp=$(free_port)
bench_start_seqd "$WORK/seqd.log" "$SEQD" --http-port "$http" --store "$MYSQL_URL" \
  --tcp-port "$tcp" --threads 2 --db-threads "$DB_THREADS" \
  --auto-keys "si_:50:dense,sk_:1000" --auto-create-rate 0 --log-level warn

load() {  # NAME ARGS...: one run, its JSON line into $WORK/NAME.ROUND
  local name=$1
  shift
  "$MALLOC" --callers "$CALLERS" --convs "$CONVS" --size "$SIZE" --duration "$DURATION" "$@" \
    >"$WORK/$name.$round"
}

for round in $(seq "$ROUNDS"); do
  order=(redis dense segment)
  ((round % 2 == 0)) && order=(segment dense redis)
  for which in "${order[@]}"; do
    case $which in
      redis) load redis --redis "127.0.0.1:$REDIS_PORT" ;;
      dense) load dense --seqd "127.0.0.1:$tcp" --connections "$CONNECTIONS" --prefix si_b_ ;;
      segment) load segment --seqd "127.0.0.1:$tcp" --connections "$CONNECTIONS" --prefix sk_b_ \
        --segment ;;
    esac
  done
done

python3 - "$WORK" "$ROUNDS" <<'PY'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
runs = {n: [json.load(open("%s/%s.%d" % (work, n, r))) for r in range(1, rounds + 1)]
        for n in ("redis", "dense", "segment")}
med = {n: {f: statistics.median(r[f] for r in rs) for f in ("calls_per_s", "p50_ms", "p99_ms")}
       for n, rs in runs.items()}
r0 = runs["redis"][0]
print("Malloc of %d seq(s), %d callers, %d conversations, %d rounds (medians)"
      % (r0["size"], r0["callers"], r0["convs"], rounds))
for n, label in (("redis", "redis EVALSHA (OpenIM, cache hit)"),
                 ("dense", "seqd dense on MariaDB (durable)"),
                 ("segment", "seqd segment keys on MariaDB")):
    m = med[n]
    errors = sum(r["errors"] for r in runs[n])
    print("  %-36s %10.0f calls/s  p50 %6.2f ms  p99 %6.2f ms  errors %d"
          % (label, m["calls_per_s"], m["p50_ms"], m["p99_ms"], errors))
    if errors:
        print("    first error: %s" % next(r["first_error"] for r in runs[n] if r["errors"]))
print("  dense / redis:   %.2fx  (goal >= 1.0x)" % (med["dense"]["calls_per_s"] / med["redis"]["calls_per_s"]))
print("  segment / dense: %.2fx" % (med["segment"]["calls_per_s"] / med["dense"]["calls_per_s"]))
PY
