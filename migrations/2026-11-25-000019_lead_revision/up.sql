-- A lead's revision: 1 when created, plus 1 with every committed change (docs/api.md,
-- "Revisions and conditional requests"). A constant default adds the column without rewriting
-- the table; leads stored before it start at 1 and count from there.
ALTER TABLE leads ADD COLUMN revision bigint NOT NULL DEFAULT 1;

-- The database keeps the count, so a writer that does not know the column (the previous version
-- during a rolling upgrade) still moves it: an UPDATE that did not raise it raises it by one. The
-- current code writes OLD.revision + 1 itself (it puts the number in the event's snapshot in the
-- same statement), which this leaves alone.
CREATE FUNCTION leads_revision() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.revision <= OLD.revision THEN
        NEW.revision := OLD.revision + 1;
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER leads_revision BEFORE UPDATE ON leads
    FOR EACH ROW EXECUTE FUNCTION leads_revision();
