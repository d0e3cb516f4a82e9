-- The outbox's creation times found through a few marks of the sequence, not through an index
-- of every event (docs/decisions.md, "Events and deliveries apart").
--
-- A list's or a count's time bound (`since`, `until`) is a range of `seq` beside the exact
-- condition on `created_at` (crates/store/src/partitions.rs, `SeqBound`). The range was found
-- through `outbox_created_at`, one entry in it for every event: a write-ahead log record an
-- event of about 27, for a lookup made once per list. A mark `(at, seq)` says that every
-- sequence number handed out before `at` is at most `seq`; an event's number is drawn in the
-- statement that reads its `created_at` from the same clock, so an event created at or after
-- `at` has a larger number. A few marks a minute answer the lookup as well: lead-api writes one
-- a minute while events are written (`Store::mark_outbox_sequence`), and none while the
-- sequence stands still, where the last one still holds.
--
-- The marks of the history already stored are read here from the index, before it goes: one
-- a minute of it, each the largest number drawn before the minute's end. The release before
-- this one writes no marks while it runs beside this one; a list's bound over that time is
-- then a wider range of `seq` (from an earlier mark, or to a later one), never a wrong one.
--
-- Waits at most half a second for each lock; past it the migration rolls back whole and
-- `qualifierctl migrate` tries it again (crates/store/src/pool.rs, `gave_way`).
-- An index of a partitioned table cannot be dropped concurrently; its drop takes the outbox's
-- lock for a moment, within `lock_timeout`.
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts, require-concurrent-index-deletion
SET lock_timeout = '500ms';

CREATE TABLE outbox_seq_marks (
    at timestamptz PRIMARY KEY,
    seq bigint NOT NULL
);

-- One mark a minute of what the outbox holds, each the largest number of an event created
-- before the minute's end: also what a history written by hand needs (the bench's fill).
CREATE FUNCTION qualifier_outbox_marks_fill() RETURNS bigint LANGUAGE sql AS $$
    WITH m AS (
        SELECT date_trunc('minute', created_at) + interval '1 minute' AS at, max(seq) AS seq
        FROM outbox GROUP BY 1
    ), ins AS (
        INSERT INTO outbox_seq_marks (at, seq)
        SELECT at, max(seq) OVER (ORDER BY at) FROM m
        ON CONFLICT (at) DO UPDATE SET seq = greatest(outbox_seq_marks.seq, EXCLUDED.seq)
        RETURNING 1
    )
    SELECT count(*) FROM ins
$$;
SELECT qualifier_outbox_marks_fill();

DROP INDEX outbox_created_at;
