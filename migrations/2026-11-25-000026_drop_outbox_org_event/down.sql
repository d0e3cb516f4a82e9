CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_org_event ON outbox (org_id, event_id);
