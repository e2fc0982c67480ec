#!/usr/bin/env bash
# Memory per key: RSS before and after the allocator holds KEYS keys
# (default 1,000,000), on the default settings (max_cached_keys raised to
# KEYS). Builds key_memory_bench (Release, in build-bench) if needed.
# Goal (issue 18): <= 256 bytes of RSS per key.
#   KEYS=1000000 bench/key_memory_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
KEYS=${KEYS:-1000000}
build_dir=${BUILD_DIR:-build-bench}
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release \
    -DSEQD_BUILD_TESTS=OFF -DSEQD_BUILD_BENCH=ON >/dev/null
fi
cmake --build "$build_dir" -j2 --target key_memory_bench >/dev/null
"$build_dir/bench/key_memory_bench" "$KEYS" | python3 -c "$(cat <<'PY'
import json, sys
r = json.load(sys.stdin)
mib = 2 ** 20
print(f"{r['keys_in_memory']:,} keys held: RSS {r['rss_before_bytes'] / mib:,.0f} MiB -> "
      f"{r['rss_after_bytes'] / mib:,.0f} MiB = {r['bytes_per_key']:.0f} bytes per key "
      f"(goal <= 256); failed requests {r['failed']}")
PY
)"
