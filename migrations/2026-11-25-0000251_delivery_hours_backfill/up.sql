-- The hours already in the chart's window when migration 25 began counting (see that file),
-- counted here in one statement that takes no lock a writer waits for: every outbox row created
-- in the window before `delivery_hour_backfill.counted_from`, as it is now, less the
-- differences the log shows for such rows since then, which is each row as it was when the
-- triggers began. The result goes to `delivery_hour_deltas`, folded like any other difference,
-- so nothing here competes with the folder for `delivery_hours`' rows.
--
-- A database whose migration 25 counted the hours under its own lock (the version before this
-- file existed) has no `delivery_hour_backfill`, and one counted already has `done`: nothing to
-- do for either.
-- squawk-ignore-file require-statement-timeout
SET lock_timeout = '5s';
DO $$
BEGIN
    -- Two statements: PL/pgSQL prepares each when it first runs, and the second names a table
    -- that may not exist.
    IF to_regclass('delivery_hour_backfill') IS NULL THEN
        RETURN;
    END IF;
    IF (SELECT done FROM delivery_hour_backfill) THEN
        RETURN;
    END IF;
    INSERT INTO delivery_hour_deltas
    SELECT x.org_id, x.hour, sum(x.succeeded), sum(x.dead), sum(x.skipped), sum(x.in_progress),
           sum(x.failed_attempts)
    FROM (SELECT o.org_id, date_trunc('hour', o.created_at, 'UTC') AS hour,
                 (o.status = 'succeeded')::int::int8 AS succeeded, (o.status = 'dead')::int::int8 AS dead,
                 (o.status = 'skipped')::int::int8 AS skipped,
                 (o.status IN ('pending', 'failed'))::int::int8 AS in_progress,
                 o.failed_attempts::int8 AS failed_attempts
          FROM outbox o
          WHERE o.created_at >= date_trunc('hour', now() - interval '25 hours', 'UTC')
            AND o.created_at < (SELECT counted_from FROM delivery_hour_backfill)
          UNION ALL
          SELECT l.org_id, l.hour, -l.succeeded, -l.dead, -l.skipped, -l.in_progress,
                 -l.failed_attempts
          FROM delivery_hour_backfill_log l
          WHERE l.hour >= date_trunc('hour', now() - interval '25 hours', 'UTC')) x
    GROUP BY 1, 2
    HAVING sum(x.succeeded) <> 0 OR sum(x.dead) <> 0 OR sum(x.skipped) <> 0
        OR sum(x.in_progress) <> 0 OR sum(x.failed_attempts) <> 0;
    UPDATE delivery_hour_backfill SET done = true;
    DELETE FROM delivery_hour_backfill_log;
END
$$;
