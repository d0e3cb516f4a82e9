-- A kept Idempotency-Key answer names the lead it is about, so that erasing the lead finds its
-- answers through an index and cannot miss one kept while the erasure ran (docs/api.md,
-- "Erasing a lead"; `crates/store/src/idempotency.rs`).
--
-- - `lead_id`: the lead the request and its answer are about: the PATCH's lead from the
--   claim on, a created lead (or the one a 409 points to) once the answer is kept.
-- - `lead_unknown`: the row was written by a version that did not say. Existing rows, and rows
--   the previous version writes during a rolling upgrade (it inserts without the column), take
--   the default, true; this version writes false. The erasure reads those rows' answers for the
--   lead's id as it did before, through their own index (migration 35), so that a busy org's
--   day of answers is not read on every erasure once they have expired.
--
-- Both columns have constant defaults: added without rewriting the table.
SET lock_timeout = '5s';
SET statement_timeout = '60s';
ALTER TABLE idempotency_keys
    ADD COLUMN IF NOT EXISTS lead_id uuid,
    ADD COLUMN IF NOT EXISTS lead_unknown boolean NOT NULL DEFAULT true;
