-- Two checks every event paid for and no longer needs (docs/performance.md, "What the figures
-- rest on").
--
-- 1. `leads_revision` (migration 19) runs only when a writer did not raise the revision itself.
--    The current code always does (it puts the number in the event in the same statement), so
--    a lead's change no longer calls a PL/pgSQL function; a writer that does not know the
--    column (the previous version during a rolling upgrade) still gets it raised by one, as
--    before. `CREATE OR REPLACE TRIGGER` takes the lock `CREATE TRIGGER` takes, which readers do
--    not wait for.
-- 2. An outbox partition's `_range` CHECK constraint (migration 28) stated its range so that
--    attaching it needed no scan. Once attached, the partition's bound says the same, and
--    PostgreSQL routes every row it writes through `outbox` by that bound; the constraint was
--    only extra work: each statement writing the partition set it up again and checked every
--    row against it (with the status check, 4% of PostgreSQL's CPU per event in a `perf`
--    profile). New partitions drop it once attached; the partition of today and later ones
--    drop it here. Closed partitions, written only by outcomes of old events, keep theirs:
--    dropping a constraint takes a lock that waits for every statement on the partition.
--
-- Waits at most half a second for each lock; past it the migration rolls back whole and
-- `qualifierctl migrate` tries it again (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout
SET lock_timeout = '500ms';

CREATE OR REPLACE TRIGGER leads_revision BEFORE UPDATE ON leads
    FOR EACH ROW WHEN (NEW.revision <= OLD.revision) EXECUTE FUNCTION leads_revision();

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
    -- Attached, the partition's bound states the range: the constraint served the attach only
    -- (no scan), and kept it would be set up by every statement that writes the partition and
    -- checked against every row it writes (migration 40). This transaction created the table,
    -- so it already holds the lock this takes.
    EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', part, part || '_range');
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
               AND substring(c.relname FROM '^outbox_d[0-9]+_([0-9]+)$')::integer > today
               AND EXISTS (SELECT 1 FROM pg_constraint k
                           WHERE k.conrelid = c.oid AND k.conname = c.relname || '_range') LOOP
        EXECUTE format('ALTER TABLE %I DROP CONSTRAINT %I', p.relname, p.relname || '_range');
    END LOOP;
END
$$;
