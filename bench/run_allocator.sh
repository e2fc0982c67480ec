#!/usr/bin/env bash
# Builds allocator_bench (Release, in build-bench) if needed, runs it with 3
# repetitions and prints items/s medians and the handle/atomic and
# by-name/atomic ratios per thread count. Extra arguments go to the benchmark binary.
#   bench/run_allocator.sh [--benchmark_min_time=0.2] ...
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/microbench.sh

out=$(mktemp)
trap 'rm -f "$out"' EXIT
run_microbench allocator_bench "$out" "$@"

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
    by_name = med[("BM_TryTakeByName", t)]
    handle = med[("BM_HandleTake", t)]
    batch = med[("BM_AllocatorTakeBatch100", t)]
    print(f"threads={t}: handle/atomic = {handle / base:.3f} (goal >= 0.5); "
          f"by name/atomic = {by_name / base:.3f} (goal >= 0.2; "
          f"with a callback, Take: {take / base:.3f}); "
          f"batch100 IDs/atomic = {batch / base:.3f}")
PY
