-- A lead's revision: 1 when created, plus 1 with every committed change (docs/api.md,
-- "Revisions and conditional requests"). A constant default adds the column without rewriting
-- the table; leads stored before it start at 1 and count from there.
-- Waits at most 5 s for the table's lock (past it the migration fails and is run again) rather
-- than queueing every request behind a long transaction; the change itself is instant.
SET lock_timeout = '5s';
SET statement_timeout = '60s';
ALTER TABLE leads ADD COLUMN IF NOT EXISTS revision bigint NOT NULL DEFAULT 1;

-- The database keeps the count, so a writer that does not know the column (the previous version
-- during a rolling upgrade) still moves it: an UPDATE that did not raise it raises it by one. The
-- current code writes OLD.revision + 1 itself (it puts the number in the event's snapshot in the
-- same statement), which this leaves alone.
CREATE OR REPLACE FUNCTION leads_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.revision <= OLD.revision THEN
        NEW.revision := OLD.revision + 1;
    END IF;
    RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS leads_revision ON leads;
CREATE TRIGGER leads_revision BEFORE UPDATE ON leads
    FOR EACH ROW EXECUTE FUNCTION leads_revision();
