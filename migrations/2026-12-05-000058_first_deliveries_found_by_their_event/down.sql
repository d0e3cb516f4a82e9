-- Every delivery row's id indexed again (built while the table's writers wait: a rollback is
-- an operator's, at a quiet time), the functions as migrations 47, 51 and 57 left them.
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts, require-concurrent-index-creation
SET lock_timeout = '500ms';

CREATE INDEX IF NOT EXISTS deliveries_delivery_id ON deliveries (delivery_id);
DROP INDEX deliveries_own_id;

CREATE OR REPLACE FUNCTION qualifier_wait_for_earlier(
    p_delivery uuid, p_lo bigint, p_hi bigint, p_attempt integer, p_lead uuid
) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_lead::text, 17));
    UPDATE deliveries d SET state = 'after_earlier', resume_attempt = p_attempt,
           due_at = NULL, updated_at = clock_timestamp()
    WHERE d.delivery_id = p_delivery AND d.seq >= p_lo << 32 AND d.seq < (p_hi + 1) << 32
      AND d.state NOT IN ('succeeded', 'dead', 'skipped', 'held', 'after_earlier')
      AND qualifier_earlier_pending(d.org_id, d.endpoint_id, d.lead_id, d.seq);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        RETURN true;
    END IF;
    RETURN EXISTS (SELECT 1 FROM deliveries d
                   WHERE d.delivery_id = p_delivery
                     AND d.seq >= p_lo << 32 AND d.seq < (p_hi + 1) << 32
                     AND d.state = 'after_earlier');
END
$$;
DROP FUNCTION qualifier_delivery_seq(uuid, bigint, bigint);

-- The row type loses its last column, then the functions that make rows of it make one less.
ALTER TABLE deliveries DROP COLUMN own_id;
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
CREATE OR REPLACE FUNCTION qualifier_deliveries_made(o outbox) RETURNS SETOF deliveries
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
