#!/usr/bin/env bash
# usage: deb_package_test.sh BUILD_DIR SOURCE_DIR VERSION
# The Debian package of BUILD_DIR (cmake/packaging.cmake):
#   1. `cpack -G DEB` makes seqd_VERSION_amd64.deb with the binaries, their
#      man pages (rendered here with man -l), the configuration as a conffile
#      pointing at /var/lib/seqd, the unit, the dashboards and rules, and the
#      runtime libraries as dependencies;
#   2. the unit has its user, state directory and hardening;
#   3. in a fresh debian:12 container (scripts/debian-base), `apt-get install`
#      of the .deb works; seqd --version, seqctl --help and seqbench --help
#      run; the installed unit passes `systemd-analyze verify`; the unit's
#      ExecStart command line, run as an unprivileged user in the unit's
#      WorkingDirectory (systemd is not PID 1 there), serves an ID, keeps its
#      database in /var/lib/seqd and stops cleanly on SIGTERM.
# Needs root, cpack, dpkg-deb, man, podman, runc and debootstrap
# (scripts/deps.sh --test); fails with a message when one is missing.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
version=$3
deb=seqd_${version}_amd64.deb
tmp=$(mktemp -d -t seqd-deb-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT  # replaced once the containers start

fail() {
  echo "deb_package_test: FAIL: $*" >&2
  exit 1
}
[[ $(id -u) -eq 0 ]] || fail "needs root (rootful podman)"
for tool in cpack dpkg-deb podman runc debootstrap man; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/deps.sh --test installs it)"
done

echo "== cpack -G DEB in $build"
start=$(date +%s)
(cd "$build" && cpack -G DEB -B "$tmp/out") >"$tmp/cpack.log" 2>&1 ||
  { cat "$tmp/cpack.log" >&2; fail "cpack failed"; }
[[ -f $tmp/out/$deb ]] || fail "cpack made no $deb: $(ls "$tmp/out")"
echo "$deb: $(stat -c %s "$tmp/out/$deb") bytes, made in $(($(date +%s) - start)) s"

echo "== contents"
dpkg-deb -c "$tmp/out/$deb" | awk '{print $6}' >"$tmp/files"
for f in ./usr/bin/seqd ./usr/bin/seqctl ./usr/bin/seqbench ./etc/seqd/seqd.conf \
  ./usr/lib/systemd/system/seqd.service ./usr/share/seqd/grafana/seqd-dashboard.json \
  ./usr/share/seqd/prometheus/seqd-alerts.yml ./usr/share/seqd/prometheus/prometheus.yml \
  ./usr/share/doc/seqd/README.md ./usr/share/man/man1/seqd.1.gz ./usr/share/man/man1/seqctl.1.gz \
  ./usr/share/man/man1/seqbench.1.gz; do
  grep -qx -- "$f" "$tmp/files" || fail "$deb has no $f"
done
if grep -E '^\./usr/(local|include)|\.a$|/cmake/' "$tmp/files"; then
  fail "$deb holds the client library's development files"
fi
dpkg-deb -e "$tmp/out/$deb" "$tmp/control"
grep -qx /etc/seqd/seqd.conf "$tmp/control/conffiles" || fail "/etc/seqd/seqd.conf is no conffile"
[[ $(dpkg-deb -f "$tmp/out/$deb" Package Version Architecture | tr '\n' ' ') == \
  "Package: seqd Version: $version Architecture: amd64 " ]] || fail "control: $(dpkg-deb -f "$tmp/out/$deb")"
depends=$(dpkg-deb -f "$tmp/out/$deb" Depends)
echo "Depends: $depends"
for lib in procps libc6 libstdc++6 libsqlite3-0 libmysqlcppconn7v5 libssl3 libprometheus-cpp-core1.0; do
  tr ',' '\n' <<<"$depends" | awk '{print $1}' | grep -qxF "$lib" || fail "Depends lacks $lib"
