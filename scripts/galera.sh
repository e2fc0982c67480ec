#!/usr/bin/env bash
# Throwaway MariaDB Galera cluster on loopback for tests (in the style of
# scripts/mariadb.sh, which runs a single server).
#
#   scripts/galera.sh start DIR [N]   N nodes (default 3), each with ports of its
#                                     own; the first bootstraps the cluster
#                                     (--wsrep-new-cluster), the others join
#                                     by rsync SST; prints the seqd URL with
#                                     every node (mysql://seqd:seqd@127.0.0.1:P1,
#                                     127.0.0.1:P2,.../seqd_test) as the last line
#   scripts/galera.sh stop DIR        shuts every node down (waits for exit)
#   scripts/galera.sh kill DIR I      kill -9 of node I (1-based)
#   scripts/galera.sh rejoin DIR I    starts node I again on its ports and datadir
#                                     (its position recovered with --wsrep-recover,
#                                     so it catches up by IST when the donor's
#                                     gcache holds the gap, else by SST) and waits
#                                     until it is Synced
#   scripts/galera.sh url DIR [I...]  the URL with the nodes in this order
#                                     (default 1..N)
#   scripts/galera.sh port DIR I      node I's client port
#   scripts/galera.sh status DIR I    node I's wsrep_local_state_comment
#
# Everything lives in DIR: nI/ (data/, sock, pid, mariadbd.err, ports) per node.
# --no-defaults everywhere so /etc/mysql and ~/.my.cnf cannot interfere.
# SEQD_GALERA_BUFFER_POOL sets innodb_buffer_pool_size (default 32M).
set -euo pipefail

readonly START_TIMEOUT_S=${SEQD_GALERA_START_TIMEOUT_S:-120}
readonly STOP_TIMEOUT_S=60
readonly DB_NAME=seqd_test
readonly DB_USER=seqd
readonly DB_PASS=seqd
readonly PROVIDER=/usr/lib/galera/libgalera_smm.so

log() { echo "galera.sh: $*" >&2; }
die() {
  log "error: $*"
  exit 1
}

usage() {
  echo "usage: $0 {start DIR [N]|stop DIR|kill DIR I|rejoin DIR I|url DIR [I...]|port DIR I|status DIR I}" >&2
  exit 2
}

# Galera cannot start without these: say so instead of failing later.
check_install() {
  [ -f "$PROVIDER" ] || die "$PROVIDER missing: install galera-4 (scripts/deps.sh --test)"
  command -v rsync >/dev/null 2>&1 || die "rsync missing (SST): install rsync (scripts/deps.sh --test)"
  command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] ||
    die "mariadbd missing: install mariadb-server (scripts/deps.sh --test)"
  command -v wsrep_sst_rsync >/dev/null 2>&1 || die "wsrep_sst_rsync missing (mariadb-server)"
}

# Hands DIR to the nodes' user (as root).
own_dir() {
  if [ "$(id -u)" -eq 0 ]; then
    id mysql >/dev/null 2>&1 || die "user mysql missing (mariadb-server creates it)"
    chmod 755 "$DIR"
    chown -R mysql:mysql "$DIR"
  fi
}

mariadbd_bin() { command -v mariadbd || echo /usr/sbin/mariadbd; }

# Prints N distinct TCP ports on 127.0.0.1 that were free a moment ago,
# below the kernel's ephemeral range (32768 and up by default): a node
# killed and rejoined binds its ports again, and an outgoing connection
# must not have taken one meanwhile (10000-19999, as scripts/mariadb.sh).
free_ports() {
  python3 -c 'import random, socket, sys
want, socks, seen = int(sys.argv[1]), [], set()
while len(socks) < want:
    port = random.randint(10000, 19999)
    if port in seen:
        continue
    seen.add(port)
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        s.close()
        continue
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))' "$1"
}

node_dir() { echo "$DIR/n$1"; }
node_count() { cat "$DIR/nodes"; }
# Port kind ($2: port, gport, istport, sstport) of node $1.
node_port() { tr -dc '0-9' <"$(node_dir "$1")/$2"; }
sock() { echo "$(node_dir "$1")/sock"; }

