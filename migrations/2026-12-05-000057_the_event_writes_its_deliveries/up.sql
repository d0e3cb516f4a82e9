-- A new event's deliveries written by the statement that writes the event, with no trigger on
-- the way (docs/decisions.md, "Events and deliveries apart").
--
-- Until now every insert into the outbox ran three statement triggers: the fan-out of its
-- delivery rows (migration 50), the relay's wake-up (`pg_notify`, migration 28), and, on the
-- delivery rows it made, the hourly totals' count (migration 47). Each is a PL/pgSQL call with
-- its transition table and its own statements, about a tenth of the event's write in
-- PostgreSQL's time. The lead's write (crates/store/src/leads/write.rs) now writes the event's
-- deliveries, their places in the relay's queue, their hourly count and the wake-up in its own
-- statement, and marks the event `deliveries_written`.
--
-- Every other writer of an event (an erasure's, a handoff's, a test event, the release before
-- this one while it runs beside it) leaves the mark unset, and a row trigger whose condition is
-- that mark does for its row what the statement trigger did: a condition false costs the
-- lead's write no call at all. The hourly count of a delivery row's insert moves into its
-- writers once the outbox has retired (`qualifier_outbox_retire`, which now also disables
-- `deliveries_hours_inserted`): until then the delivery rows are also written by the outbox's
-- mirror, whose inserts that trigger counts, and the lead's write leaves the fan-out to the
-- row trigger, as before.
--
-- Waits at most half a second for each lock; past it the migration rolls back whole and
-- `qualifierctl migrate` tries it again (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

-- Set only by a writer that wrote the event's deliveries in the same statement; a release
-- that does not know it leaves it NULL. No default: no rewrite, nothing stored for the others.
ALTER TABLE outbox ADD COLUMN deliveries_written boolean;

-- The delivery rows of an event as it is inserted, one per endpoint it goes to: its own
-- delivery id for the org's first endpoint, a new one for each other. Inlined by the planner
-- into the statement that calls it (a single `SELECT` of `sql` functions).
CREATE FUNCTION qualifier_deliveries_made(o outbox) RETURNS SETOF deliveries
LANGUAGE sql STABLE AS $$
    SELECT d.seq, e.endpoint_id,
           CASE WHEN e.first THEN d.delivery_id ELSE gen_random_uuid() END,
           d.org_id, d.lead_id, d.created_at, d.state,
           CASE WHEN d.due_at = '-infinity' THEN NULL ELSE d.due_at END, d.turn_at,
           d.resume_attempt, d.attempts, d.failed_attempts, d.last_status_code,
           d.last_error, d.attempt_log, d.replayed, d.updated_at, d.retrying, d.erased
    FROM qualifier_delivery_of(o) d
    CROSS JOIN LATERAL qualifier_endpoints_of(o.org_id, o.event_type, o.is_test) e
$$;

-- The fan-out of one event whose writer did not write its deliveries. While the outbox
-- mirrors (before retirement) it writes them as migration 50's trigger did, the hourly
-- count left to `deliveries_hours_inserted`; after, it also counts them, as the lead's write
-- does.
CREATE FUNCTION qualifier_event_fans_out() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
    IF (SELECT m.to_outbox FROM deliveries_mirror m) THEN
        INSERT INTO deliveries
        SELECT d.seq, e.endpoint_id,
               CASE WHEN e.first THEN d.delivery_id ELSE gen_random_uuid() END,
               d.org_id, d.lead_id, d.created_at, d.state, d.due_at, d.turn_at,
               d.resume_attempt, d.attempts, d.failed_attempts, d.last_status_code,
               d.last_error, d.attempt_log, d.replayed, d.updated_at, d.retrying, d.erased
        FROM qualifier_delivery_of(NEW) d
        CROSS JOIN LATERAL qualifier_endpoints_of(NEW.org_id, NEW.event_type, NEW.is_test) e
        ON CONFLICT (seq, endpoint_id) DO UPDATE SET
            lead_id = EXCLUDED.lead_id, created_at = EXCLUDED.created_at,
            state = EXCLUDED.state, due_at = EXCLUDED.due_at,
            turn_at = EXCLUDED.turn_at, resume_attempt = EXCLUDED.resume_attempt,
            attempts = EXCLUDED.attempts, failed_attempts = EXCLUDED.failed_attempts,
            last_status_code = EXCLUDED.last_status_code, last_error = EXCLUDED.last_error,
            attempt_log = EXCLUDED.attempt_log, replayed = EXCLUDED.replayed,
            updated_at = EXCLUDED.updated_at, retrying = EXCLUDED.retrying,
            erased = EXCLUDED.erased;
    ELSE
        WITH made AS (
            INSERT INTO deliveries SELECT * FROM qualifier_deliveries_made(NEW)
            RETURNING seq, endpoint_id, org_id, created_at, state, due_at, failed_attempts,
                      retrying, erased),
        unsent AS (
            INSERT INTO deliveries_unsent (seq, endpoint_id)
            SELECT seq, endpoint_id FROM made WHERE state = 'queued' AND due_at IS NULL)
        INSERT INTO delivery_hour_changes
        SELECT n.org_id, date_trunc('hour', n.created_at, 'UTC'),
               sum((n.state = 'succeeded')::int), sum((n.state = 'dead')::int),
               sum((n.state = 'skipped')::int),
               sum((n.state NOT IN ('succeeded', 'dead', 'skipped'))::int),
               sum(n.failed_attempts),
               sum((n.retrying AND n.state NOT IN ('succeeded', 'dead', 'skipped'))::int),
               sum((n.state = 'skipped' AND n.erased)::int)
        FROM made n GROUP BY 1, 2;
    END IF;
    PERFORM pg_notify('qualifier_outbox', '');
    RETURN NULL;
END
$$;

CREATE TRIGGER outbox_fans_out AFTER INSERT ON outbox
    FOR EACH ROW WHEN (NEW.deliveries_written IS NOT TRUE)
    EXECUTE FUNCTION qualifier_event_fans_out();

-- The statement triggers it replaces. Disabled, not dropped: DROP TRIGGER waits even for
-- readers (migration 29).
ALTER TABLE outbox DISABLE TRIGGER outbox_deliveries_insert;
ALTER TABLE outbox DISABLE TRIGGER outbox_notify;

-- The copy of the events from before the delivery rows (migration 43) counts what it inserts
-- once the insert trigger no longer does.
CREATE OR REPLACE FUNCTION qualifier_deliveries_fill(batch integer) RETURNS integer
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
        RETURNING org_id, created_at, state, failed_attempts, retrying, erased
    ), counted AS (
        INSERT INTO delivery_hour_changes
        SELECT i.org_id, date_trunc('hour', i.created_at, 'UTC'),
               sum((i.state = 'succeeded')::int), sum((i.state = 'dead')::int),
               sum((i.state = 'skipped')::int),
               sum((i.state NOT IN ('succeeded', 'dead', 'skipped'))::int),
               sum(i.failed_attempts),
               sum((i.retrying AND i.state NOT IN ('succeeded', 'dead', 'skipped'))::int),
               sum((i.state = 'skipped' AND i.erased)::int)
        FROM ins i
        WHERE NOT (SELECT m.to_outbox FROM deliveries_mirror m)
        GROUP BY 1, 2
    )
    SELECT count(*) FILTER (WHERE (b.o).seq <= f.until_seq), max((b.o).seq) INTO n, top
    FROM b;
    UPDATE deliveries_fill
    SET next_seq = CASE WHEN n < batch THEN f.until_seq ELSE top END,
        done_at = CASE WHEN n < batch THEN clock_timestamp() END;
    RETURN n;
END
$$;

-- Retirement also hands the count of inserted delivery rows to their writers.
CREATE OR REPLACE FUNCTION qualifier_outbox_retire() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM feed_head FOR UPDATE;
    UPDATE deliveries_mirror SET to_outbox = false WHERE to_outbox;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    DROP TRIGGER IF EXISTS outbox_deliveries_update ON outbox;
    DROP TRIGGER IF EXISTS deliveries_outbox_follows ON deliveries;
    DROP INDEX IF EXISTS outbox_unpublished;
    DROP INDEX IF EXISTS outbox_replay_due;
    DROP INDEX IF EXISTS outbox_held;
    DROP INDEX IF EXISTS outbox_org_status;
    ALTER TABLE deliveries DISABLE TRIGGER deliveries_hours_inserted;
    PERFORM qualifier_endpoints_apart();
    RETURN true;
END
$$;

-- A database retired already hands it over now.
DO $$
BEGIN
    IF NOT (SELECT m.to_outbox FROM deliveries_mirror m) THEN
        ALTER TABLE deliveries DISABLE TRIGGER deliveries_hours_inserted;
    END IF;
END
$$;
