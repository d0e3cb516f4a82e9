#!/usr/bin/env bash
# What PostgreSQL's CPU costs for the least a durable write can be: one prepared INSERT of a
# 400-byte row into a table with only its primary key, committed with fsync and
# synchronous_commit on, from 32 clients over TLS, on a server made the way the benchmark's is
# (scripts/bench.sh: a fresh initdb on a port of its own, PostgreSQL's default settings). Every
# event costs at least one such commit (the change and its event are one transaction), so this
# is the floor under PostgreSQL's share of an event (docs/performance.md, "Not done yet, and
# why"; docs/capacity.md).
#
# Prints, for each of RUNS runs of SECONDS seconds (default 3 of 15): transactions, PostgreSQL's
# CPU (every process of the server, the backends read after they exit) and CPU per transaction.
# The server is removed when the script ends, however it ends.
#
# Usage: scripts/pg-floor.sh [RUNS] [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
secs=${2:-15}
dir=$(mktemp -d /tmp/qualifier-pg-floor.XXXXXX)
chmod 755 "$dir"
cleanup() { scripts/topology/postgres.sh down "$dir/pg" || true; rm -rf "$dir"; }
trap cleanup EXIT INT TERM
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
scripts/topology/certs.sh "$dir/certs" >/dev/null
scripts/topology/postgres.sh up "$dir/pg" "$port" "$dir/certs"
url="host=127.0.0.1 port=$port user=postgres dbname=postgres sslmode=require"
psql "$url" -qc "CREATE TABLE floor_event (seq bigserial PRIMARY KEY, org uuid NOT NULL, payload text NOT NULL)"
echo "INSERT INTO floor_event (org, payload) VALUES (gen_random_uuid(), repeat('x', 400));" >"$dir/insert.sql"
postmaster=$(head -1 "$dir/pg/primary/postmaster.pid")
ticks_per_s=$(getconf CLK_TCK)
# The server's CPU in clock ticks: the postmaster with the children it has reaped (each
# pgbench connection's backend, once it exits), and its children still running.
server_ticks() {
  local t c
  t=$(awk '{print $14 + $15 + $16 + $17}' "/proc/$postmaster/stat")
  for c in $(pgrep -P "$postmaster"); do
    t=$((t + $(awk '{print $14 + $15}' "/proc/$c/stat" 2>/dev/null || echo 0)))
  done
  echo "$t"
}
for run in $(seq "$runs"); do
  before=$(server_ticks)
  out=$(pgbench "$url" -n -M prepared -c 32 -j 2 -T "$secs" -f "$dir/insert.sql" 2>&1)
  # The backends have exited (pgbench disconnected); give the postmaster a moment to reap them.
  sleep 1
  after=$(server_ticks)
  tx=$(awk '/number of transactions actually processed/ {split($NF, a, "/"); print a[1]}' <<<"$out")
  python3 - "$run" "$tx" "$before" "$after" "$ticks_per_s" <<'PY'
import sys
run, tx, before, after, hz = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
cpu_ms = (after - before) * 1000 / hz
print(f"run {run}: {tx} transactions, PostgreSQL CPU {cpu_ms:.0f} ms, {cpu_ms * 1000 / tx:.1f} us per transaction")
PY
done
