-- An endpoint's client certificate (mutual TLS, docs/operations.md "Fixed source addresses and client certificates"): the
-- PEM certificate (chain), its private key sealed like the signing secret, and what is shown of
-- it (subject, issuer, expiry), kept beside it so that no page parses a certificate. All NULL
-- when none is configured; `client_cert_warned_at` records the one
-- `endpoint.certificate_expiring` notice of this certificate. Adding NULL columns rewrites
-- nothing and the older release's statements name their columns, so both run during an upgrade.
SET lock_timeout = '5s';
SET statement_timeout = '60s';
ALTER TABLE webhooks
    ADD COLUMN IF NOT EXISTS client_cert_pem text,
    ADD COLUMN IF NOT EXISTS client_key_sealed bytea,
    ADD COLUMN IF NOT EXISTS client_cert_subject text,
    ADD COLUMN IF NOT EXISTS client_cert_issuer text,
    ADD COLUMN IF NOT EXISTS client_cert_not_after timestamptz,
    ADD COLUMN IF NOT EXISTS client_cert_warned_at timestamptz;
