#!/usr/bin/env bash
# What one delivered event costs the database in each of two storage shapes, measured on the
# same PostgreSQL, one session, no application in between (docs/performance.md, "Two shapes of
# the outbox, side by side"):
#
#   outbox   the shape of this checkout: the migrations applied to a scratch database, an event
#            and its delivery in one row of `outbox`, with its indexes and hourly-total triggers;
#   split    the event written once to a table of its own and its delivery in a narrow row
#            beside it (state and one due time), the feed's position and the hourly totals
#            written by the statements themselves;
#   split-hot  the same, with no index on the delivery's state: what is due for the relay is a
#            row of its own (inserted with the delivery, deleted when published), so the
#            delivery's two moves can be heap-only updates. Lists by status would need
#            another way to be read by index (a narrow table of what ended badly, for one):
#            this shape prices the moves, not the lists.
#   rows     the delivery rows of this checkout's `deliveries` (a copy of the table, one
#            partition's worth) with the indexes it has: the primary key (event, endpoint), the
#            delivery id, what is due for the relay, and the org's deliveries by state save
#            the succeeded ones. The lists by org, lead and type walk the event's indexes and
#            find each delivery by its key, so the delivery row needs none of them;
#   rows-all the same with the event's three list indexes copied onto the delivery row too
#            (org, lead, type): what lists read from the delivery rows alone would cost.
#
# The two `rows` shapes price the delivery's statements alone (insert, the relay's mark, the
# outcome), not the event's insert, to choose the delivery row's indexes.
#
# Each event goes the hot path's way: its insert in a transaction of its own, the relay's claim
# and mark in batches of 20, the outcome in batches of 20. Printed per delivered event: WAL
# records and bytes (`pg_stat_wal`, so run it on a quiet server), and the milliseconds the
# statements took. The split shape's tables here are a measuring device, not a migration.
#
# Usage: scripts/bench-shapes.sh [EVENTS]   (default 5000; needs the dev build's qualifierctl)
set -euo pipefail
cd "$(dirname "$0")/.."
events=${1:-5000}
target=${CARGO_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/qualifier/ci-target}
ctl="$target/debug/qualifierctl"
[ -x "$ctl" ] || cargo build -q -p qualifierctl
db="qualifier_shapes_$$"
base=${QUALIFIER_PG_BASE:-postgres://postgres@127.0.0.1:5432}
psql_db() { psql -X -q -v ON_ERROR_STOP=1 -d "$base/$db" "$@"; }
psql -X -q -d "$base/postgres" -c "CREATE DATABASE $db"
trap 'psql -X -q -d "$base/postgres" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)"' EXIT
DATABASE_URL="$base/$db" QUALIFIER_SECRET_KEY=$(head -c 32 /dev/urandom | base64) \
  "$ctl" migrate >/dev/null

# The split shape, beside the migrated outbox. The event: what never changes. The delivery:
# keyed by (event, endpoint), its state one small integer (0 queued, 1 out, 2 succeeded, ...)
# with one due time, and the indexes the relay (due), the worker (delivery id) and the lists
# (org, state, seq) read by. The feed's positions: a narrow table the relay appends to.
psql_db <<'SQL'
CREATE TABLE ev (
    seq bigint PRIMARY KEY, event_id uuid NOT NULL UNIQUE, org_id uuid NOT NULL,
    lead_id uuid, event_type text NOT NULL, payload bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(), traceparent text,
    is_test boolean NOT NULL DEFAULT false, erased_at timestamptz);
CREATE INDEX ev_org_seq ON ev (org_id, seq DESC);
CREATE INDEX ev_org_lead ON ev (org_id, lead_id, seq DESC);
CREATE INDEX ev_org_type ON ev (org_id, event_type, seq);
CREATE TABLE dl (
    seq bigint NOT NULL, endpoint_id uuid NOT NULL, delivery_id uuid NOT NULL UNIQUE,
    org_id uuid NOT NULL, state smallint NOT NULL DEFAULT 0, due_at timestamptz,
    attempts integer NOT NULL DEFAULT 0, failed_attempts integer NOT NULL DEFAULT 0,
    last_status_code integer, last_error text, attempt_log jsonb NOT NULL DEFAULT '[]',
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (seq, endpoint_id)) WITH (fillfactor = 80);
CREATE INDEX dl_due ON dl (due_at, seq) WHERE state = 0;
CREATE INDEX dl_org_state ON dl (org_id, state, seq);
CREATE TABLE feed (org_id uuid NOT NULL, pos bigint NOT NULL, seq bigint NOT NULL,
                   PRIMARY KEY (org_id, pos));
CREATE TABLE dh (
    seq bigint NOT NULL, endpoint_id uuid NOT NULL, delivery_id uuid NOT NULL UNIQUE,
    org_id uuid NOT NULL, state smallint NOT NULL DEFAULT 0,
    attempts integer NOT NULL DEFAULT 0, failed_attempts integer NOT NULL DEFAULT 0,
    last_status_code integer, last_error text, attempt_log jsonb NOT NULL DEFAULT '[]',
    updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (seq, endpoint_id)) WITH (fillfactor = 70);
CREATE TABLE due (seq bigint NOT NULL, endpoint_id uuid NOT NULL, due_at timestamptz,
                  PRIMARY KEY (seq, endpoint_id));
CREATE SEQUENCE ev_seq;
CREATE SEQUENCE ev_feed;
-- This checkout's delivery rows, as a plain table with the indexes and the storage the
-- migrations gave the partitioned one (LIKE copies the indexes; the fillfactor is the
-- default, as on its partitions), and the same with the event's list indexes added (and the
-- event type they need).
CREATE TABLE rows_chosen (LIKE deliveries INCLUDING ALL);
CREATE TABLE rows_all (LIKE deliveries INCLUDING ALL, event_type text NOT NULL DEFAULT 'lead.created');
CREATE INDEX ON rows_all (org_id, seq DESC);
CREATE INDEX ON rows_all (org_id, lead_id, seq DESC);
CREATE INDEX ON rows_all (org_id, event_type, seq);
SQL

