DROP TRIGGER IF EXISTS outbox_deliveries_insert ON outbox;
DROP TRIGGER IF EXISTS outbox_deliveries_update ON outbox;
DROP TRIGGER IF EXISTS outbox_deliveries_delete ON outbox;
DROP FUNCTION IF EXISTS qualifier_deliveries_mirror();
DROP FUNCTION IF EXISTS qualifier_deliveries_forget();
DROP FUNCTION IF EXISTS qualifier_deliveries_fill(integer);
DROP FUNCTION IF EXISTS qualifier_deliveries_differ();
DROP TABLE IF EXISTS deliveries_fill;
-- Migration 40's partitions, without the delivery partition beside each.
CREATE OR REPLACE FUNCTION qualifier_outbox_partition(first_day integer, last_day integer) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    part text := format('outbox_d%s_%s', first_day, last_day);
    def text;
BEGIN
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
DROP FUNCTION IF EXISTS qualifier_deliveries_partition(integer, integer);
DROP FUNCTION IF EXISTS qualifier_delivery_of(outbox);
DROP TABLE IF EXISTS deliveries;
DROP TYPE IF EXISTS delivery_state;
