#!/bin/sh
# usage: version_test.sh SEQD SOURCE_DIR [SEQCTL SEQBENCH]
# `seqd --version` names the version and the commit it was built from: in a
# git checkout, HEAD's first 12 hex digits (with -dirty when tracked files
# have changed); elsewhere "unknown". `seqctl --version` and
# `seqbench --version` print the same version and commit under their names.
set -eu
seqd=$1
src=$2
out=$("$seqd" --version)
if head=$(git -C "$src" rev-parse --short=12 HEAD 2>/dev/null); then
  want="commit $head"
else
  want="commit unknown"
fi
case "$out" in
  "seqd "[0-9]*.[0-9]*.[0-9]*" ($want)" | "seqd "[0-9]*.[0-9]*.[0-9]*" ($want-dirty)")
    echo "ok: $out" ;;
  *)
    echo "FAIL: seqd --version printed '$out'; wanted 'seqd X.Y.Z ($want[-dirty])'" >&2
    exit 1 ;;
esac
shift 2
for tool in "$@"; do
  name=$(basename "$tool")
  got=$("$tool" --version) || { echo "FAIL: $name --version exited $?" >&2; exit 1; }
  if [ "$got" != "$name ${out#seqd }" ]; then
    echo "FAIL: $name --version printed '$got'; wanted '$name ${out#seqd }'" >&2
    exit 1
  fi
  echo "ok: $got"
done
