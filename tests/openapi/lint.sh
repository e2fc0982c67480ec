#!/bin/sh
# ctest openapi_lint: Redocly's lint of docs/openapi.yaml with
# tests/openapi/redocly.yaml (every recommended rule an error), from the
# pinned tools of tests/node. Fails, never skips, when they are not
# installed: run scripts/node-deps.
#   lint.sh REPO
set -eu
repo=$1
node_dir="$repo/tests/node"
if [ ! -x "$node_dir/node_modules/.bin/redocly" ]; then
  echo "openapi_lint: $node_dir/node_modules has no redocly; run scripts/node-deps" >&2
  exit 1
fi
cd "$node_dir"
exec npx --no-install redocly lint ../../docs/openapi.yaml --config ../openapi/redocly.yaml
