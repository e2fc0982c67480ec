# Sourced by bench/run_*.sh: builds a Google Benchmark target (Release, in
# $BUILD_DIR, default build-bench) if needed and runs it.
#   run_microbench TARGET OUT_JSON [benchmark args...]
# runs TARGET with 3 repetitions, medians only, JSON to OUT_JSON.
run_microbench() {
  local target=$1 out=$2
  shift 2
  local build_dir=${BUILD_DIR:-build-bench}
  if [[ ! -f "$build_dir/CMakeCache.txt" ]] ||
     ! grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$build_dir/CMakeCache.txt"; then
    cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
      -DSEQD_BUILD_TESTS=OFF -DSEQD_BUILD_BENCH=ON >/dev/null
  fi
  cmake --build "$build_dir" -j2 --target "$target" >/dev/null
  "$build_dir/bench/$target" --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_format=json "$@" >"$out"
}
