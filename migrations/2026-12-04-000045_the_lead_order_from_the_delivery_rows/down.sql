-- The three functions as migration 42 wrote them, reading the outbox's rows.
-- squawk-ignore-file require-statement-timeout
SET lock_timeout = '5s';

CREATE OR REPLACE FUNCTION qualifier_earlier_pending(p_org uuid, p_lead uuid, p_seq bigint)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM outbox e
                   WHERE e.org_id = p_org AND e.lead_id = p_lead AND e.seq < p_seq
                     AND e.status IN ('pending', 'failed') AND NOT e.is_test
                     AND e.replayed IS NOT TRUE)
$$;

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
    -- A second copy of a message whose wait began already (a crash before its ack).
    RETURN EXISTS (SELECT 1 FROM outbox o
                   WHERE o.delivery_id = p_delivery AND (o.seq >> 32) BETWEEN p_lo AND p_hi
                     AND o.held_at IS NOT NULL AND o.waiting_for = 'earlier_delivery');
END
$$;

CREATE OR REPLACE FUNCTION qualifier_release_next(p_org uuid, p_lead uuid) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    s bigint;
    n integer;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_lead::text, 17));
    SELECT w.seq INTO s FROM outbox w
    WHERE w.org_id = p_org AND w.lead_id = p_lead AND w.held_at IS NOT NULL
      AND w.waiting_for = 'earlier_delivery'
    ORDER BY w.seq LIMIT 1;
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
