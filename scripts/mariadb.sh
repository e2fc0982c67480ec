#!/usr/bin/env bash
# Throwaway MariaDB server for tests.
#
#   scripts/mariadb.sh start DIR    install (if needed) and start mariadbd on a
#                                   free 127.0.0.1 port; prints the seqd URL
#                                   (mysql://seqd:seqd@127.0.0.1:PORT/seqd_test)
#                                   as the last line on stdout
#   scripts/mariadb.sh stop DIR     shut it down and wait for the process to exit
#   scripts/mariadb.sh restart DIR  stop, then start again on the SAME port and
#                                   datadir; prints the URL again
#   scripts/mariadb.sh url DIR      prints the URL of a server started in DIR
#
# Everything lives in DIR: data/, mariadb.sock, mariadb.pid, mariadb.err, port.
# Progress and errors go to stderr; stdout carries only the URL.
# --no-defaults everywhere so /etc/mysql and ~/.my.cnf cannot interfere.
#
# SEQD_MARIADB_BUFFER_POOL sets innodb_buffer_pool_size (default 64M; the
# message-store benchmark uses more so that it measures commits, not paging);
# SEQD_MARIADB_ARGS adds mariadbd options. Durability stays on either way
# (innodb_flush_log_at_trx_commit=1).
set -euo pipefail

readonly START_TIMEOUT_S=60
readonly STOP_TIMEOUT_S=60
readonly DB_NAME=seqd_test
readonly DB_USER=seqd
readonly DB_PASS=seqd

