ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_legacy_range;
