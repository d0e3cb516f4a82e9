DROP TRIGGER outbox_notify ON outbox;
DROP FUNCTION qualifier_outbox_notify();
DROP INDEX outbox_org_seq;
DROP INDEX outbox_unpublished;
DROP INDEX outbox_delivery_id;
ALTER TABLE outbox
    DROP COLUMN delivery_id, DROP COLUMN published_at, DROP COLUMN status, DROP COLUMN attempts,
    DROP COLUMN last_status_code, DROP COLUMN last_error, DROP COLUMN attempt_log,
    DROP COLUMN updated_at;
