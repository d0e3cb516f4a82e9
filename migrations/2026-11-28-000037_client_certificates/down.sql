ALTER TABLE webhooks
    DROP COLUMN IF EXISTS client_cert_pem,
    DROP COLUMN IF EXISTS client_key_sealed,
    DROP COLUMN IF EXISTS client_cert_subject,
    DROP COLUMN IF EXISTS client_cert_issuer,
    DROP COLUMN IF EXISTS client_cert_not_after,
    DROP COLUMN IF EXISTS client_cert_warned_at;
