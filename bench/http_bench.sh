#!/usr/bin/env bash
# HTTP throughput of seqd next to nginx returning a fixed JSON body of similar
# size, both measured with wrk on this machine (nothing pinned: wrk and the
# servers share the cores, so read the ratio, not the absolute numbers).
#
#   DURATION=10 CONNECTIONS=64 bench/http_bench.sh
#
# Builds seqd Release in build-release, runs seqd (--threads 1, temp SQLite)
# and nginx (1 worker), then wrk: seqd, nginx, seqd, nginx.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-64}
BUILD_DIR=${BUILD_DIR:-build-release}

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

# --- build ------------------------------------------------------------------
cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DSEQD_BUILD_TESTS=OFF \
  -DSEQD_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD_DIR" -j2 --target seqd >/dev/null
SEQD="$BUILD_DIR/seqd"

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
"$SEQD" --store "sqlite:$WORK/seqd.db" --http-port "$SEQD_PORT" --threads 1 \
  --log-level warn >"$WORK/seqd.log" 2>&1 &
SEQD_PID=$!
wait_http "http://127.0.0.1:$SEQD_PORT/healthz" seqd "$WORK/seqd.log"
curl -fsS -o /dev/null -X POST "http://127.0.0.1:$SEQD_PORT/admin/keys" \
  -H 'Content-Type: application/json' -d '{"key":"bench","step":100000}'
SEQD_URL="http://127.0.0.1:$SEQD_PORT/seq/bench"
echo "seqd  sample: $(curl -fsS "$SEQD_URL")"

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
    location / {
      default_type application/json;
      return 200 '{"key":"bench","id":123456}';
    }
  }
}
CONF
"$NGINX" -p "$WORK" -e "$WORK/nginx-error.log" -c "$WORK/nginx.conf" \
  >"$WORK/nginx.out" 2>&1 &
NGINX_PID=$!
wait_http "http://127.0.0.1:$NGINX_PORT/" nginx "$WORK/nginx-error.log"
NGINX_URL="http://127.0.0.1:$NGINX_PORT/seq/bench"
echo "nginx sample: $(curl -fsS "$NGINX_URL")"

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
seqd_rps=() nginx_rps=()
for _ in 1 2; do
  seqd_rps+=("$(run_wrk seqd "$SEQD_URL")")
  nginx_rps+=("$(run_wrk nginx "$NGINX_URL")")
done

python3 - "${seqd_rps[@]}" "${nginx_rps[@]}" <<'PY'
import sys
v = [float(x) for x in sys.argv[1:]]
s, n = v[:2], v[2:]
ms, mn = sum(s) / 2, sum(n) / 2
print(f"seqd  mean {ms:,.0f} req/s  (runs: {', '.join(f'{x:,.0f}' for x in s)})")
print(f"nginx mean {mn:,.0f} req/s  (runs: {', '.join(f'{x:,.0f}' for x in n)})")
print(f"ratio seqd/nginx = {ms / mn:.3f}")
PY
