#!/usr/bin/env bash
# Builds seqd and every test, starts a throwaway MariaDB on loopback, runs all
# suites with ctest, and stops MariaDB whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh --test
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2

mariadb_dir=$(mktemp -d -t seqd-mariadb.XXXXXX)
cleanup() {
  scripts/mariadb.sh stop "$mariadb_dir" >/dev/null 2>&1 || true
  rm -rf "$mariadb_dir"
}
trap cleanup EXIT
SEQD_TEST_MYSQL_URL=$(scripts/mariadb.sh start "$mariadb_dir" | tail -n 1)
export SEQD_TEST_MYSQL_URL
export SEQD_TEST_MARIADB_DIR="$mariadb_dir"
echo "test: MariaDB at ${SEQD_TEST_MYSQL_URL//:seqd@/:***@}"

cd build
ctest --output-on-failure -j2 "$@"
