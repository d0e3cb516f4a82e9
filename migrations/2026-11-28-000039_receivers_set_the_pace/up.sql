-- Receivers set the pace (docs/delivery.md, "Throttle and order").
--
-- The webhook's `max_per_second` (NULL: no throttle) and `ordering` (NULL or 'none': as before;
-- 'per_lead': a lead's deliveries one at a time in event order). `endpoint_pacing` holds each
-- throttled endpoint's next free turn, shared by every webhook-delivery replica (the row lock
-- hands turns out one at a time, like `replay_pacing`).
--
-- On the outbox: `paced_at`, the turn a delivery waiting for the throttle holds (the relay
-- sends it shortly before); `waiting_for`, why a delivery neither finished nor retrying waits
-- ('throttle' or 'earlier_delivery', shown by the deliveries list); `replayed`, set by a replay,
-- which puts the delivery outside its lead's order.
--
-- Adding NULL columns rewrites nothing, and the older release's statements name their columns,
-- so both run during an upgrade.
SET lock_timeout = '5s';
SET statement_timeout = '60s';
ALTER TABLE webhooks
    ADD COLUMN IF NOT EXISTS max_per_second bigint,
    ADD COLUMN IF NOT EXISTS ordering text;
ALTER TABLE outbox
    ADD COLUMN IF NOT EXISTS paced_at timestamptz,
    ADD COLUMN IF NOT EXISTS waiting_for text,
    ADD COLUMN IF NOT EXISTS replayed boolean;
CREATE TABLE IF NOT EXISTS endpoint_pacing (
    org_id  uuid PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
    next_at timestamptz NOT NULL
);

-- A lead's order (crates/store/src/pacing.rs): the wait of a delivery behind an earlier one of
-- its lead, and the release of the next one when a delivery of the lead is over. Each takes the
-- lead's transaction-level advisory lock first and only then reads: in a PL/pgSQL function
-- every statement takes a snapshot of its own, so the read sees whatever committed before the
-- lock was granted. A wait begun while the earlier delivery ends thus sees that end, or is
-- seen by its release. One round trip each, their plans kept by the session.
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
      AND EXISTS (SELECT 1 FROM outbox e
                  WHERE e.org_id = o.org_id AND e.lead_id = o.lead_id AND e.seq < o.seq
                    AND e.status IN ('pending', 'failed') AND NOT e.is_test
                    AND e.replayed IS NOT TRUE);
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
    UPDATE outbox o SET published_at = NULL, held_at = NULL, waiting_for = NULL,
           replay_at = clock_timestamp(), updated_at = clock_timestamp()
    WHERE o.seq = s AND (o.seq >> 32) = (s >> 32) AND o.held_at IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM outbox e
                      WHERE e.org_id = o.org_id AND e.lead_id = o.lead_id AND e.seq < o.seq
                        AND e.status IN ('pending', 'failed') AND NOT e.is_test
                        AND e.replayed IS NOT TRUE);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        PERFORM pg_notify('qualifier_outbox', '');
    END IF;
    RETURN n > 0;
END
$$;