node_pid() {
  local d pid=""
  d="$(node_dir "$1")"
  [ -s "$d/pid" ] && pid="$(tr -dc '0-9' <"$d/pid")"
  if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then
    pid="$(pgrep -f -- "--datadir=$d/data( |$)" | head -n 1 || true)"
  fi
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

root_sql() { mariadb --no-defaults --protocol=socket --socket="$(sock "$1")" -uroot -N -B -e "$2"; }

status_of() { root_sql "$1" "SHOW STATUS LIKE 'wsrep_local_state_comment'" 2>/dev/null | cut -f2; }

gcomm() {
  local n i list=""
  n="$(node_count)"
  for i in $(seq 1 "$n"); do list+="${list:+,}127.0.0.1:$(node_port "$i" gport)"; done
  echo "gcomm://$list"
}

# Sets NODE_ARGS to node $1's mariadbd arguments (after the binary), the
# further arguments appended.
set_node_args() {
  local i="$1" d
  shift
  d="$(node_dir "$i")"
  local evs="evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S"
  evs+=";evs.suspect_timeout=PT2S;evs.inactive_timeout=PT3S;evs.install_timeout=PT3S"
  NODE_ARGS=(--no-defaults)
  # As root, the nodes run as mysql: the joiner's rsync daemon (SST) started
  # by root would switch to nobody and could not write the datadir.
  if [ "$(id -u)" -eq 0 ]; then NODE_ARGS+=(--user=mysql); fi
  NODE_ARGS+=(--datadir="$d/data" --socket="$d/sock" --pid-file="$d/pid"
    --log-error="$d/mariadbd.err" --port="$(node_port "$i" port)" --bind-address=127.0.0.1
    --skip-name-resolve --max-connections=500
    --innodb-buffer-pool-size="${SEQD_GALERA_BUFFER_POOL:-32M}" --innodb-log-file-size=48M
    --innodb-flush-log-at-trx-commit=1
    --binlog-format=ROW --default-storage-engine=InnoDB --innodb-autoinc-lock-mode=2
    --wsrep-on=ON --wsrep-provider="$PROVIDER" --wsrep-cluster-name=seqd_test
    --wsrep-cluster-address="$(gcomm)" --wsrep-node-name="n$i"
    --wsrep-node-address="127.0.0.1:$(node_port "$i" gport)"
    --wsrep-node-incoming-address="127.0.0.1:$(node_port "$i" port)"
    --wsrep-sst-method=rsync --wsrep-sst-receive-address="127.0.0.1:$(node_port "$i" sstport)"
    --wsrep-slave-threads=2
    "--wsrep-provider-options=gmcast.listen_addr=tcp://127.0.0.1:$(node_port "$i" gport);ist.recv_addr=127.0.0.1:$(node_port "$i" istport);gcache.size=64M;$evs"
    "$@")
}

install_db() {
  local d
  d="$(node_dir "$1")"
  [ -d "$d/data/mysql" ] && return 0
  mkdir -p "$d/data"
  local uf=()
  if [ "$(id -u)" -eq 0 ]; then uf=(--user=mysql); fi
  mariadb-install-db --no-defaults "${uf[@]}" --auth-root-authentication-method=normal \
    --datadir="$d/data" --skip-test-db >"$d/install.log" 2>&1 ||
    {
      tail -n 30 "$d/install.log" >&2
      die "mariadb-install-db failed for node $1"
    }
}

log_tail() {
  local d
  d="$(node_dir "$1")"
  log "last lines of $d/err:"
  tail -n 40 "$d/mariadbd.err" >&2 2>/dev/null || true
}

# Starts node $1 (extra mariadbd arguments after it) and waits until it is
# Synced.
launch() {
  local i="$1" d
  shift
  d="$(node_dir "$i")"
  rm -f "$d/sock" "$d/pid"
  set_node_args "$i" "$@"
  nohup "$(mariadbd_bin)" "${NODE_ARGS[@]}" </dev/null >>"$d/mariadbd.out" 2>&1 &
  local launcher=$!
  local deadline=$((SECONDS + START_TIMEOUT_S)) state=""
  while :; do
    state="$(status_of "$i" || true)"
    [ "$state" = Synced ] && break
    if ! kill -0 "$launcher" 2>/dev/null; then
      log_tail "$i"
      die "node $i (mariadbd) exited during startup"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      log_tail "$i"
      kill -KILL "$launcher" 2>/dev/null || true
      die "node $i not Synced within ${START_TIMEOUT_S}s (state: ${state:-no answer})"
    fi
    sleep 0.2
  done
  log "node $i is Synced (port $(node_port "$i" port), pid $(node_pid "$i" || echo '?'))"
}

url() {
  local hosts="" i
  for i in "$@"; do hosts+="${hosts:+,}127.0.0.1:$(node_port "$i" port)"; done
  echo "mysql://$DB_USER:$DB_PASS@$hosts/$DB_NAME"
}

all_nodes() { seq 1 "$(node_count)"; }
url_all() {
  local nodes
  mapfile -t nodes < <(all_nodes)
  url "${nodes[@]}"
}

cmd_start() {
  local n="${1:-3}" i
  check_install
  [ ! -e "$DIR/nodes" ] || die "$DIR already holds a cluster; stop it and use a fresh DIR"
  echo "$n" >"$DIR/nodes"
  local ports
  read -r -a ports <<<"$(free_ports $((4 * n)))"
  for i in $(seq 1 "$n"); do
    local d
    d="$(node_dir "$i")"
    mkdir -p "$d"
    local sockpath="$d/sock"
    [ "${#sockpath}" -le 107 ] || die "socket path too long: $sockpath; use a shorter DIR"
    echo "${ports[$((4 * (i - 1)))]}" >"$d/port"
    echo "${ports[$((4 * (i - 1) + 1))]}" >"$d/gport"
    echo "${ports[$((4 * (i - 1) + 2))]}" >"$d/istport"
    echo "${ports[$((4 * (i - 1) + 3))]}" >"$d/sstport"
  done
  own_dir
  install_db 1
  log "bootstrapping node 1"
  launch 1 --wsrep-new-cluster
  root_sql 1 "CREATE DATABASE IF NOT EXISTS \`$DB_NAME\`;
CREATE USER IF NOT EXISTS '$DB_USER'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
GRANT ALL PRIVILEGES ON \`$DB_NAME\`.* TO '$DB_USER'@'127.0.0.1';
GRANT ALL PRIVILEGES ON \`${DB_NAME//_/\\_}\\_%\`.* TO '$DB_USER'@'127.0.0.1';
GRANT PROCESS ON *.* TO '$DB_USER'@'127.0.0.1';" || die "creating database/user failed"
  # The joiners get everything (mysql.* included) by SST: their datadirs
  # start empty.
  for i in $(seq 2 "$n"); do
    mkdir -p "$(node_dir "$i")/data"
    own_dir
    log "node $i joins (SST)"
    launch "$i"
  done
  local size
  size="$(root_sql 1 "SHOW STATUS LIKE 'wsrep_cluster_size'" | cut -f2)"
  [ "$size" = "$n" ] || die "cluster size is $size, expected $n"
  url_all
}

cmd_stop() {
  [ -s "$DIR/nodes" ] || {
    log "no cluster in $DIR"
    return 0
  }
  local i pid pids=()
  # The last nodes first, the bootstrap node last (it then holds the
  # newest state, as it would for a restart).
  for i in $(all_nodes | sort -rn); do
    pid="$(node_pid "$i")" || continue
    mariadb-admin --no-defaults --protocol=socket --socket="$(sock "$i")" -uroot \
      --connect-timeout=5 shutdown >/dev/null 2>&1 || kill -TERM "$pid" 2>/dev/null || true
    pids+=("$pid")
  done
  local deadline=$((SECONDS + STOP_TIMEOUT_S))
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null; do
      if [ "$SECONDS" -ge "$deadline" ]; then
        kill -KILL "$pid" 2>/dev/null || true
        break
      fi
      sleep 0.1
    done
  done
  log "stopped"
}

cmd_kill() {
  local pid
  pid="$(node_pid "$1")" || die "node $1 is not running"
  kill -KILL "$pid"
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  log "node $1 killed (pid $pid)"
}

cmd_rejoin() {
  local i="$1" d pos
  d="$(node_dir "$i")"
  ! node_pid "$i" >/dev/null || die "node $i is running"
  # What the crashed node had committed, from its InnoDB log (as Debian's
  # galera_recovery does for systemd): with it the node asks for IST.
  rm -f "$d/recover.log"
  set_node_args "$i" --wsrep-recover --log-error="$d/recover.log"
  "$(mariadbd_bin)" "${NODE_ARGS[@]}" >/dev/null 2>&1 || true
  pos="$(sed -n 's/.*WSREP: Recovered position: *\([^ ]*\).*/\1/p' "$d/recover.log" | tail -n 1)"
  local extra=()
  if [ -n "$pos" ] && [[ "$pos" != *:-1 ]]; then
    log "node $i recovered position $pos"
    extra=(--wsrep-start-position="$pos")
  else
    log "node $i: no recovered position (SST)"
  fi
  launch "$i" "${extra[@]}"
  if grep -q "IST received" "$d/mariadbd.err" 2>/dev/null; then log "node $i caught up by IST"; fi
}

[ $# -ge 2 ] || usage
cmd="$1"
if [ "$cmd" = start ]; then mkdir -p "$2"; fi
[ -d "$2" ] || die "$2 is not a directory"
DIR="$(cd "$2" && pwd -P)"
shift 2
case "$cmd" in
  start) cmd_start "$@" ;;
  stop) cmd_stop ;;
  kill) [ $# -eq 1 ] || usage; cmd_kill "$1" ;;
  rejoin) [ $# -eq 1 ] || usage; cmd_rejoin "$1" ;;
  url) if [ $# -eq 0 ]; then url_all; else url "$@"; fi ;;
  port) [ $# -eq 1 ] || usage; node_port "$1" port; echo ;;
  status) [ $# -eq 1 ] || usage; status_of "$1" ;;
  *) usage ;;
esac
