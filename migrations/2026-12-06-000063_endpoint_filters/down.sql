-- Migration 58's deliveries of an event, every endpoint's.
CREATE OR REPLACE FUNCTION qualifier_deliveries_made(o outbox) RETURNS SETOF deliveries
LANGUAGE sql STABLE AS $$
    SELECT d.seq, e.endpoint_id,
           CASE WHEN e.first THEN d.delivery_id ELSE gen_random_uuid() END,
           d.org_id, d.lead_id, d.created_at, d.state,
           CASE WHEN d.due_at = '-infinity' THEN NULL ELSE d.due_at END, d.turn_at,
           d.resume_attempt, d.attempts, d.failed_attempts, d.last_status_code,
           d.last_error, d.attempt_log, d.replayed, d.updated_at, d.retrying, d.erased,
           NOT e.first
    FROM qualifier_delivery_of(o) d
    CROSS JOIN LATERAL qualifier_endpoints_of(o.org_id, o.event_type, o.is_test) e
$$;
DROP FUNCTION qualifier_deliveries_made(outbox, uuid[]);
DROP FUNCTION qualifier_filtered_of(uuid, text, boolean, uuid[]);
