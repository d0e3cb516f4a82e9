-- Several endpoints per organisation (docs/decisions.md, "Several endpoints"). The org's
-- webhook becomes the first of its endpoints: `webhooks` is the endpoints' table, one row per
-- endpoint, keyed by its own `id`, and an upgraded webhook keeps the org's id as its own, so
-- its secrets (sealed to that id), its health, its throttle and its deliveries (keyed by
-- (event, endpoint) since migration 43, with the org's id) are the endpoint's without a row
-- moving. An org's *primary* endpoint is its oldest (`created_at`, then `id`): what the
-- `webhook` routes show and change.
--
-- Until the outbox retires (migration 48, `qualifier_outbox_retire`) a release that knows one
-- webhook per org may still run beside this one: it finds the webhook, its health and its
-- throttle by the org's id and upserts them on that key. So the tables keep their keys on the
-- org until then, which allows one endpoint per org, and take their endpoints' keys when the
-- outbox retires (`qualifier_endpoints_apart`, below). A new installation has retired at its
-- first migration and has several endpoints from the start.
--
-- An endpoint inserted without an id (by this release for an org's first endpoint, or by the
-- release before this one) takes the org's id, unless an endpoint already has it (an org that
-- deleted its first endpoint): the deliveries recorded while the org had no endpoint, keyed by
-- its id, are then its first endpoint's, and a replay of them sends them there, as before.
--
-- Waits at most half a second for each lock; past it the migration rolls back whole and
-- `qualifierctl migrate` tries it again (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts, require-concurrent-index-creation, disallowed-unique-constraint, adding-not-nullable-field
SET lock_timeout = '500ms';

ALTER TABLE webhooks
    ADD COLUMN id uuid,
    ADD COLUMN description text NOT NULL DEFAULT ''
        CONSTRAINT webhooks_description_length CHECK (char_length(description) <= 255);
UPDATE webhooks SET id = org_id;
ALTER TABLE webhooks ALTER COLUMN id SET NOT NULL;
CREATE UNIQUE INDEX webhooks_id ON webhooks (id);
-- An org's endpoints, oldest first: the list, the primary, and the fan-out of every event.
CREATE INDEX webhooks_org_oldest ON webhooks (org_id, created_at, id);

CREATE FUNCTION qualifier_endpoint_named() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.id IS NULL THEN
        NEW.id := CASE WHEN EXISTS (SELECT 1 FROM webhooks w WHERE w.id = NEW.org_id)
                       THEN gen_random_uuid() ELSE NEW.org_id END;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER webhooks_named BEFORE INSERT ON webhooks
    FOR EACH ROW EXECUTE FUNCTION qualifier_endpoint_named();

-- An endpoint's health and its throttle's next turn, by the endpoint: the release before this
-- one writes them by the org's id, which is its one webhook's.
CREATE FUNCTION qualifier_endpoint_of_org() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.endpoint_id := coalesce(NEW.endpoint_id, NEW.org_id);
    RETURN NEW;
END
$$;
ALTER TABLE endpoint_health ADD COLUMN endpoint_id uuid;
UPDATE endpoint_health SET endpoint_id = org_id;
ALTER TABLE endpoint_health ALTER COLUMN endpoint_id SET NOT NULL;
CREATE UNIQUE INDEX endpoint_health_endpoint ON endpoint_health (endpoint_id);
CREATE TRIGGER endpoint_health_named BEFORE INSERT ON endpoint_health
    FOR EACH ROW EXECUTE FUNCTION qualifier_endpoint_of_org();

ALTER TABLE endpoint_pacing ADD COLUMN endpoint_id uuid;
UPDATE endpoint_pacing SET endpoint_id = org_id;
ALTER TABLE endpoint_pacing ALTER COLUMN endpoint_id SET NOT NULL;
CREATE UNIQUE INDEX endpoint_pacing_endpoint ON endpoint_pacing (endpoint_id);
CREATE TRIGGER endpoint_pacing_named BEFORE INSERT ON endpoint_pacing
    FOR EACH ROW EXECUTE FUNCTION qualifier_endpoint_of_org();

-- The three tables keyed by their endpoints: the org's id is then no longer unique in them.
-- Once, when the outbox retires (or here, if it has). Returns whether it did it now.
CREATE FUNCTION qualifier_endpoints_apart() RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
    IF to_regclass('webhooks_id') IS NULL THEN
        RETURN false;
    END IF;
    ALTER TABLE webhooks DROP CONSTRAINT webhooks_pkey;
    ALTER TABLE webhooks ADD CONSTRAINT webhooks_pkey PRIMARY KEY USING INDEX webhooks_id;
    ALTER TABLE endpoint_health DROP CONSTRAINT endpoint_health_pkey;
    ALTER TABLE endpoint_health
        ADD CONSTRAINT endpoint_health_pkey PRIMARY KEY USING INDEX endpoint_health_endpoint;
    CREATE INDEX endpoint_health_org ON endpoint_health (org_id);
    ALTER TABLE endpoint_pacing DROP CONSTRAINT endpoint_pacing_pkey;
    ALTER TABLE endpoint_pacing
        ADD CONSTRAINT endpoint_pacing_pkey PRIMARY KEY USING INDEX endpoint_pacing_endpoint;
    CREATE INDEX endpoint_pacing_org ON endpoint_pacing (org_id);
    RETURN true;
END
$$;

-- Migration 48's, and the endpoints apart with it.
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
    PERFORM qualifier_endpoints_apart();
    RETURN true;
END
$$;

DO $$
BEGIN
    IF NOT (SELECT m.to_outbox FROM deliveries_mirror m) THEN
        PERFORM qualifier_endpoints_apart();
    END IF;
END
$$;

-- Where an event goes: its org's primary endpoint (by the org's id while it has none, so that
-- the event's delivery records why it went nowhere), and every other endpoint of the org that
-- is enabled and subscribed to its type. A test event goes to the primary only (one asked for
-- another endpoint is moved there in its own transaction, crates/store/src/webhooks.rs). The
-- primary's delivery keeps the event's delivery id; each other one is given its own.
-- Inlined into the statement that calls it (one `SELECT`, `STABLE`).
CREATE FUNCTION qualifier_endpoints_of(p_org uuid, p_type text, p_test boolean)
RETURNS TABLE (endpoint_id uuid, first boolean) LANGUAGE sql STABLE AS $$
    WITH p AS (SELECT coalesce((SELECT w.id FROM webhooks w WHERE w.org_id = p_org
                                ORDER BY w.created_at, w.id LIMIT 1), p_org) AS id)
    SELECT p.id, true FROM p
    UNION ALL
    SELECT w.id, false FROM webhooks w, p
    WHERE w.org_id = p_org AND w.id <> p.id AND NOT p_test AND w.enabled
      AND p_type = ANY (w.event_types)
$$;

-- The event's insert writes one delivery per endpoint it goes to (migration 43's mirror wrote
-- one, keyed by the org). Its delete removes them all.
CREATE FUNCTION qualifier_deliveries_fan_out() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF pg_trigger_depth() > 1 THEN
        RETURN NULL;
    END IF;
    INSERT INTO deliveries
    SELECT d.seq, e.endpoint_id,
           CASE WHEN e.first THEN d.delivery_id ELSE gen_random_uuid() END,
           d.org_id, d.lead_id, d.created_at, d.state, d.due_at, d.turn_at, d.resume_attempt,
           d.attempts, d.failed_attempts, d.last_status_code, d.last_error, d.attempt_log,
           d.replayed, d.updated_at, d.retrying, d.erased
    FROM outbox_mirror_new n
    CROSS JOIN LATERAL qualifier_delivery_of(n) d
    CROSS JOIN LATERAL qualifier_endpoints_of(n.org_id, n.event_type, n.is_test) e
    ON CONFLICT (seq, endpoint_id) DO UPDATE SET
        lead_id = EXCLUDED.lead_id, created_at = EXCLUDED.created_at,
        state = EXCLUDED.state, due_at = EXCLUDED.due_at,
        turn_at = EXCLUDED.turn_at, resume_attempt = EXCLUDED.resume_attempt,
        attempts = EXCLUDED.attempts, failed_attempts = EXCLUDED.failed_attempts,
        last_status_code = EXCLUDED.last_status_code, last_error = EXCLUDED.last_error,
        attempt_log = EXCLUDED.attempt_log, replayed = EXCLUDED.replayed,
        updated_at = EXCLUDED.updated_at, retrying = EXCLUDED.retrying,
        erased = EXCLUDED.erased;
    RETURN NULL;
