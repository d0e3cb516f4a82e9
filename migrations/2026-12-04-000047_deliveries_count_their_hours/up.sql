-- The hourly totals counted from the delivery rows, and the erasure's mark on them
-- (docs/decisions.md, "Events and deliveries apart").
--
-- Until now the chart's hourly totals (`delivery_hour_changes`, folded by lead-api into
-- `delivery_hours`) were counted by the outbox's triggers: a row trigger on each insert and
-- delete (migration 29) and a statement trigger on updates (migration 41), which saw every
-- move because the outbox follows the delivery rows (migration 46). They are counted here by
-- the delivery rows' own statement triggers, one per kind of statement, once per statement
-- over its rows (transition tables), with the same sums; the outbox's are disabled in the same
-- transaction, so no move is counted twice or missed. Every delivery row is written whichever
-- release wrote the move (the outbox's mirror writes the moves of the release before this
-- one), so these see every move, and keep seeing them once the outbox no longer follows.
--
-- The sums, as the outbox's status columns gave them: `succeeded`, `dead` and `skipped` each
-- its state; `in_progress` any other state; `failed` a retrying delivery not ended; the
-- failed attempts; and `erased_skipped` a skipped delivery whose lead was erased. For the last
-- the delivery row carries its own mark, `erased`, set from the event's `erased_at` by the
-- mirror; a delivery skipped before its lead's erasure keeps its own `last_error`, so the
-- error cannot say it.
--
-- Waits at most half a second for each lock; past it the migration rolls back whole and
-- `qualifierctl migrate` tries it again (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

-- A constant default: no table rewrite.
ALTER TABLE deliveries ADD COLUMN erased boolean NOT NULL DEFAULT false;

CREATE OR REPLACE FUNCTION qualifier_delivery_of(o outbox) RETURNS SETOF deliveries
LANGUAGE sql IMMUTABLE AS $$
    SELECT o.seq, o.org_id, o.delivery_id, o.org_id, o.lead_id, o.created_at,
           CASE WHEN o.status IN ('succeeded', 'dead', 'skipped') THEN o.status::delivery_state
                WHEN o.held_at IS NOT NULL AND o.waiting_for = 'earlier_delivery'
                    THEN 'after_earlier'
                WHEN o.held_at IS NOT NULL THEN 'held'
                WHEN o.published_at IS NOT NULL THEN 'out'
                WHEN o.waiting_for = 'throttle' THEN 'paced'
                ELSE 'queued' END::delivery_state,
           CASE WHEN o.published_at IS NOT NULL THEN NULL
                ELSE coalesce(o.replay_at, '-infinity') END,
           o.paced_at, o.resume_attempt, o.attempts, o.failed_attempts, o.last_status_code,
           o.last_error, o.attempt_log, coalesce(o.replayed, false), o.updated_at,
           o.status = 'failed', o.erased_at IS NOT NULL
$$;

CREATE OR REPLACE FUNCTION qualifier_deliveries_mirror() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
    INSERT INTO deliveries
    SELECT d.* FROM outbox_mirror_new n CROSS JOIN LATERAL qualifier_delivery_of(n) d
    ON CONFLICT (seq, endpoint_id) DO UPDATE SET
        lead_id = EXCLUDED.lead_id, created_at = EXCLUDED.created_at,
        state = EXCLUDED.state, due_at = EXCLUDED.due_at,
        turn_at = EXCLUDED.turn_at, resume_attempt = EXCLUDED.resume_attempt,
        attempts = EXCLUDED.attempts, failed_attempts = EXCLUDED.failed_attempts,
        last_status_code = EXCLUDED.last_status_code, last_error = EXCLUDED.last_error,
        attempt_log = EXCLUDED.attempt_log, replayed = EXCLUDED.replayed,
        updated_at = EXCLUDED.updated_at, retrying = EXCLUDED.retrying,
        erased = EXCLUDED.erased;
    RETURN NULL;
END
$$;

-- The outbox's counting off. Disabled, not dropped: DROP TRIGGER waits even for readers
-- (migration 29).
ALTER TABLE outbox DISABLE TRIGGER outbox_delivery_hours_write;
ALTER TABLE outbox DISABLE TRIGGER outbox_delivery_hours_moved;

-- The erased events' deliveries marked, before the delivery rows count: this write is no
-- move of a total the outbox has not counted already. Only a skipped delivery's mark is
-- counted, and only an erasure sets it, so the skipped ones are all that need it; the rest
-- get it from their next write through the mirror, or never need it (a succeeded delivery
-- stays succeeded). Found org by org through `deliveries_org_state`, each event by its key:
-- the cost follows the skipped deliveries, not the history (the outbox's lock, taken above,
-- holds writers off until this commits; a scan of 3 million events held them about a
-- second).
UPDATE deliveries d SET erased = true
FROM orgs g, outbox o
WHERE d.org_id = g.id AND d.state = 'skipped'
  AND o.seq = d.seq AND (o.seq >> 32) = (d.seq >> 32) AND o.org_id = d.endpoint_id
  AND o.erased_at IS NOT NULL;

-- One row of differences per org and hour a statement touched, as migration 41's: +1 in the
-- new row's columns, -1 in the old row's, nothing for a group whose sums are all 0 (a relay's
-- mark, a schedule).
CREATE FUNCTION qualifier_delivery_hours() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO delivery_hour_changes
        SELECT c.* FROM (
            SELECT n.org_id, date_trunc('hour', n.created_at, 'UTC'),
                   sum((n.state = 'succeeded')::int), sum((n.state = 'dead')::int),
                   sum((n.state = 'skipped')::int),
                   sum((n.state NOT IN ('succeeded', 'dead', 'skipped'))::int),
                   sum(n.failed_attempts),
                   sum((n.retrying AND n.state NOT IN ('succeeded', 'dead', 'skipped'))::int),
                   sum((n.state = 'skipped' AND n.erased)::int)
            FROM hours_new n GROUP BY 1, 2) c;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO delivery_hour_changes
        SELECT o.org_id, date_trunc('hour', o.created_at, 'UTC'),
               -sum((o.state = 'succeeded')::int), -sum((o.state = 'dead')::int),
               -sum((o.state = 'skipped')::int),
               -sum((o.state NOT IN ('succeeded', 'dead', 'skipped'))::int),
               -sum(o.failed_attempts),
               -sum((o.retrying AND o.state NOT IN ('succeeded', 'dead', 'skipped'))::int),
               -sum((o.state = 'skipped' AND o.erased)::int)
        FROM hours_old o GROUP BY 1, 2;
    ELSE
        INSERT INTO delivery_hour_changes
        SELECT c.* FROM (
            SELECT x.org_id, date_trunc('hour', x.created_at, 'UTC') AS hour,
                   sum(x.sign * (x.state = 'succeeded')::int) AS succeeded,
                   sum(x.sign * (x.state = 'dead')::int) AS dead,
                   sum(x.sign * (x.state = 'skipped')::int) AS skipped,
                   sum(x.sign * (x.state NOT IN ('succeeded', 'dead', 'skipped'))::int)
                       AS in_progress,
                   sum(x.sign * x.failed_attempts) AS failed_attempts,
                   sum(x.sign * (x.retrying AND x.state NOT IN ('succeeded', 'dead', 'skipped'))::int)
                       AS failed,
                   sum(x.sign * (x.state = 'skipped' AND x.erased)::int) AS erased_skipped
            FROM (SELECT 1 AS sign, n.org_id, n.created_at, n.state, n.failed_attempts,
                         n.retrying, n.erased FROM hours_new n
                  UNION ALL
                  SELECT -1, o.org_id, o.created_at, o.state, o.failed_attempts,
                         o.retrying, o.erased FROM hours_old o) x
            GROUP BY 1, 2) c
        WHERE (c.succeeded, c.dead, c.skipped, c.in_progress, c.failed_attempts, c.failed,
               c.erased_skipped) <> (0, 0, 0, 0, 0, 0, 0);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER deliveries_hours_inserted AFTER INSERT ON deliveries
    REFERENCING NEW TABLE AS hours_new
    FOR EACH STATEMENT EXECUTE FUNCTION qualifier_delivery_hours();
CREATE TRIGGER deliveries_hours_moved AFTER UPDATE ON deliveries
    REFERENCING OLD TABLE AS hours_old NEW TABLE AS hours_new
    FOR EACH STATEMENT EXECUTE FUNCTION qualifier_delivery_hours();
CREATE TRIGGER deliveries_hours_deleted AFTER DELETE ON deliveries
    REFERENCING OLD TABLE AS hours_old
    FOR EACH STATEMENT EXECUTE FUNCTION qualifier_delivery_hours();
