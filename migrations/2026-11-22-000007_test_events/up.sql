-- Test events (docs/api.md): sent through the normal pipeline and kept in the delivery
-- log, but marked, so receivers see `X-Qualifier-Test: true` and the events feed leaves them out.
ALTER TABLE outbox ADD COLUMN is_test boolean NOT NULL DEFAULT false;
