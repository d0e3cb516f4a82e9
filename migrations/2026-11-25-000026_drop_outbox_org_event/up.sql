-- squawk-disable-assume-in-transaction
-- `outbox_org_event (org_id, event_id)` repeated what the unique index on `event_id` already
-- answers: an event id names at most one row, and its org is checked on that row. The index was
-- about 50 bytes of every stored event and one more entry for every insert and outcome to
-- write (docs/performance.md, "History at scale"). Dropped without blocking writes, hence
-- metadata.toml and one statement.
-- squawk-ignore-file require-lock-timeout, require-statement-timeout
DROP INDEX CONCURRENTLY IF EXISTS outbox_org_event;
