DROP TABLE ops_events;
DROP INDEX outbox_held;
ALTER TABLE outbox DROP COLUMN resume_attempt;
ALTER TABLE outbox DROP COLUMN held_at;
DROP TABLE endpoint_health;
