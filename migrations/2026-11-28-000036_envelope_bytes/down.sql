DROP FUNCTION IF EXISTS envelope_bytes(bytea);
