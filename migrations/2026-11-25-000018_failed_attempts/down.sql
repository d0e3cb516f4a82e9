ALTER TABLE outbox DROP COLUMN failed_attempts;
