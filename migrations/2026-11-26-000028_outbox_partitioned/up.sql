-- The outbox becomes a table partitioned by days, so retention removes old events by dropping
-- a partition: a cost that does not grow with the events it holds, and nothing left to vacuum
-- (docs/architecture.md, "The partitioned outbox"; docs/decisions.md).
--
-- The day is in the sequence number: housekeeping moves the sequence to `d << 32` once day d
-- (days since the Unix epoch, UTC) has begun, so `seq >> 32` is the day a row was written
-- (four billion events a day fit), and the partition key is that expression. A partition holds
-- a span of days, [first, last): a fifth of the retention, one to seven days
-- (`crates/lead-api/src/housekeeping.rs`, `partition_days`), so 30 days kept are six or seven
-- partitions. Fewer, longer partitions than one a day because PostgreSQL pays for each
-- partition in every statement it cannot prune: planning a list over 33 partitions took
-- 2 ms against 0.3 ms over 6, and a new connection's first one 16 to 28 ms against 3.5 ms.
--
-- A row never moves, and whoever knows a row's `seq` knows its partition: the delivery
-- worker, whose messages carry it, says `(seq >> 32) BETWEEN $d AND $d` beside the delivery
-- id, and reads one partition's `delivery_id` index instead of every partition's. The key is
-- an expression rather than `seq` itself so that this condition prunes partitions but matches
-- no index: on `seq` the planner could pick the `seq` index and read days of rows for it.
--
-- `seq` stays unique: each partition's primary key, and a sequence that only goes forward
-- (PostgreSQL allows no primary key on the partitioned table with an expression key).
--
-- Nothing is copied: the existing table is renamed `outbox_legacy` and attached as the first
-- partition, below every day (its numbers are all day 0); the previous migration proved it. Only the
-- catalog changes, under the table's exclusive lock for as long as that takes (milliseconds).
-- Retention drops `outbox_legacy` whole once its newest event has expired.
--
-- Uniqueness of event and delivery ids: PostgreSQL cannot enforce a unique index across
-- partitions unless it holds the partition key. Each partition has its own unique indexes on
-- both, and both ids are random version 4 UUIDs drawn by the writer (`outbox::insert`), so two
-- rows sharing one across partitions is a 1 in 2^122 event per pair. The same holds for the
-- feed's (org, position): positions are handed out one by one under the `feed_head` lock.
--
-- The renames are safe for the previous version, still running during an upgrade: what it reads
-- and writes is `outbox`, which exists again at once under that name with the same columns,
-- defaults, indexes and triggers; the index names it never uses. The column types are the old
-- table's (attaching requires them). The indexes on the new, empty table are instant.
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts, require-concurrent-index-creation, renaming-table, renaming-object, prefer-bigint-over-int
SET lock_timeout = '5s';

ALTER TABLE outbox RENAME TO outbox_legacy;
ALTER INDEX outbox_pkey RENAME TO outbox_legacy_pkey;
ALTER INDEX outbox_created_at RENAME TO outbox_legacy_created_at;
ALTER INDEX outbox_feed_type RENAME TO outbox_legacy_feed_type;
ALTER INDEX outbox_held RENAME TO outbox_legacy_held;
ALTER INDEX outbox_org_lead RENAME TO outbox_legacy_org_lead;
ALTER INDEX outbox_org_seq RENAME TO outbox_legacy_org_seq;
ALTER INDEX outbox_org_status RENAME TO outbox_legacy_org_status;
ALTER INDEX outbox_org_tests RENAME TO outbox_legacy_org_tests;
ALTER INDEX outbox_org_type RENAME TO outbox_legacy_org_type;
ALTER INDEX outbox_replay_due RENAME TO outbox_legacy_replay_due;
ALTER INDEX outbox_unpublished RENAME TO outbox_legacy_unpublished;
-- The three unique ones and the primary key keep their names: they stay the legacy
-- partition's own.
DROP TRIGGER outbox_delivery_hours_change ON outbox_legacy;
DROP TRIGGER outbox_delivery_hours_write ON outbox_legacy;
DROP TRIGGER outbox_notify ON outbox_legacy;
DROP TRIGGER outbox_stays_erased ON outbox_legacy;

CREATE TABLE outbox (
    seq              bigint NOT NULL DEFAULT nextval('outbox_seq_seq'),
    event_id         uuid NOT NULL,
    org_id           uuid NOT NULL,
    event_type       text NOT NULL,
    payload          bytea NOT NULL,
    created_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    delivery_id      uuid NOT NULL,
    published_at     timestamptz,
    status           text NOT NULL DEFAULT 'pending',
    attempts         integer NOT NULL DEFAULT 0,
    last_status_code integer,
    last_error       text,
    attempt_log      jsonb NOT NULL DEFAULT '[]'::jsonb,
    updated_at       timestamptz NOT NULL DEFAULT clock_timestamp(),
    traceparent      text,
    is_test          boolean NOT NULL DEFAULT false,
    feed_pos         bigint,
    replay_at        timestamptz,
    lead_id          uuid,
    held_at          timestamptz,
    resume_attempt   integer,
    failed_attempts  integer NOT NULL DEFAULT 0,
    erased_at        timestamptz,
    CONSTRAINT outbox_status_check
        CHECK (status = ANY (ARRAY['pending', 'succeeded', 'failed', 'dead', 'skipped']))
) PARTITION BY RANGE ((seq >> 32));
-- The sequence belongs to the new table: dropping `outbox_legacy` must not drop it.
ALTER SEQUENCE outbox_seq_seq OWNED BY outbox.seq;

