-- Where an endpoint sends when its receiver is not a web server (docs/destinations.md):
-- `destination` holds the type and its fields that are not secret (crates/domain/src/destination.rs);
-- the secret part (an `amqp` url's password) is sealed to the endpoint with the receiver's other
-- secrets in `receiver_secrets_sealed`. NULL: an `https` endpoint, sent to its `url`; an
-- endpoint with a destination keeps `url` empty.
--
-- A nullable column without a default: no row is rewritten, and the release before this one,
-- which names the columns it reads, goes on reading the table. Waits at most half a second for
-- the lock; past it the migration rolls back and `qualifierctl migrate` tries it again
-- (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

ALTER TABLE webhooks ADD COLUMN destination jsonb;
