#!/usr/bin/env bash
# Makes the certificates the topology tests use, in DIR:
#   ca.pem / ca.key          a CA of our own
#   server.pem / server.key  signed by it, for localhost and 127.0.0.1 (both servers use it)
#   other-ca.pem             a second CA that signed nothing here (the "wrong CA" of the tests)
# Files are readable by the postgres and rabbitmq users, which run the servers.
set -euo pipefail
dir=${1:?usage: certs.sh DIR}
mkdir -p "$dir"
cd "$dir"
[[ -f server.pem ]] && exit 0
quiet() { "$@" >/dev/null 2>&1 || { echo "certs.sh: $* failed" >&2; "$@"; exit 1; }; }
quiet openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=Qualifier test CA" \
  -keyout ca.key -out ca.pem -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign"
quiet openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=Another CA" \
  -keyout other-ca.key -out other-ca.pem -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign"
quiet openssl req -newkey rsa:2048 -nodes -subj "/CN=localhost" -keyout server.key -out server.csr
cat > server.ext <<EXT
basicConstraints=CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=DNS:localhost,IP:127.0.0.1
EXT
quiet openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
  -extfile server.ext -out server.pem
chmod 755 .
chmod 644 ./*.pem
# PostgreSQL refuses a key others can read; both servers read the key as their own user.
chmod 640 server.key
