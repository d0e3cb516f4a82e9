-- A delivery that waits in its row (for an earlier delivery of its lead, or while its
-- endpoint fails) is not due: the wait clears `due_at`, as the relay's mark does. The row is
-- due again only when a release sends it back to the relay (`requeue`, which sets it).
--
-- Why: a relay can publish a batch and die before its mark commits. Its messages are out, the
-- rows stay due (a new event's `-infinity`), and a worker that takes one of those messages may
-- begin a wait on the row. The next relay then claimed the waiting row as due, published it
-- and marked it `out`, while the copy of that message found the wait already begun and was
-- acked: the row stayed `out` with no message and no release to come (a chaos run with three
-- endpoints, per-lead order and a killed lead-api lost deliveries this way).
--
-- Waits at most half a second for each lock; past it the migration rolls back whole and
-- `qualifierctl migrate` tries it again (crates/store/src/pool.rs, `gave_way`). The update
-- below touches only the rows that wait, through their own index.
SET lock_timeout = '500ms';
SET statement_timeout = '60s';

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
    -- A second copy of a message whose wait began already (a crash before its ack).
    RETURN EXISTS (SELECT 1 FROM deliveries d
                   WHERE d.delivery_id = p_delivery
                     AND d.seq >= p_lo << 32 AND d.seq < (p_hi + 1) << 32
                     AND d.state = 'after_earlier');
END
$$;

-- Rows already waiting with a due time, through the waits' own index (`deliveries_waiting`):
-- as many as are waiting, not the history.
UPDATE deliveries SET due_at = NULL
WHERE state IN ('held', 'after_earlier') AND updated_at IS NOT NULL AND due_at IS NOT NULL;
