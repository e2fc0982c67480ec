#!/bin/sh
# usage: make_certs.sh DIR
# Makes a throw-away PKI for TLS tests with the openssl CLI (works with
# OpenSSL 3.0): ECDSA P-256 keys, valid for 2 days, written to DIR (created
# if needed; existing files are overwritten):
#   ca.crt ca.key             the test CA
#   server.crt server.key     signed by it; SAN IP:127.0.0.1 and DNS:localhost, serverAuth
#                             and clientAuth (a cluster instance presents it to its peers)
#   client.crt client.key     signed by it; CN seqd-test-client, clientAuth (mTLS)
#   other-ca.crt other-ca.key an unrelated CA (to check that verification fails)
#   other.crt other.key       signed by other-ca; same SANs as server.crt
# Prints nothing on success; exits non-zero (with openssl's message) on failure.
set -eu
dir=${1:?usage: make_certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
umask 077

# make_ca NAME CN
make_ca() {
  openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -keyout "$1.key" -out "$1.crt" -days 2 -subj "/CN=$2" \
    -addext "basicConstraints=critical,CA:TRUE" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
}

# make_leaf NAME CA CN EXTENSIONS
make_leaf() {
  openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
    -keyout "$1.key" -out "$1.csr" -subj "/CN=$3" 2>/dev/null
  printf '%s\n' "$4" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$2.crt" -CAkey "$2.key" -set_serial "0x$(openssl rand -hex 8)" \
    -days 2 -out "$1.crt" -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}

server_ext='basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=IP:127.0.0.1,DNS:localhost'
client_ext='basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=clientAuth'

make_ca ca "seqd test CA"
make_ca other-ca "seqd other test CA"
make_leaf server ca localhost "$server_ext"
make_leaf client ca seqd-test-client "$client_ext"
make_leaf other other-ca localhost "$server_ext"
chmod 644 ./*.crt
