SET lock_timeout = '5s';
SET statement_timeout = '60s';
ALTER TABLE idempotency_keys DROP COLUMN IF EXISTS lead_unknown, DROP COLUMN IF EXISTS lead_id;
