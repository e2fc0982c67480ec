#!/usr/bin/env bash
# Cluster mode's costs, measured side by side in one run on this machine
# (read the ratios, not the absolute numbers):
#   1. forwarded vs direct: seqbench NEXT_IDS of one key sent to a non-owner
#      (which forwards it over the binary protocol) against the same load
#      sent to the owner, alternating ROUNDS times; three instances;
#   2. the client library routing by shard: cluster_route_bench over 64 keys
#      with and without ClientOptions::route_by_shard, and the share of
#      requests the servers forwarded (seqd_cluster_forwards_total);
#   3. the fence: one instance with --cluster against one without, on the
#      same database, (a) NEXT_IDS of keys with step 1 and --max-step 1, so
#      every request is a reservation (a fenced transaction in cluster mode),
#      and (b) message sends (fenced group commits), alternating ROUNDS times.
#
#   ROUNDS=3 DURATION=3 bench/cluster_bench.sh
#
# Uses build/seqd, build/bench/seqbench/seqbench and build/bench/cluster_route_bench
# (BUILD_DIR overrides; build with -DSEQD_BUILD_BENCH=ON), and a MariaDB of
# its own in a temp dir (scripts/mariadb.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-3}
DURATION=${DURATION:-3}
BUILD_DIR=${BUILD_DIR:-build}
SEQD=$BUILD_DIR/seqd
SEQBENCH=$BUILD_DIR/bench/seqbench/seqbench
ROUTE_BENCH=$BUILD_DIR/bench/cluster_route_bench
for b in "$SEQD" "$SEQBENCH" "$ROUTE_BENCH"; do
  [[ -x $b ]] || { echo "cluster_bench: $b missing (build with -DSEQD_BUILD_BENCH=ON)" >&2; exit 2; }
done

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  scripts/mariadb.sh stop "$work/db" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