org=$(psql_db -Atc "SELECT gen_random_uuid()")
payload="'\\x$(head -c 600 /dev/urandom | od -An -tx1 | tr -d ' \n')'::bytea"
entry="jsonb_build_object('n', 1, 'at', now(), 'status_code', 200, 'duration_ms', 12)"

# The split shapes' statements, over their delivery table ($1: `dl` or `dh`). The event and its
# delivery in one statement, plus `$2` (another CTE: split-hot's due row) when given.
split_insert() {
  echo "WITH e AS (INSERT INTO ev (seq, event_id, org_id, lead_id, event_type, payload)
                   VALUES (nextval('ev_seq'), gen_random_uuid(), '$org', gen_random_uuid(),
                           'lead.created', $payload) RETURNING seq, org_id, created_at),
             d AS (INSERT INTO $1 (seq, endpoint_id, delivery_id, org_id)
                   SELECT seq, org_id, gen_random_uuid(), org_id FROM e RETURNING 1)$2
        INSERT INTO delivery_hour_changes
        SELECT org_id, date_trunc('hour', created_at, 'UTC'), 0, 0, 0, 1, 0, 0, 0 FROM e;"
}
# The relay's mark of the claimed rows `c` ($2: a CTE giving seq and endpoint_id), with their
# feed positions; then the outcome of the 20 published last, with its hourly totals.
split_relay_and_outcome() {
  echo "BEGIN;
        WITH c AS ($2),
             m AS (UPDATE $1 d SET state = 1 FROM c
                   WHERE d.seq = c.seq AND d.endpoint_id = c.endpoint_id RETURNING d.seq)
        INSERT INTO feed (org_id, pos, seq) SELECT '$org', nextval('ev_feed'), seq FROM m;
        COMMIT;
        WITH o AS (UPDATE $1 d SET state = 2, attempts = d.attempts + 1, last_status_code = 200,
                          attempt_log = d.attempt_log || jsonb_build_array($entry),
                          updated_at = clock_timestamp()
                   WHERE d.endpoint_id = '$org' AND d.seq IN (SELECT seq FROM feed
                         WHERE org_id = '$org' ORDER BY pos DESC LIMIT 20)
                   RETURNING d.org_id, d.seq)
        INSERT INTO delivery_hour_changes
        SELECT o.org_id, date_trunc('hour', e.created_at, 'UTC'), count(*), 0, 0, -count(*), 0, 0, 0
        FROM o JOIN ev e ON e.seq = o.seq GROUP BY 1, 2;"
}

# The delivery rows' statements on table $1: the insert of one, then (by `rows_batch`) the
# relay's mark of the 20 due ones and their outcome.
rows_insert() {
  echo "INSERT INTO $1 (seq, endpoint_id, delivery_id, org_id, lead_id, created_at, state, due_at,
                        attempts, failed_attempts, attempt_log, replayed, updated_at)
        VALUES (nextval('ev_seq'), '$org', gen_random_uuid(), '$org', gen_random_uuid(), now(),
                'queued', clock_timestamp(), 0, 0, '[]', false, clock_timestamp());"
}
rows_batch() {
  echo "BEGIN;
        WITH c AS (SELECT seq, endpoint_id FROM $1 WHERE due_at IS NOT NULL
                   ORDER BY due_at, seq LIMIT 20 FOR UPDATE SKIP LOCKED)
        UPDATE $1 d SET state = 'out', due_at = NULL, updated_at = clock_timestamp()
        FROM c WHERE d.seq = c.seq AND d.endpoint_id = c.endpoint_id;
        COMMIT;
        UPDATE $1 d SET state = 'succeeded', attempts = d.attempts + 1, last_status_code = 200,
               attempt_log = d.attempt_log || jsonb_build_array($entry),
               updated_at = clock_timestamp()
        WHERE d.seq IN (SELECT seq FROM $1 ORDER BY seq DESC LIMIT 20)
          AND d.endpoint_id = '$org';"
}

