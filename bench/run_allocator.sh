#!/usr/bin/env bash
# Builds allocator_bench (Release, in build-bench) if needed, runs it with 3
# repetitions and prints items/s medians and the allocator/atomic ratio per
# thread count. Extra arguments go to the benchmark binary.
#   bench/run_allocator.sh [--benchmark_min_time=0.2] ...
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-bench}

if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]] ||
   ! grep -q '^CMAKE_BUILD_TYPE:STRING=Release$' "$BUILD_DIR/CMakeCache.txt"; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release \
    -DSEQD_BUILD_TESTS=OFF -DSEQD_BUILD_BENCH=ON >/dev/null
fi
cmake --build "$BUILD_DIR" -j2 --target allocator_bench >/dev/null

out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$BUILD_DIR/bench/allocator_bench" --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_format=json "$@" >"$out"

python3 - "$out" <<'PY'
import json, re, sys
data = json.load(open(sys.argv[1]))
med = {}  # (name, threads) -> items/s
for b in data["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    name = b["run_name"].split("/")[0]
    threads = int(re.search(r"threads:(\d+)", b["run_name"]).group(1))
    med[(name, threads)] = b["items_per_second"]
ctx = data["context"]
print(f"host: {ctx.get('num_cpus')} cpus, load avg {ctx.get('load_avg')}")
print(f"{'benchmark':<28}{'threads':>8}{'median items/s':>18}{'vs atomic':>12}")
for (name, t), v in sorted(med.items()):
    base = med.get(("BM_AtomicFetchAdd", t))
    ratio = f"{v / base:.4f}" if base else "-"
    print(f"{name:<28}{t:>8}{v:>18,.0f}{ratio:>12}")
print()
for t in sorted({t for _, t in med}):
    base = med[("BM_AtomicFetchAdd", t)]
    take = med[("BM_AllocatorTake", t)]
    batch = med[("BM_AllocatorTakeBatch100", t)]
    print(f"threads={t}: allocator/atomic = {take / base:.4f} (1 id/Take, "
          f"{base / take:.1f}x slower); batch100 IDs/atomic = {batch / base:.3f}")
PY