-- The same indexes as before, defined once for every partition. Attaching `outbox_legacy`
-- below adopts its identical indexes instead of building new ones.
CREATE INDEX outbox_created_at ON outbox (created_at);
CREATE INDEX outbox_feed_type ON outbox (org_id, event_type, feed_pos) WHERE feed_pos IS NOT NULL;
CREATE INDEX outbox_held ON outbox (org_id, seq) WHERE held_at IS NOT NULL;
CREATE INDEX outbox_org_lead ON outbox (org_id, lead_id, seq DESC);
CREATE INDEX outbox_org_seq ON outbox (org_id, seq DESC);
CREATE INDEX outbox_org_status ON outbox (org_id, status, seq)
    INCLUDE (created_at, failed_attempts, erased_at);
CREATE INDEX outbox_org_tests ON outbox (org_id, created_at) WHERE is_test;
CREATE INDEX outbox_org_type ON outbox (org_id, event_type, seq);
CREATE INDEX outbox_replay_due ON outbox (replay_at)
    WHERE published_at IS NULL AND replay_at IS NOT NULL;
CREATE INDEX outbox_unpublished ON outbox (seq) WHERE published_at IS NULL AND replay_at IS NULL;

CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION qualifier_outbox_notify();
CREATE TRIGGER outbox_stays_erased BEFORE UPDATE ON outbox
    FOR EACH ROW WHEN (OLD.erased_at IS NOT NULL) EXECUTE FUNCTION outbox_stays_erased();
CREATE TRIGGER outbox_delivery_hours_write AFTER INSERT OR DELETE ON outbox
    FOR EACH ROW EXECUTE FUNCTION outbox_delivery_hours();
CREATE TRIGGER outbox_delivery_hours_change AFTER UPDATE OF status, failed_attempts ON outbox
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status
          OR OLD.failed_attempts IS DISTINCT FROM NEW.failed_attempts)
    EXECUTE FUNCTION outbox_delivery_hours();

ALTER TABLE outbox ATTACH PARTITION outbox_legacy FOR VALUES FROM (MINVALUE) TO (20000);

-- The partition of days [first_day, last_day), `outbox_d<first_day>_<last_day>`, if it does not
-- exist yet; true when it was created. Built as a table of its own and then attached:
-- attaching locks the outbox only against other schema changes (SHARE UPDATE EXCLUSIVE), where
-- `CREATE TABLE … PARTITION OF` would lock out every reader and writer. Empty, with a
-- constraint stating its range, it is attached without a scan.
CREATE FUNCTION qualifier_outbox_partition(first_day integer, last_day integer) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
    part text := format('outbox_d%s_%s', first_day, last_day);
    def text;
BEGIN
    IF to_regclass(part) IS NOT NULL THEN
        RETURN false;
    END IF;
    -- Outcome updates keep a tenth of each page free (migration 24's reasoning).
    EXECUTE format('CREATE TABLE %I (LIKE outbox INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
                    WITH (fillfactor = 90)', part);
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

-- Partitions through tomorrow, each `span` days long and starting where the newest ends (or
-- today, after a stop longer than that), and the sequence moved to today's numbers once today
-- has begun. Returns how many partitions it created. Run by housekeeping every minute (and
-- here); replicas take turns on an advisory lock. The sequence only ever moves forward: numbers
-- already drawn are below the new bound, and the partition that holds their day still exists.
CREATE FUNCTION qualifier_outbox_roll(span integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    today integer := floor(extract(epoch FROM clock_timestamp()) / 86400)::integer;
    newest_end integer;
    created integer := 0;
BEGIN
    -- Attaching waits for other schema changes on the outbox; never for long.
    PERFORM set_config('lock_timeout', '2s', true);
    PERFORM pg_advisory_xact_lock(8317464216);
    SELECT max(substring(c.relname FROM '^outbox_d[0-9]+_([0-9]+)$')::integer)
    INTO newest_end
    FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
    WHERE i.inhparent = 'outbox'::regclass;
    newest_end := greatest(coalesce(newest_end, today), today);
    WHILE newest_end <= today + 1 LOOP
        created := created + qualifier_outbox_partition(newest_end, newest_end + greatest(span, 1))::integer;
        newest_end := newest_end + greatest(span, 1);
    END LOOP;
    IF (SELECT last_value FROM outbox_seq_seq) < (today::bigint << 32) THEN
        PERFORM setval('outbox_seq_seq', today::bigint << 32, false);
    END IF;
    RETURN created;
END
$$;

-- Partitions whose indexes housekeeping rebuilt once they stopped taking new events
-- (`Store::compact_outbox`), by name; a partition's row goes when retention drops it.
CREATE TABLE outbox_compacted (
    partition    text PRIMARY KEY,
    compacted_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Days one at a time until housekeeping's first round, which uses the configured span.
SELECT qualifier_outbox_roll(1);
