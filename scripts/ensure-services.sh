#!/usr/bin/env bash
# Makes sure PostgreSQL (127.0.0.1:5432) and RabbitMQ (127.0.0.1:5672) answer: starts them when
# installed but stopped, installs them with apt on a Debian-like machine where they are missing.
set -euo pipefail

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
wait_port() {
  for _ in $(seq 1 90); do port_open "$1" && return 0; sleep 1; done
  echo "ensure-services: $2 did not open port $1" >&2; return 1
}

install_with_apt() {
  if ! command -v apt-get >/dev/null; then
    echo "ensure-services: $* missing and no apt-get here; install them yourself" >&2; exit 1
  fi
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"
}

if ! port_open 5432; then
  if ! ls /etc/postgresql/*/main >/dev/null 2>&1; then
    install_with_apt postgresql
    fresh_pg=1
  fi
  ver=$(ls /etc/postgresql | sort -V | tail -n1)
  as_root pg_ctlcluster --skip-systemctl-redirect "$ver" main start || true
  wait_port 5432 PostgreSQL
  if [ "${fresh_pg:-}" = 1 ]; then
    # A fresh cluster only allows peer auth for postgres: give it the password the dev URLs use.
    as_root su postgres -c "psql -qc \"ALTER USER postgres PASSWORD 'postgres'\""
  fi
fi

if ! port_open 5672; then
  if ! command -v rabbitmq-server >/dev/null; then
    install_with_apt rabbitmq-server
  fi
  as_root rabbitmq-server -detached >/dev/null 2>&1 || true
  wait_port 5672 RabbitMQ
fi
