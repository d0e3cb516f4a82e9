-- squawk-disable-assume-in-transaction
-- Validates migration 27's constraint on its own (see that file): a read of every row of the
-- outbox under SHARE UPDATE EXCLUSIVE, which lets reads and writes go on, with no other lock
-- held. On the bench's history of 2.5 million events (table in memory) the read took under a
-- second (docs/operations.md, "Moving a deployment with history to the compact layout").
--
-- A database that ran migration 27 when it still validated in the same file has nothing left
-- to do here: by then the constraint is valid, or belongs to `outbox_legacy` once the outbox is
-- partitioned (migration 28). Only a constraint of the unpartitioned outbox still not valid is
-- validated.
-- squawk-ignore-file require-statement-timeout
SET lock_timeout = '5s';
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid
               WHERE t.relname = 'outbox' AND t.relkind = 'r'
                 AND t.relnamespace = current_schema()::regnamespace
                 AND c.conname = 'outbox_legacy_range' AND NOT c.convalidated) THEN
        ALTER TABLE outbox VALIDATE CONSTRAINT outbox_legacy_range;
    END IF;
END
$$;
