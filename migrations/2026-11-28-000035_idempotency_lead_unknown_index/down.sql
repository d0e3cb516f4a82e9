DROP INDEX CONCURRENTLY IF EXISTS idempotency_keys_lead_unknown;
