-- The insert and the delete as migration 50 wrote them; what the relay had not published yet
-- made due at `-infinity` again, where the release before this one claims new deliveries.
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

CREATE OR REPLACE FUNCTION qualifier_deliveries_fan_out() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
    INSERT INTO deliveries
    SELECT d.seq, e.endpoint_id,
           CASE WHEN e.first THEN d.delivery_id ELSE gen_random_uuid() END,
           d.org_id, d.lead_id, d.created_at, d.state, d.due_at, d.turn_at, d.resume_attempt,
           d.attempts, d.failed_attempts, d.last_status_code, d.last_error, d.attempt_log,
           d.replayed, d.updated_at, d.retrying, d.erased
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
END
$$;

CREATE OR REPLACE FUNCTION qualifier_deliveries_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM deliveries d USING outbox_mirror_old o WHERE d.seq = o.seq;
    RETURN NULL;
END
$$;

UPDATE deliveries d SET due_at = '-infinity'
FROM deliveries_unsent u
WHERE d.seq = u.seq AND d.endpoint_id = u.endpoint_id AND d.state = 'queued'
  AND d.due_at IS NULL;

DROP TABLE deliveries_unsent;
