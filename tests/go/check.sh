#!/bin/sh
# gofmt and go vet over the Go client module (run from client/go; $1: go).
# Fails listing the files gofmt would change.
set -e
go=${1:-go}
out=$(gofmt -l .)
if [ -n "$out" ]; then
  echo "gofmt -l (run gofmt -w on these):"
  echo "$out"
  exit 1
fi
"$go" vet ./...
