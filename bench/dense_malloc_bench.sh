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
# Then the ceiling: MariaDB alone, with no seqd, running the statements of
# seqd's dense transactions (lock the rows, set their max_ids, stamp their
# times, record a token per block, COMMIT) from DB_CLIENTS mariadb clients
# at once, DB_BATCH keys per transaction, each client on keys of its own:
# how many dense calls per second the database itself can take on this
# machine, whatever seqd does (DB_CLIENTS=4 DB_BATCH=32 DB_TXNS=400).
#
# Default binary: a Release build of this tree in $BUILD_DIR (build-release).
# Goal: dense / redis >= 1.0 in calls/s.
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

DB_CLIENTS=${DB_CLIENTS:-4}
DB_BATCH=${DB_BATCH:-32}
DB_TXNS=${DB_TXNS:-400}
# mysql://user:password@host:port/db, as scripts/mariadb.sh prints it.
read -r DB_USER DB_PASS DB_HOST DB_PORT DB_NAME < <(python3 -c '
import sys, urllib.parse as u
p = u.urlparse(sys.argv[1])
print(p.username, p.password, p.hostname, p.port, p.path.lstrip("/"))' "$MYSQL_URL")
for c in $(seq 0 $((DB_CLIENTS - 1))); do
  python3 - "$c" "$DB_TXNS" "$DB_BATCH" >"$WORK/db-alone.$c.sql" <<'PY'
import sys, uuid
client, txns, batch = (int(a) for a in sys.argv[1:4])
keys = ["dbalone_%d_%d" % (client, k) for k in range(1000)]
print("INSERT IGNORE INTO leaf_alloc (biz_tag, max_id, step, description) VALUES " +
      ",".join("('%s', 1, 50, 'bench')" % k for k in keys) + ";")
print("SET autocommit = 0;")
for t in range(txns):
    ks = sorted({keys[(t * batch + i) % len(keys)] for i in range(batch)})
    in_list = ",".join("'%s'" % k for k in ks)
    print("SELECT biz_tag, max_id, step FROM leaf_alloc WHERE biz_tag IN (%s) "
          "ORDER BY biz_tag FOR UPDATE;" % in_list)
    print("UPDATE leaf_alloc SET max_id = CASE biz_tag" +
          "".join(" WHEN '%s' THEN max_id + 1" % k for k in ks) +
          " END WHERE biz_tag IN (%s);" % in_list)
    print("INSERT INTO seqd_key_time (biz_tag, alloc_ms) VALUES " +
          ",".join("('%s', ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000))" % k for k in ks) +
          " ON DUPLICATE KEY UPDATE alloc_ms = GREATEST(alloc_ms, VALUES(alloc_ms));")
    print("INSERT INTO seqd_block_token (biz_tag, token, first_id, last_id, created_ms) VALUES " +
          ",".join("('%s', '%s', 1, 1, 1)" % (k, uuid.uuid4().hex) for k in ks) + ";")
    print("COMMIT;")
PY
done
db_start=$(date +%s.%N)
db_pids=()
for c in $(seq 0 $((DB_CLIENTS - 1))); do
  MYSQL_PWD=$DB_PASS mariadb --protocol=TCP -h "$DB_HOST" -P "$DB_PORT" -u "$DB_USER" "$DB_NAME" \
    --batch --skip-column-names <"$WORK/db-alone.$c.sql" >/dev/null &
  db_pids+=($!)
done
wait "${db_pids[@]}"  # not the servers this script started
db_s=$(python3 -c "import sys; print(float(sys.argv[2]) - float(sys.argv[1]))" "$db_start" "$(date +%s.%N)")
echo "{\"clients\": $DB_CLIENTS, \"batch\": $DB_BATCH, \"txns\": $DB_TXNS, \"seconds\": $db_s}" \
  >"$WORK/db-alone.json"

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
db = json.load(open("%s/db-alone.json" % work))
db_rate = db["clients"] * db["txns"] * db["batch"] / db["seconds"]
print("  MariaDB alone, seqd's dense statements (%d clients x %d keys a transaction, no seqd): "
      "%.0f calls/s = %.2fx redis" % (db["clients"], db["batch"], db_rate,
                                      db_rate / med["redis"]["calls_per_s"]))
PY
