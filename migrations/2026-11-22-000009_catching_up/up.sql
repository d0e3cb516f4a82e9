-- Catching up after an outage (docs/api.md; docs/architecture.md, "The events feed").
--
-- feed_pos: the event's place in its org's events feed. It is assigned by the relay, after the
-- event's transaction committed, while the relay holds the feed_head row lock until its own
-- commit: so positions become visible in increasing order, and a reader paging with
-- `feed_pos > cursor` can never pass a position that a later commit fills in. A sequence number
-- assigned at insert (seq) has exactly that hole: a transaction that took seq 10 and commits after
-- a reader saw seq 11 is skipped for ever. Test events get no position (they are not in the feed).
--
-- replay_at: when a replayed delivery may be published again. Replays of one org are spaced by
-- QUALIFIER_REPLAY_RATE_PER_SECOND through replay_pacing, so a receiver that just recovered is
-- not flooded.
--
-- lead_id: the lead the event is about, for the deliveries list's `lead_id` filter.
ALTER TABLE outbox
    ADD COLUMN feed_pos  bigint,
    ADD COLUMN replay_at timestamptz,
    ADD COLUMN lead_id   uuid;

UPDATE outbox SET lead_id = (convert_from(payload, 'UTF8')::jsonb #>> '{data,lead,id}')::uuid;

-- One row: the last position handed out, and the highest position retention has removed (a
-- cursor below it may have missed events: 410 Cursor expired).
CREATE TABLE feed_head (
    id              boolean PRIMARY KEY DEFAULT true CHECK (id),
    pos             bigint NOT NULL,
    expired_through bigint NOT NULL DEFAULT 0
);

-- Events already published get positions in their outbox order.
UPDATE outbox o SET feed_pos = s.pos
FROM (SELECT seq, row_number() OVER (ORDER BY seq) AS pos
      FROM outbox WHERE published_at IS NOT NULL AND NOT is_test) s
WHERE o.seq = s.seq;
INSERT INTO feed_head (pos) SELECT COALESCE(max(feed_pos), 0) FROM outbox;

-- The feed of an org, and of one event type of an org.
CREATE UNIQUE INDEX outbox_feed ON outbox (org_id, feed_pos) WHERE feed_pos IS NOT NULL;
CREATE INDEX outbox_feed_type ON outbox (org_id, event_type, feed_pos) WHERE feed_pos IS NOT NULL;
-- The deliveries list filtered by lead.
CREATE INDEX outbox_org_lead ON outbox (org_id, lead_id, seq DESC);

-- The relay's two queues: new events in outbox order, and replays when they are due.
DROP INDEX outbox_unpublished;
CREATE INDEX outbox_unpublished ON outbox (seq) WHERE published_at IS NULL AND replay_at IS NULL;
CREATE INDEX outbox_replay_due ON outbox (replay_at) WHERE published_at IS NULL AND replay_at IS NOT NULL;

-- The next free replay slot of each org.
CREATE TABLE replay_pacing (
    org_id  uuid PRIMARY KEY REFERENCES orgs (id) ON DELETE CASCADE,
    next_at timestamptz NOT NULL
);

-- The lead list: keyset pagination on (updated_at, id) within an org.
CREATE INDEX leads_org_updated ON leads (org_id, updated_at, id);

-- Retention deletes the oldest events first.
CREATE INDEX outbox_created_at ON outbox (created_at);
