-- A retry told from a first attempt in the delivery row, and a delivery due for the relay
-- exactly when the relay has yet to publish it, new events before anything scheduled.
--
-- A retry first. The API's status of a delivery that
-- has not ended is `pending` until an attempt of its cycle fails and `failed` from then on
-- (crates/domain/src/delivery.rs, `DeliveryStatus`); the row's state says where the delivery
-- is (queued, out, held, ...), which either can be, so migration 43's row could not say which
-- of the two it is, and the release that reads the rows instead of the outbox needs it.
-- `retrying` is the outbox's `status = 'failed'`; the mapping, the triggers' update and the
-- check take it from here on.
--
-- New events due at `-infinity`. Migration 43 made a new event due at its `created_at`, the
-- start of the transaction that wrote it; but a lead's later event can be written by a
-- transaction that began before its earlier one committed (it waits for the lead's row), so
-- by that time it could come before the earlier one, and a relay that claims the due in
-- order would give the lead's events feed positions out of order. At `-infinity` every new
-- event sorts before what is scheduled, among themselves by `seq` (`deliveries_due` is
-- `(due_at, seq)`), the order in which the relay publishes them today.
--
-- And due whenever the relay has yet to publish it, whatever its state: an event erased before
-- it was ever published is `skipped`, and is still published once, so that the feed gives it
-- a position (the worker drops its message; crates/store/src/deliveries/state.rs, `erased_set`).
-- Migration 43 left such a row without a due time, so a relay reading `deliveries_due` would
-- never have published it. The rows to mend are the ones waiting for the relay now, few,
-- found through the outbox's own index of them (`outbox_unpublished`).
--
-- The column has a constant default, so adding it rewrites nothing. Its lock on `deliveries`
-- waits for every transaction that wrote it (each outbox write does, through the triggers),
-- and holds off new ones until this commits, so the rows set below are all there are: a
-- retry written meanwhile is written after this, by the new mapping. Those are the deliveries
-- that have not ended, found through `deliveries_org_state` (the succeeded ones are not in it).
-- Waits at most half a second for each lock; past it the migration rolls back whole and
-- `qualifierctl migrate` tries it again (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

-- The release that reads the delivery rows finds one for every stored event: the history's
-- fill that migration 43 began (housekeeping's batches, `deliveries_fill`) is finished here if
-- it has not finished yet, in the same batches. After a release that ran long enough it is
-- done, and this reads one row (docs/operations.md, "Deliveries in rows of their own", says how
-- to see it before upgrading). Before the lock below, so writers go on meanwhile; a batch of
-- another replica running now (0: busy) is waited for.
DO $$
DECLARE
    n integer;
BEGIN
    LOOP
        n := qualifier_deliveries_fill(10000);
        EXIT WHEN n < 0;
        IF n = 0 THEN
            PERFORM pg_sleep(0.05);
        END IF;
    END LOOP;
END
$$;

ALTER TABLE deliveries ADD COLUMN retrying boolean NOT NULL DEFAULT false;

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
           o.status = 'failed'
$$;

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

UPDATE deliveries d SET retrying = true
FROM outbox o
WHERE d.state NOT IN ('succeeded', 'dead', 'skipped')
  AND o.seq = d.seq AND o.org_id = d.endpoint_id AND o.status = 'failed';

UPDATE deliveries d SET due_at = '-infinity'
FROM outbox o
WHERE o.published_at IS NULL AND o.replay_at IS NULL
  AND d.seq = o.seq AND d.endpoint_id = o.org_id
  AND d.due_at IS DISTINCT FROM '-infinity';
