-- The wait as migration 50 wrote it (it left `due_at` as it was).

CREATE OR REPLACE FUNCTION qualifier_wait_for_earlier(
    p_delivery uuid, p_lo bigint, p_hi bigint, p_attempt integer, p_lead uuid
) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_lead::text, 17));
    UPDATE deliveries d SET state = 'after_earlier', resume_attempt = p_attempt,
           updated_at = clock_timestamp()
    WHERE d.delivery_id = p_delivery AND d.seq >= p_lo << 32 AND d.seq < (p_hi + 1) << 32
      AND d.state NOT IN ('succeeded', 'dead', 'skipped', 'held', 'after_earlier')
      AND qualifier_earlier_pending(d.org_id, d.endpoint_id, d.lead_id, d.seq);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        RETURN true;
    END IF;
    -- A second copy of a message whose wait began already (a crash before its ack).
    RETURN EXISTS (SELECT 1 FROM deliveries d
                   WHERE d.delivery_id = p_delivery
                     AND d.seq >= p_lo << 32 AND d.seq < (p_hi + 1) << 32
                     AND d.state = 'after_earlier');
END
$$;
