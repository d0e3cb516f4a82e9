-- Migration 20's body: the full form's keys only.
SET lock_timeout = '5s';
SET statement_timeout = '60s';
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
