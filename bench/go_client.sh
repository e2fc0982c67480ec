#!/usr/bin/env bash
# The Go client (client/go/cmd/seqd-gobench) against the C++ client
# (seqbench) on the same seqd, in the same run: the same connections, the
# same calls in flight per connection (seqbench's --pipeline; the Go side
# runs that many goroutines per connection), NEXT_IDS of single IDs on one
# key, then on a fresh key per request (many keys, auto-created). Prints
# each run's IDs/s and p99, and the ratios Go/C++ (IDs/s: higher is better
# for Go; p99: lower is better for Go). The Go client runs twice: with a
# goroutine per call in flight (blocking NextIDs) and with one goroutine per
# connection keeping its calls in flight (GoNextIDs, --async: seqbench's
# shape), and with chains of NextIDsFunc callbacks, each starting the next
# on the connection's reader (--callback: no goroutine per call, one write
# per batch read; one Lane per connection, the chains spread over them). "Go raw" is no client at all: seqd-gobench --raw speaks
# the protocol itself in seqbench's shape, the Go runtime's own ceiling on
# this host, so the client's share of the gap is measured. Rounds
# alternate which client goes first; the ratios are of the medians over
# the rounds.
#
#   STORES="sqlite mariadb" CONNECTIONS=4 PIPELINE=16 DURATION=5 ROUNDS=3 \
#     bench/go_client.sh [SEQD_BINARY]
#
# Default binary: a Release build of this tree in $BUILD_DIR (build-release);
# seqbench from there or build/. Needs Go (scripts/deps.sh --test).
# Goal: Go >= 0.8x C++ in IDs/s.
set -euo pipefail
cd "$(dirname "$0")/.."
STORES=${STORES:-"sqlite mariadb"}
CONNECTIONS=${CONNECTIONS:-4}
PIPELINE=${PIPELINE:-16}
DURATION=${DURATION:-5}
ROUNDS=${ROUNDS:-3}

source bench/seqd_bench_lib.sh
bench_binaries "$@"
bench_workdir go-client-bench
SEQD=${BINARIES[0]}

GOBENCH=$WORK/seqd-gobench
(cd client/go && GOPROXY=off GOFLAGS=-mod=mod go build -o "$GOBENCH" ./cmd/seqd-gobench)

MYSQL_URL=""
if [[ " $STORES " == *" mariadb "* ]]; then
  MYSQL_URL=$(scripts/mariadb.sh start "$WORK/db" 2>/dev/null | tail -1)
fi

run_store() {  # STORE
  local store=$1 spec http tcp
  case $store in
    sqlite) spec="sqlite:$WORK/bench.db" ;;
    mariadb) spec=$MYSQL_URL ;;
  esac
  http=$(free_port) tcp=$(free_port)
  # bk_: the one-key runs (a long step, so the client, not the store, is
  # measured); nk_: a new key per request.
  bench_start_seqd "$WORK/seqd-$store.log" "$SEQD" --http-port "$http" --store "$spec" \
    --tcp-port "$tcp" --threads 2 --auto-keys "bk_:100000,nk_:100" --auto-create-rate 0 \
    --log-level warn
  local args=(--connections "$CONNECTIONS" --pipeline "$PIPELINE" --duration "$DURATION" --json)
  for mode in key new_keys; do
    for round in $(seq "$ROUNDS"); do
      local order="cpp go goasync gocallback goraw"
      ((round % 2 == 0)) && order="goraw gocallback goasync go cpp"
      for client in $order; do
        local what=(--key "bk_${store}")
        [[ $mode == new_keys ]] && what=(--new-keys "nk_${client}${round}_")
        local out="$WORK/$store-$mode-$round-$client.json"
        case $client in
          cpp) "$SEQBENCH" --tcp "127.0.0.1:$tcp" "${what[@]}" "${args[@]}" >"$out" ;;
          go) "$GOBENCH" --tcp "127.0.0.1:$tcp" "${what[@]}" "${args[@]}" >"$out" ;;
          goasync) "$GOBENCH" --async --tcp "127.0.0.1:$tcp" "${what[@]}" "${args[@]}" >"$out" ;;
          gocallback) "$GOBENCH" --callback --tcp "127.0.0.1:$tcp" "${what[@]}" "${args[@]}" >"$out" ;;
          goraw) "$GOBENCH" --raw --tcp "127.0.0.1:$tcp" "${what[@]}" "${args[@]}" >"$out" ;;
        esac
      done
    done
  done
  kill "$SEQD_PID" && wait "$SEQD_PID" 2>/dev/null || true
  python3 - "$WORK" "$store" "$ROUNDS" <<'PY'
import json, statistics, sys
work, store, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
for mode in ("key", "new_keys"):
    med = {}
    for client in ("cpp", "go", "goasync", "gocallback", "goraw"):
        runs = [json.load(open(f"{work}/{store}-{mode}-{r}-{client}.json")) for r in range(1, rounds + 1)]
        for r in runs:
            print(f"  {store:7s} {mode:8s} {client:10s}: {r['ids_per_s']:>10,.0f} IDs/s  "
                  f"p99 {r['latency_us']['p99']:>8.0f} us  errors {r['errors']}")
        med[client] = (statistics.median(r["ids_per_s"] for r in runs),
                       statistics.median(r["latency_us"]["p99"] for r in runs))
    ci, cp = med["cpp"]
    line = f"{store:7s} {mode:8s} medians: C++ {ci:,.0f} IDs/s p99 {cp:.0f} us"
    for client, name in (("go", "Go"), ("goasync", "Go async"), ("gocallback", "Go callback"),
                         ("goraw", "Go raw")):
        gi, gp = med[client]
        line += f" | {name} {gi:,.0f} IDs/s p99 {gp:.0f} us = {gi / ci:.2f}x, p99 {gp / cp:.2f}x"
    print(line)
PY
}

echo "seqd $("$SEQD" --version 2>/dev/null | head -1); $CONNECTIONS connections x $PIPELINE in flight," \
  "$DURATION s per run, $ROUNDS rounds, NEXT_IDS count 1"
for store in $STORES; do run_store "$store"; done
