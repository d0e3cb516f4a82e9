-- squawk-disable-assume-in-transaction
-- A lead's handoffs by its id, all of them (the unique index covers only the open ones):
-- erasing a lead deletes them through ON DELETE CASCADE, which without this index reads every
-- handoff of every org. Built without blocking writes; a concurrent build cannot run in a
-- transaction, hence metadata.toml, and is this file's one statement (several statements in one
-- query string would make an implicit transaction). No timeouts, then: a build that waits is
-- harmless, as it blocks no writer, and one cut short would leave an invalid index behind.
-- squawk-ignore-file require-lock-timeout, require-statement-timeout
CREATE INDEX CONCURRENTLY IF NOT EXISTS handoffs_lead ON handoffs (lead_id);
