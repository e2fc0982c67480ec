#!/usr/bin/env bash
# Messages durably stored per second on MariaDB: seqd's group commit next to
# a naive design (one transaction per message: SELECT MAX(seq) ... FOR UPDATE,
# then INSERT), in one run, against one throwaway MariaDB with
# innodb_flush_log_at_trx_commit=1 (every commit reaches the disk).
#
#   SENDERS=1024 CONVS=1000 DURATION=5 NAIVE_THREADS=4,8,16,32 bench/msg_store_bench.sh
#
# Builds msg_store_bench (Release, in build-release), starts MariaDB with
# scripts/mariadb.sh in a temp dir, runs both designs, stops MariaDB.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-release}
if [[ -z ${SKIP_BUILD:-} ]]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSEQD_BUILD_TESTS=OFF \
    -DSEQD_BUILD_BENCH=ON >/dev/null
  cmake --build "$BUILD_DIR" -j2 --target msg_store_bench >/dev/null
fi
DB_DIR=$(mktemp -d /tmp/seqd-msg-bench.XXXXXX)
cleanup() {
  scripts/mariadb.sh stop "$DB_DIR" >/dev/null 2>&1 || true
  rm -rf "$DB_DIR"
}
trap cleanup EXIT
SEQD_MARIADB_BUFFER_POOL=${BUFFER_POOL:-1G} scripts/mariadb.sh start "$DB_DIR" >/dev/null
URL=$(scripts/mariadb.sh url "$DB_DIR")
"$BUILD_DIR/bench/msg_store_bench" --store "$URL" --senders "${SENDERS:-1024}" \
  --convs "${CONVS:-1000}" --duration "${DURATION:-5}" --naive-threads "${NAIVE_THREADS:-4,8,16,32}" \
  --payload "${PAYLOAD:-100}" --writers "${WRITERS:-2}"
