ALTER TABLE webhooks
    DROP COLUMN headers,
    DROP COLUMN auth,
    DROP COLUMN receiver_secrets_sealed;
