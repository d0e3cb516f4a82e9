-- A lead names its org without a foreign key (docs/decisions.md, "A lead's org without a
-- foreign key").
--
-- The key checked, at every new lead, that its org exists, by locking the org's row (`FOR KEY
-- SHARE`): a write-ahead log record on the path of every new contact, and, with many of an
-- org's contacts written at once, a multixact for each new set of lockers of that one row. The
-- check is kept without the lock: a lead is written for the org of the token that authenticated
-- the request (or of the console's session), whose row references the org and goes with it,
-- and the internal API's new contact reads the org in the statement that inserts it (`Org not
-- found` without one). What the key also did, its `ON DELETE CASCADE`, is kept by the trigger
-- below: an org deleted takes its leads (and with them their handoffs, by theirs).
--
-- Waits at most half a second for each lock; past it the migration rolls back whole and
-- `qualifierctl migrate` tries it again (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

-- The guarantee stays, written where a lead is inserted: the statement that writes a new
-- contact reads its org and writes nothing without one (crates/store/src/leads/write.rs).
-- squawk-ignore ban-drop-constraint
ALTER TABLE leads DROP CONSTRAINT leads_org_id_fkey;

CREATE FUNCTION qualifier_org_leads_forget() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM leads l USING orgs_gone o WHERE l.org_id = o.id;
    RETURN NULL;
END
$$;
CREATE TRIGGER orgs_leads_forget AFTER DELETE ON orgs
    REFERENCING OLD TABLE AS orgs_gone
    FOR EACH STATEMENT EXECUTE FUNCTION qualifier_org_leads_forget();
