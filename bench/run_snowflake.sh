#!/usr/bin/env bash
# Builds snowflake_bench (Release, in build-bench) if needed, runs it with 3
# repetitions and prints the median IDs/s of seqd's generator next to the
# Leaf-style one for each layout, request size and thread count.
#   bench/run_snowflake.sh [--benchmark_min_time=0.2] ...
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/microbench.sh

out=$(mktemp)
trap 'rm -f "$out"' EXIT
run_microbench snowflake_bench "$out" "$@"

python3 - "$out" <<'PY'
import json, re, sys
data = json.load(open(sys.argv[1]))
med = {}  # (impl, layout, count, threads) -> items/s
cpu = {}  # the same -> CPU ns per ID (of the benchmark threads)
for b in data["benchmarks"]:
    if b.get("aggregate_name") != "median":
        continue
    m = re.match(r"BM_(\w+)/layout:(\d)/count:(\d+)/real_time/threads:(\d+)", b["run_name"])
    k = (m.group(1), int(m.group(2)), int(m.group(3)), int(m.group(4)))
    med[k] = b["items_per_second"]
    cpu[k] = b["cpu_time"] / k[2]
ctx = data["context"]
print(f"host: {ctx.get('num_cpus')} cpus, load avg {ctx.get('load_avg')}")
print(f"{'layout':<16}{'IDs/request':>12}{'threads':>8}{'seqd IDs/s':>14}{'Leaf-style':>14}{'ratio':>8}"
      f"{'CPU ns/ID seqd':>16}{'Leaf-style':>12}")
names = {0: "leaf 41/10/12", 1: "wide 41/4/18"}
for (impl, layout, count, t) in sorted(k for k in med if k[0] == "Seqd"):
    s = med[(impl, layout, count, t)]
    l = med.get(("LeafStyle", layout, count, t))
    ratio = f"{s / l:.2f}" if l else "-"
    lk = ("LeafStyle", layout, count, t)
    print(f"{names[layout]:<16}{count:>12}{t:>8}{s:>14,.0f}{(l or 0):>14,.0f}{ratio:>8}"
          f"{cpu[(impl, layout, count, t)]:>16.1f}{cpu.get(lk, 0):>12.1f}")
print("(2 threads at the 4,096-per-ms cap: Google Benchmark averages the threads' own times,")
print(" so those rates can read above the cap; compare the 1-thread rows there.)")
PY
