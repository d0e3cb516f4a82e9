-- The outbox's index of the event's delivery id back on every day's partition (the legacy
-- partition keeps its own, `outbox_delivery_id`), and migration 43's
-- partition function and migration 50's retirement as they were.
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts, require-concurrent-index-creation
SET lock_timeout = '500ms';

DO $$
DECLARE
    part text;
BEGIN
    FOR part IN
        SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
        WHERE i.inhparent = 'outbox'::regclass AND c.relname <> 'outbox_legacy'
    LOOP
        EXECUTE format('CREATE UNIQUE INDEX IF NOT EXISTS %I ON %I (delivery_id)',
                       part || '_delivery_id', part);
    END LOOP;
END
$$;
DROP FUNCTION qualifier_outbox_delivery_ids_drop();

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
    EXECUTE format('CREATE UNIQUE INDEX %I ON %I (delivery_id)', part || '_delivery_id', part);
    EXECUTE format('CREATE UNIQUE INDEX %I ON %I (org_id, feed_pos) WHERE feed_pos IS NOT NULL',
                   part || '_feed', part);
    EXECUTE format('ALTER TABLE outbox ATTACH PARTITION %I FOR VALUES FROM (%s) TO (%s)',
                   part, first_day, last_day);
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', part, part || '_range');
    RETURN true;
END
$$;

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
    RETURN true;
END
$$;
