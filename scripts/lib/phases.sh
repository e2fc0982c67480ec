# Sourced by scripts/test.sh: wall time per phase, and a report at exit.
#
#   phase NAME      ends the phase running now (if any) and starts NAME
#   phase_end       ends the phase running now
#   phase_background, phase_join
#                   phases run beside the others (below)
#   phase_report    prints every phase's seconds and CPU use (the share of
#                   all cores' time that was busy; background phases
#                   overlap others and have none of their own), the total, and the 15
#                   slowest ctest suites of each ctest log named in
#                   PHASE_CTEST_LOGS (paths of files ctest's output was
#                   teed into)
#
# A phase still running when the script exits is reported as "(failed)"
# if the exit status is not 0. Times are whole seconds from $SECONDS.
PHASE_NAMES=()
PHASE_SECS=()
PHASE_BUSY=()
PHASE_CTEST_LOGS=()
phase_current=""
phase_started=0
phase_script_started=$SECONDS

# The machine's CPU time so far, "busy idle" in clock ticks (/proc/stat).
phase_cpu_ticks() {
  awk '/^cpu / { busy = $2 + $3 + $4 + $7 + $8; idle = $5 + $6; print busy, idle }' /proc/stat
}

phase_end() {
  [[ -n $phase_current ]] || return 0
  local busy idle
  read -r busy idle < <(phase_cpu_ticks)
  busy=$((busy - phase_busy0))
  idle=$((idle - phase_idle0))
  PHASE_NAMES+=("$phase_current")
  PHASE_SECS+=($((SECONDS - phase_started)))
  PHASE_BUSY+=($((busy + idle > 0 ? 100 * busy / (busy + idle) : 0)))
  phase_current=""
}

phase() {
  phase_end
  phase_current=$1
  phase_started=$SECONDS
  read -r phase_busy0 phase_idle0 < <(phase_cpu_ticks)
  echo "test: phase $1" >&2
}

# phase_background NAME LOG CMD...: runs CMD in the background, its output
# in LOG, as the phase NAME, beside whatever phases run meanwhile. Several
# may run at once; each is waited for by its NAME.
declare -A PHASE_BG_PID PHASE_BG_LOG PHASE_BG_STARTED
phase_background() {
  local name=$1 log=$2
  shift 2
  PHASE_BG_LOG[$name]=$log
  PHASE_BG_STARTED[$name]=$(date +%s)
  echo "test: phase $name (in the background; its output in $log)" >&2
  (
    rc=0
    "$@" || rc=$?
    date +%s >"$log.ended"
    exit "$rc"
  ) >"$log" 2>&1 &
  PHASE_BG_PID[$name]=$!
}

# phase_join NAME: waits for the background phase NAME and records its wall
# time, from its start to its end (not to the join). On failure it prints
# the end of its log and returns its status.
phase_join() {
  local name=$1 rc=0 ended
  wait "${PHASE_BG_PID[$name]}" || rc=$?
  local log=${PHASE_BG_LOG[$name]}
  ended=$(cat "$log.ended" 2>/dev/null || date +%s)
  PHASE_NAMES+=("$name (background)")
  PHASE_SECS+=($((ended - PHASE_BG_STARTED[$name])))
  PHASE_BUSY+=("")
  if ((rc != 0)); then
    tail -n 60 "$log" >&2
    echo "test: $name failed (the whole output: $log)" >&2
  fi
  return "$rc"
}

# Prints the slowest ctest suites of ctest log $1: "seconds name status".
phase_slowest_suites() {
  sed -n -E 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]+) \.*[^0-9]*([0-9.]+) sec$/\2 \1/p' "$1" |
    sort -rn | head -n 15 | awk '{ printf "test:   %8.1f s  %s\n", $1, $2 }'
}

phase_report() {
  local rc=$1
  if [[ -n $phase_current ]]; then
    ((rc == 0)) || phase_current+=" (failed)"
    phase_end
  fi
  echo "test: ---- time per phase: wall seconds, and how busy the CPUs were ----"
  local i busy
  for i in "${!PHASE_NAMES[@]}"; do
    busy=${PHASE_BUSY[$i]}
    printf 'test: %6d  %4s  %s\n' "${PHASE_SECS[$i]}" "${busy:+$busy%}" "${PHASE_NAMES[$i]}"
  done
  printf 'test: %6d        total\n' $((SECONDS - phase_script_started))
  local log
  for log in "${PHASE_CTEST_LOGS[@]}"; do
    [[ -f $log ]] || continue
    echo "test: ---- slowest suites in ${log} ----"
    phase_slowest_suites "$log"
  done
}
