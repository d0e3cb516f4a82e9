-- A row's change without a lock record before it (docs/decisions.md, "Events and deliveries
-- apart"). Two things made PostgreSQL lock a row, a write-ahead log record of its own, before
-- writing its new version, on the path of every event:
--
-- 1. `leads_revision` (migrations 19 and 40), a `BEFORE UPDATE` row trigger: PostgreSQL locks
--    the row it passes to a `BEFORE` trigger, whether or not the trigger's `WHEN` then holds,
--    so every change of a lead (a close, a message from a known contact) wrote the lock. The
--    trigger raised a revision a writer left as it was, for the release that did not know the
--    column; every release that can run beside this one (0.2.0 on) raises it itself, in the
--    statement that writes the event with the number. It becomes an `AFTER` trigger that
--    refuses such a change (a hand edit), which locks nothing: an `AFTER` row trigger's `WHEN`
--    is read from the row versions the update already has.
-- 2. A page without room for the new version: PostgreSQL then marks the old version locked
--    before it looks for another page. `deliveries`' partitions, packed full by their inserts,
--    had room for few outcomes once a page filled. They, and `leads`, fill their pages to 80%
--    from now on, and the dead versions before are pruned from the page as it fills. Pages
--    written before keep what they hold; new pages, and each new day's delivery partition,
--    keep room.
--
-- Waits at most half a second for each lock; past it the migration rolls back whole and
-- `qualifierctl migrate` tries it again (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts, prefer-text-field
SET lock_timeout = '500ms';

DROP TRIGGER leads_revision ON leads;
CREATE FUNCTION leads_revision_refused() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'a change of lead % must raise its revision (it is %, the change wrote %)',
        OLD.id, OLD.revision, NEW.revision
        USING ERRCODE = 'check_violation';
END
$$;
CREATE TRIGGER leads_revision_rises AFTER UPDATE ON leads
    FOR EACH ROW WHEN (NEW.revision <= OLD.revision) EXECUTE FUNCTION leads_revision_refused();

ALTER TABLE leads SET (fillfactor = 80);

-- Migration 49's, with each delivery partition's fill factor.
CREATE OR REPLACE FUNCTION qualifier_deliveries_partition(first_day integer, last_day integer)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    part text := CASE WHEN first_day IS NULL THEN 'deliveries_legacy'
                      ELSE format('deliveries_d%s_%s', first_day, last_day) END;
    feed text := CASE WHEN first_day IS NULL THEN 'event_feed_legacy'
                      ELSE format('event_feed_d%s_%s', first_day, last_day) END;
    low text := CASE WHEN first_day IS NULL THEN 'MINVALUE'
                     ELSE (first_day::bigint << 32)::text END;
    high text := (last_day::bigint << 32)::text;
BEGIN
    IF to_regclass(feed) IS NULL THEN
        EXECUTE format('CREATE TABLE %I PARTITION OF event_feed FOR VALUES FROM (%s) TO (%s)',
                       feed, low, high);
    END IF;
    IF to_regclass(part) IS NOT NULL THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE %I PARTITION OF deliveries FOR VALUES FROM (%s) TO (%s)
                    WITH (fillfactor = 80)', part, low, high);
    RETURN true;
END
$$;

-- The partitions there are now: their new pages.
DO $$
DECLARE
    p text;
BEGIN
    FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'deliveries'::regclass LOOP
        EXECUTE format('ALTER TABLE %I SET (fillfactor = 80)', p);
    END LOOP;
END
$$;