done

dpkg-deb -x "$tmp/out/$deb" "$tmp/root"
grep -qx 'store = sqlite:/var/lib/seqd/seqd.db' "$tmp/root/etc/seqd/seqd.conf" ||
  fail "the packaged seqd.conf does not keep the database in /var/lib/seqd"

for page in seqd seqctl seqbench; do
  MANWIDTH=80 man -P cat -l "$tmp/root/usr/share/man/man1/$page.1.gz" >"$tmp/$page.txt" 2>&1 ||
    fail "man -l $page.1.gz: $(cat "$tmp/$page.txt")"
  grep -qx SYNOPSIS "$tmp/$page.txt" && grep -qE "^ *$page +- " "$tmp/$page.txt" ||
    fail "the packaged $page.1.gz has no NAME or SYNOPSIS"
done

echo "== the unit"
unit=$tmp/root/usr/lib/systemd/system/seqd.service
for doc in $(sed -n 's|^Documentation=file://||p' "$unit"); do
  [[ -f $tmp/root$doc ]] || fail "seqd.service names $doc, which the package lacks"
done
for d in DynamicUser=yes StateDirectory=seqd WorkingDirectory=/var/lib/seqd Restart=on-failure \
  ProtectSystem=strict ProtectHome=yes PrivateTmp=yes NoNewPrivileges=yes CapabilityBoundingSet= \
  'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' SystemCallFilter=@system-service \
  'ExecStart=/usr/bin/seqd --config /etc/seqd/seqd.conf'; do
  grep -qx -- "$d" "$unit" || fail "seqd.service lacks '$d'"
done

