-- An erased event stays erased whoever writes its row afterwards (migration 20), and that
-- includes the compact attempt entries (migration 31's storage form, the default on a new
-- database): the receiver's answer excerpt is under `b` and the signatures under `g` there, and
-- the trigger stripped only the full form's keys. An attempt in flight when the erasure
-- committed then kept the receiver's answer on the erased row. The same five keys as the
-- erasure's own update (`crates/store/src/erasure.rs`).
--
-- Replacing a function's body takes no lock on the outbox: writers keep writing, and each row
-- written after the commit runs the new body.
SET lock_timeout = '5s';
SET statement_timeout = '60s';
CREATE OR REPLACE FUNCTION outbox_stays_erased() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.erased_at := OLD.erased_at;
    NEW.payload := OLD.payload;
    NEW.lead_id := OLD.lead_id;
    NEW.attempt_log := coalesce(
        (SELECT jsonb_agg(e - 'response_body' - 'request_headers' - 'signatures' - 'b' - 'g'
                          ORDER BY i)
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
