#!/usr/bin/env bash
# Snowflake IDs over the binary protocol, next to segment IDs of one key from
# the same server in the same run (alternating rounds), with seqbench.
#   bench/snowflake_protocol_bench.sh            # ROUNDS=3 DURATION=5
# Env: BUILD_DIR (build-release), SKIP_BUILD=1, ROUNDS, DURATION, PIN=0 (no
# taskset: by default seqd runs on the last core, seqbench on the first).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build-release}
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-5}

if [[ -z ${SKIP_BUILD:-} ]]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$BUILD_DIR" -j2 --target seqd seqbench >/dev/null
fi
SERVER_CPU="" CLIENT_CPU=""
if [[ ${PIN:-1} != 0 ]] && (($(nproc) >= 2)) && command -v taskset >/dev/null; then
  SERVER_CPU="taskset -c $(($(nproc) - 1))"
  CLIENT_CPU="taskset -c 0"
fi
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

WORK=$(mktemp -d /tmp/seqd-snowflake-bench.XXXXXX)
SEQD_PID=""
cleanup() {
  [[ -n $SEQD_PID ]] && kill "$SEQD_PID" 2>/dev/null && wait "$SEQD_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT

HTTP_PORT=$(free_port) TCP_PORT=$(free_port)
$SERVER_CPU "$BUILD_DIR/seqd" --store "sqlite:$WORK/seqd.db" --http-port "$HTTP_PORT" \
  --tcp-port "$TCP_PORT" --threads 1 --log-level warn --auto-keys bench_:100000 &
SEQD_PID=$!
for _ in $(seq 100); do
  curl -sf "127.0.0.1:$HTTP_PORT/admin/snowflake" | grep -q '"serving":true' && break
  sleep 0.1
done

# One seqbench run; prints "IDs/s p50_us p99_us".
run() {
  $CLIENT_CPU "$BUILD_DIR/bench/seqbench/seqbench" --tcp "127.0.0.1:$TCP_PORT" "$@" \
    --duration "$DURATION" --json |
    python3 -c 'import json,sys; r=json.load(sys.stdin); l=r["latency_us"];
print(r["ids_per_s"], l["p50"], l["p99"])'
}

for shape in "--connections 4 --pipeline 32 --count 1" "--connections 4 --pipeline 4 --count 1000"; do
  echo "== $shape"
  for r in $(seq "$ROUNDS"); do
    read -r seg seg50 seg99 < <(run --key bench_1 $shape)
    read -r sf sf50 sf99 < <(run --snowflake $shape)
    printf 'round %d: snowflake %12.0f IDs/s (p50 %s us, p99 %s us) | segment %12.0f IDs/s (p50 %s us, p99 %s us) | ratio %.2f\n' \
      "$r" "$sf" "$sf50" "$sf99" "$seg" "$seg50" "$seg99" "$(awk "BEGIN{print $sf/$seg}")"
  done
done
curl -s "127.0.0.1:$HTTP_PORT/admin/snowflake"
echo
