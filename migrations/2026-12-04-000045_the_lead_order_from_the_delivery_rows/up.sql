-- The lead's order read from the delivery rows: whether an earlier delivery of a lead is still
-- to be sent, which of a lead's deliveries waits for it, and whether one waits already, each
-- from the delivery's own state (`deliveries`, migration 43) instead of its event's row. One
-- more reader of the new shape before the release that writes only it (docs/decisions.md,
-- "Events and deliveries apart").
--
-- `qualifier_earlier_pending(org, lead, seq)`: a delivery of the lead, earlier than `seq`, not
-- over (`pending` or `failed` in the API's words: any state before the end), outside of which
-- test events and replays stay. The lead's earlier events are found through `outbox_org_lead`
-- and each one's delivery by its key, as the lists find them: the delivery rows have no index
-- by lead. STABLE and one expression, so the planner inlines it into the statement that calls
-- it, under that statement's snapshot, where the delivery rows say what the outbox says (the
-- mirror triggers write them at the end of each statement on the outbox).
--
-- The release before this one, still running during an upgrade, calls the three functions with
-- the same arguments and gets the same answers. Their writes stay on the outbox until the
-- release that writes the delivery rows.
-- squawk-ignore-file require-statement-timeout
SET lock_timeout = '5s';

CREATE OR REPLACE FUNCTION qualifier_earlier_pending(p_org uuid, p_lead uuid, p_seq bigint)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM outbox e
                   JOIN deliveries d ON d.seq = e.seq AND d.endpoint_id = e.org_id
                   WHERE e.org_id = p_org AND e.lead_id = p_lead AND e.seq < p_seq
                     AND NOT e.is_test
                     AND d.state NOT IN ('succeeded', 'dead', 'skipped') AND NOT d.replayed)
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
