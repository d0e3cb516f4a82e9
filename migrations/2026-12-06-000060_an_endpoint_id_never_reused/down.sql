-- squawk-ignore-file require-statement-timeout, prefer-robust-stmts
SET lock_timeout = '500ms';

ALTER TABLE orgs DROP COLUMN first_endpoint_gone;
