-- The hourly totals counted per endpoint, so that the Deliveries chart of one endpoint agrees
-- with its list (docs/console.md, "Deliveries"; docs/decisions.md, "The chart per endpoint").
--
-- Every writer of `delivery_hour_changes` adds the delivery row's `endpoint_id` to what it
-- groups by, and the fold keeps one row per org, endpoint and hour. What reads the org's
-- totals (the chart without a filter, a dry run's count) sums over the endpoints as before.
-- A writer that does not know the column (the release before this one, while it runs beside
-- this one) counts under the nil endpoint, which only the org's sums read: its moves are
-- never lost, they are missing only from the chart of one endpoint until their hour leaves
-- the chart.
--
-- The chart's hours already counted are moved to their endpoints here: for every delivery
-- created in them, its contribution is added under its endpoint and taken away from the nil
-- endpoint, as two sets of changes the next fold adds. The org's sums do not move. The
-- deliveries are found from their sequence mark (`outbox_seq_marks`), so this reads about a
-- day of deliveries, not the history; their writers wait meanwhile (the share lock below).
--
-- Waits at most half a second for each lock; past it the migration rolls back whole and
-- `qualifierctl migrate` tries it again (crates/store/src/pool.rs, `gave_way`).
-- The totals' key is replaced in place: the table holds a few rows per org and hour kept, so
-- the new key's index is built in a moment under the lock, which only the fold and the
-- console's chart wait for (neither is on an event's path).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts, ban-drop-constraint, adding-serial-primary-key-field, constraint-missing-not-valid
SET lock_timeout = '500ms';

-- Constant defaults: no table rewrite.
ALTER TABLE delivery_hour_changes
    ADD COLUMN endpoint_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000';
ALTER TABLE delivery_hours
    ADD COLUMN endpoint_id uuid NOT NULL DEFAULT '00000000-0000-0000-0000-000000000000';
ALTER TABLE delivery_hours DROP CONSTRAINT delivery_hours_pkey;
ALTER TABLE delivery_hours ADD PRIMARY KEY (org_id, hour, endpoint_id);

-- No delivery moves while its hour is moved to its endpoint and the counting changes.
LOCK TABLE deliveries IN SHARE MODE;

