-- squawk-disable-assume-in-transaction
-- The kept answers about one lead, for its erasure (migration 33). Built without blocking
-- writes; a concurrent build cannot run in a transaction, hence metadata.toml, and is this
-- file's one statement. No timeouts: a build that waits blocks no writer.
-- squawk-ignore-file require-lock-timeout, require-statement-timeout
CREATE INDEX CONCURRENTLY IF NOT EXISTS idempotency_keys_lead
    ON idempotency_keys (org_id, lead_id) WHERE lead_id IS NOT NULL;
