-- New outbox partitions fill their pages whole, where they kept a tenth of each free
-- (migration 24, then `qualifier_outbox_partition` in migration 28). The free tenth was meant to
-- keep an attempt's outcome on its row's page. An outcome cannot be a heap-only update (the
-- status is indexed), and a row grows with its attempt entry, so about one outcome in a page of
-- ten rows found room there anyway: the tenth was mostly a larger table. Measured on a scratch
-- table written as the outbox is (rows inserted pending, then each given its outcome, vacuumed
-- as it went): 408 bytes of table per row with pages filled whole against 434 with a tenth free
-- (docs/performance.md, "History at scale"; docs/decisions.md, "Outbox pages filled whole").
--
-- Partitions that are still to receive events (the one of today and later) get the new setting
-- too; a closed one keeps its pages as they are, as the setting only applies to new pages.
-- Changing a partition's storage setting takes a lock that only schema changes, `VACUUM` and
-- `ANALYZE` wait for; housekeeping's rebuilds and detaches touch closed partitions only.
-- squawk-ignore-file require-statement-timeout
SET lock_timeout = '5s';

CREATE OR REPLACE FUNCTION qualifier_outbox_partition(first_day integer, last_day integer) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    part text := format('outbox_d%s_%s', first_day, last_day);
    def text;
BEGIN
    IF to_regclass(part) IS NOT NULL THEN
        RETURN false;
    END IF;
    -- Pages filled whole (migration 30).
    EXECUTE format('CREATE TABLE %I (LIKE outbox INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                   part);
    -- `IS NOT NULL` included: written as the partition's own constraint, so attaching sees
    -- it is implied.
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I
                    CHECK ((seq >> 32) IS NOT NULL AND (seq >> 32) >= %s AND (seq >> 32) < %s)',
                   part, part || '_range', first_day, last_day);
    EXECUTE format('ALTER TABLE %I ADD CONSTRAINT %I PRIMARY KEY (seq)', part, part || '_pkey');
    -- Each of the outbox's indexes under the partition's name (`outbox_d20783_20789_org_seq`
    -- for `outbox_org_seq`), so a plan names the index it uses; attaching adopts them.
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
    RETURN true;
END
$$;

DO $$
DECLARE
    today integer := floor(extract(epoch FROM clock_timestamp()) / 86400)::integer;
    p record;
BEGIN
    FOR p IN SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
             WHERE i.inhparent = 'outbox'::regclass
               AND substring(c.relname FROM '^outbox_d[0-9]+_([0-9]+)$')::integer > today LOOP
        EXECUTE format('ALTER TABLE %I RESET (fillfactor)', p.relname);
    END LOOP;
END
$$;
