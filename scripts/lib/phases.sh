# Sourced by scripts/test.sh: wall time per phase, and a report at exit.
#
#   phase NAME      ends the phase running now (if any) and starts NAME
#   phase_end       ends the phase running now
#   phase_report    prints every phase's seconds, the total, and the 15
#                   slowest ctest suites of each ctest log named in
#                   PHASE_CTEST_LOGS (paths of files ctest's output was
#                   teed into)
#
# A phase still running when the script exits is reported as "(failed)"
# if the exit status is not 0. Times are whole seconds from $SECONDS.
PHASE_NAMES=()
PHASE_SECS=()
PHASE_CTEST_LOGS=()
phase_current=""
phase_started=0
phase_script_started=$SECONDS

phase_end() {
  [[ -n $phase_current ]] || return 0
  PHASE_NAMES+=("$phase_current")
  PHASE_SECS+=($((SECONDS - phase_started)))
  phase_current=""
}

phase() {
  phase_end
  phase_current=$1
  phase_started=$SECONDS
  echo "test: phase $1" >&2
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
  echo "test: ---- time per phase (wall, seconds) ----"
  local i
  for i in "${!PHASE_NAMES[@]}"; do
    printf 'test: %6d  %s\n' "${PHASE_SECS[$i]}" "${PHASE_NAMES[$i]}"
  done
  printf 'test: %6d  total\n' $((SECONDS - phase_script_started))
  local log
  for log in "${PHASE_CTEST_LOGS[@]}"; do
    [[ -f $log ]] || continue
    echo "test: ---- slowest suites in ${log} ----"
    phase_slowest_suites "$log"
  done
}
