#!/usr/bin/env bash
# PostgreSQL clusters of our own, beside (never instead of) the default one on 5432. Everything
# lives under DIR (data, sockets, logs), so `down` (or rm -rf) leaves nothing behind: no
# /etc/postgresql entry that the machine's own start commands would pick up.
#
#   postgres.sh up DIR PORT [CERTDIR] [STANDBY_PORT]
#       a primary on 127.0.0.1:PORT; TLS on with certs.sh's server certificate when CERTDIR is
#       given (CERTDIR "-" means TLS off); with STANDBY_PORT also a synchronous standby
#       (pg_basebackup, synchronous_standby_names) streaming from it
#       with STATEMENTS=1 in the environment the primary also preloads pg_stat_statements with
#       planning tracked, and auto_explain (silent until a database turns it on), and writes a
#       JSON log to DIR/log (the benchmark's server: scripts/bench.sh)
#   postgres.sh kill-primary DIR   kill -9 the primary's postmaster
#   postgres.sh promote DIR        promote the standby (pg_ctl promote), wait until it writes
#   postgres.sh down DIR           stop both, remove DIR
set -euo pipefail
cmd=${1:?usage: postgres.sh up|kill-primary|promote|down DIR ...}
dir=${2:?DIR}
bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
as_pg() { runuser -u postgres -- "$@"; }
# On failure the server's own log says why (a port taken, memory, a bad setting): print its end.
pgctl() {
  as_pg "$bin/pg_ctl" -D "$dir/$1" -l "$dir/$1.log" -w -t 60 "${@:2}" >/dev/null || {
    echo "postgres.sh: pg_ctl ${*:2} failed for $dir/$1; the end of its log:" >&2
    tail -n 20 "$dir/$1.log" >&2 || true
    return 1
  }
}

case $cmd in
up)
  port=${3:?PORT}; certs=${4:--}; standby=${5:-}
  for p in $port $standby; do
    if (exec 3<>/dev/tcp/127.0.0.1/$p) 2>/dev/null; then
      echo "postgres.sh: port $p is in use" >&2; exit 1
    fi
  done
  mkdir -p "$dir"; chown postgres:postgres "$dir"; chmod 755 "$dir"
  as_pg "$bin/initdb" -D "$dir/primary" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
  {
    echo "port = $port"
    echo "listen_addresses = '127.0.0.1'"
    echo "unix_socket_directories = '$dir'"
    echo "max_connections = 200"
    echo "wal_level = replica"
    echo "max_wal_senders = 5"
    echo "fsync = on"
    if [[ ${STATEMENTS:-0} == 1 ]]; then
      echo "shared_preload_libraries = 'pg_stat_statements,auto_explain'"
      echo "pg_stat_statements.track_planning = on"
      echo "pg_stat_statements.max = 10000"
      echo "logging_collector = on"
      echo "log_destination = 'stderr,jsonlog'"
      echo "log_directory = '$dir/log'"
      echo "log_file_mode = 0644"
    fi
    if [[ $certs != - ]]; then
      cp "$certs/server.pem" "$certs/server.key" "$dir/primary/"
      chown postgres:postgres "$dir/primary/server.pem" "$dir/primary/server.key"
      chmod 600 "$dir/primary/server.key"
      echo "ssl = on"
      echo "ssl_cert_file = 'server.pem'"
      echo "ssl_key_file = 'server.key'"
    else
      echo "ssl = off"
    fi
    if [[ -n $standby ]]; then
      # Every commit waits until the standby has it: a failover loses no committed event.
      echo "synchronous_standby_names = '*'"
      echo "synchronous_commit = on"
    fi
  } >> "$dir/primary/postgresql.auto.conf"
  {
    echo "local all all trust"
    echo "host all all 127.0.0.1/32 trust"
    echo "host replication all 127.0.0.1/32 trust"
  } > "$dir/primary/pg_hba.conf"
  pgctl primary start
  echo "$port" > "$dir/primary.port"
  if [[ -n $standby ]]; then
    as_pg "$bin/pg_basebackup" -h 127.0.0.1 -p "$port" -U postgres -D "$dir/standby" -R -X stream >/dev/null
    {
      echo "port = $standby"
      echo "primary_conninfo = 'host=127.0.0.1 port=$port user=postgres application_name=standby'"
      # Once promoted it has no standby of its own: waiting for one would stop every commit.
      echo "synchronous_standby_names = ''"
    } >> "$dir/standby/postgresql.auto.conf"
    pgctl standby start
    echo "$standby" > "$dir/standby.port"
    for _ in $(seq 60); do
      state=$(as_pg psql -h 127.0.0.1 -p "$port" -U postgres -Atc \
        "SELECT sync_state FROM pg_stat_replication" 2>/dev/null || true)
      [[ $state == sync ]] && break
      sleep 0.5
    done
    [[ $state == sync ]] || { echo "postgres.sh: the standby never became synchronous" >&2; exit 1; }
  fi
  ;;
kill-primary)
  kill -9 "$(head -1 "$dir/primary/postmaster.pid")"
  ;;
promote)
  pgctl standby promote
  port=$(cat "$dir/standby.port")
  for _ in $(seq 60); do
    [[ $(as_pg psql -h 127.0.0.1 -p "$port" -U postgres -Atc "SELECT pg_is_in_recovery()" 2>/dev/null) == f ]] && exit 0
    sleep 0.25
  done
  echo "postgres.sh: the standby did not leave recovery" >&2; exit 1
  ;;
down)
  [[ -d $dir ]] || exit 0
  for c in standby primary; do
    if [[ -f $dir/$c/postmaster.pid ]]; then
      as_pg "$bin/pg_ctl" -D "$dir/$c" -m immediate stop >/dev/null 2>&1 || \
        kill -9 "$(head -1 "$dir/$c/postmaster.pid")" 2>/dev/null || true
    fi
  done
  rm -rf "$dir"
  ;;
*)
  echo "postgres.sh: unknown command $cmd" >&2; exit 2 ;;
esac
