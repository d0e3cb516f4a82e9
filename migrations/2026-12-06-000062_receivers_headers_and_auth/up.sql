-- A receiver's own headers and credentials (docs/receivers.md, "Your own headers and
-- credentials"). `headers` lists each header's name, whether it is secret and, when it is not,
-- its value; `auth` the kind of authentication and its parts that are not secret (`basic`'s
-- username, OAuth 2's token url, client id, scope, audience and client authentication). Every
-- secret part (secret headers' values, the password, the token, the client secret) is in
-- `receiver_secrets_sealed`, one JSON object sealed to the endpoint as its signing secret is
-- (crates/store/src/receivers.rs), so a copy of the database holds none of them in clear.
--
-- Columns with constant defaults: no row is rewritten, and the release before this one, which
-- names the columns it reads, goes on reading the table. Waits at most half a second for the
-- lock; past it the migration rolls back and `qualifierctl migrate` tries it again
-- (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

ALTER TABLE webhooks
    ADD COLUMN headers jsonb NOT NULL DEFAULT '[]',
    ADD COLUMN auth jsonb,
    ADD COLUMN receiver_secrets_sealed bytea;
