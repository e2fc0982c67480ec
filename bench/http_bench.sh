#!/usr/bin/env bash
# HTTP throughput of seqd next to nginx returning a fixed body of the same
# size, both measured with wrk on this machine (nothing pinned: wrk and the
# servers share the cores, so read the ratio, not the absolute numbers).
#
#   DURATION=10 CONNECTIONS=64 bench/http_bench.sh
#
# Builds seqd Release in $BUILD_DIR (default build-release, with BUILD_JOBS
# jobs; SEQD=path/to/seqd skips the build and runs that binary), runs seqd (--threads 1, temp SQLite) and nginx (1 worker), then for
# each route wrk alternately: seqd, nginx, seqd, nginx (ROUNDS pairs). nginx
# answers each route with a copy of seqd's answer to it (same body size and
# Content-Type). Prints seqd req/s / nginx req/s per route.
#
# ROUTES: space-separated paths on key "bench"; default the three ID routes.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-64}
BUILD_DIR=${BUILD_DIR:-build-release}
BUILD_JOBS=${BUILD_JOBS:-2}
ROUNDS=${ROUNDS:-2}
ROUTES=${ROUTES:-/seq/bench /api/segment/get/bench /api/segment/get/bench?count=100}
read -r -a routes <<<"$ROUTES"

