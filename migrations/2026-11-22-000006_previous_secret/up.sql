-- Rotation with an overlap window (docs/api.md): the secret being retired is kept,
-- sealed like the current one, until `previous_expires_at`; deliveries meanwhile carry a
-- Standard Webhooks signature under both.
ALTER TABLE webhooks
    ADD COLUMN previous_secret_sealed bytea,
    ADD COLUMN previous_expires_at timestamptz,
    ADD CONSTRAINT webhooks_previous_pair
        CHECK ((previous_secret_sealed IS NULL) = (previous_expires_at IS NULL));
