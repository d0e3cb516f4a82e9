-- The relay's queue logged again, whole first (what a crash emptied put back).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM deliveries_unsent_whole) THEN
        PERFORM qualifier_unsent_restore();
    END IF;
END
$$;
ALTER TABLE deliveries_unsent SET LOGGED;
DROP FUNCTION qualifier_unsent_restore();
DROP TABLE deliveries_unsent_whole;
