DROP FUNCTION IF EXISTS qualifier_release_next(uuid, uuid);
DROP FUNCTION IF EXISTS qualifier_wait_for_earlier(uuid, bigint, bigint, integer, uuid);
DROP TABLE IF EXISTS endpoint_pacing;
ALTER TABLE outbox
    DROP COLUMN IF EXISTS paced_at,
    DROP COLUMN IF EXISTS waiting_for,
    DROP COLUMN IF EXISTS replayed;
ALTER TABLE webhooks
    DROP COLUMN IF EXISTS max_per_second,
    DROP COLUMN IF EXISTS ordering;
