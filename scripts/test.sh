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

(cd build && ctest --output-on-failure -j2 "$@")

# Each libFuzzer target for a short pass from the committed corpus (crashes
# fail the run). SEQD_FUZZ_SECONDS=0 skips it.
if [[ $# -eq 0 && "${SEQD_FUZZ_SECONDS:-60}" != "0" ]]; then
  scripts/fuzz "${SEQD_FUZZ_SECONDS:-60}"
fi

# The in-process suites again under sanitizers: races (thread) and memory or
# undefined-behaviour errors (address,undefined). Skipped when ctest
# arguments narrow the run.
if [[ $# -eq 0 && "${SEQD_SANITIZERS:-1}" == "1" ]]; then
  for san in thread address,undefined; do
    dir="build/sanitize-${san%%,*}"
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSEQD_SANITIZE="$san" \
      -DSEQD_BUILD_BENCH=OFF >/dev/null
    cmake --build "$dir" -j2 --target seqd_unit_tests store_conformance_test
    (cd "$dir" && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
      ctest --output-on-failure -j2 -R '^(unit_tests|store_conformance|store_conformance_mariadb)$')
  done
fi
