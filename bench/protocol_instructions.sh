#!/usr/bin/env bash
# Instructions seqd spends per request on each protocol, counted by
# callgrind (repeatable on a loaded machine, unlike req/s; the machines here
# are shared and ab_bench.sh's rates move by ±20% between rounds). seqd runs
# under callgrind with one network thread on a fresh SQLite store; one
# client connection sends N requests one at a time, then 2N on a fresh run,
# so the fixed cost (start-up, the first reservation, shutdown) cancels out:
# (Ir(2N) - Ir(N)) / N. Requests:
#   http    GET /seq/k on a keep-alive connection
#   binary  NEXT_IDS of 1 ID on k
#   resp    INCR k
# Background timers (leases, metrics) and how often a read finds the next
# request already there vary from run to run (±5% on one binary at
# N=20000), so each figure is the median of REPEAT (3) such differences.
# STORE (default: a fresh SQLite file per run) and SEQD_ARGS (extra flags)
# run another setup, e.g. a cluster with store groups on MariaDB:
#   STORE=mysql://... SEQD_ARGS='--cluster --cluster-lease-ms 60000
#     --store-group home=mysql://.../a --store-group b=mysql://.../b'
# PROTOS (default "http binary resp") picks the protocols.
#
#   REPEAT=3 bench/protocol_instructions.sh OLD_SEQD NEW_SEQD [N]   (N: 20000)
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -ge 2 ]] || { sed -n '2,21p' "$0"; exit 2; }
A=$1 B=$2 N=${3:-20000}
REPEAT=${REPEAT:-3}
PROTOS=${PROTOS:-http binary resp}
command -v valgrind >/dev/null || { echo "protocol_instructions: needs valgrind" >&2; exit 2; }

WORK=$(mktemp -d /tmp/seqd-pi.XXXXXX)
PID=""
cleanup() {
  [[ -n $PID ]] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Sends COUNT requests of PROTO to PORT, one at a time, each answer read whole.
client() {
  python3 - "$@" <<'EOF'
import socket, struct, sys
sys.path.insert(0, "tests/e2e")
from lib import wire
proto, port, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
sock = socket.create_connection(("127.0.0.1", port))
sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
if proto == "http":
    request = b"GET /seq/k HTTP/1.1\r\nHost: x\r\n\r\n"
    buf = b""
    for _ in range(count):
        sock.sendall(request)
        while b"\r\n\r\n" not in buf:
            buf += sock.recv(65536)
        head, _, buf = buf.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200"), head
        length = int([l.split(b":")[1] for l in head.split(b"\r\n")
                      if l.lower().startswith(b"content-length")][0])
        while len(buf) < length:
            buf += sock.recv(65536)
        buf = buf[length:]
elif proto == "binary":
    payload = wire.next_ids_payload("k", 1)
    for i in range(count):
        status, _ = wire.call(sock, 0x02, i + 1, payload)  # NEXT_IDS
        assert status == 0, status
else:
    command = wire.resp_command(["INCR", "k"])
    for _ in range(count):
        sock.sendall(command)
        line = wire.resp_read_line(sock)
        assert line.startswith(b":"), line
EOF
}

# Instructions of one run of BINARY serving COUNT requests of PROTO.
instructions() {
  local bin=$1 proto=$2 count=$3 http tcp resp out=$WORK/cg.out
  http=$(free_port) tcp=$(free_port) resp=$(free_port)
  rm -f "$WORK"/*.db* "$out"
  # shellcheck disable=SC2086 # SEQD_ARGS: several flags
  valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" --store "${STORE:-sqlite:$WORK/pi.db}" \
    --http-port "$http" --tcp-port "$tcp" --resp-port "$resp" --threads 1 --log-level error \
    ${SEQD_ARGS:-} >"$WORK/seqd.log" 2>&1 &
  PID=$!
  for _ in $(seq 600); do curl -sf "localhost:$http/healthz" >/dev/null && break; sleep 0.1; done
  curl -sf -X POST "localhost:$http/admin/keys" -H 'Content-Type: application/json' \
    -d '{"key":"k","step":1000000}' >/dev/null
  local port=$http
  [[ $proto == binary ]] && port=$tcp
  [[ $proto == resp ]] && port=$resp
  client "$proto" "$port" "$count"
  kill "$PID"
  wait "$PID" 2>/dev/null || true
  PID=""
  awk '/^summary:/ {print $2}' "$out"
}

# The median over REPEAT runs of BINARY's instructions per PROTO request.
per_request() {
  local bin=$1 proto=$2 one two
  for _ in $(seq "$REPEAT"); do
    one=$(instructions "$bin" "$proto" "$N")
    two=$(instructions "$bin" "$proto" $((2 * N)))
    echo $(((two - one) / N))
  done | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

printf '%-8s %14s %14s %8s\n' proto 'A instr/req' 'B instr/req' 'B/A'
for proto in $PROTOS; do
  a=$(per_request "$A" "$proto")
  b=$(per_request "$B" "$proto")
  python3 -c "print('%-8s %14d %14d %8.3f' % ('$proto', $a, $b, $b / $a))"
done
