#!/usr/bin/env bash
# The test command (what .ci/run calls): builds seqd and every test, starts a
# throwaway MariaDB on loopback, runs every suite, and stops MariaDB whatever
# happens. At the end it prints the wall time of each phase and the slowest
# ctest suites (scripts/lib/phases.sh).
#
#   scripts/test.sh            everything: the Release build and all its
#                              suites; the clang build (thread-safety
#                              analysis, link check, ThreadSanitizer) and the
#                              in-process suites under ThreadSanitizer; the
#                              fuzz targets under ASan and UBSan
#   scripts/test.sh --quick    the fast loop between changes: the Release
#                              build, then the unit, conformance (memory and
#                              SQLite), client, protocol and SQLite end-to-end
#                              suites (quick_suites below); no MariaDB, clang
#                              or fuzzing
#   scripts/test.sh ARGS...    the Release build, then ctest ARGS on it only
#                              (scripts/test.sh -R unit)
#
# Environment: SEQD_TEST_JOBS (ctest's parallel suites; default: the cores
# plus one), SEQD_FUZZ_SECONDS (default 60; 0
# skips fuzzing), SEQD_SANITIZERS (thread, the default; all adds a GCC
# ASan+UBSan pass; 0 skips the sanitizer suites).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/phases.sh
mkdir -p build
trap 'phase_report $?' EXIT

quick=0
if [[ ${1:-} == --quick ]]; then
  quick=1
  shift
fi
cores=$(nproc)
# Most suites wait on processes, sockets and timers more than they compute:
# one more suite than there are cores runs at once (twice the cores loaded
# a 2-core machine enough to time out suites' own deadlines). Not
# --test-load: the load average counts the clang builds running beside at
# the lowest priority, and would hold suites back for them.
jobs=${SEQD_TEST_JOBS:-$((cores + 1))}
ctest_args=(--output-on-failure -j"$jobs")

phase installs
if ((quick)); then
  scripts/deps.sh
else
  scripts/deps.sh --test
  scripts/node-deps
fi

phase "build: Release (gcc)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$cores"

# Runs ctest in build dir $1 (further arguments go to ctest), its output teed
# into $1/ctest-output.log for the timing report. On failure it prints,
# last, a digest of what failed (doctest's failed checks, sanitizer reports
# with their first frames, crashes), so that the end of the output, which is
# what a CI summary keeps, names the cause and not only the test.
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

# The fast loop's suites: what needs no MariaDB, no browser and no container.
quick_suites='^(unit_tests|(store|message_store|worker_lease|shard_lease)_conformance|client_tests|client_server_tests|client_odr|e2e_protocols|e2e_openim_ids_sqlite|e2e_sqlite|e2e_messages_sqlite|layering|link_check|docs_check|configuration_reference)$'
if ((quick)); then
  phase "ctest: quick"
  run_ctest build ctest "${ctest_args[@]}" -R "$quick_suites" "$@"
  exit 0
fi

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

# Arguments narrow the run to those suites of the Release build.
if [[ $# -gt 0 ]]; then
  phase "ctest: Release"
  run_ctest build ctest "${ctest_args[@]}" "$@"
  exit 0
fi

# The two clang builds, built beside the Release suites, which mostly wait
# on processes, sockets and timers: at the lowest CPU and I/O priority, so a
# suite that wants a core gets it. One build serves what only clang checks
# (the thread-safety analysis as errors, each library linking only what
# docs/architecture.md allows) and ThreadSanitizer (scripts/check-build);
# the other the fuzz targets under ASan and UBSan (scripts/fuzz --build).
fuzz_seconds=${SEQD_FUZZ_SECONDS:-60}
clang_builds() {
  nice -n 19 ionice -c 3 scripts/check-build &&
    if [[ $fuzz_seconds != 0 ]]; then nice -n 19 ionice -c 3 scripts/fuzz --build; fi
}
clang_phase="build: clang (thread-safety, link check, ThreadSanitizer; fuzz targets)"
phase_background "$clang_phase" build/clang-builds.log clang_builds

# The soak (5 minutes of steady load, its checks built to tolerate a loaded
# machine) beside the whole Release run, outside ctest's scheduler: ctest
# runs nothing beside a RUN_SERIAL suite, so inside it the soak would hold
# every RUN_SERIAL suite back until it ended.
soak=soak_short
phase_background "ctest suite $soak" "build/$soak.log" scripts/lib/run_suite.py build "$soak"

phase "ctest: Release"
release_rc=0
run_ctest build ctest "${ctest_args[@]}" -E "^$soak\$" || release_rc=$?
phase "wait for the soak and the clang builds"
phase_join "ctest suite $soak" || release_rc=1
phase_join "$clang_phase" || release_rc=1
((release_rc == 0)) || exit "$release_rc"

# The in-process suites under ThreadSanitizer (races in the allocator, the
# listeners, the client), from the clang build.
tsan_suites='^(unit_tests|(message_store|store|worker_lease|shard_lease)_conformance(_mariadb)?|client_tests|client_server_tests)$'
sanitizers=${SEQD_SANITIZERS:-thread}
if [[ $sanitizers != 0 ]]; then
  phase "ctest: ThreadSanitizer"
  run_ctest "$(scripts/check-build --dir)" ctest "${ctest_args[@]}" -R "$tsan_suites"
fi

# Each libFuzzer target for a short pass from the committed corpus (crashes
# fail the run). SEQD_FUZZ_SECONDS=0 skips it.
if [[ $fuzz_seconds != 0 ]]; then
  phase "fuzz: run"
  scripts/fuzz "$fuzz_seconds"
fi

# SEQD_SANITIZERS=all: the same suites again under GCC's AddressSanitizer and
# UndefinedBehaviorSanitizer (the fuzz targets always run under both).
if [[ $sanitizers == all ]]; then
  dir=build/sanitize-address
  phase "build: gcc ASan+UBSan"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS=-g1 \
    -DCMAKE_CXX_FLAGS_RELEASE="-O1 -DNDEBUG" -DSEQD_SANITIZE=address,undefined \
    -DSEQD_BUILD_BENCH=OFF >/dev/null
  cmake --build "$dir" -j"$cores" --target seqd_unit_tests store_conformance_test \
    message_store_conformance_test worker_lease_conformance_test shard_lease_conformance_test \
    client_tests client_server_tests
  phase "ctest: gcc ASan+UBSan"
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 run_ctest "$dir" \
    ctest "${ctest_args[@]}" -R "$tsan_suites"
fi
