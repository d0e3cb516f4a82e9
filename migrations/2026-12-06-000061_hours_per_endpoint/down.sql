-- The hourly totals the org's again: each org's hours summed over its endpoints, and the
-- counting functions as they were (migrations 47 and 57).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

LOCK TABLE delivery_hours IN EXCLUSIVE MODE;
CREATE TEMPORARY TABLE qualifier_hours_merged ON COMMIT DROP AS
SELECT org_id, hour, sum(succeeded) AS succeeded, sum(dead) AS dead, sum(skipped) AS skipped,
       sum(in_progress) AS in_progress, sum(failed_attempts) AS failed_attempts,
       sum(failed) AS failed, sum(erased_skipped) AS erased_skipped
FROM delivery_hours GROUP BY 1, 2;
ALTER TABLE delivery_hours DISABLE TRIGGER delivery_hours_keep_covered;
DELETE FROM delivery_hours;
ALTER TABLE delivery_hours ENABLE TRIGGER delivery_hours_keep_covered;
ALTER TABLE delivery_hours DROP CONSTRAINT delivery_hours_pkey;
ALTER TABLE delivery_hours DROP COLUMN endpoint_id;
ALTER TABLE delivery_hours ADD PRIMARY KEY (org_id, hour);
INSERT INTO delivery_hours (org_id, hour, succeeded, dead, skipped, in_progress,
                            failed_attempts, failed, erased_skipped)
SELECT * FROM qualifier_hours_merged;
ALTER TABLE delivery_hour_changes DROP COLUMN endpoint_id;

CREATE OR REPLACE FUNCTION qualifier_delivery_hours() RETURNS trigger LANGUAGE plpgsql AS $$
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
