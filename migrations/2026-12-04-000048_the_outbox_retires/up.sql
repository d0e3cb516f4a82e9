-- The outbox retires from the deliveries' state: from the moment no release that reads and
-- writes the outbox's delivery columns can run any more, the delivery rows alone hold every
-- delivery's state, and the event's row is written once more at most, when the relay gives it
-- its feed position (docs/decisions.md, "Events and deliveries apart").
--
-- `qualifier_outbox_retire()` does it, once and for good:
--
-- - `deliveries_mirror.to_outbox` off, first, after taking the relays' turn (`feed_head`'s
--   lock): a relay batch that began before it commits as it began, and the next one reads the
--   switch off (crates/store/src/outbox.rs, `relay_batch`);
-- - the two triggers that kept both shapes one on each move dropped: the outbox's mirror of its
--   updates (migration 43) and the delivery rows' trigger back to the outbox (migration 46). The
--   mirror of the event's insert stays (it writes the delivery row), and so does the mirror of
--   a delete;
-- - the outbox's indexes of delivery states dropped (the unpublished, the due replays, the held
--   and the org's by status): nothing reads them, and with the states no longer written they
--   would keep an entry for every event for ever.
--
-- The outbox's delivery columns stay as the last move written on them left them; the release
-- after this one drops them. Turning the outbox back on is not offered: its columns no longer
-- say the deliveries' states.
--
-- Who calls it: `qualifierctl migrate` on a database it migrated from the first migration (no
-- release before this one ever ran there), and the operator once every replica runs this
-- release (`qualifierctl outbox retire`, docs/operations.md, "Deliveries in rows of their
-- own"). It takes the outbox's lock for its drops: the caller's `lock_timeout` bounds the wait,
-- and the caller tries again.
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

CREATE FUNCTION qualifier_outbox_retire() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM feed_head FOR UPDATE;
    UPDATE deliveries_mirror SET to_outbox = false WHERE to_outbox;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    DROP TRIGGER IF EXISTS outbox_deliveries_update ON outbox;
    DROP TRIGGER IF EXISTS deliveries_outbox_follows ON deliveries;
    DROP INDEX IF EXISTS outbox_unpublished;
    DROP INDEX IF EXISTS outbox_replay_due;
    DROP INDEX IF EXISTS outbox_held;
    DROP INDEX IF EXISTS outbox_org_status;
    RETURN true;
END
$$;

-- The two shapes are compared only while they are kept one.
CREATE OR REPLACE FUNCTION qualifier_deliveries_differ() RETURNS bigint
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN NOT (SELECT m.to_outbox FROM deliveries_mirror m) THEN 0 ELSE
           (SELECT count(*)
            FROM outbox o
            CROSS JOIN deliveries_fill f
            CROSS JOIN LATERAL qualifier_delivery_of(o) m
            LEFT JOIN deliveries d ON d.seq = o.seq AND d.endpoint_id = o.org_id
            WHERE (o.seq <= f.next_seq OR o.seq > f.until_seq)
              AND d IS DISTINCT FROM m)
         + (SELECT count(*)
            FROM deliveries d
            WHERE NOT EXISTS (SELECT 1 FROM outbox o
                              WHERE o.seq = d.seq AND o.org_id = d.endpoint_id)) END
$$;
