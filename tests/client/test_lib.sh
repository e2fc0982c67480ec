# Sourced by the client's shell tests (POSIX sh): a temporary directory
# removed on exit, free ports, and a seqd on SQLite to run examples against.

# with_tmp_dir NAME: makes the directory $tmp (under $TMPDIR, named after
# NAME) and, on exit, kills and reaps the process $pid (when set) and
# removes $tmp.
with_tmp_dir() {
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
  pid=
  trap remove_tmp_dir EXIT INT TERM
}
remove_tmp_dir() {
  if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  rm -rf "$tmp"
}

# free_port: prints a TCP port free on 127.0.0.1 at the time.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_seqd SEQD: starts SEQD on SQLite ($tmp/seqd.db), one thread, on
# free ports ($http_port, $tcp_port), logging warnings to $tmp/seqd.log; its
# process is $pid. Does not wait for it to listen.
start_seqd() {
  http_port=$(free_port)
  tcp_port=$(free_port)
  "$1" --store "sqlite:$tmp/seqd.db" --http-port "$http_port" --tcp-port "$tcp_port" \
    --threads 1 --log-level warn >"$tmp/seqd.log" 2>&1 &
  pid=$!
}

# ids_from_seqd EXAMPLE KEY: runs the ID example for 3 IDs of KEY against
# start_seqd's seqd (output in $tmp/ids, errors in $tmp/err) until it
# succeeds: every 0.1 s, at most 100 times, while seqd runs. Fails if it
# never did.
ids_from_seqd() {
  for _ in $(seq 100); do
    "$1" --endpoints "127.0.0.1:$tcp_port" "$2" 3 >"$tmp/ids" 2>"$tmp/err" && return 0
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}
