-- squawk-disable-assume-in-transaction
-- An org's deliveries by status, in sequence order, with what the 24-hour chart and a dry-run
-- count need beside each entry (creation time, failed attempts, whether its lead was erased):
-- a list filtered on a status reads only that status's rows, newest first; a bulk replay's
-- dry run and the chart count entries of this index without visiting the table. Without it,
-- they walked the org's whole history (docs/performance.md, "History at scale").
-- Built without blocking writes; a concurrent build cannot run in a transaction, hence
-- metadata.toml, and is this file's one statement. No timeouts: a build that waits blocks no
-- writer, and one cut short would leave an invalid index behind (docs/operations.md says how
-- to find and rebuild one).
-- squawk-ignore-file require-lock-timeout, require-statement-timeout
CREATE INDEX CONCURRENTLY IF NOT EXISTS outbox_org_status
    ON outbox (org_id, status, seq) INCLUDE (created_at, failed_attempts, erased_at);
