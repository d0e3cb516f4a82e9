-- A new delivery waits for the relay in a narrow queue of its own, not in `deliveries_due`
-- (docs/decisions.md, "Events and deliveries apart").
--
-- Until now an event's insert made each of its deliveries due at `-infinity`, an entry in
-- `deliveries_due`, and the relay's mark wrote every published delivery's row again (`out`,
-- no longer due): a new version of the whole row with an entry in each index that holds it,
-- and the hourly totals' update trigger run over the batch for sums that are all 0. From this
-- migration on, once the outbox has retired (migration 48), the insert writes the delivery
-- row not due (`queued`, `due_at` NULL) and one row `(seq, endpoint_id)` here; the relay
-- claims from here in `seq` order and its mark deletes what it published. The delivery row
-- is written again only by its outcome. What is due later (a retry, a replay, a throttle's
-- turn, an erased event still to be given its feed position) stays in `deliveries_due`, and
-- the relay reads both (crates/store/src/outbox.rs, `relay_batch`).
--
-- The table holds only what the relay has not published yet: a row is inserted and deleted
-- within a relay round or two, so it stays a few pages, vacuumed often (its thresholds
-- below); its index is what keeps the claim in `seq` order whatever the backlog. While the
-- outbox still follows the delivery rows (a 0.3.0 relay may run, and claims from the outbox)
-- the insert makes the delivery due at `-infinity` as before.
--
-- Waits at most half a second for each lock; past it the migration rolls back whole and
-- `qualifierctl migrate` tries it again (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

CREATE TABLE deliveries_unsent (
    seq         bigint NOT NULL,
    endpoint_id uuid NOT NULL,
    PRIMARY KEY (seq, endpoint_id)
) WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000,
        autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 5000);

CREATE OR REPLACE FUNCTION qualifier_deliveries_fan_out() RETURNS trigger LANGUAGE plpgsql AS $$
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
        FROM outbox_mirror_new n
        CROSS JOIN LATERAL qualifier_delivery_of(n) d
        CROSS JOIN LATERAL qualifier_endpoints_of(n.org_id, n.event_type, n.is_test) e
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
    END IF;
    -- An event's insert is its deliveries' first write: no row of its `seq` exists.
    WITH made AS (
        INSERT INTO deliveries
        SELECT d.seq, e.endpoint_id,
               CASE WHEN e.first THEN d.delivery_id ELSE gen_random_uuid() END,
               d.org_id, d.lead_id, d.created_at, d.state,
               CASE WHEN d.due_at = '-infinity' THEN NULL ELSE d.due_at END, d.turn_at,
               d.resume_attempt, d.attempts, d.failed_attempts, d.last_status_code,
               d.last_error, d.attempt_log, d.replayed, d.updated_at, d.retrying, d.erased
        FROM outbox_mirror_new n
        CROSS JOIN LATERAL qualifier_delivery_of(n) d
        CROSS JOIN LATERAL qualifier_endpoints_of(n.org_id, n.event_type, n.is_test) e
        RETURNING seq, endpoint_id, state, due_at)
    INSERT INTO deliveries_unsent (seq, endpoint_id)
    SELECT seq, endpoint_id FROM made WHERE state = 'queued' AND due_at IS NULL;
    RETURN NULL;
END
$$;

-- An event deleted takes its deliveries, and what of them the relay has not published.
CREATE OR REPLACE FUNCTION qualifier_deliveries_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM deliveries d USING outbox_mirror_old o WHERE d.seq = o.seq;
    DELETE FROM deliveries_unsent u USING outbox_mirror_old o WHERE u.seq = o.seq;
    RETURN NULL;
END
$$;
