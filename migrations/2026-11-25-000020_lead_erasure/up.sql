-- Erasing a contact (docs/api.md, "Erasing a lead"). `erased_at` marks an event whose lead was
-- erased: its payload is the reduced envelope and its delivery is over. A NULL default adds the
-- column without rewriting the table.
-- Waits at most 5 s for the table's lock (past it the migration fails and is run again) rather
-- than queueing every delivery behind a long transaction; the change itself is instant.
SET lock_timeout = '5s';
SET statement_timeout = '60s';
ALTER TABLE outbox ADD COLUMN IF NOT EXISTS erased_at timestamptz;

-- Once erased, an event stays erased whoever writes the row afterwards: an attempt that was in
-- flight when the erasure committed, a replay, a hold, the previous version during an upgrade.
-- The payload stays reduced, the attempt log keeps no answer excerpt and no request headers,
-- and a delivery that had not succeeded ends skipped and is never scheduled again. The WHEN
-- clause is checked without calling the function, so rows never erased (all but a few) pay
-- nothing for it.
CREATE OR REPLACE FUNCTION outbox_stays_erased() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.erased_at := OLD.erased_at;
    NEW.payload := OLD.payload;
    NEW.lead_id := OLD.lead_id;
    NEW.attempt_log := coalesce(
        (SELECT jsonb_agg(e - 'response_body' - 'request_headers' ORDER BY i)
         FROM jsonb_array_elements(NEW.attempt_log) WITH ORDINALITY AS t(e, i)),
        '[]'::jsonb);
    IF NEW.status NOT IN ('succeeded', 'skipped') THEN
        NEW.status := 'skipped';
        NEW.last_error := 'erased';
    END IF;
    NEW.held_at := NULL;
    NEW.resume_attempt := NULL;
    NEW.replay_at := NULL;
    IF NEW.feed_pos IS NOT NULL THEN
        NEW.published_at := coalesce(NEW.published_at, OLD.published_at, clock_timestamp());
    END IF;
    RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS outbox_stays_erased ON outbox;
CREATE TRIGGER outbox_stays_erased BEFORE UPDATE ON outbox
    FOR EACH ROW WHEN (OLD.erased_at IS NOT NULL) EXECUTE FUNCTION outbox_stays_erased();
