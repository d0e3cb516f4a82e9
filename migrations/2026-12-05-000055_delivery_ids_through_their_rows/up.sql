-- An event's delivery id found through its delivery rows only (docs/decisions.md, "Events and
-- deliveries apart").
--
-- Each of the outbox's day partitions had a unique index on `delivery_id`: an entry written by
-- every event's insert, the one way to a delivery by its id before the deliveries had rows of
-- their own. `deliveries_delivery_id` (migration 43) holds every delivery's id, the event's
-- first one included, so this release finds a delivery by its id there alone (a search, a
-- message of a release that did not carry the `seq`). The outbox's index is still read by the
-- release before this one, which may run until the outbox retires (migration 48): so a
-- partition created while the outbox follows the delivery rows still gets it, and the
-- retirement drops it from every partition (or this migration, on a database retired already).
-- A database that `qualifierctl migrate` creates is retired at once and never has it.
--
-- Waits at most half a second for each lock; past it the migration rolls back whole and
-- `qualifierctl migrate` tries it again (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

-- Migration 43's, with the event's delivery id indexed only while the outbox follows.
CREATE OR REPLACE FUNCTION qualifier_outbox_partition(first_day integer, last_day integer) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    part text := format('outbox_d%s_%s', first_day, last_day);
    def text;
BEGIN
    PERFORM qualifier_deliveries_partition(first_day, last_day);
    IF to_regclass(part) IS NOT NULL THEN
        RETURN false;
    END IF;
    EXECUTE format('CREATE TABLE %I (LIKE outbox INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                   part);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I
                    CHECK ((seq >> 32) IS NOT NULL AND (seq >> 32) >= %s AND (seq >> 32) < %s)',
                   part, part || '_range', first_day, last_day);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (seq)', part, part || '_pkey');
    FOR def IN
        SELECT regexp_replace(pg_get_indexdef(x.indexrelid),
                              '^CREATE (UNIQUE )?INDEX outbox(\w*) ON ONLY \S+ ',
                              'CREATE \1INDEX ' || part || '\2 ON ' || part || ' ')
        FROM pg_index x WHERE x.indrelid = 'outbox'::regclass
    LOOP
        EXECUTE def;
    END LOOP;
    EXECUTE format('CREATE UNIQUE INDEX %I ON %I (event_id)', part || '_event_id', part);
    IF (SELECT m.to_outbox FROM deliveries_mirror m) THEN
        EXECUTE format('CREATE UNIQUE INDEX %I ON %I (delivery_id)', part || '_delivery_id',
                       part);
    END IF;
    EXECUTE format('CREATE UNIQUE INDEX %I ON %I (org_id, feed_pos) WHERE feed_pos IS NOT NULL',
                   part || '_feed', part);
    EXECUTE format('ALTER TABLE outbox ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                   part, first_day, last_day);
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', part, part || '_range');
    RETURN true;
END
$$;

-- The outbox's indexes of the event's delivery id, from every day's partition. The legacy
-- partition's (`outbox_delivery_id`, from before the days) stays: no new row goes there.
CREATE FUNCTION qualifier_outbox_delivery_ids_drop() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    idx text;
BEGIN
    FOR idx IN
        SELECT c.relname || '_delivery_id'
        FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'outbox'::regclass
    LOOP
        EXECUTE format('DROP INDEX IF EXISTS %I', idx);
    END LOOP;
END
$$;

-- Migration 50's, and the event's delivery id no longer indexed in the outbox.
CREATE OR REPLACE FUNCTION qualifier_outbox_retire() RETURNS boolean LANGUAGE plpgsql AS $$
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
    PERFORM qualifier_endpoints_apart();
    PERFORM qualifier_outbox_delivery_ids_drop();
    RETURN true;
END
$$;

DO $$
BEGIN
    IF NOT (SELECT m.to_outbox FROM deliveries_mirror m) THEN
        PERFORM qualifier_outbox_delivery_ids_drop();
    END IF;
END
$$;
