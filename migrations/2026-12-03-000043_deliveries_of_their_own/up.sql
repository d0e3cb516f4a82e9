-- Deliveries in rows of their own, beside the outbox: the first of the three releases that
-- take a delivery's state out of its event's row (docs/decisions.md, "Events and deliveries
-- apart"). This one expands: the `deliveries` table is written, and nothing reads it yet but
-- its own check. Every delivery is kept in both shapes:
--
-- - from now on by three statement triggers on `outbox` (insert, update, delete), each one
--   statement over the statement's rows (transition tables), whichever release wrote the
--   outbox: this one, or the one before it still running while this one rolls out;
-- - for the history, by `qualifier_deliveries_fill`, which housekeeping runs in small batches
--   (crates/lead-api/src/housekeeping.rs, `fill_deliveries`) over the events stored before
--   this migration, oldest first, from `deliveries_fill`'s cursor.
--
-- The two never disagree for long: both write with `INSERT … ON CONFLICT`, the trigger's
-- taking the newest row (`DO UPDATE`), the fill's never overwriting one (`DO NOTHING`). A
-- fill that read a row before an update committed either finds the trigger's row (and
-- leaves it), or writes first and is overwritten by the trigger's, which waits for it.
-- `qualifier_deliveries_differ()` counts the deliveries whose two shapes disagree, for the
-- tests and the operator (docs/operations.md, "Deliveries in rows of their own").
--
-- A delivery is keyed by (event, endpoint). Until an organisation has several endpoints, its
-- one endpoint is its webhook and the endpoint's id is the org's id; the first of several
-- endpoints keeps that id, so no delivery row moves then.
--
-- The state, one enum instead of the outbox's seven columns (`crate::deliveries::state` in
-- crates/store/src/deliveries/state.rs describes them):
--
-- | state         | in the outbox                                            | due_at           |
-- |---------------|----------------------------------------------------------|------------------|
-- | queued        | not published, no throttle wait                          | replay_at, or at once (created_at) |
-- | paced         | not published, waiting in its row for a throttle turn    | when the relay sends it (replay_at); the turn in turn_at |
-- | out           | published (with a worker or in a broker queue)           | NULL             |
-- | held          | held for its endpoint's outage                           | NULL             |
-- | after_earlier | waiting for an earlier delivery of its lead              | NULL             |
-- | succeeded, dead, skipped | ended                                         | NULL             |
--
-- Partitioned by ranges of `seq` that are the outbox's partitions' days (`seq >> 32` is the
-- day): the partition of an event's delivery holds the same days as the event's, is created
-- with it (`qualifier_outbox_partition`, replaced below) and dropped with it. By `seq` itself
-- rather than the outbox's expression, so the primary key is the parent's and `ON CONFLICT`
-- can name it.
--
-- Its indexes are made here, on the empty table, so that the fill and the triggers keep them
-- and the release that reads the table finds them whole; each chosen by
-- `scripts/bench-shapes.sh` (docs/performance.md, "The delivery row's indexes"). Besides the
-- key, only what is found by the delivery's own columns: its id, what is due for the relay,
-- an org's deliveries by state, the succeeded ones aside (the most of them, found by walking
-- the events), and what waits in its row. The lists by org, lead and type walk the event's
-- indexes and find each delivery by its key, so the delivery row carries none of them.
--
-- Waits at most half a second for each lock (the triggers lock the outbox against writes
-- while they are created); past it the migration rolls back whole and `qualifierctl migrate`
-- tries it again (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts, prefer-bigint-over-int, prefer-text-field
SET lock_timeout = '500ms';

CREATE TYPE delivery_state AS ENUM
    ('queued', 'paced', 'out', 'held', 'after_earlier', 'succeeded', 'dead', 'skipped');

CREATE TABLE deliveries (
    seq              bigint NOT NULL,
    endpoint_id      uuid NOT NULL,
    delivery_id      uuid NOT NULL,
    org_id           uuid NOT NULL,
    lead_id          uuid,
    created_at       timestamptz NOT NULL,
    state            delivery_state NOT NULL,
    due_at           timestamptz,
    turn_at          timestamptz,
    resume_attempt   integer,
    attempts         integer NOT NULL,
    failed_attempts  integer NOT NULL,
    last_status_code integer,
    last_error       text,
    attempt_log      jsonb NOT NULL,
    replayed         boolean NOT NULL,
    updated_at       timestamptz NOT NULL,
    PRIMARY KEY (seq, endpoint_id)
) PARTITION BY RANGE (seq);

-- squawk-ignore require-concurrent-index-creation
CREATE INDEX deliveries_delivery_id ON deliveries (delivery_id);
-- squawk-ignore require-concurrent-index-creation
CREATE INDEX deliveries_due ON deliveries (due_at, seq) WHERE due_at IS NOT NULL;
-- With what a count of the deliveries a replay would send reads (the time, the failures) in
-- the index itself.
-- squawk-ignore require-concurrent-index-creation
CREATE INDEX deliveries_org_state ON deliveries (org_id, state, seq)
    INCLUDE (created_at, failed_attempts) WHERE state <> 'succeeded';
-- What waits in its row for an outage or for an earlier delivery, across orgs, by when it
-- began to (the safety nets' sweeps); a delivery on the hot path is never in it.
-- squawk-ignore require-concurrent-index-creation
CREATE INDEX deliveries_waiting ON deliveries (updated_at)
    WHERE state IN ('held', 'after_earlier');

-- The delivery row of an outbox row: the one mapping from the outbox's columns to the state,
-- used by the triggers, the fill and the check. A set of one row, called in `FROM`, so that
-- the planner inlines it into the statement (a function returning one composite is called
-- row by row: 17 µs a row).
CREATE FUNCTION qualifier_delivery_of(o outbox) RETURNS SETOF deliveries
LANGUAGE sql IMMUTABLE AS $$
    SELECT o.seq, o.org_id, o.delivery_id, o.org_id, o.lead_id, o.created_at,
           CASE WHEN o.status IN ('succeeded', 'dead', 'skipped') THEN o.status::delivery_state
                WHEN o.held_at IS NOT NULL AND o.waiting_for = 'earlier_delivery'
                    THEN 'after_earlier'
                WHEN o.held_at IS NOT NULL THEN 'held'
                WHEN o.published_at IS NOT NULL THEN 'out'
                WHEN o.waiting_for = 'throttle' THEN 'paced'
                ELSE 'queued' END::delivery_state,
           CASE WHEN o.status IN ('succeeded', 'dead', 'skipped') OR o.held_at IS NOT NULL
                     OR o.published_at IS NOT NULL THEN NULL
                ELSE coalesce(o.replay_at, o.created_at) END,
           o.paced_at, o.resume_attempt, o.attempts, o.failed_attempts, o.last_status_code,
           o.last_error, o.attempt_log, coalesce(o.replayed, false), o.updated_at
$$;

-- The partition of `deliveries` for the outbox's days [first_day, last_day), or for
-- everything below day `last_day` when `first_day` is NULL (the outbox's legacy partition).
CREATE FUNCTION qualifier_deliveries_partition(first_day integer, last_day integer)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    part text := CASE WHEN first_day IS NULL THEN 'deliveries_legacy'
                      ELSE format('deliveries_d%s_%s', first_day, last_day) END;
BEGIN
    IF to_regclass(part) IS NOT NULL THEN
        RETURN false;
    END IF;
    -- Created whole as a partition: the parent is new, or (from `qualifier_outbox_roll`)
    -- written only by the outbox's triggers, under the outbox partition's creation.
    EXECUTE format('CREATE TABLE %I PARTITION OF deliveries FOR VALUES FROM (%s) TO (%s)',
                   part,
                   CASE WHEN first_day IS NULL THEN 'MINVALUE'
                        ELSE (first_day::bigint << 32)::text END,
                   (last_day::bigint << 32)::text);
    RETURN true;
END
$$;

-- One for each partition the outbox has now.
DO $$
DECLARE
    p record;
BEGIN
    FOR p IN SELECT c.relname,
                    substring(c.relname FROM '^outbox_d([0-9]+)_[0-9]+$')::integer AS first_day,
                    coalesce(substring(c.relname FROM '^outbox_d[0-9]+_([0-9]+)$')::integer,
                             20000) AS last_day
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'outbox'::regclass LOOP
        PERFORM qualifier_deliveries_partition(p.first_day, p.last_day);
    END LOOP;
END
$$;

-- The outbox's partitions, as migration 40 left them, and the delivery partition of the same
-- days beside each.
CREATE OR REPLACE FUNCTION qualifier_outbox_partition(first_day integer, last_day integer) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    part text := format('outbox_d%s_%s', first_day, last_day);
    def text;
BEGIN
    PERFORM qualifier_deliveries_partition(first_day, last_day);
    IF to_regclass(part) IS NOT NULL THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE %I (LIKE outbox INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                   part);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I
                    CHECK ((seq >> 32) IS NOT NULL AND (seq >> 32) >= %s AND (seq >> 32) < %s)',
                   part, part || '_range', first_day, last_day);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (seq)', part, part || '_pkey');
    FOR def IN
        SELECT regexp_replace(pg_get_indexdef(x.indexrelid),
                              '^CREATE (UNIQUE )?INDEX outbox(\w*) ON ONLY \S+ ',
                              'CREATE \1INDEX ' || part || '\2 ON ' || part || ' ')
        FROM pg_index x WHERE x.indrelid = 'outbox'::regclass
    LOOP
        EXECUTE def;
    END LOOP;
    EXECUTE format('CREATE UNIQUE INDEX %I ON %I (event_id)', part || '_event_id', part);
    EXECUTE format('CREATE UNIQUE INDEX %I ON %I (delivery_id)', part || '_delivery_id', part);
    EXECUTE format('CREATE UNIQUE INDEX %I ON %I (org_id, feed_pos) WHERE feed_pos IS NOT NULL',
                   part || '_feed', part);
    EXECUTE format('ALTER TABLE outbox ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                   part, first_day, last_day);
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', part, part || '_range');
    RETURN true;
END
$$;

-- The history's fill: the events stored before this migration (`seq` up to `until_seq`),
-- from the cursor `next_seq` upward. One row; a fill locks it, so replicas take turns.
CREATE TABLE deliveries_fill (
    one       boolean PRIMARY KEY DEFAULT true CHECK (one),
    next_seq  bigint NOT NULL,
    until_seq bigint NOT NULL,
    done_at   timestamptz
);

-- The triggers: each statement's rows, mirrored in one statement.
CREATE FUNCTION qualifier_deliveries_mirror() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO deliveries
    SELECT d.* FROM outbox_mirror_new n CROSS JOIN LATERAL qualifier_delivery_of(n) d
    ON CONFLICT (seq, endpoint_id) DO UPDATE SET
        lead_id = EXCLUDED.lead_id, created_at = EXCLUDED.created_at,
        state = EXCLUDED.state, due_at = EXCLUDED.due_at,
        turn_at = EXCLUDED.turn_at, resume_attempt = EXCLUDED.resume_attempt,
        attempts = EXCLUDED.attempts, failed_attempts = EXCLUDED.failed_attempts,
        last_status_code = EXCLUDED.last_status_code, last_error = EXCLUDED.last_error,
        attempt_log = EXCLUDED.attempt_log, replayed = EXCLUDED.replayed,
        updated_at = EXCLUDED.updated_at;
    RETURN NULL;
END
$$;

CREATE FUNCTION qualifier_deliveries_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM deliveries d USING outbox_mirror_old o
    WHERE d.seq = o.seq AND d.endpoint_id = o.org_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER outbox_deliveries_insert AFTER INSERT ON outbox
    REFERENCING NEW TABLE AS outbox_mirror_new
    FOR EACH STATEMENT EXECUTE FUNCTION qualifier_deliveries_mirror();
CREATE TRIGGER outbox_deliveries_update AFTER UPDATE ON outbox
    REFERENCING NEW TABLE AS outbox_mirror_new
    FOR EACH STATEMENT EXECUTE FUNCTION qualifier_deliveries_mirror();
CREATE TRIGGER outbox_deliveries_delete AFTER DELETE ON outbox
    REFERENCING OLD TABLE AS outbox_mirror_old
    FOR EACH STATEMENT EXECUTE FUNCTION qualifier_deliveries_forget();

-- Where the fill ends, read once the triggers exist: creating them took a lock that waited for
-- every transaction that had written the outbox and holds off new writers until this commits,
-- so every row written without the triggers has a number drawn by now, and every row written
-- after them is theirs (a number drawn now and written later too; the fill then leaves it).
INSERT INTO deliveries_fill (next_seq, until_seq)
SELECT -1, s.last_value FROM outbox_seq_seq s;

-- One batch of the history's fill, at most `batch` events: how many it read; 0 while another
-- replica's batch runs, -1 once the fill is done. Through the outbox's primary keys in `seq`
-- order, so a batch reads only its own rows.
CREATE FUNCTION qualifier_deliveries_fill(batch integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    f deliveries_fill;
    n integer;
    top bigint;
BEGIN
    SELECT * INTO f FROM deliveries_fill FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN 0;
    ELSIF f.done_at IS NOT NULL THEN
        RETURN -1;
    END IF;
    -- The bound `until_seq` is applied to what the batch read, not in its scan: with both
    -- bounds in the scan the planner may read the whole range and sort it.
    WITH b AS (
        SELECT o FROM outbox o
        WHERE o.seq > f.next_seq
        ORDER BY o.seq LIMIT batch
    ), ins AS (
        INSERT INTO deliveries
        SELECT d.* FROM b CROSS JOIN LATERAL qualifier_delivery_of(b.o) d
        WHERE (b.o).seq <= f.until_seq
        ON CONFLICT (seq, endpoint_id) DO NOTHING
    )
    SELECT count(*) FILTER (WHERE (b.o).seq <= f.until_seq), max((b.o).seq) INTO n, top
    FROM b;
    UPDATE deliveries_fill
    SET next_seq = CASE WHEN n < batch THEN f.until_seq ELSE top END,
        done_at = CASE WHEN n < batch THEN clock_timestamp() END;
    RETURN n;
END
$$;

-- Deliveries whose two shapes disagree, among those the fill has reached: missing, in another
-- state, or left without their event (an event's `seq` never changes, and its delivery row
-- goes with it). 0 is the check. Reads every stored event: for the tests and for an
-- operator's one-off look, not for a loop.
CREATE FUNCTION qualifier_deliveries_differ() RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT (SELECT count(*)
            FROM outbox o
            CROSS JOIN deliveries_fill f
            CROSS JOIN LATERAL qualifier_delivery_of(o) m
            LEFT JOIN deliveries d ON d.seq = o.seq AND d.endpoint_id = o.org_id
            WHERE (o.seq <= f.next_seq OR o.seq > f.until_seq)
              AND d IS DISTINCT FROM m)
         + (SELECT count(*)
            FROM deliveries d
            WHERE NOT EXISTS (SELECT 1 FROM outbox o
                              WHERE o.seq = d.seq AND o.org_id = d.endpoint_id))
$$;
