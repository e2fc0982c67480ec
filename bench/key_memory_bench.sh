#!/usr/bin/env bash
# Memory per key held, as a server pays it: seqd on a throwaway MariaDB
# (durable commits), new keys auto-created over the binary protocol by
# seqbench. FIRST keys are brought in first (so fixed growth, such as the
# first allocations of each thread and table, is out), then KEYS more; the
# figure is seqd's RSS growth over those KEYS keys, divided by KEYS, with
# every key still held (seqd_keys_in_memory must say FIRST + KEYS).
#
#   FIRST=100000 KEYS=200000 bench/key_memory_bench.sh [SEQD_BINARY...]
#
# Default binary: a Release build of this tree; give several to compare
# them in one run. Goal: <= 200 bytes per key.
# The allocator alone (no server, a memory store): key_memory_bench.cc.
set -euo pipefail
cd "$(dirname "$0")/.."
FIRST=${FIRST:-100000}
KEYS=${KEYS:-200000}
CONNECTIONS=${CONNECTIONS:-4}
PIPELINE=${PIPELINE:-256}

source bench/seqd_bench_lib.sh
bench_binaries "$@"
bench_workdir keymem-bench
MYSQL_URL=$(scripts/mariadb.sh start "$WORK/db" 2>/dev/null | tail -1)

rss() { awk '/^VmRSS/ {print $2 * 1024}' "/proc/$1/status"; }
keys_held() {
  curl -fsS "http://127.0.0.1:$1/metrics" | awk '/^seqd_keys_in_memory / {print $2}'
}
burst() {  # TCP_PORT PREFIX COUNT
  "$SEQBENCH" --tcp "127.0.0.1:$1" --new-keys "$2" --requests "$3" \
    --connections "$CONNECTIONS" --pipeline "$PIPELINE" --json >"$WORK/burst.json"
  python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); sys.exit(r["errors"] != 0)' \
    "$WORK/burst.json" || { echo "seqbench: errors in the burst" >&2; exit 1; }
}

echo "RSS growth of seqd over $KEYS new keys after $FIRST (MariaDB, binary protocol)"
n=0
for binary in "${BINARIES[@]}"; do
  n=$((n + 1))
  http=$(free_port) tcp=$(free_port)
  bench_start_seqd "$WORK/seqd-$n.log" "$binary" --http-port "$http" --store "$MYSQL_URL" \
    --tcp-port "$tcp" --threads 2 --auto-keys "km_:100" --auto-create-rate 0 --log-level warn
  burst "$tcp" "km_s${n}a_" "$FIRST"
  sleep 1  # the last requests' deadline timers fire and free what they hold
  before=$(rss "$SEQD_PID")
  burst "$tcp" "km_s${n}b_" "$KEYS"
  sleep 1
  after=$(rss "$SEQD_PID")
  held=$(keys_held "$http")
  kill "$SEQD_PID" && wait "$SEQD_PID" 2>/dev/null || true
  python3 - "$binary" "$before" "$after" "$held" "$FIRST" "$KEYS" <<'PY'
import sys
binary, before, after, held, first, keys = sys.argv[1], *map(float, sys.argv[2:])
mib = 2 ** 20
print(f"{binary}: RSS {before / mib:,.1f} MiB -> {after / mib:,.1f} MiB over {keys:,.0f} keys = "
      f"{(after - before) / keys:.0f} bytes per key (goal <= 200); keys held {held:,.0f} "
      f"of {first + keys:,.0f}")
PY
done
