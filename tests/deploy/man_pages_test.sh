#!/bin/sh
# usage: man_pages_test.sh MAN_DIR SEQD SEQCTL SEQBENCH
# The man pages the build made with help2man (cmake/man_pages.cmake): each is
# gzipped, `man -l` renders it with NAME, SYNOPSIS and DESCRIPTION, it
# carries the program's --version line and documents --help and --version
# (seqd's also --print-config).
set -eu
dir=$1
shift
fail() {
  echo "FAIL: $*" >&2
  exit 1
}
command -v man >/dev/null || fail "man is not installed (Debian package man-db)"
for bin in "$@"; do
  name=$(basename "$bin")
  page=$dir/$name.1.gz
  [ -f "$page" ] || fail "no $page (the man_pages target makes it)"
  gzip -t "$page" || fail "$page is not gzip"
  text=$(MANWIDTH=200 man -P cat -l "$page" 2>&1) || fail "man -l $page: $text"
  for heading in NAME SYNOPSIS DESCRIPTION; do
    printf '%s\n' "$text" | grep -qx "$heading" || fail "$name.1 has no $heading section"
  done
  printf '%s\n' "$text" | grep -qE "^ *$name +- " || fail "$name.1: NAME is not '$name - ...'"
  version=$("$bin" --version)
  zcat "$page" | grep -qF "\"$version\"" || fail "$name.1 is not from '$version'"
  wanted="--help --version"
  [ "$name" = seqd ] && wanted="$wanted --print-config"
  for flag in $wanted; do
    printf '%s\n' "$text" | grep -qE -- "(^|[^A-Za-z0-9-])$flag([^A-Za-z0-9-]|$)" || fail "$name.1 does not mention $flag"
  done
  echo "ok: $name.1.gz ($version)"
done
