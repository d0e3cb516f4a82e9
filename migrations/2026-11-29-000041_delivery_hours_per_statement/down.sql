-- The row trigger of migration 29 counts outcomes again.
-- squawk-ignore-file require-statement-timeout
SET lock_timeout = '5s';

DROP TRIGGER outbox_delivery_hours_moved ON outbox;
ALTER TABLE outbox ENABLE TRIGGER outbox_delivery_hours_changed;
DROP FUNCTION outbox_delivery_hours_moved();
