#!/usr/bin/env bash
# Push fan-out, one conversation to N readers: Server-Sent Event streams next
# to binary-protocol subscribers, in one run against one seqd (SQLite).
# For each RATE in RATES and each N in STREAMS, on a fresh conversation each
# time:
#   sse     seqbench --subscribe N --sse HOST:PORT: N streams
#           GET /conversations/C/events
#   binary  seqbench --subscribe N: N connections that SUBSCRIBE
# Everything else is the same: one seqbench process holds the readers (C++,
# one I/O thread) and sends MESSAGES messages at RATE per second over the
# binary protocol (one connection), each payload stamped with its send time;
# the latency is from the SEND written to the push read. Prints, per rate,
# one table per transport: push latency p50/p99/p999/max and pushes received
# against expected (N x M). Exit status 1 when a row received fewer pushes than
# expected or a run failed.
#
#   bench/sse_fanout.sh [SEQD] [SEQBENCH]
#   STREAMS="1 100 1000" MESSAGES=200 RATES="20 100" bench/sse_fanout.sh
set -euo pipefail
cd "$(dirname "$0")/.."
SEQD=${1:-build/seqd}
SEQBENCH=${2:-build/bench/seqbench/seqbench}
STREAMS=${STREAMS:-1 100 1000}
MESSAGES=${MESSAGES:-200}
RATES=${RATES:-20 100}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

WORK=$(mktemp -d /tmp/seqd-sse-fanout.XXXXXX)
PID=""
cleanup() {
  if [[ -n $PID ]]; then kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
HTTP=$(free_port)
TCP=$(free_port)
# Every stream and subscriber comes from 127.0.0.1: lift the per-peer cap.
"$SEQD" --store "sqlite:$WORK/fanout.db" --http-port "$HTTP" --tcp-port "$TCP" --threads 2 \
  --log-level warn --max-connections-per-peer 5000 >"$WORK/seqd.log" 2>&1 &
PID=$!
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$HTTP/healthz" >/dev/null && break
  sleep 0.1
done

run() { # RATE CONV N [ARGS...]: one seqbench run, its JSON report on stdout
  local rate=$1 conv=$2 n=$3
  shift 3
  "$SEQBENCH" --tcp "127.0.0.1:$TCP" --messages "$conv" --requests "$MESSAGES" --rate "$rate" \
    --connections 1 --threads 1 --subscribe "$n" --json "$@"
}

tables() { # RATE: the two tables of sse_rows and bin_rows; status 1 if a push is missing
  python3 - "$MESSAGES" "$1" "${#sse_rows[@]}" "${sse_rows[@]}" "${bin_rows[@]}" <<'EOF'
import json, sys
messages, rate, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [json.loads(r) if r.strip() else None for r in sys.argv[4:]]
sse, binary = rows[:n], rows[n:]
bad = False
def table(title, rows):
    global bad
    print("%s: %s messages at %s/s to one conversation" % (title, messages, rate))
    print("%8s %12s %12s %10s %10s %10s %10s" % ("readers", "pushes", "expected", "p50 ms",
                                                 "p99 ms", "p999 ms", "max ms"))
    for r in rows:
        if r is None:
            print("%8s  (failed: see above)" % "?")
            bad = True
            continue
        p = r["push"]
        bad |= p["pushes"] != p["expected"]
        lat = p["latency_us"]
        ms = lambda v: "%.2f" % (v / 1000.0)
        print("%8d %12d %12d %10s %10s %10s %10s" % (
            p["subscribers"], p["pushes"], p["expected"], ms(lat["p50"]), ms(lat["p99"]),
            ms(lat["p999"]), ms(lat["max"])))
    print()
table("SSE streams (GET /conversations/C/events)", sse)
table("binary subscribers (SUBSCRIBE)", binary)
sys.exit(1 if bad else 0)
EOF
}

status=0
for rate in $RATES; do
  sse_rows=() bin_rows=()
  for n in $STREAMS; do
    row=$(run "$rate" "sg_fan_sse_${rate}_$n" "$n" --sse "127.0.0.1:$HTTP") || status=1
    sse_rows+=("$row")
    row=$(run "$rate" "sg_fan_bin_${rate}_$n" "$n") || status=1
    bin_rows+=("$row")
  done
  tables "$rate" || status=1
done
exit $status
