-- Unsealed cursors (the form issued before cursors were sealed) are accepted only for a
-- position that existed when this migration ran: a crafted one must not read the shared feed
-- counter or outbox sequence of today (docs/api.md, "Lists and the feed"). Adding nullable
-- columns rewrites nothing; the one row of feed_head is updated once.
ALTER TABLE feed_head ADD COLUMN legacy_pos_limit bigint, ADD COLUMN legacy_seq_limit bigint;
UPDATE feed_head SET legacy_pos_limit = pos,
                     legacy_seq_limit = (SELECT COALESCE(max(seq), 0) FROM outbox);
