-- Receivers set the pace (docs/delivery.md, "Throttle and order").
--
-- The webhook's `max_per_second` (NULL: no throttle) and `ordering` (NULL or 'none': as before;
-- 'per_lead': a lead's deliveries one at a time in event order). `endpoint_pacing` holds each
-- throttled endpoint's next free turn, shared by every webhook-delivery replica (the row lock
-- hands turns out one at a time, like `replay_pacing`).
--
-- On the outbox: `paced_at`, the turn a delivery waiting for the throttle holds (the relay
-- sends it shortly before); `waiting_for`, why a delivery neither finished nor retrying waits
-- ('throttle' or 'earlier_delivery', shown by the deliveries list); `replayed`, set by a replay,
-- which puts the delivery outside its lead's order.
--
-- Adding NULL columns rewrites nothing, and the older release's statements name their columns,
-- so both run during an upgrade.
SET lock_timeout = '5s';
SET statement_timeout = '60s';
ALTER TABLE webhooks
    ADD COLUMN IF NOT EXISTS max_per_second bigint,
    ADD COLUMN IF NOT EXISTS ordering text;
ALTER TABLE outbox
    ADD COLUMN IF NOT EXISTS paced_at timestamptz,
    ADD COLUMN IF NOT EXISTS waiting_for text,
    ADD COLUMN IF NOT EXISTS replayed boolean;
CREATE TABLE IF NOT EXISTS endpoint_pacing (
    org_id  uuid PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
    next_at timestamptz NOT NULL
);
