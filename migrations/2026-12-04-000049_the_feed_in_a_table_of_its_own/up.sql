-- The events feed's positions in a table of their own (docs/decisions.md, "Events and
-- deliveries apart"): once the outbox retires from the deliveries' state (migration 48), the
-- relay's feed position was the one write of an event's row after its insert, a new version
-- of the whole row with an entry in each of its indexes. From this migration on, a relay on a
-- retired database appends each new event's position to `event_feed` instead (a narrow row:
-- the event's `seq`, its org, its type and its position, three small indexes); the positions
-- given before stay in the outbox's `feed_pos`, where 0.3.0 writes them too while it runs,
-- and the feed reads both, each through its own index in position order, merged
-- (crates/store/src/outbox.rs, `events_feed`). A position is in one of the two, never both:
-- the relays take turns (`feed_head`), and each batch writes the shape the retirement's
-- switch says.
--
-- Partitioned by ranges of `seq` that are the outbox's partitions' days, as `deliveries` is:
-- created with the outbox's partition (`qualifier_deliveries_partition`, replaced below, which
-- `qualifier_outbox_partition` calls) and dropped after it by retention.
--
-- Waits at most half a second for each lock; past it the migration rolls back whole and
-- `qualifierctl migrate` tries it again (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts, prefer-text-field
SET lock_timeout = '500ms';

CREATE TABLE event_feed (
    seq        bigint NOT NULL,
    org_id     uuid NOT NULL,
    pos        bigint NOT NULL,
    event_type text NOT NULL,
    PRIMARY KEY (seq)
) PARTITION BY RANGE (seq);

-- squawk-ignore require-concurrent-index-creation
CREATE INDEX event_feed_org ON event_feed (org_id, pos);
-- squawk-ignore require-concurrent-index-creation
CREATE INDEX event_feed_org_type ON event_feed (org_id, event_type, pos);

-- The partitions of `deliveries` and of `event_feed` for the outbox's days [first_day,
-- last_day), or for everything below day `last_day` when `first_day` is NULL (the outbox's
-- legacy partition). Each created whole as a partition: the parents are written only by
-- triggers and the relay, under the outbox partition's creation.
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

-- One for each partition the outbox has now.
DO $$
DECLARE
    p record;
BEGIN
    FOR p IN SELECT c.relname,
                    substring(c.relname FROM '^outbox_d([0-9]+)_[0-9]+$')::integer AS first_day,
                    coalesce(substring(c.relname FROM '^outbox_d[0-9]+_([0-9]+)$')::integer,
                             20000) AS last_day
             FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'outbox'::regclass LOOP
        PERFORM qualifier_deliveries_partition(p.first_day, p.last_day);
    END LOOP;
END
$$;