# --- tools ------------------------------------------------------------------
missing=()
command -v wrk >/dev/null || missing+=(wrk)
command -v nginx >/dev/null || missing+=(nginx-light)
command -v curl >/dev/null || missing+=(curl)
if ((${#missing[@]})); then
  sudo=""; [[ $EUID -ne 0 ]] && sudo=sudo
  $sudo apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi
NGINX=$(command -v nginx)

# --- build (skipped when SEQD names a binary) --------------------------------
if [[ -z ${SEQD:-} ]]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSEQD_BUILD_TESTS=OFF \
    -DSEQD_BUILD_BENCH=OFF >/dev/null
  cmake --build "$BUILD_DIR" -j"$BUILD_JOBS" --target seqd >/dev/null
  SEQD="$BUILD_DIR/seqd"
fi

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

WORK=$(mktemp -d /tmp/seqd-http-bench.XXXXXX)
SEQD_PID="" NGINX_PID=""
cleanup() {
  [[ -n $SEQD_PID ]] && kill "$SEQD_PID" 2>/dev/null && wait "$SEQD_PID" 2>/dev/null
  [[ -n $NGINX_PID ]] && kill -QUIT "$NGINX_PID" 2>/dev/null && wait "$NGINX_PID" 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

wait_http() {  # URL NAME LOG
  for _ in $(seq 100); do
    curl -fsS -o /dev/null "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "$2 did not come up; log:" >&2
  cat "$3" >&2
  exit 1
}

# --- seqd -------------------------------------------------------------------
SEQD_PORT=$(free_port)
start_seqd() {
  "$SEQD" --store "sqlite:$WORK/seqd.db" --http-port "$SEQD_PORT" --tcp-port -1 --resp-port -1 \
    --admin-port -1 --threads 1 \
    --log-level warn >>"$WORK/seqd.log" 2>&1 &
  SEQD_PID=$!
  wait_http "http://127.0.0.1:$SEQD_PORT/healthz" seqd "$WORK/seqd.log"
}
start_seqd
curl -fsS -o /dev/null -X POST "http://127.0.0.1:$SEQD_PORT/admin/keys" \
  -H 'Content-Type: application/json' -d '{"key":"bench","step":100000}'
# IDs from 10^12 on: every answer has the same size during the whole run.
kill "$SEQD_PID" && wait "$SEQD_PID" || true
SEQD_PID=""
python3 - "$WORK/seqd.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("UPDATE leaf_alloc SET max_id = 1000000000000 WHERE biz_tag = 'bench'")
db.commit()
PY
start_seqd
SEQD_BASE="http://127.0.0.1:$SEQD_PORT"

# seqd's answer to each route: nginx serves a copy of it (same size).
locations=""
for i in "${!routes[@]}"; do
  r=${routes[$i]}
  body=$(curl -fsS -D "$WORK/headers.$i" "$SEQD_BASE$r")
  type=$(awk -F': *' 'tolower($1) == "content-type" {sub(/\r$/, "", $2); print $2}' "$WORK/headers.$i")
  if [[ $body == *"'"* || $body == *'\\'* ]]; then
    echo "cannot quote seqd's answer to $r for nginx: $body" >&2
    exit 1
  fi
  echo "seqd  $r (${#body} bytes, $type): $body"
  locations+="    location = /r$i { default_type \"$type\"; return 200 '$body'; }"$'\n'
done

# --- nginx ------------------------------------------------------------------
NGINX_PORT=$(free_port)
user_line=""
[[ $EUID -eq 0 ]] && user_line="user $(id -un) $(id -gn);"
cat >"$WORK/nginx.conf" <<CONF
$user_line
worker_processes 1;
daemon off;
master_process on;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path $WORK/nginx-body;
  proxy_temp_path $WORK/nginx-proxy;
  fastcgi_temp_path $WORK/nginx-fastcgi;
  uwsgi_temp_path $WORK/nginx-uwsgi;
  scgi_temp_path $WORK/nginx-scgi;
  server {
    listen 127.0.0.1:$NGINX_PORT;
$locations  }
}
CONF
"$NGINX" -p "$WORK" -e "$WORK/nginx-error.log" -c "$WORK/nginx.conf" \
  >"$WORK/nginx.out" 2>&1 &
NGINX_PID=$!
wait_http "http://127.0.0.1:$NGINX_PORT/r0" nginx "$WORK/nginx-error.log"
NGINX_BASE="http://127.0.0.1:$NGINX_PORT"
for i in "${!routes[@]}"; do
  echo "nginx ${routes[$i]} -> /r$i: $(curl -fsS "$NGINX_BASE/r$i")"
done

# --- wrk --------------------------------------------------------------------
run_wrk() {  # NAME URL -> prints req/s
  local out rps
  out=$(wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" "$2")
  rps=$(awk '/^Requests\/sec:/ {print $2}' <<<"$out")
  local lat errs
  lat=$(awk '/^    Latency/ {print $2}' <<<"$out")
  errs=$(grep -E 'Non-2xx|Socket errors' <<<"$out" | tr -s ' ' | paste -sd';' || true)
  printf '  %-6s %12s req/s  avg latency %-8s %s\n' "$1" "$rps" "$lat" "$errs" >&2
  echo "$rps"
}

echo "wrk -t1 -c$CONNECTIONS -d${DURATION}s, alternating (seqd --threads 1, nginx 1 worker):"
summary=()
for i in "${!routes[@]}"; do
  r=${routes[$i]}
  echo "$r" >&2
  seqd_rps=() nginx_rps=()
  for _ in $(seq "$ROUNDS"); do
    seqd_rps+=("$(run_wrk seqd "$SEQD_BASE$r")")
    nginx_rps+=("$(run_wrk nginx "$NGINX_BASE/r$i")")
  done
  summary+=("$(python3 - "$r" "${seqd_rps[@]}" "${nginx_rps[@]}" <<'PY'
import sys
route, v = sys.argv[1], [float(x) for x in sys.argv[2:]]
k = len(v) // 2
s, n = v[:k], v[k:]
ms, mn = sum(s) / k, sum(n) / k
print(f"{route}: seqd mean {ms:,.0f} req/s ({', '.join(f'{x:,.0f}' for x in s)}); "
      f"nginx mean {mn:,.0f} req/s ({', '.join(f'{x:,.0f}' for x in n)}); "
      f"ratio seqd/nginx = {ms / mn:.3f}")
PY
)")
done
printf '%s\n' "${summary[@]}"