# One shape's events as a script: inserts one per transaction, then claims, marks and outcomes
# in batches of 20, interleaved as the relay and the worker follow the writes.
script() {
  local shape=$1 i j
  for ((i = 0; i < events; i += 20)); do
    for ((j = 0; j < 20; j++)); do
      case $shape in
        outbox)
          echo "INSERT INTO outbox (event_id, org_id, event_type, payload, delivery_id, lead_id)
                VALUES (gen_random_uuid(), '$org', 'lead.created', $payload, gen_random_uuid(),
                        gen_random_uuid());" ;;
        split) split_insert dl "" ;;
        split-hot)
          split_insert dh ",
             q AS (INSERT INTO due (seq, endpoint_id) SELECT seq, org_id FROM e RETURNING 1)" ;;
        rows) rows_insert rows_chosen ;;
        rows-all) rows_insert rows_all ;;
      esac
    done
    case $shape in
      outbox)
        echo "BEGIN;
              WITH c AS (SELECT seq FROM outbox WHERE published_at IS NULL AND replay_at IS NULL
                         ORDER BY seq LIMIT 20 FOR UPDATE SKIP LOCKED)
              UPDATE outbox o SET published_at = clock_timestamp(), feed_pos = nextval('ev_feed')
              FROM c WHERE o.seq = c.seq;
              COMMIT;
              UPDATE outbox o SET status = 'succeeded', attempts = o.attempts + 1,
                     last_status_code = 200, attempt_log = o.attempt_log || jsonb_build_array($entry),
                     updated_at = clock_timestamp()
              WHERE o.seq IN (SELECT seq FROM outbox WHERE status = 'pending'
                              AND published_at IS NOT NULL ORDER BY seq LIMIT 20);" ;;
      split)
        split_relay_and_outcome dl "SELECT seq, endpoint_id FROM dl WHERE state = 0
                                    ORDER BY due_at NULLS FIRST, seq LIMIT 20
                                    FOR UPDATE SKIP LOCKED" ;;
      split-hot)
        split_relay_and_outcome dh "DELETE FROM due WHERE (seq, endpoint_id) IN (
                                        SELECT seq, endpoint_id FROM due ORDER BY seq LIMIT 20
                                        FOR UPDATE SKIP LOCKED) RETURNING seq, endpoint_id" ;;
      rows) rows_batch rows_chosen ;;
      rows-all) rows_batch rows_all ;;
    esac
  done
}

wal() { psql_db -Atc "SELECT wal_records || ' ' || wal_bytes FROM pg_stat_wal"; }
printf '%-9s %14s %14s %14s %10s\n' shape "WAL records/ev" "WAL bytes/ev" "ms/ev" delivered
for shape in outbox split split-hot rows rows-all; do
  script "$shape" >"/tmp/bench-shapes-$$.sql"
  psql_db -c "CHECKPOINT" >/dev/null
  read -r r0 b0 < <(wal)
  t0=$(date +%s%N)
  psql_db -f "/tmp/bench-shapes-$$.sql" >/dev/null
  t1=$(date +%s%N)
  read -r r1 b1 < <(wal)
  case $shape in
    outbox) delivered="SELECT count(*) FROM outbox WHERE status = 'succeeded'" ;;
    split) delivered="SELECT count(*) FROM dl WHERE state = 2" ;;
    split-hot) delivered="SELECT count(*) FROM dh WHERE state = 2" ;;
    rows) delivered="SELECT count(*) FROM rows_chosen WHERE state = 'succeeded'" ;;
    rows-all) delivered="SELECT count(*) FROM rows_all WHERE state = 'succeeded'" ;;
  esac
  done_n=$(psql_db -Atc "$delivered")
  awk -v s="$shape" -v r=$((r1 - r0)) -v b=$((b1 - b0)) -v t=$((t1 - t0)) -v n="$events" -v d="$done_n" \
    'BEGIN { printf "%-9s %14.1f %14.0f %14.3f %10d\n", s, r / n, b / n, t / 1e6 / n, d }'
done
rm -f "/tmp/bench-shapes-$$.sql"
