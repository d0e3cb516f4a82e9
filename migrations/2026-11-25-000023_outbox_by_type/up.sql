-- squawk-disable-assume-in-transaction
-- An org's deliveries by event type, in sequence order: a list filtered on a type reads only
-- that type's rows, newest first, where it walked the org's newer rows of every other type
-- (`outbox_feed_type` is in feed order, which a list's sequence cursor cannot follow).
-- Built without blocking writes, as migration 000022 (its comment says why there is no
-- timeout and why this is the file's one statement).
-- squawk-ignore-file require-lock-timeout, require-statement-timeout
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_org_type ON outbox (org_id, event_type, seq);
