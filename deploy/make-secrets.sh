#!/bin/sh
# usage: deploy/make-secrets.sh [DIR]
# Makes the secrets deploy/compose.yaml mounts, in DIR (default
# deploy/secrets; existing files are kept):
#   tokens            seqd's tokens file: "cluster" (scope cluster), "app"
#                     (ids:*, snowflake, msg:send:*, msg:read:*) and "admin",
#                     digests only
#   cluster_token     the secret each instance presents to the others
#   app_token         the secret for clients (Authorization: Bearer ...)
#   admin_token       the secret for operators ("admin": keys, /admin/cluster)
#   db_password       MariaDB's seqd user, read by seqd and MariaDB
#   grafana_password  Grafana's admin
# The token lines come from `seqctl token new`: seqctl from $SEQCTL, else on
# PATH, else the seqd image (podman or docker run --entrypoint seqctl).
set -eu
dir=${1:-$(dirname "$0")/secrets}
image=${SEQD_IMAGE:-localhost/seqd:latest}

run_seqctl() {
  if [ -n "${SEQCTL:-}" ]; then "$SEQCTL" "$@"
  elif command -v seqctl >/dev/null 2>&1; then seqctl "$@"
  elif command -v podman >/dev/null 2>&1; then
    podman --runtime "${PODMAN_RUNTIME:-runc}" run --rm --network none --no-healthcheck \
      --entrypoint seqctl "$image" "$@"
  else docker run --rm --network none --no-healthcheck --entrypoint seqctl "$image" "$@"
  fi
}
random() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }
# A token's secret into $1, its tokens-file line appended to $dir/tokens.new.
token() {
  out=$(run_seqctl token new --id "$2" --scopes "$3")
  printf '%s\n' "$out" | sed -n '2p' | tr -d ' ' >"$dir/$1"
  printf '%s\n' "$out" | sed -n '4p' | sed 's/^ *//' >>"$dir/tokens.new"
}

mkdir -p "$dir"
chmod 700 "$dir"
umask 022  # the files are mounted into containers that run as other users
if [ ! -f "$dir/tokens" ]; then
  : >"$dir/tokens.new"
  token cluster_token cluster cluster
  token app_token app 'ids:*,snowflake,msg:send:*,msg:read:*'
  token admin_token admin admin
  mv "$dir/tokens.new" "$dir/tokens"
fi
[ -f "$dir/db_password" ] || random >"$dir/db_password"
[ -f "$dir/grafana_password" ] || random >"$dir/grafana_password"
echo "secrets in $dir: $(ls "$dir" | tr '\n' ' ')"
