-- Migration 40's trigger, pages filled whole again, and migration 49's partition function.
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

DROP TRIGGER leads_revision_rises ON leads;
DROP FUNCTION leads_revision_refused();
CREATE TRIGGER leads_revision BEFORE UPDATE ON leads
    FOR EACH ROW WHEN (NEW.revision <= OLD.revision) EXECUTE FUNCTION leads_revision();

ALTER TABLE leads RESET (fillfactor);

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
    EXECUTE format('CREATE TABLE %I PARTITION OF deliveries FOR VALUES FROM (%s) TO (%s)',
                   part, low, high);
    RETURN true;
END
$$;

DO $$
DECLARE
    p text;
BEGIN
    FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'deliveries'::regclass LOOP
        EXECUTE format('ALTER TABLE %I RESET (fillfactor)', p);
    END LOOP;
END
$$;