log() { echo "mariadb.sh: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}

usage() {
  echo "usage: $0 {start|stop|restart|url} DIR" >&2
  exit 2
}

need() {
  command -v "$1" >/dev/null 2>&1 || die "'$1' not found in PATH (install mariadb-server / mariadb-client)"
}

find_mariadbd() {
  local c
  for c in mariadbd /usr/sbin/mariadbd /usr/libexec/mariadbd mysqld /usr/sbin/mysqld; do
    if command -v "$c" >/dev/null 2>&1; then
      command -v "$c"
      return 0
    fi
  done
  die "mariadbd not found (install mariadb-server)"
}

# Prints a TCP port on 127.0.0.1 that was free a moment ago, below the
# kernel's ephemeral range (32768 and up by default) so that no outgoing
# connection takes it before mariadbd binds it, or while `restart` waits to
# bind it again; 10000-19999, apart from the test harness's 20000-31999.
free_port() {
  local p
  for _ in $(seq 1 200); do
    p=$((10000 + RANDOM % 10000))
    if ! port_in_use "$p"; then
      echo "$p"
      return 0
    fi
  done
  die "could not find a free port"
}

port_in_use() {
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# Sets the path globals for DIR $1 (made absolute) for command $2.
setup_paths() {
  if [ "$2" = start ]; then
    mkdir -p "$1" || die "cannot create $1"
  elif [ ! -d "$1" ]; then
    if [ "$2" = stop ]; then
      log "$1 does not exist; nothing to stop"
      exit 0
    fi
    die "$1 is not a directory: was a server ever started there?"
  fi
  DIR="$(cd "$1" && pwd -P)"
  DATADIR="$DIR/data"
  SOCK="$DIR/mariadb.sock"
  PIDFILE="$DIR/mariadb.pid"
  ERRLOG="$DIR/mariadb.err"
  PORTFILE="$DIR/port"
  # sun_path is 108 bytes including the NUL.
  if [ "${#SOCK}" -gt 107 ]; then
    die "socket path too long (${#SOCK} > 107 bytes): $SOCK; use a shorter DIR"
  fi
}

server_pid() {
  local pid=""
  [ -s "$PIDFILE" ] && pid="$(tr -dc '0-9' <"$PIDFILE")"
  if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
    # No (valid) pid file: find the server by its datadir, so a stop never
    # leaves a server behind.
    pid="$(pgrep -f -- "--datadir=$DATADIR( |$)" | head -n 1 || true)"
  fi
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

log_tail() {
  if [ -f "$ERRLOG" ]; then
    log "last lines of $ERRLOG:"
    tail -n 30 "$ERRLOG" >&2 || true
  fi
}

url() { echo "mysql://$DB_USER:$DB_PASS@127.0.0.1:$1/$DB_NAME"; }

root_client() { mariadb --no-defaults --protocol=socket --socket="$SOCK" -uroot; }

user_flag() {
  # mariadbd refuses to run as root without --user=root; as non-root, --user
  # only produces a warning, so pass it only when needed.
  if [ "$(id -u)" -eq 0 ]; then echo "--user=root"; fi
}

install_db() {
  if [ -d "$DATADIR/mysql" ]; then
    return 0
  fi
  need mariadb-install-db
  log "initializing datadir $DATADIR"
  mkdir -p "$DATADIR"
  local uf
  uf="$(user_flag)"
  local try
  for try in 1 2; do
    # shellcheck disable=SC2086
    if mariadb-install-db --no-defaults $uf --auth-root-authentication-method=normal \
      --datadir="$DATADIR" --skip-test-db >"$DIR/install.log" 2>&1; then
      return 0
    fi
    # The server's own words come first; the advice after them is the same
    # every time.
    log "mariadb-install-db failed (try $try of 2); the first lines of $DIR/install.log:"
    head -n 40 "$DIR/install.log" >&2 || true
    rm -rf "$DATADIR"
    mkdir -p "$DATADIR"
  done
  exit 1
}

# Launches mariadbd on port $1 and waits until it answers. Returns 3 if the
# port turned out to be taken (so start can retry with another port).
launch() {
  local port="$1" mariadbd uf pid=""
  mariadbd="$(find_mariadbd)"
  uf="$(user_flag)"
  rm -f "$SOCK" "$PIDFILE"
  : >"$ERRLOG"
  log "starting mariadbd on 127.0.0.1:$port (datadir $DATADIR)"
  # shellcheck disable=SC2086
  nohup "$mariadbd" --no-defaults $uf \
    --datadir="$DATADIR" --socket="$SOCK" --pid-file="$PIDFILE" --log-error="$ERRLOG" \
    --port="$port" --bind-address=127.0.0.1 --skip-name-resolve \
    --innodb-buffer-pool-size="${SEQD_MARIADB_BUFFER_POOL:-64M}" \
    --innodb-flush-log-at-trx-commit=1 --max-connections=500 ${SEQD_MARIADB_ARGS:-} \
    </dev/null >>"$DIR/mariadbd.out" 2>&1 &
  local launcher=$!
  local deadline=$((SECONDS + START_TIMEOUT_S))
  while :; do
    if mariadb-admin --no-defaults --protocol=socket --socket="$SOCK" -uroot \
      --connect-timeout=2 ping >/dev/null 2>&1; then
      break
    fi
    if ! kill -0 "$launcher" 2>/dev/null; then
      wait "$launcher" 2>/dev/null || true
      if grep -qiE 'address already in use|bind on tcp/ip port' "$ERRLOG" 2>/dev/null; then
        log "port $port is already in use"
        return 3
      fi
      log "mariadbd exited during startup"
      log_tail
      exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "mariadbd did not answer within ${START_TIMEOUT_S}s"
      log_tail
      pid="$(server_pid || true)"
      if [ -n "$pid" ]; then kill -KILL "$pid" 2>/dev/null || true; fi
      kill -KILL "$launcher" 2>/dev/null || true
      exit 1
    fi
    sleep 0.2
  done
  echo "$port" >"$PORTFILE"
  log "mariadbd is up (pid $(server_pid || echo '?'))"
}

create_user() {
  root_client <<SQL || die "creating database/user failed (see $ERRLOG)"
CREATE DATABASE IF NOT EXISTS \`$DB_NAME\`;
CREATE USER IF NOT EXISTS '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
GRANT ALL PRIVILEGES ON \`$DB_NAME\`.* TO '$DB_USER'@'127.0.0.1';
-- Scratch databases named ${DB_NAME}_* (tests that need a table of their own).
GRANT ALL PRIVILEGES ON \`${DB_NAME//_/\\_}\\_%\`.* TO '$DB_USER'@'127.0.0.1';
FLUSH PRIVILEGES;
SQL
}

cmd_start() {
  need mariadb-admin
  need mariadb
  if pid="$(server_pid)"; then
    die "a server is already running from $DIR (pid $pid); stop it first"
  fi
  install_db
  local port rc attempt
  for attempt in 1 2 3 4 5; do
    port="$(free_port)"
    rc=0
    launch "$port" || rc=$?
    [ "$rc" -eq 0 ] && break
    [ "$rc" -eq 3 ] || exit "$rc"
    [ "$attempt" -lt 5 ] || die "no free port after $attempt attempts"
  done
  create_user
  url "$port"
}

cmd_stop() {
  local pid
  if ! pid="$(server_pid)"; then
    log "no server running from $DIR"
    rm -f "$PIDFILE"
    return 0
  fi
  log "stopping mariadbd (pid $pid)"
  mariadb-admin --no-defaults --protocol=socket --socket="$SOCK" -uroot \
    --connect-timeout=5 shutdown >/dev/null 2>&1 || {
    log "mariadb-admin shutdown failed; sending SIGTERM to $pid"
    kill -TERM "$pid" 2>/dev/null || true
  }
  local deadline=$((SECONDS + STOP_TIMEOUT_S))
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "mariadbd (pid $pid) still running after ${STOP_TIMEOUT_S}s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.5
      break
    fi
    sleep 0.1
  done
  rm -f "$PIDFILE"
  log "stopped"
}

cmd_restart() {
  [ -s "$PORTFILE" ] || die "$PORTFILE missing: was a server ever started in $DIR?"
  [ -d "$DATADIR/mysql" ] || die "no datadir in $DATADIR: was a server ever started in $DIR?"
  local port
  port="$(tr -dc '0-9' <"$PORTFILE")"
  cmd_stop
  local deadline=$((SECONDS + 30))
  while port_in_use "$port"; do
    [ "$SECONDS" -lt "$deadline" ] || die "port $port is still in use; cannot restart on the same port"
    sleep 0.2
  done
  local rc=0
  launch "$port" || rc=$?
  [ "$rc" -eq 3 ] && die "port $port was taken by another process; cannot restart on the same port"
  [ "$rc" -eq 0 ] || exit "$rc"
  url "$port"
}

cmd_url() {
  [ -s "$PORTFILE" ] || die "$PORTFILE missing"
  url "$(tr -dc '0-9' <"$PORTFILE")"
}

[ $# -eq 2 ] || usage
case "$1" in
  start | stop | restart | url) ;;
  *) usage ;;
esac
setup_paths "$2" "$1"
case "$1" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  restart) cmd_restart ;;
  url) cmd_url ;;
  *) usage ;;
esac
