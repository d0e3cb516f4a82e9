-- squawk-disable-assume-in-transaction
-- The kept answers that do not say their lead (written before migration 33, or by the
-- previous version during an upgrade), for the erasure's second pass: once they have expired
-- this index is empty and the pass reads nothing. Concurrent, alone in its file (migration 34).
-- squawk-ignore-file require-lock-timeout, require-statement-timeout
CREATE INDEX CONCURRENTLY IF NOT EXISTS idempotency_keys_lead_unknown
    ON idempotency_keys (org_id) WHERE lead_unknown;
