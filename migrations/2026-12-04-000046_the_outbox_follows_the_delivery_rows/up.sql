-- The outbox follows the delivery rows: a move written on a delivery's own row (`deliveries`)
-- is written back to its event's outbox row in the same statement, as migration 43's triggers
-- write every outbox move into the delivery row. So the two shapes stay one while the moves
-- go over to the delivery rows one by one (docs/decisions.md, "Events and deliveries apart"),
-- and while the release before this one, which reads and writes the outbox's columns, still
-- runs beside this one during an upgrade: whichever shape a move is written on, both say it
-- at its commit, and each release reads the one it knows.
--
-- One statement trigger, over the statement's new rows, writes each one's state into the
-- outbox's columns (the mapping back of `qualifier_delivery_of`: a state read from these
-- columns again is the one written). The outbox's own triggers then run as for any outbox
-- write (the hourly totals count it, `outbox_stays_erased` keeps an erased event's row as
-- it is), but the outbox's mirror does not write the rows back: a trigger's write goes no
-- further (`pg_trigger_depth()`), in either direction.
--
-- The moves written on the delivery rows from this migration on: the outage's holds and their
-- ends, the lead's waits (the two functions below) and their ends, a skip, the next attempt's
-- schedule (crates/store/src/deliveries/state.rs says which are still written on the outbox).
--
-- `deliveries_mirror.to_outbox` says whether the outbox follows; on for now. The release
-- that reads and writes only the delivery rows turns it off once no release that reads the
-- outbox's columns can run (docs/operations.md, "Deliveries in rows of their own").
-- Waits at most half a second for each lock; past it the migration rolls back whole and
-- `qualifierctl migrate` tries it again (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

CREATE TABLE deliveries_mirror (
    one       boolean PRIMARY KEY DEFAULT true CHECK (one),
    to_outbox boolean NOT NULL
);
INSERT INTO deliveries_mirror (to_outbox) VALUES (true);

-- The outbox's mirror, as migration 44 wrote it, but for writes of a trigger: the outbox's
-- rows the delivery rows' own trigger wrote.
CREATE OR REPLACE FUNCTION qualifier_deliveries_mirror() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
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

-- Each moved delivery's state written into its event's row. Published exactly when not due
-- for the relay (the mapping's `due_at` is NULL exactly when `published_at` is set), due at
-- `replay_at` but for a new event's `-infinity` (NULL there). The columns that no state
-- decides keep what they held: the publication time, the wait's start of one still held, the
-- wait's kind (`waiting_for`) of one that is out (the throttle's, kept after its turn, as
-- the relay's mark keeps it).
CREATE FUNCTION qualifier_outbox_follows() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF pg_trigger_depth() > 1 OR NOT (SELECT m.to_outbox FROM deliveries_mirror m) THEN
        RETURN NULL;
    END IF;
    UPDATE outbox o SET
        status = CASE WHEN d.state IN ('succeeded', 'dead', 'skipped') THEN d.state::text
                      WHEN d.retrying THEN 'failed' ELSE 'pending' END,
        published_at = CASE WHEN d.due_at IS NOT NULL THEN NULL
                            ELSE coalesce(o.published_at, d.updated_at) END,
        held_at = CASE WHEN d.state IN ('held', 'after_earlier')
                       THEN coalesce(o.held_at, d.updated_at) END,
        waiting_for = CASE WHEN d.state = 'after_earlier' THEN 'earlier_delivery'
                           WHEN d.state = 'paced' THEN 'throttle'
                           WHEN d.state = 'out' THEN o.waiting_for END,
        paced_at = d.turn_at,
        replay_at = nullif(d.due_at, '-infinity'),
        resume_attempt = d.resume_attempt, attempts = d.attempts,
        failed_attempts = d.failed_attempts, last_status_code = d.last_status_code,
        last_error = d.last_error, attempt_log = d.attempt_log, replayed = d.replayed,
        updated_at = d.updated_at
    FROM deliveries_moved d
    WHERE o.seq = d.seq AND (o.seq >> 32) = (d.seq >> 32) AND o.org_id = d.endpoint_id;
    RETURN NULL;
END
$$;

CREATE TRIGGER deliveries_outbox_follows AFTER UPDATE ON deliveries
    REFERENCING NEW TABLE AS deliveries_moved
    FOR EACH STATEMENT EXECUTE FUNCTION qualifier_outbox_follows();

-- The lead's waits, written on the delivery rows (their reads are migration 45's): a delivery
-- waits for an earlier one of its lead, and the lead's next waiting one goes back to the relay
-- once nothing earlier is pending, both under the lead's lock as before.
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
      AND qualifier_earlier_pending(d.org_id, d.lead_id, d.seq);
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
    -- Back to the relay, as every requeue (crates/store/src/deliveries/state.rs, `requeue`).
    UPDATE deliveries d SET state = 'queued', due_at = clock_timestamp(), turn_at = NULL,
           updated_at = clock_timestamp()
    WHERE d.seq = s AND d.org_id = p_org AND d.state IN ('held', 'after_earlier')
      AND NOT qualifier_earlier_pending(d.org_id, d.lead_id, d.seq);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        PERFORM pg_notify('qualifier_outbox', '');
    END IF;
    RETURN n > 0;
END
$$;
