#!/usr/bin/env bash
# configuration_reference: docs/configuration.md is exactly what
# `seqd --help-markdown` prints (the option table behind --help), and every
# flag in --help is in it.
#   tests/docs/config_reference_test.sh SEQD REPO
set -euo pipefail
seqd=$1 repo=$2
if ! diff -u "$repo/docs/configuration.md" <("$seqd" --help-markdown); then
  echo "configuration_reference: docs/configuration.md differs from seqd --help-markdown;" \
    "regenerate it: build/seqd --help-markdown > docs/configuration.md" >&2
  exit 1
fi
flags=$("$seqd" --help | grep -oE '^  --[a-z0-9-]+' | grep -vE -- '--(help|help-markdown|version|print-config)$' \
  | sort -u)
n=0
for f in $flags; do
  grep -q -- "| \`$f\` |" "$repo/docs/configuration.md" || { echo "missing: $f" >&2; exit 1; }
  n=$((n + 1))
done
((n >= 30)) || { echo "configuration_reference: only $n flags in --help" >&2; exit 1; }
echo "configuration_reference: docs/configuration.md matches --help ($n options)"
