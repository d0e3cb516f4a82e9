-- Migration 43's mapping and mirror, without `retrying`, new events due at their creation.
CREATE OR REPLACE FUNCTION qualifier_deliveries_mirror() RETURNS trigger LANGUAGE plpgsql AS $$
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
DROP FUNCTION qualifier_delivery_of(outbox);
ALTER TABLE deliveries DROP COLUMN retrying;
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
UPDATE deliveries d SET due_at = CASE WHEN d.state IN ('queued', 'paced') THEN d.created_at END
WHERE d.due_at = '-infinity';
