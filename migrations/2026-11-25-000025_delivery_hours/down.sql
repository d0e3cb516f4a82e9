DROP TRIGGER IF EXISTS outbox_delivery_hours_change ON outbox;
DROP TRIGGER IF EXISTS outbox_delivery_hours_write ON outbox;
DROP FUNCTION IF EXISTS outbox_delivery_hours();
DROP TABLE IF EXISTS delivery_hour_deltas;
DROP TABLE IF EXISTS delivery_hours;
DROP TABLE IF EXISTS delivery_hour_backfill_log;
DROP TABLE IF EXISTS delivery_hour_backfill;
