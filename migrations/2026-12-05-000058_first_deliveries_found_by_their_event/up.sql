-- An event's first delivery (its org's primary endpoint's) is found by its id through the
-- event's own unique index, never through the delivery rows' (docs/decisions.md, "Events and
-- deliveries apart").
--
-- The first delivery keeps its event's delivery id, which the outbox's `delivery_id` index
-- already finds; the delivery rows' own `deliveries_delivery_id` held every row's id a second
-- time. Since `state` is indexed, the outcome is no heap-only update, so that index took an
-- entry at the delivery's insert and another at its outcome: two write-ahead log records of
-- about 28 an event, for lookups the event's index answers (docs/performance.md, "Fewer
-- records an event"). Now a row says whether its id is its own (`own_id`): false for an
-- event's first delivery, true for another endpoint's, unknown (NULL) for a row written by a
-- writer that does not say (the outbox's mirror and the history's fill while the release
-- before this one may run, a test's fixture). Only the rows whose id may
-- be their own are indexed (`deliveries_own_id`), so a lookup by id is the event's index first,
-- then this one (`qualifier_delivery_seq`); a row marked wrongly as its own costs one index
-- entry, never a lookup.
--
-- The index is built here only on the empty partitions (tomorrow's, a new installation's):
-- built on a partition with rows it would hold that partition's writers off while it reads
-- them. Housekeeping builds it on the others concurrently, attaches it, and drops
-- `deliveries_delivery_id` once every partition has it (crates/store/src/partitions/upkeep.rs,
-- `index_delivery_ids`); until then that index serves both lookups.
--
-- Waits at most half a second for each lock; past it the migration rolls back whole and
-- `qualifierctl migrate` tries it again (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts, require-concurrent-index-creation
SET lock_timeout = '500ms';

-- No default: no rewrite, nothing stored for the rows already there.
ALTER TABLE deliveries ADD COLUMN own_id boolean;

-- Migration 47's, with the new column unknown: the outbox's mirror and the history's fill
-- write what it makes, as the rows already there are (`qualifier_deliveries_differ` compares
-- them whole while the outbox mirrors).
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
           o.status = 'failed', o.erased_at IS NOT NULL, NULL::boolean
$$;

-- Migration 57's, each row marked: the first endpoint's keeps the event's id, every other
-- one is given its own. What the lead's write and the outbox's row trigger insert once the
-- outbox has retired.
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

-- The `seq` of delivery `p_id`, whose event is of a day from `p_lo` to `p_hi` (the partition
-- key's days, `seq >> 32`; a message without its `seq` passes every day): its event's, found
-- through the event's unique index when it is the event's first delivery, else through
-- `deliveries_own_id`. Every lookup of a delivery by its id alone goes through it (the
-- moves in crates/store/src/deliveries/state.rs, the console's reads in
-- crates/store/src/deliveries/lists.rs). PL/pgSQL so that its plan is kept for the session.
CREATE FUNCTION qualifier_delivery_seq(p_id uuid, p_lo bigint, p_hi bigint) RETURNS bigint
LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN (SELECT k.seq FROM (
                SELECT o.seq FROM outbox o
                WHERE o.delivery_id = p_id AND (o.seq >> 32) BETWEEN p_lo AND p_hi
                UNION ALL
                SELECT d.seq FROM deliveries d
                WHERE d.delivery_id = p_id AND d.own_id IS NOT FALSE
                  AND d.seq >= greatest(p_lo, 0) << 32
                  AND d.seq < (least(p_hi, 1 << 30) + 1) << 32) k
            LIMIT 1);
END
$$;

-- Migration 51's, its delivery found by its key.
CREATE OR REPLACE FUNCTION qualifier_wait_for_earlier(
    p_delivery uuid, p_lo bigint, p_hi bigint, p_attempt integer, p_lead uuid
) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    n integer;
    s bigint := qualifier_delivery_seq(p_delivery, p_lo, p_hi);
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_lead::text, 17));
    UPDATE deliveries d SET state = 'after_earlier', resume_attempt = p_attempt,
           due_at = NULL, updated_at = clock_timestamp()
    WHERE d.seq = s AND d.delivery_id = p_delivery
      AND d.state NOT IN ('succeeded', 'dead', 'skipped', 'held', 'after_earlier')
      AND qualifier_earlier_pending(d.org_id, d.endpoint_id, d.lead_id, d.seq);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        RETURN true;
    END IF;
    -- A second copy of a message whose wait began already (a crash before its ack).
    RETURN EXISTS (SELECT 1 FROM deliveries d
                   WHERE d.seq = s AND d.delivery_id = p_delivery
                     AND d.state = 'after_earlier');
END
$$;

-- The new index on the parent alone (every partition made from now on gets it), then on each
-- empty partition, attached; the old one goes if none is left without it.
CREATE INDEX deliveries_own_id ON ONLY deliveries (delivery_id) WHERE own_id IS NOT FALSE;
DO $$
DECLARE
    part regclass;
    empty boolean;
BEGIN
    FOR part IN SELECT i.inhrelid::regclass FROM pg_inherits i
                WHERE i.inhparent = 'deliveries'::regclass LOOP
        EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM %s)', part) INTO empty;
        IF empty THEN
            EXECUTE format('CREATE INDEX %I ON %s (delivery_id) WHERE own_id IS NOT FALSE',
                           part::text || '_own_id', part);
            EXECUTE format('ALTER INDEX deliveries_own_id ATTACH PARTITION %I',
                           part::text || '_own_id');
        END IF;
    END LOOP;
    IF (SELECT x.indisvalid FROM pg_index x WHERE x.indexrelid = 'deliveries_own_id'::regclass)
    THEN
        DROP INDEX deliveries_delivery_id;
    END IF;
END
$$;
