-- Test events are limited per org and minute (docs/reliability.md, "Strangers, quotas and pages"): counting an org's recent
-- ones must not scan its whole delivery log.
CREATE INDEX outbox_org_tests ON outbox (org_id, created_at) WHERE is_test;

-- Whether a signing secret sealed in the old unbound format (openable for any org) may still be
-- opened. True only while such secrets may exist: a database with webhooks from before this
-- migration may hold them until `qualifierctl migrate` (or lead-api's start) re-seals them all,
-- which then sets it to false for good; a new database never allows them.
CREATE TABLE secret_format (
    id boolean PRIMARY KEY DEFAULT true CHECK (id),
    unbound_allowed boolean NOT NULL
);
INSERT INTO secret_format (id, unbound_allowed) VALUES (true, EXISTS (SELECT 1 FROM webhooks));
