#!/usr/bin/env bash
# cmake/link_check.sh, the link check of sanitized builds, on two small
# ThreadSanitizer libraries: one whose only undefined symbols are the
# runtime's links; one that calls a function no library defines fails, names
# the function, and leaves no library behind.
#
#   tests/layering/link_check_test.sh CXX REPO
set -euo pipefail
cxx=$1
check=$2/cmake/link_check.sh
dir=$(mktemp -d -t seqd-link-check-test.XXXXXX)
trap 'rm -rf "$dir"' EXIT
fail() {
  echo "link_check_test: $*" >&2
  exit 1
}

cat >"$dir/ok.cc" <<'CODE'
int counter;
int Bump() { return ++counter; }
CODE
cat >"$dir/bad.cc" <<'CODE'
int NotDefinedAnywhere();
int Call() { return NotDefinedAnywhere(); }
CODE
link=(-fsanitize=thread -fPIC -shared -Wl,--no-undefined -Wl,--warn-unresolved-symbols)

"$check" "$cxx" "${link[@]}" -o "$dir/libok.so" "$dir/ok.cc" ||
  fail "a library whose only undefined symbols are the runtime's was refused"
[[ -f $dir/libok.so ]] || fail "the accepted library was not written"
# The accepted library does call the runtime, or the check above proves nothing.
nm -u "$dir/libok.so" | grep -q ' __tsan_' || fail "ok.cc made no call into the runtime"

if "$check" "$cxx" "${link[@]}" -o "$dir/libbad.so" "$dir/bad.cc" 2>"$dir/err"; then
  fail "a library calling an undefined function was accepted"
fi
grep -q 'NotDefinedAnywhere' "$dir/err" || fail "the refusal does not name the function: $(cat "$dir/err")"
[[ ! -e $dir/libbad.so ]] || fail "the refused library was left behind"
echo "link_check_test: the runtime's symbols pass, any other undefined symbol fails the link"
