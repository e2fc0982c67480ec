#!/usr/bin/env bash
# The link check of a sanitized build (SEQD_LINK_CHECK with SEQD_SANITIZE in
# CMakeLists.txt), run by CMake as the LINKER_LAUNCHER of each library:
#
#   cmake/link_check.sh LINK COMMAND...
#
# A sanitized object calls its sanitizer's runtime (__tsan_read8, ...), which
# clang links statically into executables only, so a shared library cannot
# resolve those calls itself and a plain -Wl,--no-undefined fails on them.
# The library is therefore linked with -Wl,--no-undefined
# -Wl,--warn-unresolved-symbols: every undefined symbol becomes a linker
# warning, and this script fails the link (removing its output) when any of
# them is not the runtime's (__tsan_, __asan_, __ubsan_, __sanitizer_).
# Without a sanitizer, CMakeLists.txt uses plain -Wl,--no-undefined instead.
set -uo pipefail
log=$(mktemp -t seqd-link-check.XXXXXX)
trap 'rm -f "$log"' EXIT
"$@" 2>"$log"
rc=$?
runtime="\`__(tsan|asan|ubsan|sanitizer)_"
# The linker's other output, and the undefined references that are not the
# runtime's (each after its "in function" line), reach the build log.
awk -v runtime="undefined references? to ${runtime}" '
  /: in function `/ { held = $0; next }
  $0 ~ runtime { held = ""; next }
  { if (held != "") print held; held = ""; print }
  END { if (held != "") print held }' "$log" >&2
undefined=$(grep -o -E "undefined reference to \`[^']*'" "$log" | grep -v -E "$runtime" | sort -u)
if [[ -n $undefined ]]; then
  out=""
  prev=""
  for arg in "$@"; do
    [[ $prev == -o ]] && out=$arg
    prev=$arg
  done
  [[ -n $out ]] && rm -f "$out"
  echo "link check: ${out:-the library} leaves symbols undefined that no library it links defines:" >&2
  sed 's/^/link check:   /' <<<"$undefined" >&2
  exit 1
fi
exit "$rc"
