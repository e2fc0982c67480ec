#!/usr/bin/env bash
# Builds seqd and every test, starts a throwaway MariaDB on loopback, runs all
# suites with ctest, and stops MariaDB whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/phases.sh
mkdir -p build
phase installs
scripts/deps.sh --test
scripts/node-deps
phase "build: Release"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2

# Runs ctest in build dir $1 (further arguments go to ctest). On failure it
# prints, last, a digest of what failed (doctest's failed checks, sanitizer
# reports with their first frames, crashes), so that the end of the output,
# which is what a CI summary keeps, names the cause and not only the test.
run_ctest() {
  local dir=$1
  shift
  PHASE_CTEST_LOGS+=("$dir/ctest-output.log")
  if (cd "$dir" && "$@" 2>&1 | tee ctest-output.log; exit "${PIPESTATUS[0]}"); then return 0; fi
  echo "test: failure digest for $dir"
  grep -E -B3 -A6 'FATAL ERROR|ERROR: CHECK|: ERROR: |WARNING: ThreadSanitizer|ERROR: AddressSanitizer|runtime error:|SUMMARY: |Segmentation fault|Aborted|Exception|Timeout' \
    "$dir/Testing/Temporary/LastTest.log" | grep -v '^.*Z \(INFO\|WARN\|ERROR\) ' | head -n 80 || true
  return 1
}

mariadb_dir=$(mktemp -d -t seqd-mariadb.XXXXXX)
cleanup() {
  scripts/mariadb.sh stop "$mariadb_dir" >/dev/null 2>&1 || true
  rm -rf "$mariadb_dir"
}
trap 'rc=$?; cleanup; phase_report $rc' EXIT
phase "MariaDB start"
SEQD_TEST_MYSQL_URL=$(scripts/mariadb.sh start "$mariadb_dir" | tail -n 1)
export SEQD_TEST_MYSQL_URL
export SEQD_TEST_MARIADB_DIR="$mariadb_dir"
echo "test: MariaDB at ${SEQD_TEST_MYSQL_URL//:seqd@/:***@}"

phase "ctest: Release"
run_ctest build ctest --output-on-failure -j2 "$@"

# What only clang checks: the thread-safety analysis (GUARDED_BY, REQUIRES)
# as errors, and each folder's library linking only what
# docs/architecture.md allows (shared, -Wl,--no-undefined). Skipped when
# ctest arguments narrow the run.
if [[ $# -eq 0 ]]; then
  phase "check-build: clang -O0"
  scripts/check-build
fi

# Each libFuzzer target for a short pass from the committed corpus (crashes
# fail the run). SEQD_FUZZ_SECONDS=0 skips it.
if [[ $# -eq 0 && "${SEQD_FUZZ_SECONDS:-60}" != "0" ]]; then
  phase "fuzz: build and run"
  scripts/fuzz "${SEQD_FUZZ_SECONDS:-60}"
fi

# The in-process suites again under ThreadSanitizer (races in the allocator,
# the listeners and the client). SEQD_SANITIZERS=all adds an AddressSanitizer +
# UndefinedBehaviorSanitizer pass (the fuzz targets always run under both);
# SEQD_SANITIZERS=0 skips this. Skipped when ctest arguments narrow the run.
sanitizers=${SEQD_SANITIZERS:-thread}
[[ $sanitizers == all ]] && sanitizers="thread address,undefined"
if [[ $# -eq 0 && $sanitizers != 0 ]]; then
  for san in $sanitizers; do
    dir="build/sanitize-${san%%,*}"
    # -O1, as ThreadSanitizer's documentation builds: about a quarter less
    # compile time than -O3 (measured on six of the heaviest files), and
    # stacks with fewer frames inlined away.
    phase "build: sanitizer $san"
    cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-g1 \
      -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DSEQD_SANITIZE="$san" -DSEQD_BUILD_BENCH=OFF >/dev/null
    cmake --build "$dir" -j2 --target seqd_unit_tests store_conformance_test \
      message_store_conformance_test worker_lease_conformance_test shard_lease_conformance_test \
      client_tests client_server_tests
    phase "ctest: sanitizer $san"
    UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 run_ctest "$dir" \
      ctest --output-on-failure -j2 \
      -R '^(unit_tests|(message_store|store|worker_lease|shard_lease)_conformance(_mariadb)?|client_tests|client_server_tests)$'
  done
fi