CREATE OR REPLACE FUNCTION qualifier_delivery_hours() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO delivery_hour_changes
            (org_id, endpoint_id, hour, succeeded, dead, skipped, in_progress, failed_attempts,
             failed, erased_skipped)
        SELECT n.org_id, n.endpoint_id, date_trunc('hour', n.created_at, 'UTC'),
               sum((n.state = 'succeeded')::int), sum((n.state = 'dead')::int),
               sum((n.state = 'skipped')::int),
               sum((n.state NOT IN ('succeeded', 'dead', 'skipped'))::int),
               sum(n.failed_attempts),
               sum((n.retrying AND n.state NOT IN ('succeeded', 'dead', 'skipped'))::int),
               sum((n.state = 'skipped' AND n.erased)::int)
        FROM hours_new n GROUP BY 1, 2, 3;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO delivery_hour_changes
            (org_id, endpoint_id, hour, succeeded, dead, skipped, in_progress, failed_attempts,
             failed, erased_skipped)
        SELECT o.org_id, o.endpoint_id, date_trunc('hour', o.created_at, 'UTC'),
               -sum((o.state = 'succeeded')::int), -sum((o.state = 'dead')::int),
               -sum((o.state = 'skipped')::int),
               -sum((o.state NOT IN ('succeeded', 'dead', 'skipped'))::int),
               -sum(o.failed_attempts),
               -sum((o.retrying AND o.state NOT IN ('succeeded', 'dead', 'skipped'))::int),
               -sum((o.state = 'skipped' AND o.erased)::int)
        FROM hours_old o GROUP BY 1, 2, 3;
    ELSE
        INSERT INTO delivery_hour_changes
            (org_id, endpoint_id, hour, succeeded, dead, skipped, in_progress, failed_attempts,
             failed, erased_skipped)
        SELECT c.* FROM (
            SELECT x.org_id, x.endpoint_id, date_trunc('hour', x.created_at, 'UTC') AS hour,
                   sum(x.sign * (x.state = 'succeeded')::int) AS succeeded,
                   sum(x.sign * (x.state = 'dead')::int) AS dead,
                   sum(x.sign * (x.state = 'skipped')::int) AS skipped,
                   sum(x.sign * (x.state NOT IN ('succeeded', 'dead', 'skipped'))::int)
                       AS in_progress,
                   sum(x.sign * x.failed_attempts) AS failed_attempts,
                   sum(x.sign * (x.retrying AND x.state NOT IN ('succeeded', 'dead', 'skipped'))::int)
                       AS failed,
                   sum(x.sign * (x.state = 'skipped' AND x.erased)::int) AS erased_skipped
            FROM (SELECT 1 AS sign, n.org_id, n.endpoint_id, n.created_at, n.state,
                         n.failed_attempts, n.retrying, n.erased FROM hours_new n
                  UNION ALL
                  SELECT -1, o.org_id, o.endpoint_id, o.created_at, o.state,
                         o.failed_attempts, o.retrying, o.erased FROM hours_old o) x
            GROUP BY 1, 2, 3) c
        WHERE (c.succeeded, c.dead, c.skipped, c.in_progress, c.failed_attempts, c.failed,
               c.erased_skipped) <> (0, 0, 0, 0, 0, 0, 0);
    END IF;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION qualifier_event_fans_out() RETURNS trigger LANGUAGE plpgsql AS $$
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
            (org_id, endpoint_id, hour, succeeded, dead, skipped, in_progress, failed_attempts,
             failed, erased_skipped)
        SELECT n.org_id, n.endpoint_id, date_trunc('hour', n.created_at, 'UTC'),
               sum((n.state = 'succeeded')::int), sum((n.state = 'dead')::int),
               sum((n.state = 'skipped')::int),
               sum((n.state NOT IN ('succeeded', 'dead', 'skipped'))::int),
               sum(n.failed_attempts),
               sum((n.retrying AND n.state NOT IN ('succeeded', 'dead', 'skipped'))::int),
               sum((n.state = 'skipped' AND n.erased)::int)
        FROM made n GROUP BY 1, 2, 3;
    END IF;
    PERFORM pg_notify('qualifier_outbox', '');
    RETURN NULL;
END
$$;

-- The chart's hours (the 24 shown, the one in progress and one more, as `CHART_HOURS_KEPT`
-- in crates/store/src/console.rs) moved from the nil endpoint to each delivery's own.
WITH since AS (
    SELECT date_trunc('hour', now(), 'UTC') - interval '25 hours' AS at
), first_seq AS (
    SELECT coalesce((SELECT m.seq FROM outbox_seq_marks m, since s WHERE m.at <= s.at
                     ORDER BY m.at DESC LIMIT 1), -9223372036854775808) AS seq
), counted AS (
    SELECT d.org_id, d.endpoint_id, date_trunc('hour', d.created_at, 'UTC') AS hour,
           sum((d.state = 'succeeded')::int) AS succeeded, sum((d.state = 'dead')::int) AS dead,
           sum((d.state = 'skipped')::int) AS skipped,
           sum((d.state NOT IN ('succeeded', 'dead', 'skipped'))::int) AS in_progress,
           sum(d.failed_attempts) AS failed_attempts,
           sum((d.retrying AND d.state NOT IN ('succeeded', 'dead', 'skipped'))::int) AS failed,
           sum((d.state = 'skipped' AND d.erased)::int) AS erased_skipped
    FROM deliveries d, first_seq f, since s
    WHERE d.seq > f.seq AND d.created_at >= s.at
    GROUP BY 1, 2, 3
)
INSERT INTO delivery_hour_changes
    (org_id, endpoint_id, hour, succeeded, dead, skipped, in_progress, failed_attempts, failed,
     erased_skipped)
SELECT org_id, endpoint_id, hour, succeeded, dead, skipped, in_progress, failed_attempts,
       failed, erased_skipped
FROM counted
UNION ALL
SELECT org_id, '00000000-0000-0000-0000-000000000000', hour, -succeeded, -dead, -skipped,
       -in_progress, -failed_attempts, -failed, -erased_skipped
FROM counted;