url=$(scripts/mariadb.sh start "$work/db" 2>/dev/null | tail -1)
port=${url##*:}; port=${port%%/*}
sql() { mariadb -h127.0.0.1 -P"$port" -useqd -pseqd -N -e "$1"; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start NAME DB [flags...]: one seqd; sets HTTP_<NAME> and TCP_<NAME>.
start() {
  local name=$1 db=$2; shift 2
  local h t
  h=$(free_port); t=$(free_port)
  "$SEQD" --store "mysql://seqd:seqd@127.0.0.1:$port/$db" --http-port "$h" --tcp-port "$t" \
    --snowflake off --log-level warn "$@" >"$work/$name.log" 2>&1 &
  pids+=($!)
  printf -v "HTTP_$name" '%s' "$h"
  printf -v "TCP_$name" '%s' "$t"
  for _ in $(seq 100); do
    curl -sf "localhost:$h/healthz" >/dev/null && return 0
    sleep 0.1
  done
  echo "cluster_bench: $name did not start" >&2; cat "$work/$name.log" >&2; exit 1
}
stop_all() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  pids=()
}
# The load generators exit 1 if any request failed: keep their report.
bench() { "$@" || true; }
# rps JSON-LINE: requests (or calls) per second
rps() { python3 -c 'import json,sys; d=json.loads(sys.stdin.read()); print(round(d.get("requests_per_s", d.get("calls_per_s", 0))))'; }
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ratio() { python3 -c "print(f'{$1/$2:.2f}')"; }
forwards() {
  local total=0 n
  for h in "$@"; do
    n=$(curl -s "localhost:$h/metrics" | awk '/^seqd_cluster_forwards_total\{result="ok"\}/ {print $2}')
    total=$(python3 -c "print(int($total + ${n:-0}))")
  done
  echo "$total"
}

# --- 1 and 2: three instances ------------------------------------------------
sql "CREATE DATABASE seqd_test_c3"
for i in 1 2 3; do start "c$i" seqd_test_c3 --cluster --auto-keys "bk:100000" --threads 1; done
# Until every instance sees three live members and no shard without an owner.
for _ in $(seq 100); do
  settled=1
  for h in "$HTTP_c1" "$HTTP_c2" "$HTTP_c3"; do
    m=$(curl -s "localhost:$h/metrics")
    [[ $(awk '/^seqd_cluster_members_live / {print $2}' <<<"$m") == 3 ]] || settled=0
    [[ $(awk '/^seqd_cluster_shards_unowned / {print $2}' <<<"$m") == 0 ]] || settled=0
  done
  ((settled)) && break
  sleep 0.2
done
owner=$(curl -s "localhost:$HTTP_c1/admin/cluster" | python3 -c '
import json, sys
d = json.load(sys.stdin)
h = 0xcbf29ce484222325
for b in b"bk":
    h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
owner = d["shard_map"][h % d["shards"]]["owner"]
print(next(m["advertise"] for m in d["members"] if m["instance"] == owner))')
other=""
for i in 1 2 3; do
  t_var="TCP_c$i"
  [[ "127.0.0.1:${!t_var}" != "$owner" ]] && { other="127.0.0.1:${!t_var}"; break; }
done
direct=(); forwarded=()
for _ in $(seq "$ROUNDS"); do
  direct+=("$(bench "$SEQBENCH" --tcp "$owner" --key bk --duration "$DURATION" --json | rps)")
  forwarded+=("$(bench "$SEQBENCH" --tcp "$other" --key bk --duration "$DURATION" --json | rps)")
done
d=$(median "${direct[@]}"); f=$(median "${forwarded[@]}")
echo "1. NEXT_IDS to the owner: ${direct[*]} req/s (median $d); via a non-owner (forwarded): ${forwarded[*]} (median $f); forwarded/direct = $(ratio "$f" "$d")"

eps="127.0.0.1:$TCP_c1,127.0.0.1:$TCP_c2,127.0.0.1:$TCP_c3"
f0=$(forwards "$HTTP_c1" "$HTTP_c2" "$HTTP_c3")
plain=$(bench "$ROUTE_BENCH" --endpoints "$eps" --prefix bk --seconds "$DURATION")
f1=$(forwards "$HTTP_c1" "$HTTP_c2" "$HTTP_c3")
routed=$(bench "$ROUTE_BENCH" --endpoints "$eps" --prefix bk --seconds "$DURATION" --route)
f2=$(forwards "$HTTP_c1" "$HTTP_c2" "$HTTP_c3")
python3 - "$plain" "$routed" "$f0" "$f1" "$f2" <<'EOF'
import json, sys
plain, routed = json.loads(sys.argv[1]), json.loads(sys.argv[2])
f0, f1, f2 = (int(x) for x in sys.argv[3:6])
for name, r, fw in (("without routing", plain, f1 - f0), ("route_by_shard ", routed, f2 - f1)):
    direct = 100.0 * (1 - fw / r["calls"]) if r["calls"] else 0
    print(f"2. client {name}: {r['calls_per_s']} calls/s, {fw} of {r['calls']} forwarded "
          f"({direct:.3f}% direct), {r['errors']} errors")
print(f"   routed/unrouted throughput = {routed['calls_per_s'] / plain['calls_per_s']:.2f}")
EOF
stop_all

# --- 3: the fence, one instance with and without --cluster -------------------
sql "CREATE DATABASE seqd_test_f"
res_plain=(); res_fenced=(); msg_plain=(); msg_fenced=()
for r in $(seq "$ROUNDS"); do
  for mode in plain fenced; do
    flags=(--auto-keys "fk:1" --max-step 1 --threads 1)
    [[ $mode == fenced ]] && flags+=(--cluster)
    start "f$mode$r" seqd_test_f "${flags[@]}"
    h_var="HTTP_f$mode$r"; t_var="TCP_f$mode$r"
    # In cluster mode wait until this lone instance holds every shard.
    if [[ $mode == fenced ]]; then
      for _ in $(seq 100); do
        n=$(curl -s "localhost:${!h_var}/metrics" | awk '/^seqd_cluster_shards_owned / {print $2}')
        [[ ${n%.*} -ge 1024 ]] 2>/dev/null && break
        sleep 0.1
      done
    fi
    ids=$(bench "$SEQBENCH" --tcp "127.0.0.1:${!t_var}" --key "fk$mode$r" --duration "$DURATION" --json | rps)
    sends=$(bench "$ROUTE_BENCH" --endpoints "127.0.0.1:${!t_var}" --send --prefix "c$mode$r" \
      --seconds "$DURATION" | rps)
    if [[ $mode == plain ]]; then res_plain+=("$ids"); msg_plain+=("$sends"); else res_fenced+=("$ids"); msg_fenced+=("$sends"); fi
    stop_all
  done
done
a=$(median "${res_plain[@]}"); b=$(median "${res_fenced[@]}")
echo "3a. reservations (step 1): without cluster ${res_plain[*]} req/s (median $a); fenced ${res_fenced[*]} (median $b); fenced/plain = $(ratio "$b" "$a")"
a=$(median "${msg_plain[@]}"); b=$(median "${msg_fenced[@]}")
echo "3b. message sends: without cluster ${msg_plain[*]} /s (median $a); fenced ${msg_fenced[*]} (median $b); fenced/plain = $(ratio "$b" "$a")"
