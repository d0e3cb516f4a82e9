-- The outbox row is also the delivery's record. Each event has exactly one delivery (one
-- endpoint per org), so keeping both in one row makes the happy path three writes per event:
-- the insert in the change's transaction, the relay's published_at, and the outcome.
ALTER TABLE outbox
    ADD COLUMN delivery_id       uuid,
    ADD COLUMN published_at      timestamptz,
    ADD COLUMN status            text NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'succeeded', 'failed', 'dead', 'skipped')),
    ADD COLUMN attempts          integer NOT NULL DEFAULT 0,
    ADD COLUMN last_status_code  integer,
    ADD COLUMN last_error        text,
    -- [{attempt, started_at, duration_ms, status_code, error}], appended per attempt.
    ADD COLUMN attempt_log       jsonb NOT NULL DEFAULT '[]'::jsonb,
    ADD COLUMN updated_at        timestamptz NOT NULL DEFAULT clock_timestamp();

UPDATE outbox SET delivery_id = gen_random_uuid() WHERE delivery_id IS NULL;
ALTER TABLE outbox ALTER COLUMN delivery_id SET NOT NULL;
CREATE UNIQUE INDEX outbox_delivery_id ON outbox (delivery_id);
-- What the relay scans: small, because published rows leave it.
CREATE INDEX outbox_unpublished ON outbox (seq) WHERE published_at IS NULL;
-- The deliveries list of an org, newest first.
CREATE INDEX outbox_org_seq ON outbox (org_id, seq DESC);

-- Wakes the relay at commit time, so events leave in milliseconds instead of at the next poll.
CREATE FUNCTION qualifier_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('qualifier_outbox', '');
    RETURN NULL;
END $$;
CREATE TRIGGER outbox_notify AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION qualifier_outbox_notify();
