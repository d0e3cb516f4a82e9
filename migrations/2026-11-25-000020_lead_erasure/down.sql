DROP TRIGGER outbox_stays_erased ON outbox;
DROP FUNCTION outbox_stays_erased();
ALTER TABLE outbox DROP COLUMN erased_at;
