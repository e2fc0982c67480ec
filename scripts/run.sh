#!/usr/bin/env bash
# Builds seqd (Release) and runs it on the embedded SQLite store under ./data,
# on 127.0.0.1:8080. Extra arguments go to seqd (see build/seqd --help).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 --target seqd
mkdir -p data
exec build/seqd --store sqlite:./data/seqd.db --http-address 127.0.0.1 --http-port 8080 "$@"
