#!/usr/bin/env bash
# Instructions per take of the allocator's hot paths, counted by callgrind
# (repeatable on a loaded machine, unlike items/s): the inclusive count of
# each measured loop at N and 2N takes, so the fixed cost (start-up, the
# first reservation) cancels out. Compare two builds by pointing BUILD_DIR
# at each (both built by bench/microbench.sh's rules), or BINARY at an
# allocator_instructions program already built (an older tree's).
#   bench/allocator_instructions.sh [N]     (default 1000000)
#   BINARY=old/bench/allocator_instructions bench/allocator_instructions.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build-bench}
n=${1:-1000000}
command -v valgrind >/dev/null || { echo "allocator_instructions: needs valgrind" >&2; exit 1; }
binary=${BINARY:-$build_dir/bench/allocator_instructions}
if [[ -z "${BINARY:-}" ]]; then
  if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
    cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=Release -DSEQD_BUILD_TESTS=OFF \
      -DSEQD_BUILD_BENCH=ON >/dev/null
  fi
  cmake --build "$build_dir" -j2 --target allocator_instructions >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Inclusive instructions of the loop function of `mode` for `count` takes.
loop_count() {
  local mode=$1 count=$2 out="$tmp/cg.$1.$2"
  valgrind --tool=callgrind --callgrind-out-file="$out" \
    "$binary" "$mode" "$count" >/dev/null 2>&1
  callgrind_annotate --inclusive=yes --threshold=100 "$out" >"$out.txt"
  awk '/Loop/ {gsub(",", "", $1); print $1; exit}' "$out.txt"
}

printf '%-10s %16s\n' mode 'instr/take'
for mode in by_name handle take take100; do
  a=$(loop_count "$mode" "$n")
  b=$(loop_count "$mode" $((2 * n)))
  python3 -c "print('%-10s %16.2f' % ('$mode', ($b - $a) / $n))"
done
