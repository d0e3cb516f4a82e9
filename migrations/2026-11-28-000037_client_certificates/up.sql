-- An endpoint's client certificate (mutual TLS, docs/receivers.md "Client certificates"): the
-- PEM certificate (chain), its private key sealed like the signing secret, and what is shown of
-- it (subject, issuer, expiry), kept beside it so that no page parses a certificate. All NULL
-- when none is configured; `client_cert_warned_at` records the one
-- `endpoint.certificate_expiring` notice of this certificate. Adding NULL columns rewrites
-- nothing and the older release's statements name their columns, so both run during an upgrade.
SET lock_timeout = '5s';
ALTER TABLE webhooks
    ADD COLUMN IF NOT EXISTS client_cert_pem text,
    ADD COLUMN IF NOT EXISTS client_key_sealed bytea,
    ADD COLUMN IF NOT EXISTS client_cert_subject text,
    ADD COLUMN IF NOT EXISTS client_cert_issuer text,
    ADD COLUMN IF NOT EXISTS client_cert_not_after timestamptz,
    ADD COLUMN IF NOT EXISTS client_cert_warned_at timestamptz;
-- What the expiry check (every few seconds, each webhook-delivery replica) reads: only the
-- certificates not warned about yet. One row per org at most, so building it is instant.
CREATE INDEX IF NOT EXISTS webhooks_client_cert_unwarned ON webhooks (client_cert_not_after)
    WHERE client_cert_warned_at IS NULL AND client_cert_not_after IS NOT NULL;
