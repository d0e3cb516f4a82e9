-- One webhook per org again: each org keeps its primary (oldest) endpoint, whose id becomes
-- the org's, and the other endpoints, their health, their throttles and their deliveries go.
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';
DROP TRIGGER outbox_deliveries_insert ON outbox;
CREATE TRIGGER outbox_deliveries_insert AFTER INSERT ON outbox
    REFERENCING NEW TABLE AS outbox_mirror_new
    FOR EACH STATEMENT EXECUTE FUNCTION qualifier_deliveries_mirror();
DROP FUNCTION qualifier_deliveries_fan_out();
DROP FUNCTION qualifier_endpoints_of(uuid, text, boolean);
CREATE OR REPLACE FUNCTION qualifier_deliveries_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM deliveries d USING outbox_mirror_old o
    WHERE d.seq = o.seq AND d.endpoint_id = o.org_id;
    RETURN NULL;
END
$$;
DELETE FROM webhooks w WHERE EXISTS (
    SELECT 1 FROM webhooks f WHERE f.org_id = w.org_id
      AND (f.created_at, f.id) < (w.created_at, w.id));
UPDATE deliveries d SET endpoint_id = d.org_id FROM webhooks w
WHERE w.id = d.endpoint_id AND w.id <> w.org_id
  AND NOT EXISTS (SELECT 1 FROM deliveries k WHERE k.seq = d.seq AND k.endpoint_id = d.org_id);
DELETE FROM deliveries d WHERE d.endpoint_id <> d.org_id;
DELETE FROM endpoint_health h WHERE NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.id = h.endpoint_id);
DELETE FROM endpoint_pacing p WHERE NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.id = p.endpoint_id);
UPDATE endpoint_health SET endpoint_id = org_id;
UPDATE endpoint_pacing SET endpoint_id = org_id;
UPDATE webhooks SET id = org_id;
ALTER TABLE webhooks DROP CONSTRAINT webhooks_pkey;
ALTER TABLE webhooks ADD CONSTRAINT webhooks_pkey PRIMARY KEY (org_id);
ALTER TABLE endpoint_health DROP CONSTRAINT endpoint_health_pkey;
ALTER TABLE endpoint_health ADD CONSTRAINT endpoint_health_pkey PRIMARY KEY (org_id);
ALTER TABLE endpoint_pacing DROP CONSTRAINT endpoint_pacing_pkey;
ALTER TABLE endpoint_pacing ADD CONSTRAINT endpoint_pacing_pkey PRIMARY KEY (org_id);
DROP INDEX IF EXISTS webhooks_id;
DROP INDEX IF EXISTS webhooks_org_oldest;
DROP INDEX IF EXISTS endpoint_health_endpoint;
DROP INDEX IF EXISTS endpoint_health_org;
DROP INDEX IF EXISTS endpoint_pacing_endpoint;
DROP INDEX IF EXISTS endpoint_pacing_org;
DROP TRIGGER webhooks_named ON webhooks;
DROP TRIGGER endpoint_health_named ON endpoint_health;
DROP TRIGGER endpoint_pacing_named ON endpoint_pacing;
DROP FUNCTION qualifier_endpoint_named();
DROP FUNCTION qualifier_endpoint_of_org();
ALTER TABLE webhooks DROP COLUMN id, DROP COLUMN description;
ALTER TABLE endpoint_health DROP COLUMN endpoint_id;
ALTER TABLE endpoint_pacing DROP COLUMN endpoint_id;
CREATE OR REPLACE FUNCTION qualifier_outbox_retire() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM feed_head FOR UPDATE;
    UPDATE deliveries_mirror SET to_outbox = false WHERE to_outbox;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    DROP TRIGGER IF EXISTS outbox_deliveries_update ON outbox;
    DROP TRIGGER IF EXISTS deliveries_outbox_follows ON deliveries;
    DROP INDEX IF EXISTS outbox_unpublished;
    DROP INDEX IF EXISTS outbox_replay_due;
    DROP INDEX IF EXISTS outbox_held;
    DROP INDEX IF EXISTS outbox_org_status;
    RETURN true;
END
$$;
DROP FUNCTION qualifier_endpoints_apart();
DROP FUNCTION qualifier_release_next(uuid, uuid, uuid);
CREATE OR REPLACE FUNCTION qualifier_wait_for_earlier(
    p_delivery uuid, p_lo bigint, p_hi bigint, p_attempt integer, p_lead uuid
) RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_lead::text, 17));
    UPDATE deliveries d SET state = 'after_earlier', resume_attempt = p_attempt,
           updated_at = clock_timestamp()
    WHERE d.delivery_id = p_delivery AND d.seq >= p_lo << 32 AND d.seq < (p_hi + 1) << 32
      AND d.state NOT IN ('succeeded', 'dead', 'skipped', 'held', 'after_earlier')
      AND qualifier_earlier_pending(d.org_id, d.lead_id, d.seq);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        RETURN true;
    END IF;
    -- A second copy of a message whose wait began already (a crash before its ack).
    RETURN EXISTS (SELECT 1 FROM deliveries d
                   WHERE d.delivery_id = p_delivery
                     AND d.seq >= p_lo << 32 AND d.seq < (p_hi + 1) << 32
                     AND d.state = 'after_earlier');
END
$$;
DROP FUNCTION qualifier_earlier_pending(uuid, uuid, uuid, bigint);
