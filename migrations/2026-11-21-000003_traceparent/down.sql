ALTER TABLE outbox DROP COLUMN traceparent;
