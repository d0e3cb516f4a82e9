-- The console's search finds a delivery by its id (outbox_delivery_id), its lead
-- (outbox_org_lead) or its event: this index is for the last.
CREATE INDEX outbox_org_event ON outbox (org_id, event_id);
