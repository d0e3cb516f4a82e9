ALTER TABLE webhooks DROP COLUMN destination;
