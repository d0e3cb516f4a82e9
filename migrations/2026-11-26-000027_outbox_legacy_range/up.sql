-- squawk-disable-assume-in-transaction
-- Prepares the outbox to become the first partition of a partitioned outbox (the next
-- migration, docs/operations.md "Partitioned outbox"). Attaching a table as a partition checks
-- every row against the partition's range unless a valid constraint already says so; this
-- migration writes that constraint, so the next one only changes the catalog.
--
-- The range: every row whose day, the sequence number's bits above the lowest 32 (`seq >> 32`,
-- the partition key), is below day 20,000 of the Unix epoch (2024-10-04), the first day a
-- partition can be for (`qualifier_outbox_partition`). Written as the partition's own
-- constraint will be, `IS NOT NULL` included, so PostgreSQL sees that one implies the other
-- (without it, the attach reads every row under its exclusive lock). The outbox's sequence has
-- only counted up from 1, so every row is day 0.
--
-- The constraint is added NOT VALID here, which takes the table's exclusive lock for an
-- instant and checks no row; the next migration (0000271) validates it, reading every row under
-- a lock that lets reads and writes go on (SHARE UPDATE EXCLUSIVE). They are two files because
-- one file is one query string, and PostgreSQL runs a string of statements as one transaction
-- whatever `run_in_transaction` says: together, the exclusive lock was held through the whole
-- read, and every write waited for it. The DROP removes only what this file adds, so a run
-- interrupted before the validation can be repeated.
-- squawk-ignore-file require-statement-timeout, ban-drop-constraint
SET lock_timeout = '5s';
ALTER TABLE outbox DROP CONSTRAINT IF EXISTS outbox_legacy_range;
ALTER TABLE outbox ADD CONSTRAINT outbox_legacy_range CHECK ((seq >> 32) IS NOT NULL AND (seq >> 32) < 20000) NOT VALID;
