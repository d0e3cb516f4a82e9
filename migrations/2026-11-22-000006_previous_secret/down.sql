ALTER TABLE webhooks
    DROP CONSTRAINT webhooks_previous_pair,
    DROP COLUMN previous_expires_at,
    DROP COLUMN previous_secret_sealed;
