DROP FUNCTION qualifier_deliveries_made(outbox, uuid[]);
DROP FUNCTION qualifier_filtered_of(uuid, text, boolean, uuid[]);
ALTER TABLE delivery_hours DROP COLUMN filtered;
ALTER TABLE delivery_hour_changes DROP COLUMN filtered;
ALTER TABLE orgs DROP COLUMN filters_version;
ALTER TABLE webhooks DROP COLUMN filter;
