-- The relay's queue of new deliveries kept without the write-ahead log (docs/decisions.md, "The
-- relay's queue is rebuilt, not logged").
--
-- `deliveries_unsent` (migration 52) holds, for each delivery the relay has not published yet,
-- its key and nothing else: what it says is also in the delivery row, durable, which stays
-- `queued` and not due (`due_at` NULL) until its first outcome. A row here is inserted by the
-- event's insert and deleted by the relay's mark a moment later; logged, that was three
-- write-ahead log records on the path of every event (the row, its key, its delete) for a table
-- that is empty between relay rounds. Unlogged, PostgreSQL writes none of them, and empties the
-- table whenever it cannot vouch for it: after a crash, an immediate shutdown, on a standby
-- promoted in a failover, in a restored backup. A clean shutdown keeps it.
--
-- So the table says whether it is whole: `deliveries_unsent_whole`, unlogged too, holds one row
-- from the moment the queue was last known whole, and loses it with the queue (PostgreSQL
-- resets every unlogged table of a database together). The relay reads it under its turn
-- (`feed_head`) before each claim; when the row is missing, it puts back every delivery that is
-- `queued` and not due (`qualifier_unsent_restore`, below) before claiming, so the claim still
-- finds every event in `seq` order and a lead's events keep their order and their feed
-- positions. What comes back includes the deliveries the relay had published and no worker had
-- settled yet (the mark does not write the delivery row): they are published again, under the
-- same delivery ids, which a crash may always do and the worker drops once one of them ended.
--
-- Waits at most half a second for each lock; past it the migration rolls back whole and
-- `qualifierctl migrate` tries it again (crates/store/src/pool.rs, `gave_way`).
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

ALTER TABLE deliveries_unsent SET UNLOGGED;

CREATE UNLOGGED TABLE deliveries_unsent_whole (
    whole boolean PRIMARY KEY DEFAULT true CONSTRAINT deliveries_unsent_whole_one CHECK (whole)
);

-- Every delivery waiting for its first publication put back in the queue, and the queue
-- marked whole; the number put back. Each org's through `deliveries_org_state` (the org, then
-- `queued`), so it reads what waits, not the history. Run by the relay under its turn, so no
-- claim runs meanwhile; an event committed meanwhile has queued its own rows (`ON CONFLICT`).
CREATE FUNCTION qualifier_unsent_restore() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    n bigint;
BEGIN
    INSERT INTO deliveries_unsent (seq, endpoint_id)
    SELECT d.seq, d.endpoint_id
    FROM orgs o
    CROSS JOIN LATERAL (SELECT x.seq, x.endpoint_id FROM deliveries x
                        WHERE x.org_id = o.id AND x.state = 'queued' AND x.due_at IS NULL) d
    ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    INSERT INTO deliveries_unsent_whole DEFAULT VALUES ON CONFLICT DO NOTHING;
    RETURN n;
END
$$;

-- Whole now: the table kept its rows through the change.
INSERT INTO deliveries_unsent_whole DEFAULT VALUES;
