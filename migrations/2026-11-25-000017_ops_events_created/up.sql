-- Operational events leave after QUALIFIER_EVENT_RETENTION_DAYS, oldest first, a batch at a
-- time: this index makes "the oldest N" a range scan. Built without blocking writes; a
-- concurrent build cannot run in a transaction, hence metadata.toml.
CREATE INDEX CONCURRENTLY IF NOT EXISTS ops_events_created ON ops_events (created_at);
