# Sourced by the bench scripts that run seqd binaries against a throwaway
# store (new_keys_bench.sh, slow_db_bench.sh, tail_bench.sh; protocols_bench.sh
# uses its tool, pinning and port helpers). Call from the repository root.
#
#   bench_binaries "$@"   # no arguments: builds seqd + seqbench Release in
#                         # $BUILD_DIR and sets BINARIES to that seqd; else
#                         # BINARIES are the arguments
#   bench_workdir NAME    # WORK: a temp dir; PIDS killed and a MariaDB in
#                         # $WORK/db stopped on exit
#   free_port             # prints a free local TCP port
#   bench_start_seqd LOG SEQD --http-port P ...
#                         # starts SEQD with its arguments (the HTTP port
#                         # right after the binary), waits until /readyz
#                         # answers; SEQD_PID is its pid (on SERVER_CPU
#                         # after bench_pin)
#   bench_need_tools CMD:PACKAGE ...
#                         # apt-get installs the packages whose command is missing
#   bench_pin             # SERVER_CPU / CLIENT_CPU: taskset prefixes putting the
#                         # servers on the last core and the load generators
#                         # on the first (empty with PIN=0 or one core)
#   bench_start_redis LOG # a throwaway redis-server on a free loopback port
#                         # (no persistence, its own dir in $WORK): REDIS_PORT,
#                         # REDIS_PID (killed on exit)
#   wait_ping PORT NAME LOG
#                         # waits until a RESP server answers PING
#   json_get FILE a.b ... # prints fields of a JSON object (seqbench --json)
# SEQBENCH: the seqbench binary (unless set: the one built beside the first
# seqd given, else in $BUILD_DIR or build/).

bench_binaries() {
  BUILD_DIR=${BUILD_DIR:-build-release}
  if (($# == 0)); then
    cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSEQD_BUILD_TESTS=OFF \
      -DSEQD_BUILD_BENCH=OFF >/dev/null
    cmake --build "$BUILD_DIR" -j2 --target seqd seqbench >/dev/null
    BINARIES=("$BUILD_DIR/seqd")
  else
    BINARIES=("$@")
  fi
  # The optimized client only: build/ also holds sanitizer and clang check
  # builds (build/check-*), whose seqbench is several times slower.
  if [[ -z ${SEQBENCH:-} ]]; then
    for candidate in "$(dirname "${BINARIES[0]}")/bench/seqbench/seqbench" \
      "$BUILD_DIR/bench/seqbench/seqbench" build/bench/seqbench/seqbench; do
      [[ -x $candidate ]] && { SEQBENCH=$candidate; break; }
    done
  fi
  [[ -x ${SEQBENCH:-} ]] || { echo "no optimized seqbench binary (set SEQBENCH)" >&2; exit 1; }
}

bench_cleanup() {
  # `|| true`: wait returns the killed process's status, and under set -e a
  # failing last command would end the trap before MariaDB is stopped.
  for p in "${PIDS[@]}"; do { kill "$p" && wait "$p"; } 2>/dev/null || true; done
  scripts/mariadb.sh stop "$WORK/db" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}

bench_workdir() {
  WORK=$(mktemp -d "/tmp/seqd-$1.XXXXXX")
  PIDS=()
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

bench_start_seqd() {
  local log=$1 http=$4
  shift
  ${SERVER_CPU:-} "$@" >"$log" 2>&1 &  # pinned after bench_pin
  SEQD_PID=$!
  PIDS+=("$SEQD_PID")
  for _ in $(seq 300); do
    curl -fsS -o /dev/null "http://127.0.0.1:$http/readyz" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "seqd did not become ready; its log:" >&2
  cat "$log" >&2
  exit 1
}

bench_need_tools() {
  local missing=() pair
  for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null || missing+=("${pair#*:}")
  done
  ((${#missing[@]})) || return 0
  local sudo=""
  [[ $EUID -ne 0 ]] && sudo=sudo
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
}

bench_pin() {
  SERVER_CPU="" CLIENT_CPU=""
  if [[ ${PIN:-1} != 0 ]] && (($(nproc) >= 2)) && command -v taskset >/dev/null; then
    SERVER_CPU="taskset -c $(($(nproc) - 1))"
    CLIENT_CPU="taskset -c 0"
  fi
}

wait_ping() {
  for _ in $(seq 100); do
    [[ $(redis-cli -p "$1" PING 2>/dev/null) == PONG ]] && return 0
    sleep 0.1
  done
  echo "$2 did not come up; its log:" >&2
  cat "$3" >&2
  exit 1
}

bench_start_redis() {
  REDIS_PORT=$(free_port)
  mkdir -p "$WORK/redis"
  # --dir: nothing lands in the current directory; no RDB, no AOF.
  ${SERVER_CPU:-} redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --dir "$WORK/redis" \
    --save '' --appendonly no >"$1" 2>&1 &
  REDIS_PID=$!
  PIDS+=("$REDIS_PID")
  wait_ping "$REDIS_PORT" redis-server "$1"
}

json_get() {
  python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
out = []
for path in sys.argv[2:]:
    v = r
    for part in path.split("."):
        v = v[part]
    out.append(str(v))
print(" ".join(out))
PY
}
