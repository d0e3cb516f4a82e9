#!/usr/bin/env bash
# Runs qualifier-bench (arguments passed through) against a PostgreSQL of its own: the machine's
# default server (5432) cannot load pg_stat_statements without a restart and a config change,
# which nothing but the chaos run may do to it. The bench's server is a fresh initdb on a port of
# its own, TLS on as on the default server and in production, settings otherwise PostgreSQL's
# defaults (the same as Debian's: shared_buffers 128 MB, fsync and synchronous_commit on), with
# pg_stat_statements preloaded; it is removed when the run ends, however it ends.
set -euo pipefail
cd "$(dirname "$0")/.."
# The harness and the binaries it starts come from one build: release unless BENCH_PROFILE=dev
# (`make bench-smoke`, CI, which has only the dev build).
case ${BENCH_PROFILE:-release} in dev) sub=debug ;; *) sub=release ;; esac
rel=${CARGO_TARGET_DIR:-target}/$sub
dir=$(mktemp -d /tmp/qualifier-bench-pg.XXXXXX)
chmod 755 "$dir"
cleanup() { scripts/topology/postgres.sh down "$dir/pg" || true; rm -rf "$dir"; }
trap cleanup EXIT INT TERM
scripts/topology/certs.sh "$dir/certs"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
STATEMENTS=1 scripts/topology/postgres.sh up "$dir/pg" "$port" "$dir/certs"
QUALIFIER_BENCH_PG_LOG_DIR="$dir/pg/log" \
  QUALIFIER_TEST_PG="postgres://postgres:postgres@127.0.0.1:$port" "$rel/qualifier-bench" "$@"
