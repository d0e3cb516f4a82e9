-- Idempotency-Key (docs/api.md; draft-ietf-httpapi-idempotency-key-header): the first
-- response to a key is kept 24 hours, keyed by org and key, with the request's fingerprint.
-- `status` is NULL while the first request is being processed.
CREATE TABLE idempotency_keys (
    org_id        uuid NOT NULL REFERENCES orgs (id) ON DELETE CASCADE,
    key           text NOT NULL,
    fingerprint   bytea NOT NULL,
    status        smallint,
    response_body bytea,
    location      text,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (org_id, key)
);
-- Serves the purge of expired keys.
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
