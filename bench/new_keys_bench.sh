#!/usr/bin/env bash
# New-conversation storms: a burst of BURST distinct new keys (each used
# once, auto-created by a rule), CONNECTIONS x PIPELINE in flight, over the
# binary protocol, on SQLite and on MariaDB (a throwaway server, durable
# commits), beside the store's own ceiling measured in the same run: BURST
# new leaf_alloc rows inserted in 1,000-row transactions into the same
# store (bench/leaf_insert_anchor.py: CONNECTIONS clients on MariaDB, one
# writer on SQLite, as seqd opens the file). Prints new keys per second,
# the errors and the ratio to the anchor, per store and binary.
#
#   BURST=100000 CONNECTIONS=4 PIPELINE=256 bench/new_keys_bench.sh [SEQD_BINARY...]
#
# Default binary: a Release build of this tree. Give an older binary first
# to compare before and after side by side in one run. seqd runs with the
# default wait deadline (1 s) and --auto-create-rate 0 (the default limits
# each token to 100 new keys a second).
# Goals: >= 0.5x the anchor, and the 100,000 burst with 0 errors,
# on each store.
set -euo pipefail
cd "$(dirname "$0")/.."
BURST=${BURST:-100000}
CONNECTIONS=${CONNECTIONS:-4}
PIPELINE=${PIPELINE:-256}
STORES=${STORES:-"sqlite mariadb"}

source bench/seqd_bench_lib.sh
bench_binaries "$@"
bench_workdir newkeys-bench

MYSQL_URL=""
if [[ " $STORES " == *" mariadb "* ]]; then
  MYSQL_URL=$(scripts/mariadb.sh start "$WORK/db" 2>/dev/null | tail -1)
fi

anchor() {  # STORE LABEL: prints the anchor's rows per second
  local spec
  case $1 in
    sqlite) spec="sqlite:$WORK/anchor-$2.db" ;;
    mariadb) spec=$MYSQL_URL ;;
  esac
  python3 bench/leaf_insert_anchor.py "$spec" "anchor_$2_" "$BURST" "$CONNECTIONS" 1000 |
    python3 -c 'import json, sys; print(round(json.load(sys.stdin)["rows_per_s"]))'
}

run_one() {  # SEQD_BINARY LABEL STORE
  local seqd=$1 label=$2 store=$3 spec http tcp pid ceiling
  case $store in
    sqlite) spec="sqlite:$WORK/$label.db" ;;
    mariadb) spec=$MYSQL_URL ;;
  esac
  ceiling=$(anchor "$store" "$label")
  http=$(free_port) tcp=$(free_port)
  bench_start_seqd "$WORK/seqd-$label-$store.log" "$seqd" --http-port "$http" --store "$spec" \
    --tcp-port "$tcp" --threads 2 --auto-keys "nk_:100" --auto-create-rate 0 --log-level warn
  pid=$SEQD_PID
  "$SEQBENCH" --tcp "127.0.0.1:$tcp" --new-keys "nk_${label}_" --requests "$BURST" \
    --connections "$CONNECTIONS" --pipeline "$PIPELINE" --json >"$WORK/$label-$store.json" || true
  kill "$pid" && wait "$pid" 2>/dev/null || true
  python3 - "$label" "$store" "$WORK/$label-$store.json" "$ceiling" <<'PY'
import json, sys
label, store, r, ceiling = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3])), float(sys.argv[4])
lat = r["latency_us"]
served = r["requests"] - r["errors"]
rate = served / r["duration_s"]
print(f"{label} {store:8s}: {served:,} of {r['requests']:,} new keys served in "
      f"{r['duration_s']:.2f} s = {rate:,.0f} new keys/s; "
      f"errors {r['errors']} {r['error_kinds'] or ''}; "
      f"p99 {lat['p99'] / 1000:.1f} ms, max {lat['max'] / 1000:.1f} ms; "
      f"anchor {ceiling:,.0f} rows/s: ratio {rate / ceiling:.2f}x (goal >= 0.5)")
PY
}

echo "burst of $BURST new keys, $CONNECTIONS connections x $PIPELINE in flight"
n=0
for binary in "${BINARIES[@]}"; do
  n=$((n + 1))
  for store in $STORES; do run_one "$binary" "s$n" "$store"; done
done