END
$$;
DROP TRIGGER outbox_deliveries_insert ON outbox;
CREATE TRIGGER outbox_deliveries_insert AFTER INSERT ON outbox
    REFERENCING NEW TABLE AS outbox_mirror_new
    FOR EACH STATEMENT EXECUTE FUNCTION qualifier_deliveries_fan_out();

CREATE OR REPLACE FUNCTION qualifier_deliveries_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM deliveries d USING outbox_mirror_old o WHERE d.seq = o.seq;
    RETURN NULL;
END
$$;

-- A lead's order is kept per endpoint: an earlier delivery of the lead to another endpoint
-- (failing, throttled, held) holds nothing back here. The three functions of migrations 45
-- and 46, with the endpoint beside the org; the old forms stay for the down migration.
CREATE FUNCTION qualifier_earlier_pending(p_org uuid, p_endpoint uuid, p_lead uuid,
                                          p_seq bigint)
RETURNS boolean LANGUAGE sql STABLE AS $$
    SELECT EXISTS (SELECT 1 FROM outbox e
                   JOIN deliveries d ON d.seq = e.seq AND d.endpoint_id = p_endpoint
                   WHERE e.org_id = p_org AND e.lead_id = p_lead AND e.seq < p_seq
                     AND NOT e.is_test
                     AND d.state NOT IN ('succeeded', 'dead', 'skipped') AND NOT d.replayed)
$$;

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
      AND qualifier_earlier_pending(d.org_id, d.endpoint_id, d.lead_id, d.seq);
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

CREATE FUNCTION qualifier_release_next(p_org uuid, p_endpoint uuid, p_lead uuid)
RETURNS boolean LANGUAGE plpgsql AS $$
DECLARE
    s bigint;
    n integer;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_lead::text, 17));
    -- The lead's first waiting delivery to the endpoint, through the org's waiting ones
    -- (`deliveries_org_state`).
    SELECT d.seq INTO s FROM deliveries d
    WHERE d.org_id = p_org AND d.state = 'after_earlier' AND d.lead_id = p_lead
      AND d.endpoint_id = p_endpoint
    ORDER BY d.seq LIMIT 1;
    IF s IS NULL THEN
        RETURN false;
    END IF;
    -- Back to the relay, as every requeue (crates/store/src/deliveries/state.rs, `requeue`).
    UPDATE deliveries d SET state = 'queued', due_at = clock_timestamp(), turn_at = NULL,
           updated_at = clock_timestamp()
    WHERE d.seq = s AND d.endpoint_id = p_endpoint AND d.state IN ('held', 'after_earlier')
      AND NOT qualifier_earlier_pending(d.org_id, d.endpoint_id, d.lead_id, d.seq);
    GET DIAGNOSTICS n = ROW_COUNT;
    IF n > 0 THEN
        PERFORM pg_notify('qualifier_outbox', '');
    END IF;
    RETURN n > 0;
END
$$;