echo "== apt-get install ./$deb in a fresh debian:12 container"
"$src/scripts/debian-base"
podman=(podman --runtime runc)
limits=(--ulimit nofile=1024:1024 --ulimit nproc=1000:1000)
name=seqd-deb-test-$$
image=localhost/$name
cleanup() {
  "${podman[@]}" rm -f -t 1 "$name" "$name-systemd" >/dev/null 2>&1 || true
  "${podman[@]}" rmi -f "$image" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
start=$(date +%s)
"${podman[@]}" run --name "$name" "${limits[@]}" -v "$tmp/out:/pkg:ro" \
  docker.io/library/debian:12 bash -euo pipefail -c '
export DEBIAN_FRONTEND=noninteractive
echo "Acquire::Retries \"3\";" >/etc/apt/apt.conf.d/80retries  # a slow mirror is no failure
apt-get update -qq
cd /pkg && apt-get install -y -qq --no-install-recommends ./'"$deb"' >/tmp/apt.log 2>&1 ||
  { cat /tmp/apt.log; exit 1; }
seqd --version
seqctl --help >/tmp/seqctl-help && head -n 1 /tmp/seqctl-help  # no pipe: head would SIGPIPE a long help
seqbench --help >/dev/null
# systemd, to check and run the unit below.
apt-get install -y -qq --no-install-recommends systemd >/tmp/apt.log 2>&1 ||
  { cat /tmp/apt.log; exit 1; }
unit=/usr/lib/systemd/system/seqd.service
systemd-analyze verify $unit >/tmp/verify 2>&1 ||
  { cat /tmp/verify; echo "systemd-analyze verify failed"; exit 1; }
if [[ -s /tmp/verify ]]; then cat /tmp/verify; echo "systemd-analyze verify warned"; exit 1; fi
echo "systemd-analyze verify $unit: clean"
' || fail "apt-get install of the package failed (output above)"
"${podman[@]}" commit -q "$name" "$image" >/dev/null
"${podman[@]}" rm "$name" >/dev/null
echo "installed in $(($(date +%s) - start)) s"

echo "== the unit's ExecStart, without systemd"
"${podman[@]}" run --rm "${limits[@]}" --network none "$image" bash -euo pipefail -c '
# What systemd does: a user of its own, the StateDirectory, then ExecStart.
useradd --system --no-create-home --shell /usr/sbin/nologin seqd-unit
unit=/usr/lib/systemd/system/seqd.service
state=/var/lib/$(sed -n "s/^StateDirectory=//p" $unit)
mkdir -p "$state" && chown seqd-unit: "$state" && chmod 700 "$state"
cd "$(sed -n "s/^WorkingDirectory=//p" $unit)"
cmd=$(sed -n "s/^ExecStart=//p" $unit)
echo "ExecStart: $cmd"
setpriv --reuid=seqd-unit --regid=seqd-unit --clear-groups --no-new-privs $cmd 2>/tmp/seqd.log &
pid=$!
for i in $(seq 1 100); do
  seqctl ping >/dev/null 2>&1 && break
  kill -0 $pid 2>/dev/null || { cat /tmp/seqd.log; echo "seqd exited"; exit 1; }
  sleep 0.1
done
id=$(seqctl next sg_deb)
[[ $id =~ ^[0-9]+$ ]] || { cat /tmp/seqd.log; echo "no ID: $id"; exit 1; }
echo "ID from the installed seqd: $id"
test -s "$state/seqd.db" || { echo "no database in $state"; exit 1; }
[[ $(stat -c %U "$state/seqd.db") == seqd-unit ]] || { echo "seqd.db not owned by the unit user"; exit 1; }
kill -TERM $pid
wait $pid || { cat /tmp/seqd.log; echo "seqd did not exit cleanly on SIGTERM"; exit 1; }
echo "seqd stopped cleanly on SIGTERM"
' || fail "the unit's ExecStart did not serve (output above)"

# systemd as PID 1 runs the unit itself, with its user and sandbox (setting
# up the sandbox's namespaces needs a privileged container).
echo "== systemctl enable --now seqd, systemd as PID 1"
"${podman[@]}" run -d --name "$name-systemd" "${limits[@]}" --privileged --systemd=always \
  --network none "$image" /lib/systemd/systemd >/dev/null
in_ctr() { "${podman[@]}" exec "$name-systemd" "$@"; }
journal() { in_ctr journalctl -u seqd --no-pager | tail -n 20 >&2 || true; }
for i in $(seq 1 100); do
  state=$(in_ctr systemctl is-system-running 2>/dev/null || true)
  [[ $state == running || $state == degraded ]] && break
  sleep 0.1
done
[[ $state == running || $state == degraded ]] || fail "systemd did not boot: $state"
[[ $(in_ctr systemctl is-enabled seqd || true) == disabled ]] || fail "installing enabled seqd"
in_ctr systemctl enable --now seqd || { journal; fail "systemctl enable --now seqd"; }
take() {
  for i in $(seq 1 100); do
    in_ctr seqctl ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  in_ctr seqctl next sg_unit || { journal; fail "no ID from the seqd that systemd started"; }
}
first=$(take)
user=$(in_ctr ps -o user= -C seqd | tr -d ' ')
[[ -n $user && $user != root ]] || fail "seqd runs as '$user' under the unit"
in_ctr test -s /var/lib/private/seqd/seqd.db || fail "no database in the DynamicUser state directory"
in_ctr systemctl reload seqd || { journal; fail "systemctl reload seqd"; }
in_ctr systemctl restart seqd || { journal; fail "systemctl restart seqd"; }
second=$(take)
((second > first)) || fail "after systemctl restart ID $second is not above $first"
echo "IDs $first, then $second after a restart; seqd runs as $user (DynamicUser)"
in_ctr systemd-analyze security seqd --no-pager | tail -n 1
in_ctr systemctl stop seqd
result=$(in_ctr systemctl show -p Result --value seqd)
[[ $result == success ]] || { journal; fail "seqd stopped with result '$result'"; }
echo "systemctl stop: $result"
echo "deb_package_test: passed in $(($(date +%s) - start)) s after cpack"
