-- The feed's own table gone (its positions with it: a release before this one reads only the
-- outbox's), and the delivery partitions' function as migration 43 wrote it.
-- squawk-ignore-file require-statement-timeout
SET lock_timeout = '500ms';
DROP TABLE event_feed;
CREATE OR REPLACE FUNCTION qualifier_deliveries_partition(first_day integer, last_day integer)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    part text := CASE WHEN first_day IS NULL THEN 'deliveries_legacy'
                      ELSE format('deliveries_d%s_%s', first_day, last_day) END;
BEGIN
    IF to_regclass(part) IS NOT NULL THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE %I PARTITION OF deliveries FOR VALUES FROM (%s) TO (%s)',
                   part,
                   CASE WHEN first_day IS NULL THEN 'MINVALUE'
                        ELSE (first_day::bigint << 32)::text END,
                   (last_day::bigint << 32)::text);
    RETURN true;
END
$$;
