#!/usr/bin/env bash
# Installs what seqd needs to build on Debian 12 (run as root; python3 is
# there because configuring the tests needs it; help2man makes the man pages
# at build time). `--test` adds what the test
# suites need: MariaDB server, Galera and rsync (scripts/galera-test's cluster
# and its state transfers), clang and libFuzzer, Prometheus (promtool),
# Chromium (the status page and SSE browser tests) and Node.js with npm
# (scripts/node-deps: the OpenAPI lint, Prism and an SSE client) and Go
# (golang-go: the Go client's tests, go test -race, and go vet), the
# hostile probes' tools (scripts/probe: slowhttptest, testssl.sh, sqlmap),
# and ccache (the test command's builds share a compiler cache).
set -euo pipefail

packages=(build-essential cmake pkg-config libboost-dev libmysqlcppconn-dev nlohmann-json3-dev
          prometheus-cpp-dev libsqlite3-dev doctest-dev libbenchmark-dev libssl-dev openssl curl python3
          help2man)
if [[ "${1:-}" == "--test" ]]; then
  packages+=(mariadb-server galera-4 rsync clang-14 libclang-rt-14-dev chromium prometheus nodejs
             golang-go slowhttptest testssl.sh sqlmap ccache)
fi
# The .deb install test (ctest deb_package) and scripts/container-test:
# rootful Podman with runc (crun fails on this machine's cgroups), bridge
# networking, debootstrap for the debian:12 base (scripts/debian-base), and
# man-db to render the packaged man pages.
if [[ "${1:-}" == "--test" ]]; then
  packages+=(podman runc containernetworking-plugins iptables debootstrap python3-yaml man-db)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}" >&2
  SUDO=""
  [[ $(id -u) -eq 0 ]] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
