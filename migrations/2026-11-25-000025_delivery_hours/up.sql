-- The Deliveries page's 24-hour chart, kept by the writes instead of counted at each view
-- (docs/performance.md, "History at scale"). Counting a busy org's day of deliveries read about
-- 80,000 index entries per view; the chart now reads at most 24 rows of `delivery_hours` and
-- the few `delivery_hour_deltas` not folded in yet.
--
-- Every change to an outbox row created in the last 25 hours (an insert, a status or failed
-- attempts change, a delete) appends one row of differences to `delivery_hour_deltas`: an
-- insert into a table with no index, which no writer ever waits for. `lead-api` folds the
-- deltas into `delivery_hours` every second (`Store::fold_delivery_hours`), one folder at a time;
-- the chart adds both. Rows older than the chart's window leave with housekeeping.
SET lock_timeout = '5s';
SET statement_timeout = '60s';

CREATE TABLE IF NOT EXISTS delivery_hours (
    org_id          uuid        NOT NULL,
    hour            timestamptz NOT NULL,
    succeeded       int8        NOT NULL DEFAULT 0,
    dead            int8        NOT NULL DEFAULT 0,
    skipped         int8        NOT NULL DEFAULT 0,
    in_progress     int8        NOT NULL DEFAULT 0,
    failed_attempts int8        NOT NULL DEFAULT 0,
    PRIMARY KEY (org_id, hour)
);
-- squawk-ignore require-concurrent-index-creation
CREATE INDEX IF NOT EXISTS delivery_hours_hour ON delivery_hours (hour);

-- Inserted and deleted in bulk every second: vacuumed as soon as a thousand rows are dead, so a
-- scan of it reads about one second of writes.
CREATE TABLE IF NOT EXISTS delivery_hour_deltas (
    org_id          uuid        NOT NULL,
    hour            timestamptz NOT NULL,
    succeeded       int8        NOT NULL,
    dead            int8        NOT NULL,
    skipped         int8        NOT NULL,
    in_progress     int8        NOT NULL,
    failed_attempts int8        NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 1000);

-- Each row contributes to its creation hour (UTC) 1 in the column of its status (pending and
-- failed are "in progress") and its failed attempts. An insert adds its row's contribution, a
-- delete takes it away, and an update writes one row with the difference (the creation time,
-- and so the hour, never changes).
--
-- The hours already in the window are counted by the next migration (0000251), not here:
-- creating the triggers locks out writers, and counting a day of a busy outbox under that lock
-- kept every write waiting for it. For that count to agree with the triggers, a row created
-- before `delivery_hour_backfill.counted_from` (this transaction's time) also logs each of its
-- differences to `delivery_hour_backfill_log`: the count reads every such row as it is then and
-- takes away what the log says changed before it read, which is each row as it was when the
-- triggers began. Migration 29 replaces this function with one that logs nothing.
CREATE TABLE IF NOT EXISTS delivery_hour_backfill (
    id           boolean     PRIMARY KEY DEFAULT true CHECK (id),
    counted_from timestamptz NOT NULL,
    done         boolean     NOT NULL DEFAULT false
);
INSERT INTO delivery_hour_backfill (counted_from) VALUES (clock_timestamp())
    ON CONFLICT (id) DO NOTHING;
CREATE TABLE IF NOT EXISTS delivery_hour_backfill_log (LIKE delivery_hour_deltas);

CREATE OR REPLACE FUNCTION outbox_delivery_hours() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    window_start timestamptz := now() - interval '25 hours';
    created timestamptz;
    d delivery_hour_deltas;
BEGIN
    IF TG_OP = 'INSERT' THEN
        created := NEW.created_at;
        d := ROW(NEW.org_id, date_trunc('hour', NEW.created_at, 'UTC'),
            (NEW.status = 'succeeded')::int, (NEW.status = 'dead')::int,
            (NEW.status = 'skipped')::int, (NEW.status IN ('pending', 'failed'))::int,
            NEW.failed_attempts);
    ELSIF TG_OP = 'DELETE' THEN
        created := OLD.created_at;
        d := ROW(OLD.org_id, date_trunc('hour', OLD.created_at, 'UTC'),
            -(OLD.status = 'succeeded')::int, -(OLD.status = 'dead')::int,
            -(OLD.status = 'skipped')::int, -(OLD.status IN ('pending', 'failed'))::int,
            -OLD.failed_attempts);
    ELSE
        created := NEW.created_at;
        d := ROW(NEW.org_id, date_trunc('hour', NEW.created_at, 'UTC'),
            (NEW.status = 'succeeded')::int - (OLD.status = 'succeeded')::int,
            (NEW.status = 'dead')::int - (OLD.status = 'dead')::int,
            (NEW.status = 'skipped')::int - (OLD.status = 'skipped')::int,
            (NEW.status IN ('pending', 'failed'))::int - (OLD.status IN ('pending', 'failed'))::int,
            NEW.failed_attempts - OLD.failed_attempts);
    END IF;
    IF created < window_start THEN
        RETURN NULL;
    END IF;
    INSERT INTO delivery_hour_deltas SELECT (d).*;
    IF created < (SELECT counted_from FROM delivery_hour_backfill) THEN
        INSERT INTO delivery_hour_backfill_log SELECT (d).*;
    END IF;
    RETURN NULL;
END
$$;

-- Updates that change neither the status nor the failed attempts (publishing, holding, a
-- replay's schedule) do not call the function: the WHEN clause is checked without it.
DROP TRIGGER IF EXISTS outbox_delivery_hours_write ON outbox;
CREATE TRIGGER outbox_delivery_hours_write AFTER INSERT OR DELETE ON outbox
    FOR EACH ROW EXECUTE FUNCTION outbox_delivery_hours();
DROP TRIGGER IF EXISTS outbox_delivery_hours_change ON outbox;
CREATE TRIGGER outbox_delivery_hours_change AFTER UPDATE OF status, failed_attempts ON outbox
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status
          OR OLD.failed_attempts IS DISTINCT FROM NEW.failed_attempts)
    EXECUTE FUNCTION outbox_delivery_hours();
