ALTER TABLE feed_head DROP COLUMN legacy_pos_limit, DROP COLUMN legacy_seq_limit;
