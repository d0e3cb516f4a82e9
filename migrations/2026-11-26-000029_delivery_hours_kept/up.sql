-- The hourly delivery totals, kept for the whole retention instead of the chart's 25 hours, so
-- that a dry-run bulk replay counts hours rather than deliveries (docs/performance.md, "History
-- at scale"; docs/decisions.md, "Delivery totals for the whole retention").
--
-- - Every change to an outbox row, whatever its age, now adds a row of differences, to a new
--   table, `delivery_hour_changes`, with two more columns: `failed` (the part of `in_progress`
--   that is failed) and `erased_skipped` (skipped because the lead was erased; an erased row is
--   only ever succeeded or skipped, `outbox_stays_erased`). A replica of the version before
--   folds `delivery_hour_deltas` with the five columns it knows; nothing writes there now, so
--   it can no longer drop the two new ones. `lead-api` folds both tables
--   (`Store::fold_delivery_hours`).
-- - `delivery_hour_cover.covered_from`: every hour from it on holds every row of the outbox
--   created in it. A database with no outbox row yet is covered from the start; one with
--   history from the next hour on (its older hours were kept for the chart only, without the
--   two new columns), and its coverage grows as days pass, with nothing to copy. Retention
--   moves it forward before it drops a partition (`Store::expire_events`), removing the hours
--   behind it.
-- - A delete of a covered hour is ignored: the version before removes every hour older than
--   26 hours once a minute, which during a rolling upgrade would empty covered hours.
--
-- Replacing the outbox's trigger locks the outbox and each partition. Under traffic that can
-- wait on a request, or meet a deadlock with a session of the version before whose plans still
-- name the table migration 28 turned into `outbox_legacy`; this migration then gives way
-- quickly, rolled back whole, so the services' requests wait at most half a second behind it,
-- and `qualifierctl migrate` tries it again (crates/store/src/pool.rs, `gave_way`).
SET lock_timeout = '500ms';
SET statement_timeout = '60s';

CREATE TABLE delivery_hour_cover (
    id           boolean     PRIMARY KEY DEFAULT true CHECK (id),
    covered_from timestamptz NOT NULL
);

ALTER TABLE delivery_hours
    ADD COLUMN failed int8 NOT NULL DEFAULT 0,
    ADD COLUMN erased_skipped int8 NOT NULL DEFAULT 0;

-- Inserted and deleted in bulk every second, as `delivery_hour_deltas` was.
CREATE TABLE delivery_hour_changes (
    org_id          uuid        NOT NULL,
    hour            timestamptz NOT NULL,
    succeeded       int8        NOT NULL,
    dead            int8        NOT NULL,
    skipped         int8        NOT NULL,
    in_progress     int8        NOT NULL,
    failed_attempts int8        NOT NULL,
    failed          int8        NOT NULL,
    erased_skipped  int8        NOT NULL
) WITH (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
        autovacuum_vacuum_insert_scale_factor = 0, autovacuum_vacuum_insert_threshold = 1000);

-- Each row contributes to its creation hour (UTC): 1 in the column of its status (pending and
-- failed are "in progress", failed also in `failed`), 1 in `erased_skipped` when it is skipped
-- and erased, and its failed attempts. An insert adds its contribution, a delete takes it
-- away, an update writes the difference (the creation time, and so the hour, never changes).
CREATE OR REPLACE FUNCTION outbox_delivery_hours() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO delivery_hour_changes VALUES (
            NEW.org_id, date_trunc('hour', NEW.created_at, 'UTC'),
            (NEW.status = 'succeeded')::int, (NEW.status = 'dead')::int,
            (NEW.status = 'skipped')::int, (NEW.status IN ('pending', 'failed'))::int,
            NEW.failed_attempts, (NEW.status = 'failed')::int,
            (NEW.status = 'skipped' AND NEW.erased_at IS NOT NULL)::int);
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO delivery_hour_changes VALUES (
            OLD.org_id, date_trunc('hour', OLD.created_at, 'UTC'),
            -(OLD.status = 'succeeded')::int, -(OLD.status = 'dead')::int,
            -(OLD.status = 'skipped')::int, -(OLD.status IN ('pending', 'failed'))::int,
            -OLD.failed_attempts, -(OLD.status = 'failed')::int,
            -(OLD.status = 'skipped' AND OLD.erased_at IS NOT NULL)::int);
    ELSE
        INSERT INTO delivery_hour_changes VALUES (
            NEW.org_id, date_trunc('hour', NEW.created_at, 'UTC'),
            (NEW.status = 'succeeded')::int - (OLD.status = 'succeeded')::int,
            (NEW.status = 'dead')::int - (OLD.status = 'dead')::int,
            (NEW.status = 'skipped')::int - (OLD.status = 'skipped')::int,
            (NEW.status IN ('pending', 'failed'))::int - (OLD.status IN ('pending', 'failed'))::int,
            NEW.failed_attempts - OLD.failed_attempts,
            (NEW.status = 'failed')::int - (OLD.status = 'failed')::int,
            (NEW.status = 'skipped' AND NEW.erased_at IS NOT NULL)::int
                - (OLD.status = 'skipped' AND OLD.erased_at IS NOT NULL)::int);
    END IF;
    RETURN NULL;
END
$$;

-- An erasure may leave the status as it was (a succeeded delivery stays succeeded) and only
-- set `erased_at`: that changes `erased_skipped` too, for a skipped one. So the update trigger
-- watches one more column. The old one is disabled and a new one created beside it, not dropped
-- and created again: DROP TRIGGER takes an ACCESS EXCLUSIVE lock, which waits even for readers,
-- and 0.1.0's backlog gauge reads the whole outbox every 2 s from each replica (no index serves
-- its `published_at IS NULL`), so on a large outbox no 500 ms opening ever came
-- (docs/operations.md, "With history"). DISABLE and CREATE take SHARE ROW EXCLUSIVE, which
-- readers do not block; the disabled trigger is dropped by a later release.
ALTER TABLE outbox DISABLE TRIGGER outbox_delivery_hours_change;
CREATE TRIGGER outbox_delivery_hours_changed AFTER UPDATE OF status, failed_attempts, erased_at
    ON outbox
    FOR EACH ROW
    WHEN (OLD.status IS DISTINCT FROM NEW.status
          OR OLD.failed_attempts IS DISTINCT FROM NEW.failed_attempts
          OR OLD.erased_at IS DISTINCT FROM NEW.erased_at)
    EXECUTE FUNCTION outbox_delivery_hours();

CREATE FUNCTION delivery_hours_keep_covered() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.hour >= (SELECT covered_from FROM delivery_hour_cover) THEN
        RETURN NULL;
    END IF;
    RETURN OLD;
END
$$;
CREATE TRIGGER delivery_hours_keep_covered BEFORE DELETE ON delivery_hours
    FOR EACH ROW EXECUTE FUNCTION delivery_hours_keep_covered();

-- No writer is between its change and its commit while the coverage is decided (a share lock
-- waits for those in flight and holds back new ones for the moment this takes): an outbox
-- with no row is covered from the start, with no change counted the old way in between.
LOCK TABLE outbox IN SHARE MODE;
INSERT INTO delivery_hour_cover (covered_from)
SELECT CASE WHEN EXISTS (SELECT 1 FROM outbox) THEN date_trunc('hour', now(), 'UTC') + interval '1 hour'
            ELSE '-infinity' END;
