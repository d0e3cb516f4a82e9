-- An endpoint's id is never given to another endpoint (docs/decisions.md, "Several endpoints
-- per organisation"). An org's first endpoint takes the org's id, the key its webhook had when
-- an org had one; every other endpoint a new random id. Once the endpoint of the org's id is
-- deleted, the org's id names no endpoint again: `first_endpoint_gone` says so, set in the
-- delete's transaction (crates/store/src/webhooks.rs, `delete_endpoint`) and read under the
-- org's lock when an endpoint is created.
--
-- A column with a constant default: no row is rewritten. Waits at most half a second for the
-- lock; past it the migration rolls back and `qualifierctl migrate` tries it again
-- (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

ALTER TABLE orgs ADD COLUMN first_endpoint_gone boolean NOT NULL DEFAULT false;
