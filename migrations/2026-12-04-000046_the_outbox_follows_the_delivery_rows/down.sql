-- squawk-ignore-file require-statement-timeout
SET lock_timeout = '500ms';
DROP TRIGGER deliveries_outbox_follows ON deliveries;
DROP FUNCTION qualifier_outbox_follows();
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
        updated_at = EXCLUDED.updated_at, retrying = EXCLUDED.retrying;
    RETURN NULL;
END
$$;
DROP TABLE deliveries_mirror;

-- The lead's waits as migration 45 wrote them, on the outbox.
CREATE OR REPLACE FUNCTION qualifier_wait_for_earlier(
    p_delivery uuid, p_lo bigint, p_hi bigint, p_attempt integer, p_lead uuid
) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_lead::text, 17));
    UPDATE outbox o SET held_at = clock_timestamp(), waiting_for = 'earlier_delivery',
           resume_attempt = p_attempt, updated_at = clock_timestamp()
    WHERE o.delivery_id = p_delivery AND (o.seq >> 32) BETWEEN p_lo AND p_hi
      AND o.status IN ('pending', 'failed') AND o.erased_at IS NULL AND o.held_at IS NULL
      AND qualifier_earlier_pending(o.org_id, o.lead_id, o.seq);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        RETURN true;
    END IF;
    -- A second copy of a message whose wait began already (a crash before its ack). The days
    -- as a range of `seq`, the delivery rows' partition key.
    RETURN EXISTS (SELECT 1 FROM deliveries d
                   WHERE d.delivery_id = p_delivery
                     AND d.seq >= p_lo << 32 AND d.seq < (p_hi + 1) << 32
                     AND d.state = 'after_earlier');
END
$$;

CREATE OR REPLACE FUNCTION qualifier_release_next(p_org uuid, p_lead uuid) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    s bigint;
    n integer;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_lead::text, 17));
    -- The lead's first waiting delivery, through the org's waiting ones (`deliveries_org_state`).
    SELECT d.seq INTO s FROM deliveries d
    WHERE d.org_id = p_org AND d.state = 'after_earlier' AND d.lead_id = p_lead
    ORDER BY d.seq LIMIT 1;
    IF s IS NULL THEN
        RETURN false;
    END IF;
    UPDATE outbox o SET published_at = NULL, held_at = NULL, waiting_for = NULL, paced_at = NULL,
           replay_at = clock_timestamp(), updated_at = clock_timestamp()
    WHERE o.seq = s AND (o.seq >> 32) = (s >> 32) AND o.held_at IS NOT NULL
      AND NOT qualifier_earlier_pending(o.org_id, o.lead_id, o.seq);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        PERFORM pg_notify('qualifier_outbox', '');
    END IF;
    RETURN n > 0;
END
$$;
