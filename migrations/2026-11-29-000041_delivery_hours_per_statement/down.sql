-- The row trigger of migration 29 counts outcomes again.
-- squawk-ignore-file require-statement-timeout
SET lock_timeout = '5s';

DROP TRIGGER outbox_delivery_hours_moved ON outbox;
-- Whichever name the row trigger has (up.sql says why there are two).
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = 'outbox'::regclass
               AND tgname = 'outbox_delivery_hours_changed') THEN
        ALTER TABLE outbox ENABLE TRIGGER outbox_delivery_hours_changed;
    ELSE
        ALTER TABLE outbox ENABLE TRIGGER outbox_delivery_hours_change;
    END IF;
END
$$;
DROP FUNCTION outbox_delivery_hours_moved();
