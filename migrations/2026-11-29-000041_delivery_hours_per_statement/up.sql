-- An outcome's hourly totals counted once per statement instead of once per row
-- (docs/performance.md, "What the figures rest on").
--
-- The delivery worker records a batch of outcomes in one `UPDATE` (`record_attempts`,
-- crates/store/src/deliveries/attempts.rs). The row trigger of migration 29 ran a PL/pgSQL
-- function for each row of it and wrote one row of differences per outcome to
-- `delivery_hour_changes`, which `lead-api` then folded and deleted. This trigger runs once per
-- statement, over the statement's old and new rows (transition tables), and writes one row per
-- org and hour the statement touched, with the same sums: 1 in the column of the new status and
-- -1 in the old one's, the change of failed attempts, and the `erased_skipped` difference. A
-- statement whose rows changed none of the three columns writes nothing, as the row trigger's
-- `WHEN` did. Inserts and deletes keep their row trigger (an insert writes one event or two).
--
-- A statement-level trigger fires for statements on `outbox` itself, not on a partition named
-- directly; nothing writes a partition by name. A trigger with transition tables cannot name
-- columns (`UPDATE OF`), so it runs for every update of the outbox, the relay's marks
-- included, where it finds nothing to count.
--
-- The row trigger is disabled, not dropped, for the reason migration 29 gives (DROP TRIGGER
-- waits even for readers). Waits at most half a second for each lock; past it the migration
-- rolls back whole and `qualifierctl migrate` tries it again (crates/store/src/pool.rs,
-- `gave_way`).
-- squawk-ignore-file require-statement-timeout
SET lock_timeout = '500ms';

CREATE FUNCTION outbox_delivery_hours_moved() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO delivery_hour_changes
    SELECT n.org_id, date_trunc('hour', n.created_at, 'UTC'),
           sum((n.status = 'succeeded')::int - (o.status = 'succeeded')::int),
           sum((n.status = 'dead')::int - (o.status = 'dead')::int),
           sum((n.status = 'skipped')::int - (o.status = 'skipped')::int),
           sum((n.status IN ('pending', 'failed'))::int - (o.status IN ('pending', 'failed'))::int),
           sum(n.failed_attempts - o.failed_attempts),
           sum((n.status = 'failed')::int - (o.status = 'failed')::int),
           sum((n.status = 'skipped' AND n.erased_at IS NOT NULL)::int
               - (o.status = 'skipped' AND o.erased_at IS NOT NULL)::int)
    FROM outbox_moved_new n JOIN outbox_moved_old o ON o.seq = n.seq
    WHERE o.status IS DISTINCT FROM n.status
       OR o.failed_attempts IS DISTINCT FROM n.failed_attempts
       OR o.erased_at IS DISTINCT FROM n.erased_at
    GROUP BY 1, 2;
    RETURN NULL;
END
$$;

-- The row trigger has one of two names: `outbox_delivery_hours_changed` where migration 29
-- created it beside the disabled `outbox_delivery_hours_change`, and
-- `outbox_delivery_hours_change` itself on a database migrated by 0.2.0, whose migration 29
-- dropped and created it again under its old name. Whichever is there is disabled.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'outbox'::regclass
               AND tgname = 'outbox_delivery_hours_changed') THEN
        ALTER TABLE outbox DISABLE TRIGGER outbox_delivery_hours_changed;
    END IF;
    ALTER TABLE outbox DISABLE TRIGGER outbox_delivery_hours_change;
END
$$;
CREATE TRIGGER outbox_delivery_hours_moved AFTER UPDATE ON outbox
    REFERENCING OLD TABLE AS outbox_moved_old NEW TABLE AS outbox_moved_new
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_delivery_hours_moved();
