ALTER TABLE outbox DROP COLUMN is_test;
