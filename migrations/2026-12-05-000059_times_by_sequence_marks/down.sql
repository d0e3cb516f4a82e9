-- The index back (built while the outbox's writers wait: a rollback is an operator's, at a
-- quiet time), the marks gone.
-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts, require-concurrent-index-creation
SET lock_timeout = '500ms';

CREATE INDEX outbox_created_at ON outbox (created_at);
DROP FUNCTION qualifier_outbox_marks_fill();
DROP TABLE outbox_seq_marks;
