-- squawk-disable-assume-in-transaction
-- What the expiry check (every few seconds, in each webhook-delivery replica) reads: only the
-- client certificates not warned about yet (migration 37). Built without blocking writes; a
-- concurrent build cannot run in a transaction, hence metadata.toml, and is this file's one
-- statement. No timeouts: a build that waits blocks no writer.
-- squawk-ignore-file require-lock-timeout, require-statement-timeout
CREATE INDEX CONCURRENTLY IF NOT EXISTS webhooks_client_cert_unwarned
    ON webhooks (client_cert_not_after)
    WHERE client_cert_warned_at IS NULL AND client_cert_not_after IS NOT NULL;
